#!/bin/bash
# The benchmark, in one command: boots the soft-RoCE VM once and measures,
# interleaved round by round on the same rxe0/rxe1 pair,
#   - latency: gdrfab_pingpong over gdrfab and over verbs;ofi_rxm, and
#     perftest's ib_send_lat;
#   - bandwidth: gdrfab_bw (tagged and fi_write) over both providers, and
#     perftest's ib_write_bw;
# then prints medians and gdrfab's ratio to each baseline.
#
#   tests/bench/run-bench.sh [ROUNDS]        (default 5)
#
# Under TCG emulation absolute numbers are meaningless and vary ~1.8x
# between boots: only the ratios, measured in one boot, mean anything.
set -euo pipefail
. "$(dirname "$0")/lib/bench-prelude.sh" "benchmark"
bench_build full
bench_vm 3000 -- bash "$here/bench-in-vm.sh" "${1:-5}"
