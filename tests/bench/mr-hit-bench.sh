#!/bin/bash
# The MR cache's own part of a GPU hit on this machine (no GPU): the
# timing table of tests/bench/mr_hit_bench.c, linked into the executable
# and from a shared library, then instructions per call under callgrind
# (stable where timings are not). The CUDA stand-in is the driver, so the
# classification's own instructions are counted outside its call.
# Usage: tests/bench/mr-hit-bench.sh [BUILD_DIR]   (default: build)
# Exit 77 when the bench or valgrind is missing.
set -euo pipefail
cd "${1:-$(dirname "$0")/../../build}"
make -s tests/bench/mr_hit_bench tests/bench/mr_hit_bench_so \
	tests/cuda/libcuda.la >/dev/null || { echo "SKIP: cannot build the bench"; exit 77; }
export LD_LIBRARY_PATH=$PWD/tests/cuda/.libs:$PWD/tests/bench/.libs
./tests/bench/mr_hit_bench
./tests/bench/.libs/mr_hit_bench_so
command -v valgrind >/dev/null || { echo "SKIP: no valgrind for the instruction counts"; exit 77; }
N=100000
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for bin in tests/bench/mr_hit_bench tests/bench/.libs/mr_hit_bench_so; do
	for loop in hit locked_hit miss classify classify_hit; do
		valgrind --tool=callgrind --callgrind-out-file="$out" \
			--toggle-collect="mrhit_$loop" "$bin" --only "$loop" $N \
			>/dev/null 2>&1
		total=$(callgrind_annotate --auto=no "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
		drv=$(callgrind_annotate --auto=no --inclusive=yes "$out" 2>/dev/null |
			awk '/:cuPointerGetAttributes / {gsub(",", "", $1); print $1; exit}')
		printf '%-16s %-13s %6.1f instructions per call' \
			"$(basename "$bin")" "$loop" "$(echo "$total / $N" | bc -l)"
		[ -n "$drv" ] && printf ' (%.1f outside the driver call)' \
			"$(echo "($total - $drv) / $N" | bc -l)"
		echo
	done
done
