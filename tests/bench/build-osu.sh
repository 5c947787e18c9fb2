#!/bin/bash
# Builds the OSU micro-benchmarks 5.3 (from ../shared/consumers; not part of
# gdrfab) with an MPI's compiler wrapper, by default Debian's Open MPI
# mpicc, into DIR (default ./osu-5.3 in the build directory), once. MPICC
# names another wrapper (MPICH's wheel: PREFIX/bin/mpicc; its C++ wrapper,
# mpicxx, is taken beside it). A second MPI needs its own DIR. Exit 77 with
# a SKIP line without the tarball or the wrapper.
#   tests/bench/build-osu.sh [DIR [MPICC]]
set -euo pipefail
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
dest=$(mkdir -p "${1:-osu-5.3}" && cd "${1:-osu-5.3}" && pwd)
tarball=${GDRFAB_SHARED:-$srcdir/../shared}/consumers/osu-micro-benchmarks-5.3.tar.gz
[ -x "$dest/osu_latency" ] && [ -x "$dest/osu_bw" ] && exit 0
if [ ! -r "$tarball" ]; then
	echo "SKIP: OSU micro-benchmarks: no $tarball"
	exit 77
fi
mpicc=${2:-mpicc}
mpicxx=mpicxx
case $mpicc in
*/*) # the build runs elsewhere: make the path absolute
	[ -d "$(dirname "$mpicc")" ] && mpicc=$(cd "$(dirname "$mpicc")" && pwd)/${mpicc##*/}
	mpicxx=$(dirname "$mpicc")/mpicxx
	;;
esac
if ! command -v "$mpicc" >/dev/null; then
	if [ "$mpicc" = mpicc ]; then
		echo "SKIP: OSU micro-benchmarks: no mpicc (scripts/install-deps.sh installs libopenmpi-dev)"
	else
		echo "SKIP: OSU micro-benchmarks: no $mpicc"
	fi
	exit 77
fi
work=$(mktemp -d /tmp/gdrfab-osu.XXXXXX)
trap 'rm -rf "$work"' EXIT
tar -xzf "$tarball" -C "$work"
cd "$work"/osu-micro-benchmarks-5.3
{
	./configure CC="$mpicc" CXX="$mpicxx"
	make -C mpi/pt2pt -j"$(nproc)"
} >"$dest/build.log" 2>&1 || {
	tail -n 30 "$dest/build.log"
	echo "build-osu: the build failed (whole log: $dest/build.log)" >&2
	exit 1
}
cp mpi/pt2pt/osu_latency mpi/pt2pt/osu_bw "$dest/"
echo "build-osu: osu_latency and osu_bw in $dest"
