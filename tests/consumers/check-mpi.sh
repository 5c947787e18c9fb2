#!/bin/bash
# Inside the VM, from the build directory: each MPI that run-mpi.sh made
# ready (named by the GDRFAB_MPI_* variables it exports) runs its checks:
# check-openmpi.sh, check-mpich.sh, check-impi.sh, each printing its own
# "NAME: N passed, M failed", and how long it took ("mpich: 32 s in the
# VM"). GDRFAB_MPI_ONLY="mpich impi" runs some of them. Fails if any of
# them failed.
set -u
here=$(dirname "$0")
only=${GDRFAB_MPI_ONLY:-openmpi mpich impi}
status=0
wanted() { case " $only " in *" $1 "*) return 0 ;; esac; return 1; }
# timed NAME COMMAND...: runs it and says how long it took.
timed() {
	local start=$SECONDS rc=0
	"${@:2}" || rc=$?
	echo "$1: $((SECONDS - start)) s in the VM"
	return $rc
}
if wanted openmpi && [ -n "${GDRFAB_MPI_OPENMPI:-}" ]; then
	timed openmpi "$here/check-openmpi.sh" "$GDRFAB_MPI_OPENMPI" || status=1
fi
if wanted mpich && [ -n "${GDRFAB_MPI_MPICH:-}" ]; then
	timed mpich "$here/check-mpich.sh" "$GDRFAB_MPI_MPICH_BIN" "$GDRFAB_MPI_MPICH" || status=1
fi
if wanted impi && [ -n "${GDRFAB_MPI_IMPI:-}" ]; then
	timed impi "$here/check-impi.sh" "$GDRFAB_MPI_MPICH_BIN" "$GDRFAB_MPI_IMPI" \
		"$GDRFAB_MPI_IMPI_LIBFABRIC" || status=1
fi
exit $status
