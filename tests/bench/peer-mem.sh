#!/bin/bash
# What a connected peer costs: Open MPI (mtl ofi) runs tests/mpi/mpi_alltoall
# (every rank sends 1 KiB to every other, data checked) at 8, 16, 32 and 64
# ranks over gdrfab and over verbs;ofi_rxm, interleaved round by round in
# one boot, and prints per size the medians over the rounds of the resident
# set's growth per connected peer (median and largest over the ranks) and of
# the first round's time (it sets up every connection), with the ratios.
#
#   tests/bench/peer-mem.sh [ROUNDS [RANKS...]]     (default 3; 8 16 32 64)
#
# A benchmark, not a test: CI runs the 32-rank all-to-all for correctness
# (tests/consumers/check-openmpi.sh).
set -euo pipefail
. "$(dirname "$0")/lib/bench-prelude.sh" "peer memory benchmark"
bench_need mpicc "scripts/install-deps.sh installs libopenmpi-dev"
bench_build missing
mkdir -p "$top/build/tests/mpi"
mpicc -std=c11 -O1 -Wall -Wextra -Werror "$top/tests/mpi/mpi_alltoall.c" \
	-o "$top/build/tests/mpi/mpi_alltoall"
bench_vm 5400 -- bash "$here/peer-mem-in-vm.sh" "$@"
