#!/bin/bash
# Rail sets over real soft-RoCE (tests/vm/rails/rails-in-vm.sh): boots the
# VM once with GDRFAB_VM_RAILS=3, which gives it a second and a third veth
# pair with rxe2/rxe3 and rxe4/rxe5 (tests/vm/runner/guest-setup), and
# runs the checks there (two rails, then three):
# fi_info's rail-set domains, transfers of 1 B .. 16 MiB between rail
# sets, NICs alone and the two mixed, data checked, and the rxe counters'
# split of the striped ones, which the provider's public per-rail counters
# (FI_GDRFAB_STATS) must agree with. Exit 77 (automake's "skipped") when no VM can
# run here.
# The MPIs run mpi_p2p on rail sets too: Open MPI's mpicc and MPICH's
# wheel (fetched by get-wheel.sh, as tests/consumers/run-mpi.sh does)
# build it here; an MPI that is not there is a named skip inside.
set -u
. "$(dirname "$0")/../runner/vm-prelude.sh" "rails"
export GDRFAB_VM_RAILS=3
bin=$PWD/tests/vm/rails
mkdir -p "$bin"
if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
	mpicc -std=c11 -O1 -Wall -Wextra -Werror "$srcdir/tests/mpi/mpi_p2p.c" \
		-o "$bin/mpi_p2p.openmpi" || exit 1
	export GDRFAB_RAILS_OPENMPI=$bin/mpi_p2p.openmpi
fi
if mpich=$("$srcdir/tests/consumers/get-wheel.sh" mpich mpich==5.0.2 "$PWD/wheels"); then
	"$mpich/bin/mpicc" -std=c11 -O1 -Wall -Wextra -Werror "$srcdir/tests/mpi/mpi_p2p.c" \
		-o "$bin/mpi_p2p.mpich" || exit 1
	export GDRFAB_RAILS_MPICH=$mpich
fi
exec "$srcdir/tests/vm/runner/vm-run" --timeout "${GDRFAB_VM_TIMEOUT:-600}" -- \
	"$srcdir/tests/vm/rails/rails-in-vm.sh"
