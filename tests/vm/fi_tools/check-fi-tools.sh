#!/bin/bash
# libfabric's own tools against gdrfab, inside the VM: fi_info lists both
# rxe devices with NIC attributes and the parameters and honours hints;
# fi_pingpong runs messages of 1 B to 1 MiB both ways, data checked, in
# msg and tagged modes. Prints one PASS/FAIL line per check and
# "fi_info: N passed, M failed".
set -u
suite=fi_info
. "$(dirname "$0")/../runner/check-lib.sh"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# Under the sanitizers (tests/sanitize/run-sanitized.sh vm), libfabric's
# tools load a provider built with them: their runtimes go first, for the
# tools only, never for the shell and grep around them. Wrappers first in
# PATH, so that env and timeout find them too.
if [ -n "${GDRFAB_SAN_PRELOAD:-}" ]; then
	wrap=$(mktemp -d)
	trap 'rm -rf "$out" "$wrap"' EXIT
	for tool in fi_info fi_pingpong; do
		printf '#!/bin/sh\nLD_PRELOAD="%s" exec "%s" "$@"\n' \
			"$GDRFAB_SAN_PRELOAD" "$(command -v "$tool")" >"$wrap/$tool"
		chmod +x "$wrap/$tool"
	done
	PATH=$wrap:$PATH
fi

fi_info -p gdrfab >"$out" 2>&1
cat "$out"
check "lists rxe0 and rxe1" grep -q "domain: rxe1" "$out"
check "lists rxe0" grep -q "domain: rxe0" "$out"
check "names the provider gdrfab" grep -q "provider: gdrfab$" "$out"
check "RDM endpoints" grep -q "type: FI_EP_RDM" "$out"

fi_info -p gdrfab -v >"$out" 2>&1
check "-v prints the NIC's device attributes" grep -q "driver: rdma_rxe" "$out"
check "-v prints the link attributes" grep -q "address: 192.0.2.2" "$out"
check "-v prints both NICs" test "$(grep -c 'fi_device_attr:' "$out")" -eq 2

fi_info -p gdrfab -d rxe1 >"$out" 2>&1
check "-d rxe1 selects one domain" test "$(grep -c 'domain: ' "$out")" -eq 1
check "-d rxe1 is rxe1" grep -q "domain: rxe1" "$out"
check "-t FI_EP_RDM matches" bash -c "fi_info -p gdrfab -t FI_EP_RDM >/dev/null"
check "-t FI_EP_DGRAM does not match" bash -c '! fi_info -p gdrfab -t FI_EP_DGRAM >/dev/null 2>&1'
check "-t FI_EP_MSG does not match" bash -c '! fi_info -p gdrfab -t FI_EP_MSG >/dev/null 2>&1'
check "-f names the fabric" bash -c "fi_info -p gdrfab -f RoCE-192.0.2.0/24 >/dev/null"
check "-a FI_SOCKADDR_IN matches (endpoints named by their service address)" bash -c "fi_info -p gdrfab -a FI_SOCKADDR_IN >/dev/null"
check "-c FI_ATOMIC matches (atomics are offered)" bash -c "fi_info -p gdrfab -c FI_ATOMIC >/dev/null"
if fi_info -p gdrfab -v | grep -A1 '^    caps:' | grep -q FI_TAGGED; then
	check "-c FI_TAGGED matches (advertised)" fi_info -p gdrfab -c FI_TAGGED
else
	check "-c FI_TAGGED does not match (not advertised)" bash -c '! fi_info -p gdrfab -c FI_TAGGED >/dev/null 2>&1'
fi
FI_PROVIDER=gdrfab fi_info >"$out" 2>&1
check "FI_PROVIDER=gdrfab selects it" grep -q "provider: gdrfab$" "$out"

fi_info -e >"$out" 2>&1
for p in DEVICE GID_INDEX TX_SIZE RX_SIZE CQ_SIZE EAGER_MAX RX_BUFS TX_BUFS CONN_TIMEOUT_MS PEER_TIMEOUT_MS TOPO_FILE GPU NIC_MAP RAILS STRIPE_MIN GDR_LEVEL CUDA_REG CUDA_FLUSH MR_CACHE_ENABLE MR_CACHE_MAX_SIZE MR_CACHE_MAX_COUNT KMOD_COPY_MAX STAGE_CHUNK NIC_ATOMICS RELAXED_ORDERING; do
	check "-e lists FI_GDRFAB_$p" grep -q "FI_GDRFAB_$p" "$out"
done
# FI_HMEM only where GPU memory can be moved: not without CUDA; with the
# CUDA stand-in (tests/cuda) the staged path works on rxe.
standin=$PWD/tests/cuda/.libs
fi_info -p gdrfab -v >"$out" 2>&1
check "no CUDA: FI_HMEM not offered" bash -c "! grep -q FI_HMEM '$out'"
LD_LIBRARY_PATH=$standin fi_info -p gdrfab -v >"$out" 2>&1
check "CUDA (stand-in): FI_HMEM offered" grep -q "FI_HMEM" "$out"
check "CUDA (stand-in): FI_MR_HMEM in mr_mode" grep -q "FI_MR_HMEM" "$out"
check "no CUDA (cuInit fails): FI_HMEM not offered" bash -c \
	"! GDRFAB_STANDIN_INIT_FAIL=1 LD_LIBRARY_PATH='$standin' fi_info -p gdrfab -v | grep -q FI_HMEM"

# fi_info's order for this process's GPU on a saved topology: in
# tests/topo/fixtures/vm-rxe.xml rxe1 shares a PCIe switch with the GPU at
# 80:00.0 (the stand-in's device 0), rxe0 hangs from the host bridge of the
# one at 81:00.0 (device 1), across the other socket from the first.
topo=$(cd "$(dirname "$0")/../../topo/fixtures" && pwd)/vm-rxe.xml
first_domain() {
	env FI_GDRFAB_TOPO_FILE="$topo" "$@" fi_info -p gdrfab | awk '/domain:/ { print $2; exit }'
}
order() { # expected first domain, then environment assignments
	local want=$1
	shift
	check "order: $* puts $want first" test "$(first_domain "$@")" = "$want"
}
order rxe1 FI_GDRFAB_GPU=0
order rxe0 FI_GDRFAB_GPU=0000:81:00.0
order rxe0 OMPI_COMM_WORLD_LOCAL_RANK=1
order rxe1 SLURM_LOCALID=2
order rxe0 FI_GDRFAB_GPU=0 FI_GDRFAB_NIC_MAP=gpu0=rxe0
# The GPU of the application's current CUDA context wins.
order rxe0 LD_LIBRARY_PATH="$standin" GDRFAB_STANDIN_DEVICES=2 GDRFAB_STANDIN_CURRENT_DEV=1 FI_GDRFAB_GPU=0

# The project's pingpong with GPU buffers (-D cuda): staged over rxe. The
# arguments are sizes, then environment assignments for both sides.
pp_port=47690
cuda_pingpong() {
	local port=$((pp_port++)) sizes=$1
	shift
	env LD_LIBRARY_PATH="$standin" "$@" ./examples/gdrfab_pingpong -D cuda -d rxe0 -P $port -c -i 5 -s "$sizes" >"$out.srv" 2>&1 &
	for _ in $(seq 200); do
		ss -ltn | grep -q ":$port " && break
		sleep 0.05
	done
	env LD_LIBRARY_PATH="$standin" "$@" timeout 120 ./examples/gdrfab_pingpong -D cuda -d rxe1 -P $port -c -i 5 -s "$sizes" 192.0.2.1 >"$out" 2>&1
	local rc=$?
	wait $! || rc=1
	grep -q "^ *${sizes##*,} " "$out" || rc=1
	[ $rc = 0 ] || cat "$out" "$out.srv"
	return $rc
}
check "gdrfab_pingpong -D cuda (stand-in, staged)" cuda_pingpong 1,8192,65536,1048576
cat "$out"
# FI_GDRFAB_GDR_LEVEL: device 0 is SYS from rxe0, the server's NIC: past
# PXB it is staged for that reason; at SYS the class allows GPUDirect and
# only the missing dma-buf/peermem support stages it.
staged_for_its_class() {
	cuda_pingpong 1 FI_GDRFAB_TOPO_FILE="$topo" FI_LOG_LEVEL=info &&
		grep -q 'rxe0: GPU memory staged through host buffers: GPU gpu0 (0000:80:00.0) to rxe0 is SYS, farther than FI_GDRFAB_GDR_LEVEL=PXB' "$out.srv"
}
within_level() {
	cuda_pingpong 1 FI_GDRFAB_TOPO_FILE="$topo" FI_LOG_LEVEL=info FI_GDRFAB_GDR_LEVEL=sys &&
		grep -q 'rxe0: GPU gpu0 (0000:80:00.0) to rxe0 is SYS: within FI_GDRFAB_GDR_LEVEL' "$out.srv" &&
		! grep -q 'farther than' "$out.srv"
}
check "GDR_LEVEL=PXB (default): a SYS GPU is staged for its class" staged_for_its_class
check "GDR_LEVEL=sys: a SYS GPU is within the level" within_level

# fi_pingpong: server on rxe0, client on rxe1 (its control socket comes
# up within seconds: wait for it, do not sleep).
pingpong() {
	local mode=$1 size=$2 port=$3
	fi_pingpong -p gdrfab -e rdm -m "$mode" -d rxe0 -B "$port" -I 10 -S "$size" -c >"$out.srv" 2>&1 &
	wait_port "$port"
	timeout 120 fi_pingpong -p gdrfab -e rdm -m "$mode" -d rxe1 -P "$port" -I 10 -S "$size" -c 192.0.2.1 >"$out" 2>&1
	local rc=$?
	wait $! || rc=1
	# Its result line: "<size> 10 =10 ..." (sizes written as 4k, 1m).
	local label=$size
	[ "$size" -ge 1024 ] && label=$((size / 1024))k
	[ "$size" -ge 1048576 ] && label=$((size / 1048576))m
	grep -q "^$label *10 *=10 " "$out" || rc=1
	[ $rc = 0 ] || { cat "$out" "$out.srv"; }
	return $rc
}
port=47600
for mode in msg tagged; do
	for size in 1 64 4096 65536 1048576; do
		port=$((port + 1))
		check "fi_pingpong -m $mode -S $size" pingpong $mode $size $port
	done
done
rm -f "$out.srv"

totals
