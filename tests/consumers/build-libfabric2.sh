#!/bin/bash
# Builds the second, newer libfabric runtime that gdrfab is checked against:
# libfabric 2.6.0 from ../shared/consumers (its source is not redistributed
# with gdrfab), with the verbs, rxm, tcp and shm providers only, installed
# into DIR (default ./libfabric-2.6 in the build directory). Built once; a
# second call finds it. Exit 77 with a SKIP line when the tarball is absent.
#   tests/consumers/build-libfabric2.sh [DIR]
set -euo pipefail
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
dest=$(mkdir -p "${1:-libfabric-2.6}" && cd "${1:-libfabric-2.6}" && pwd)
tarball=${GDRFAB_SHARED:-$srcdir/../shared}/consumers/libfabric-2.6.0.tar.gz
if [ -x "$dest/bin/fi_info" ] && [ -r "$dest/.built" ]; then
	exit 0
fi
if [ ! -r "$tarball" ]; then
	echo "SKIP: libfabric 2.6 runtime: no $tarball (the consumers' sources are not part of gdrfab)"
	exit 77
fi
work=$(mktemp -d /tmp/gdrfab-libfabric2.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "build-libfabric2: building libfabric 2.6.0 into $dest (a few minutes, once)"
tar -xzf "$tarball" -C "$work"
cd "$work"/libfabric-2.6.0
{
	./autogen.sh
	# Only what the comparison needs; every other provider off.
	./configure --prefix="$dest" --disable-static --enable-only \
		--enable-verbs=yes --enable-rxm=yes --enable-tcp=yes --enable-shm=yes
	make -j"$(nproc)"
	make install
} >"$dest/build.log" 2>&1 || {
	tail -n 30 "$dest/build.log"
	echo "build-libfabric2: the build failed (whole log: $dest/build.log)" >&2
	exit 1
}
touch "$dest/.built"
"$dest/bin/fi_info" --version | head -n 2
