#!/bin/bash
# The host registration cache's benchmark: boots the soft-RoCE VM once and
# measures rendezvous-size tagged messages whose buffers are passed with
# NULL descriptors (gdrfab_pingpong -N, gdrfab_bw -N) with the host cache
# on (FI_GDRFAB_HOST_MR_CACHE=uffd) and off (a registration per
# operation), interleaved round by round; prints medians and the ratios.
#
#   tests/bench/host-cache-bench.sh [ROUNDS]     (default 5)
#
# Under TCG only ratios measured in one boot mean anything.
set -euo pipefail
. "$(dirname "$0")/lib/bench-prelude.sh" "host cache benchmark"
bench_vm 3000 -- bash "$here/host-cache-in-vm.sh" "${1:-5}"
