#!/bin/bash
# Inside the VM, from the build directory: the MPI programs in $1 (built
# by MPICH's mpicc: Intel MPI keeps MPICH's ABI, and impi-rt has no
# compiler wrapper) under Intel MPI 2021.19 unpacked at $2, its own
# libmpi.so.12 first on the library path, its OFI layer on the libfabric
# 2.6 installed at $3 (I_MPI_OFI_LIBRARY; the wheel has none, and wants
# >= 2.6): mpi_p2p and mpi_osc over gdrfab on 2 and 4 ranks, I_MPI_FABRICS=ofi
# so same-node traffic takes the provider too, then IMB-MPI1 PingPong and
# Sendrecv (0 B to 64 KiB, few iterations) as a smoke check; then the
# programs over verbs;ofi_rxm, the baseline, reported beside it.
# GDRFAB_MPI_CHECKS=osc (or p2p) runs one of the two programs.
# Prints "impi: N passed, M failed".
set -u
bin=$1 prefix=$2 lf=$3
. "$(dirname "$0")/../vm/runner/check-lib.sh"
export I_MPI_ROOT=$prefix
export LD_LIBRARY_PATH=$prefix/lib:$lf/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export I_MPI_FABRICS=ofi I_MPI_OFI_LIBRARY=$lf/lib/libfabric.so.1
export FI_PROVIDER_PATH=$PWD/.libs
export FI_UNIVERSE_SIZE=64 # verbs;ofi_rxm's CQs beyond rxe's limit otherwise
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# run PROVIDER RANKS PROGRAM [ARGS...]: Hydra starts the ranks here
# (-hosts localhost: the VM's own name resolves nowhere); I_MPI_DEBUG=1
# names the provider it took.
run() {
	local prov=$1 np=$2 rc=0 start=$SECONDS
	shift 2
	FI_PROVIDER=$prov I_MPI_OFI_PROVIDER=${prov%%,*} I_MPI_DEBUG=1 timeout 600 \
		"$prefix/bin/mpiexec" -hosts localhost -n "$np" "$@" >"$out" 2>&1 || rc=$?
	echo "    ($((SECONDS - start)) s)"
	mpi_outcome "$out" "$rc" "libfabric provider: ${prov%%,*}"
}
# imb RANKS BENCHMARK...: IMB-MPI1 over gdrfab; it checks no data, so it
# passes when it exits 0 and printed its 64 KiB row for every benchmark.
imb() {
	local np=$1 rc=0 b
	shift
	FI_PROVIDER=gdrfab I_MPI_OFI_PROVIDER=gdrfab I_MPI_DEBUG=1 timeout 600 \
		"$prefix/bin/mpiexec" -hosts localhost -n "$np" "$prefix/bin/IMB-MPI1" \
		-msglog 0:16 -iter 20 -time 5 "$@" >"$out" 2>&1 || rc=$?
	sed 's/^/    /' "$out"
	grep -qF "libfabric provider: gdrfab" "$out" || rc=1
	for b in "$@"; do
		awk -v b="$b" '$0 ~ "Benchmarking " b " *$" { on = 1 } on && $1 == 65536 { found = 1 } END { exit !found }' "$out" || rc=1
	done
	return "$rc"
}
only=${GDRFAB_MPI_CHECKS:-all}
suite=impi
if [ "$only" != osc ]; then
	check "mpi_p2p over gdrfab, 2 ranks (0 B to 64 MiB)" run gdrfab 2 "$bin/mpi_p2p"
	check "mpi_p2p over gdrfab, 4 ranks (0 B to 16 MiB)" run gdrfab 4 "$bin/mpi_p2p" 16777216
fi
if [ "$only" != p2p ]; then
	check "mpi_osc over gdrfab, 2 ranks" run gdrfab 2 "$bin/mpi_osc"
	check "mpi_osc over gdrfab, 4 ranks" run gdrfab 4 "$bin/mpi_osc"
fi
check "IMB-MPI1 PingPong and Sendrecv over gdrfab, 2 ranks, 0 B to 64 KiB" imb 2 PingPong Sendrecv
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
