#!/bin/bash
# Where a small message's round trip goes, in one boot of the soft-RoCE
# VM: tests/bench/lat_parts (gdrfab_pingpong's tagged round trip, each
# side stamping its steps; write_stamp.so times the write(2) in which rxe's
# kernel driver runs a send) over gdrfab and over verbs;ofi_rxm, and
# perftest's ib_send_lat at the same payload as the floor. Interleaved
# rounds; medians. A benchmark, not a test.
#
#   tests/bench/lat-parts.sh [ROUNDS] [SIZES]   (default 5, "8 1024")
#   GDRFAB_LAT_BEFORE=DIR ...: an earlier build's libgdrfab-fi.so too
#
# What it tells: "own" is what the provider and the program spend on the
# round trip's critical path (both sides' send, receive poll and turn);
# "rest" is the round trip less that: the kernel's two deliveries and the
# polls' delay in seeing them, which every provider pays alike on rxe.
set -euo pipefail
. "$(dirname "$0")/lib/bench-prelude.sh" "latency parts"
bench_need ib_send_lat "perftest: scripts/install-deps.sh"
bench_build missing
make -s -C "$top/build" tests/bench/lat_parts tests/bench/write_stamp.la
if [ -n "${GDRFAB_LAT_BEFORE:-}" ]; then
	GDRFAB_LAT_BEFORE=$(cd "$GDRFAB_LAT_BEFORE" && pwd)
	export GDRFAB_LAT_BEFORE
fi
bench_vm 3000 -- \
	bash "$here/lat-parts-in-vm.sh" "${1:-5}" "${2:-8 1024}"
