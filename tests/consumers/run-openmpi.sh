#!/bin/bash
# Open MPI (Debian's 4.1) over gdrfab: builds the project's MPI test
# programs (tests/mpi/) with mpicc and runs them inside the VM through
# Open MPI's mtl ofi, for gdrfab and for verbs;ofi_rxm as the baseline
# (tests/consumers/check-openmpi.sh). Exit 77 when it cannot run here.
set -u
. "$(dirname "$0")/../vm/runner/vm-prelude.sh" "Open MPI over gdrfab"
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
	echo "SKIP: Open MPI over gdrfab: no mpicc/mpirun (scripts/install-deps.sh installs openmpi-bin and libopenmpi-dev)"
	exit 77
fi
mkdir -p tests/mpi
for prog in mpi_p2p mpi_osc; do
	mpicc -std=c11 -O1 -Wall -Wextra -Werror "$srcdir/tests/mpi/$prog.c" -o "tests/mpi/$prog" || exit 1
done
exec "$srcdir/tests/vm/runner/vm-run" --timeout "${GDRFAB_VM_TIMEOUT:-1200}" -- \
	"$srcdir/tests/consumers/check-openmpi.sh" "$PWD/tests/mpi"
