#!/bin/bash
# Builds the second, newer libfabric runtime that gdrfab is checked against:
# libfabric 2.6.0 from ../shared/consumers (its source is not redistributed
# with gdrfab), with the verbs, rxm, tcp and shm providers only, installed
# into DIR (default ./libfabric-2.6 in the build directory). Built once; a
# second call finds it. Exit 77 with a SKIP line when the tarball is absent.
#   tests/consumers/build-libfabric2.sh [DIR]
set -euo pipefail
. "$(dirname "$0")/../lib/build-tarball.sh"
tarball_paths "${1:-libfabric-2.6}" consumers/libfabric-2.6.0.tar.gz
# Only what the comparison needs; every other provider off.
build() {
	./autogen.sh
	./configure --prefix="$dest" --disable-static --enable-only \
		--enable-verbs=yes --enable-rxm=yes --enable-tcp=yes --enable-shm=yes
	make -j"$(nproc)"
	make install
}
build_tarball "libfabric 2.6 runtime" \
	"the consumers' sources are not part of gdrfab" bin/fi_info build
"$dest/bin/fi_info" --version | head -n 2
