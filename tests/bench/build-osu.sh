#!/bin/bash
# Builds the OSU micro-benchmarks 5.3 (from ../shared/consumers; not part of
# gdrfab) with Debian's Open MPI mpicc into DIR (default ./osu-5.3 in the
# build directory), once. Exit 77 with a SKIP line without the tarball or
# mpicc.
#   tests/bench/build-osu.sh [DIR]
set -euo pipefail
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
dest=$(mkdir -p "${1:-osu-5.3}" && cd "${1:-osu-5.3}" && pwd)
tarball=${GDRFAB_SHARED:-$srcdir/../shared}/consumers/osu-micro-benchmarks-5.3.tar.gz
[ -x "$dest/osu_latency" ] && [ -x "$dest/osu_bw" ] && exit 0
if [ ! -r "$tarball" ]; then
	echo "SKIP: OSU micro-benchmarks: no $tarball"
	exit 77
fi
if ! command -v mpicc >/dev/null; then
	echo "SKIP: OSU micro-benchmarks: no mpicc (scripts/install-deps.sh installs libopenmpi-dev)"
	exit 77
fi
work=$(mktemp -d /tmp/gdrfab-osu.XXXXXX)
trap 'rm -rf "$work"' EXIT
tar -xzf "$tarball" -C "$work"
cd "$work"/osu-micro-benchmarks-5.3
{
	./configure CC=mpicc CXX=mpicxx
	make -C mpi/pt2pt -j"$(nproc)"
} >"$dest/build.log" 2>&1 || {
	tail -n 30 "$dest/build.log"
	echo "build-osu: the build failed (whole log: $dest/build.log)" >&2
	exit 1
}
cp mpi/pt2pt/osu_latency mpi/pt2pt/osu_bw "$dest/"
echo "build-osu: osu_latency and osu_bw in $dest"
