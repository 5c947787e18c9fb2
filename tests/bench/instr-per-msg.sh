#!/bin/bash
# Instructions per message, gdrfab against verbs;ofi_rxm: a benchmark, not
# a test. Boots the soft-RoCE VM once and runs gdrfab_pingpong (tagged) over
# each provider with one side under valgrind's callgrind, counting only
# inside the example's ex_post and ex_wait (posting and progress; setup is
# not counted). Timing under TCG is too noisy to guide work; instruction
# counts are not.
#
#   tests/bench/instr-per-msg.sh [SIZES]          (default "8 4096")
#
# A side that waits for its peer polls an empty CQ: those polls are
# removed. Each side, its peer running natively, ends with
# GDRFAB_INSTR_IDLE (2000) polls of its drained CQ in the example's
# ex_idle_polls, counted apart: that measures one empty poll, and "work"
# is what remains once every poll that could not have found a completion
# is taken out. verbs;ofi_rxm connects on its first send, inside what is
# counted: each side is measured once more with 3x the iterations
# (GDRFAB_INSTR_LONG; 0: not), and the difference between the two leaves
# setup out. GDRFAB_INSTR_BEFORE=DIR measures the libgdrfab-fi.so in DIR
# beside this build's; GDRFAB_INSTR_BASELINE=0
# leaves rxm out. The row gdrfab-nohk is the same build with its
# housekeeping (connection timers and the UD CQ poll, which run once per
# millisecond, not per message) left out of the count: under callgrind a
# round trip takes milliseconds and pays for it each time, where on a
# real NIC hundreds of round trips share one (GDRFAB_INSTR_NOHK=0: not). The floor beside them: rdma-core's ibv_rc_pingpong under
# the same counting, setup taken out the same way (GDRFAB_INSTR_FLOOR=0:
# not). The callgrind files stay in build/instr-per-msg/ for
# callgrind_annotate --inclusive=yes.
set -euo pipefail
. "$(dirname "$0")/lib/bench-prelude.sh" "instructions per message"
bench_need valgrind "apt-get install valgrind"
bench_build missing
bench_vm 3000 -- bash "$here/instr-in-vm.sh" "${1:-8 4096}"
