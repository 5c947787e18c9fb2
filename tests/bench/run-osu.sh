#!/bin/bash
# The OSU micro-benchmarks' osu_latency and osu_bw (5.3, from
# ../shared/consumers) through Open MPI's mtl ofi, over gdrfab and over
# verbs;ofi_rxm, interleaved round by round in one boot of the soft-RoCE
# VM; prints per size the median of the rounds for each provider and
# gdrfab's ratio (latency: gdrfab / rxm, lower is better; bandwidth:
# gdrfab / rxm, higher is better). A benchmark, not a test.
#
#   tests/bench/run-osu.sh [ROUNDS]        (default 3; from anywhere)
#
# v5.3 has no -m, so both run every size up to its 4 MiB; iterations are
# cut (-i/-x) so that a round takes minutes under TCG, whose absolute
# numbers mean little: read the ratios.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
"$top/scripts/install-deps.sh"
"$top/scripts/build.sh"
cd "$top/build"
"$here/build-osu.sh" "$PWD/osu-5.3"
exec "$top/tests/vm/vm-run" --timeout 3000 -- bash "$here/osu-in-vm.sh" "${1:-3}" "$PWD/osu-5.3"
