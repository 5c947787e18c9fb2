#!/bin/bash
# Where eager should stop under MPI (issue 34's mid-size range): OSU 5.3's
# osu_latency through Open MPI 4.1 (pml cm, mtl ofi), 2 ranks on rxe0/rxe1,
# over verbs;ofi_rxm and over gdrfab with FI_GDRFAB_EAGER_MAX at 8, 16, 32
# and 64 KiB (everything up to it eager through bounce buffers of that
# size, larger by rendezvous), interleaved round by round in one boot, the
# order rotating. Prints per size from 4 KiB to 512 KiB the median of the
# rounds for each, and each gdrfab setting's ratio to rxm. A benchmark,
# not a test. Another setting can be swept the same way:
# GDRFAB_SWEEP_VAR (default FI_GDRFAB_EAGER_MAX) and GDRFAB_SWEEP_VALUES
# (bytes, default "8192 16384 32768 65536"), e.g.
#   GDRFAB_SWEEP_VAR=FI_GDRFAB_SEG_MAX GDRFAB_SWEEP_VALUES="0 65536 131072"
#
#   tests/bench/osu-eager-sweep.sh [ROUNDS]     (default 3)
set -euo pipefail
. "$(dirname "$0")/lib/bench-prelude.sh" "OSU eager sweep"
bench_build full
"$here/build-osu.sh" "$top/build/osu-5.3"
bench_vm 3000 -- bash "$here/osu-eager-in-vm.sh" "${1:-3}" "$top/build/osu-5.3"
