#!/bin/bash
# Inside the VM, from the build directory: the MPI programs in $1, built by
# the MPICH 5.0.2 wheel unpacked at $2, under its Hydra mpiexec with ch4:ofi
# (MPICH_CH4_NETMOD=ofi) and the libfabric 2.5.1 it embeds: mpi_p2p and
# mpi_osc (whose RMA and atomics ch4:ofi hands the provider) over gdrfab on
# 2 and 4 ranks, then over verbs;ofi_rxm, the baseline, reported beside it.
# MPIR_CVAR_NOLOCAL=1 keeps same-node traffic off shared memory, on the
# provider. GDRFAB_MPI_CHECKS=osc (or p2p) runs one of the two programs.
# Prints "mpich: N passed, M failed" and the baseline's own line.
set -u
bin=$1 prefix=$2
. "$(dirname "$0")/../vm/runner/check-lib.sh"
# gdrfab's directory, and the wheel's own DL providers (verbs for the
# baseline): FI_PROVIDER_PATH replaces libfabric's default directory.
export FI_PROVIDER_PATH=$PWD/.libs:$prefix/lib/mpich/libfabric
export MPICH_CH4_NETMOD=ofi MPIR_CVAR_NOLOCAL=1
export FI_UNIVERSE_SIZE=64 # verbs;ofi_rxm's CQs beyond rxe's limit otherwise
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# run PROVIDERS RANKS PROGRAM [ARGS...]: Hydra starts the ranks here
# (-hosts localhost: the VM's own name resolves nowhere) and passes them
# the environment. MPICH's debug summary names the provider it took, and
# the lines in $want (set by the caller) must be in it too.
run() {
	local prov=$1 np=$2 rc=0 start=$SECONDS
	shift 2
	FI_PROVIDER=$prov MPIR_CVAR_DEBUG_SUMMARY=1 timeout 600 \
		"$prefix/bin/mpiexec" -hosts localhost -n "$np" "$@" >"$out" 2>&1 || rc=$?
	echo "    ($((SECONDS - start)) s)"
	mpi_outcome "$out" "$rc" "libfabric provider: ${prov%%,*}" "${want[@]}"
}
want=()
only=${GDRFAB_MPI_CHECKS:-all}
suite=mpich
if [ "$only" != osc ]; then
	check "mpi_p2p over gdrfab, 2 ranks (0 B to 64 MiB)" run gdrfab 2 "$bin/mpi_p2p"
	check "mpi_p2p over gdrfab, 4 ranks (0 B to 16 MiB)" run gdrfab 4 "$bin/mpi_p2p" 16777216
fi
if [ "$only" != p2p ]; then
	# ch4:ofi takes gdrfab's RMA and atomics for MPI's one-sided calls
	# (without them it would emulate all of it with active messages, and
	# mpi_osc would pass without one fi_write or fi_atomic).
	want=("MPIDI_OFI_ENABLE_RMA: 1" "MPIDI_OFI_ENABLE_ATOMICS: 1")
	check "mpi_osc over gdrfab (native RMA and atomics), 2 ranks" run gdrfab 2 "$bin/mpi_osc"
	check "mpi_osc over gdrfab (native RMA and atomics), 4 ranks" run gdrfab 4 "$bin/mpi_osc"
	want=()
fi
totals
status=$?
# The baseline is reported, not counted: its failure is verbs;ofi_rxm's.
if [ "$only" != osc ]; then
	baseline "mpi_p2p over verbs;ofi_rxm, 2 ranks (0 B to 16 MiB)" run "verbs,ofi_rxm" 2 "$bin/mpi_p2p" 16777216
fi
if [ "$only" != p2p ]; then
	baseline "mpi_osc over verbs;ofi_rxm, 2 ranks" run "verbs,ofi_rxm" 2 "$bin/mpi_osc"
fi
exit $status
