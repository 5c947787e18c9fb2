#!/bin/bash
# The OSU micro-benchmarks' osu_latency and osu_bw (5.3, from
# ../shared/consumers) through Debian's Open MPI 4.1 with pml cm and mtl
# ofi, over gdrfab and over verbs;ofi_rxm, interleaved round by round in
# one boot of the soft-RoCE VM; prints per size the median of the rounds
# for each provider and gdrfab's ratio (latency: lower is better;
# bandwidth: higher is better). A benchmark, not a test.
#
#   tests/bench/run-osu.sh [ROUNDS]        (default 3; from anywhere)
#
# v5.3 has no -m, so both run every size up to its 4 MiB (below the 8 MiB
# verbs;ofi_rxm takes on rxe); GDRFAB_OSU_LAT_ITERS (default 100) and
# GDRFAB_OSU_BW_ITERS (default 2) are their -i, the same at every size;
# GDRFAB_OSU_UNTIL (seconds since the epoch) starts no round that would
# end after it.
# Under TCG absolute numbers mean little: read the ratios. Exits 77 (SKIP)
# without the tarball, mpicc or the VM.
set -euo pipefail
. "$(dirname "$0")/lib/bench-prelude.sh" "OSU micro-benchmarks"
bench_build full
"$here/build-osu.sh" "$top/build/osu-5.3"
bench_vm 3000 -- bash "$here/osu-in-vm.sh" "${1:-3}" "$top/build/osu-5.3"
