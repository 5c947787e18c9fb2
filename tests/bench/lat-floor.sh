#!/bin/bash
# Small-message latency against its floors, in one boot of the soft-RoCE
# VM: gdrfab_pingpong (tagged) over gdrfab and over verbs;ofi_rxm, and
# perftest's ib_send_lat (RC SEND/RECV, the floor of any provider that
# sends its messages as verbs SENDs, as both of them do) and ib_write_lat
# (RDMA WRITE, the receiver polling memory: the floor of an eager protocol
# that writes into the receiver's memory), and gdrfab_pingpong -m rma over
# gdrfab (fi_writedata: no copy at either end). perftest runs at the
# payload plus gdrfab's 40-byte header, the bytes gdrfab puts on the wire.
# Interleaved rounds, the order
# rotating; medians, and ratios of medians with the median of the rounds'
# own ratios in brackets. A benchmark, not a test.
#
#   tests/bench/lat-floor.sh [ROUNDS] [SIZES]   (default 7, "8 64 1024 4096")
#   GDRFAB_LAT_BEFORE=build/lat-before tests/bench/lat-floor.sh ...: this
#   build against the libgdrfab-fi.so in that directory (and rxm) instead
#
# What it tells: how much of a round trip is the provider's own work (the
# gap to ib_send_lat) and how much is rxe's (the floor itself), so where a
# cut can still come from.
set -euo pipefail
. "$(dirname "$0")/lib/bench-prelude.sh" "latency floors"
bench_need ib_send_lat "perftest: scripts/install-deps.sh"
bench_build missing
if [ -n "${GDRFAB_LAT_BEFORE:-}" ]; then
	GDRFAB_LAT_BEFORE=$(cd "$GDRFAB_LAT_BEFORE" && pwd)
	export GDRFAB_LAT_BEFORE
fi
bench_vm 3000 -- \
	bash "$here/lat-floor-in-vm.sh" "${1:-7}" "${2:-8 64 1024 4096}"
