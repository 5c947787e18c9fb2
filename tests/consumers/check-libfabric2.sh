#!/bin/bash
# Inside the VM, from the build directory, with libfabric 2.6 in $1: its
# fi_info finds gdrfab, which answers for API 2.6; its fi_pingpong moves
# messages through gdrfab; gdrfab's examples built against 2.6 move tagged
# messages and RDMA writes, data checked, and (the baseline that this
# runtime works) tagged messages through its verbs;ofi_rxm. Prints "libfabric2: N passed, M
# failed".
set -u
lf=$1
suite=libfabric2
. "$(dirname "$0")/../vm/runner/check-lib.sh"
export LD_LIBRARY_PATH=$lf/lib PATH=$lf/bin:$PATH
export FI_PROVIDER_PATH=$PWD/.libs
export FI_UNIVERSE_SIZE=64 # verbs;ofi_rxm's CQs beyond rxe's limit otherwise
out=$(mktemp)
trap 'rm -f "$out" "$out.srv"' EXIT

check "fi_info is libfabric 2.6.0" bash -c "fi_info --version | grep -q '^libfabric: 2.6.0'"
FI_LOG_LEVEL=info FI_LOG_PROV=gdrfab fi_info -p gdrfab >"$out" 2>&1
check "fi_info -p gdrfab lists rxe0 and rxe1" \
	bash -c "grep -q 'domain: rxe0' '$out' && grep -q 'domain: rxe1' '$out'"
check "gdrfab answers for API 2.6" grep -q "answering for API 2.6" "$out"
grep -E "answering|fi_version|skipp" "$out" | head -n 5

# run PROVIDER MODE SIZE PORT: libfabric 2.6's fi_pingpong, data checked.
pingpong() {
	local prov=$1 mode=$2 size=$3 port=$4 rc=0
	fi_pingpong -p "$prov" -e rdm -m "$mode" -d rxe0 -B "$port" -I 10 -S "$size" -c >"$out.srv" 2>&1 &
	wait_port "$port"
	timeout 120 fi_pingpong -p "$prov" -e rdm -m "$mode" -d rxe1 -P "$port" -I 10 -S "$size" -c \
		192.0.2.1 >"$out" 2>&1 || rc=$?
	wait $! || rc=1
	grep -q " 10 *=10 " "$out" || rc=1
	[ $rc = 0 ] || cat "$out" "$out.srv"
	return $rc
}
port=47700
for mode in msg tagged; do
	for size in 1 4096 1048576; do
		port=$((port + 1))
		check "fi_pingpong 2.6 -p gdrfab -m $mode -S $size" pingpong gdrfab $mode $size $port
	done
done

# run PROGRAM MODE [PROVIDER]: an example built against 2.6 (asking for
# API 2.6); names travel out of band, as a launcher passes them.
example() {
	local prog=$1 mode=$2 prov=${3:-gdrfab} rc=0
	"$lf/examples/$prog" -p "$prov" -m "$mode" -d rxe0 -s 8,65536,1048576 -c >"$out.srv" 2>&1 &
	wait_port 47593
	timeout 120 "$lf/examples/$prog" -p "$prov" -m "$mode" -d rxe1 -s 8,65536,1048576 -c \
		192.0.2.1 >"$out" 2>&1 || rc=$?
	wait $! || rc=1
	[ "$(grep -c '^ *[0-9]' "$out")" = 3 ] || rc=1
	[ $rc = 0 ] || cat "$out" "$out.srv"
	return $rc
}
check "gdrfab_pingpong built for API 2.6: tagged, data checked" example gdrfab_pingpong tagged
check "gdrfab_bw built for API 2.6: fi_write, data checked" example gdrfab_bw rma
# The same program over this runtime's verbs;ofi_rxm: the runtime works.
check "gdrfab_pingpong built for API 2.6 over verbs;ofi_rxm" example gdrfab_pingpong tagged "verbs;ofi_rxm"
# aws-ofi-nccl's sendrecv protocol replayed (tests/vm/hmem/test_nccl_replay.c)
# under this core: its first request, API 1.18, now reaches gdrfab, and so
# does its FI_OPT_CUDA_API_PERMITTED (refused on rxe, where GPU memory is
# staged with CUDA copies).
# output_has PATTERN COMMAND...: COMMAND exits 0 and prints PATTERN (its
# output in $out, shown when it fails).
output_has() {
	local pattern=$1 rc
	shift
	"$@" >"$out" 2>&1
	rc=$?
	grep -q "$pattern" "$out" || rc=1
	[ $rc = 0 ] || cat "$out"
	return $rc
}
replay() {
	LD_LIBRARY_PATH=$lf/lib:$PWD/tests/cuda/.libs FI_LOG_LEVEL=info FI_LOG_PROV=gdrfab \
		output_has "FI_OPT_CUDA_API_PERMITTED=false" \
		./tests/vm/hmem/gdrfab_hmem_tests --color=never --filter "nccl/*"
}
check "aws-ofi-nccl sendrecv replay under API 2.6, CUDA stand-in" replay
# The same over peermem-style GPU memory, where gdrfab accepts
# FI_OPT_CUDA_API_PERMITTED=false (suite nccl_gdr: the stand-in counts any
# CUDA call gdrfab makes); under the 1.17 runtime it skips, the plugin's
# option being compiled out.
replay_gdr() {
	LD_LIBRARY_PATH=$lf/lib:$PWD/tests/cuda/.libs \
		output_has "Synthesis: Tested: 1 | Passing: 1" \
		./tests/vm/hmem/gdrfab_hmem_tests --color=never --filter "nccl_gdr/*"
}
check "aws-ofi-nccl sendrecv replay with GDR under API 2.6, no CUDA call" replay_gdr
# Its rdma protocol replayed (tests/vm/hmem/test_nccl_rdma_replay.c): it asks
# API 1.18 with no fallback, so only a 1.18+ core runs it as the plugin
# does: control messages by RDMA write into the sender's mailbox,
# fi_writedata into GPU buffers, eager sends copied by a read to self, the
# flush read, staged and peermem-style.
rdma_replay() {
	LD_LIBRARY_PATH=$lf/lib:$PWD/tests/cuda/.libs \
		output_has "replaying at API 1.18" ./tests/vm/hmem/gdrfab_hmem_tests \
		--color=never --verbose --filter "nccl_rdma/*"
}
check "aws-ofi-nccl rdma replay under API 2.6, CUDA stand-in" rdma_replay
# MPICH ch4:ofi's provider search (tests/vm/api/test_mpich_search.c) under
# this core: gdrfab is picked, with its own caps, at the first attempt
# without CUDA (its atomics give the ordering MPICH asks).
mpich_search() {
	output_has "mpich: gdrfab chosen at attempt" ./tests/vm/api/gdrfab_vm_tests \
		--color=never --verbose --filter "mpich/*"
	local rc=$?
	grep "\] mpich: " "$out" | sed 's/^\[----\] /    /'
	return $rc
}
check "MPICH ch4:ofi's provider search picks gdrfab under API 2.6" mpich_search
totals
