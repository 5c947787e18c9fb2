#!/bin/bash
# Three MPIs over gdrfab, the way their users get them, in one VM boot:
# - Open MPI 4.1, Debian's (openmpi-bin, libopenmpi-dev);
# - MPICH 5.0.2, PyPI's wheel (ch4:ofi with its own libfabric 2.5.1);
# - Intel MPI 2021.19, PyPI's impi-rt wheel, on the project's libfabric
#   2.6 (tests/consumers/build-libfabric2.sh; the wheel has none).
# Each builds the project's MPI programs (tests/mpi/) with its own mpicc:
# Open MPI's and MPICH's wrappers; impi-rt ships no compiler wrapper or
# headers, and Intel MPI keeps MPICH's ABI (libmpi.so.12), so it runs the
# MPICH-built programs with its own libmpi.so.12 first on the library path.
# The wheels are fetched by pip into build/wheels once (get-wheel.sh).
# Inside the VM, tests/consumers/check-mpi.sh runs them over gdrfab and
# over verbs;ofi_rxm as the baseline. An MPI that cannot run here skips by
# name ("SKIP: mpich: why"); exit 77 when none can.
set -u
. "$(dirname "$0")/../vm/runner/vm-prelude.sh" "MPIs over gdrfab"
bin=$PWD/tests/mpi
wheels=$PWD/wheels
ready=0
mkdir -p "$bin"

# build MPICC DIR: the MPI programs into DIR with that compiler wrapper.
build() {
	mkdir -p "$2" || return 1
	for prog in mpi_p2p mpi_osc mpi_alltoall; do
		"$1" -std=c11 -O1 -Wall -Wextra -Werror "$srcdir/tests/mpi/$prog.c" -o "$2/$prog" || return 1
	done
}

if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
	echo "SKIP: openmpi: no mpicc/mpirun (scripts/install-deps.sh installs openmpi-bin and libopenmpi-dev)"
else
	build mpicc "$bin" || exit 1
	export GDRFAB_MPI_OPENMPI=$bin
	ready=$((ready + 1))
fi

mpich=$("$srcdir/tests/consumers/get-wheel.sh" mpich mpich==5.0.2 "$wheels")
case $? in
0)
	# Its wrapper finds its prefix from where it sits, and links with a
	# RUNPATH to the wheel's lib/.
	build "$mpich/bin/mpicc" "$bin/mpich" || exit 1
	export GDRFAB_MPI_MPICH=$mpich GDRFAB_MPI_MPICH_BIN=$bin/mpich
	ready=$((ready + 1))
	;;
77) echo "$mpich" ;;
*) exit 1 ;;
esac

impi=$("$srcdir/tests/consumers/get-wheel.sh" "Intel MPI" impi-rt==2021.19.0 "$wheels")
case $? in
0)
	lf=$builddir/libfabric-2.6
	"$srcdir/tests/consumers/build-libfabric2.sh" "$lf" >"$builddir/libfabric-2.6.out" 2>&1
	case $? in
	0)
		if [ -z "${GDRFAB_MPI_MPICH_BIN:-}" ]; then
			echo "SKIP: Intel MPI: its wheel has no headers or mpicc, and MPICH's (whose ABI it keeps) did not come"
		else
			export GDRFAB_MPI_IMPI=$impi GDRFAB_MPI_IMPI_LIBFABRIC=$lf
			ready=$((ready + 1))
		fi
		;;
	77) grep '^SKIP: ' "$builddir/libfabric-2.6.out" | sed 's/^SKIP: [^:]*:/SKIP: Intel MPI: no libfabric >= 2.6 to run on:/' ;;
	*) cat "$builddir/libfabric-2.6.out"; exit 1 ;;
	esac
	;;
77) echo "$impi" ;;
*) exit 1 ;;
esac

[ "$ready" -gt 0 ] || exit 77
exec "$srcdir/tests/vm/runner/vm-run" --timeout "${GDRFAB_VM_TIMEOUT:-900}" -- \
	"$srcdir/tests/consumers/check-mpi.sh"
