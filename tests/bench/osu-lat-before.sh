#!/bin/bash
# osu_latency (OSU 5.3 through Open MPI's pml cm / mtl ofi, as run-osu.sh
# runs it) over this build's gdrfab, an earlier build's and
# verbs;ofi_rxm, interleaved round by round in one boot of the soft-RoCE
# VM, the order rotating; per size the medians and the ratios
# (lat-floor.awk's before table). To tell whether a change moved what
# MPI sees; a benchmark, not a test.
#
#   tests/bench/osu-lat-before.sh DIR [ROUNDS]   (default 5)
#
# DIR holds the earlier build's libgdrfab-fi.so (cp build/.libs/
# libgdrfab-fi.so DIR/ before the change). Exits 77 (SKIP) without the
# OSU tarball, mpicc or the VM.
set -euo pipefail
. "$(dirname "$0")/lib/bench-prelude.sh" "OSU latency against an earlier build"
[ -f "${1:-}/libgdrfab-fi.so" ] || {
	echo "usage: $0 DIR [ROUNDS] (DIR/libgdrfab-fi.so: the earlier build)" >&2
	exit 2
}
before=$(cd "$1" && pwd)
"$top/scripts/build.sh"
"$here/build-osu.sh" "$top/build/osu-5.3"
bench_vm 3000 -- \
	bash "$here/osu-lat-before-in-vm.sh" "${2:-5}" "$top/build/osu-5.3" "$before"
