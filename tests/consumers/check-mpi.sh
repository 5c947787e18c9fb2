#!/bin/bash
# Inside the VM, from the build directory: each MPI that run-mpi.sh made
# ready (named by the GDRFAB_MPI_* variables it exports) runs its checks:
# check-openmpi.sh, check-mpich.sh, check-impi.sh, each printing its own
# "NAME: N passed, M failed". GDRFAB_MPI_ONLY="mpich impi" runs some of
# them. Fails if any of them failed.
set -u
here=$(dirname "$0")
only=${GDRFAB_MPI_ONLY:-openmpi mpich impi}
status=0
wanted() { case " $only " in *" $1 "*) return 0 ;; esac; return 1; }
if wanted openmpi && [ -n "${GDRFAB_MPI_OPENMPI:-}" ]; then
	"$here/check-openmpi.sh" "$GDRFAB_MPI_OPENMPI" || status=1
fi
if wanted mpich && [ -n "${GDRFAB_MPI_MPICH:-}" ]; then
	"$here/check-mpich.sh" "$GDRFAB_MPI_MPICH_BIN" "$GDRFAB_MPI_MPICH" || status=1
fi
if wanted impi && [ -n "${GDRFAB_MPI_IMPI:-}" ]; then
	"$here/check-impi.sh" "$GDRFAB_MPI_MPICH_BIN" "$GDRFAB_MPI_IMPI" \
		"$GDRFAB_MPI_IMPI_LIBFABRIC" || status=1
fi
exit $status
