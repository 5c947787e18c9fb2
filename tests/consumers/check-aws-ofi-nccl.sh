#!/bin/bash
# Inside the VM, from the build directory, with libfabric 2.6 in $1 and the
# built aws-ofi-nccl in $2: the plugin, dlopen()ed by nccl_net_driver,
# initialises over gdrfab (FI_PROVIDER=gdrfab) with the CUDA stand-in as its
# CUDA (libcudart's entry points into the stand-in libcuda.so.1), and moves
# host buffers through its net API with its sendrecv protocol. Its rdma
# protocol cannot start here, which is shown, not counted: it groups NICs
# by their PCI address (nccl_ofi_topo.cpp), and rxe has none. Then the
# same with GDR: over peermem (the stand-in's GPU memory made registrable
# by rxe), gdrfab accepts the plugin's FI_OPT_CUDA_API_PERMITTED=false,
# and the plugin must keep GPUDirect on (NCCL_PTR_CUDA in its properties,
# no "disabling GDR" line). Prints
# "aws-ofi-nccl: N passed, M failed".
set -u
lf=$1 plugin=$2
suite=aws-ofi-nccl
. "$(dirname "$0")/../vm/runner/check-lib.sh"
export LD_LIBRARY_PATH=$lf/lib:$PWD/tests/cuda/.libs
export FI_PROVIDER_PATH=$PWD/.libs FI_PROVIDER=gdrfab
# NCCL makes the GPU's context current before calling the plugin.
export GDRFAB_STANDIN_CURRENT_DEV=0
export NCCL_DEBUG=INFO
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# The plugin derives its node ID from a routable interface and skips
# veth*, which is all the VM has: a dummy interface stands in for the
# host's real one.
if ! ip link show nccl0 >/dev/null 2>&1; then
	ip link add nccl0 type dummy && ip addr add 198.51.100.1/32 dev nccl0 &&
		ip link set nccl0 up
fi

# drive PROTOCOL: the net API over gdrfab, every message checked.
drive() {
	local rc=0
	OFI_NCCL_PROTOCOL=$1 timeout 120 "$plugin/nccl_net_driver" \
		"$plugin/lib/libnccl-net-ofi.so" >"$out" 2>&1 || rc=$?
	sed 's/^/    /' "$out"
	grep -q "^nccl-net: [1-9][0-9]* passed, 0 failed" "$out" || rc=1
	grep -q "Selected provider is gdrfab" "$out" || rc=1
	return $rc
}
check "the plugin's sendrecv protocol over gdrfab: init, listen/connect/accept, 0 B - 4 MiB host buffers" drive SENDRECV
echo "aws-ofi-nccl's rdma protocol (not counted; rxe NICs have no PCI address):"
OFI_NCCL_PROTOCOL=RDMA timeout 120 "$plugin/nccl_net_driver" "$plugin/lib/libnccl-net-ofi.so" 2>&1 |
	grep -E "PCI attributes|topo creation|FAIL|PASS" | sed 's/^/    /'

# drive_gdr PROTOCOL: as drive, on a peermem domain, GPUDirect kept on.
drive_gdr() {
	local rc=0
	FI_GDRFAB_CUDA_REG=peermem GDRFAB_STANDIN_CPU_VISIBLE=1 \
		NCCL_NET_DRIVER_EXPECT_GDR=1 drive "$1" || rc=1
	if grep -q "disabling GDR" "$out"; then
		echo "    the plugin turned GDR off"
		rc=1
	fi
	return $rc
}
check "the plugin's sendrecv protocol with GDR (peermem): FI_OPT_CUDA_API_PERMITTED=false accepted, NCCL_PTR_CUDA reported, 0 B - 4 MiB" drive_gdr SENDRECV
echo "aws-ofi-nccl's rdma protocol with GDR (not counted; rxe NICs have no PCI address):"
FI_GDRFAB_CUDA_REG=peermem GDRFAB_STANDIN_CPU_VISIBLE=1 OFI_NCCL_PROTOCOL=RDMA \
	timeout 120 "$plugin/nccl_net_driver" "$plugin/lib/libnccl-net-ofi.so" 2>&1 |
	grep -E "GDR|PCI attributes|topo creation|FAIL|PASS" | sed 's/^/    /'
totals
