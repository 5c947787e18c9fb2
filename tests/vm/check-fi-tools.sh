#!/bin/bash
# libfabric's own tools against gdrfab, inside the VM: fi_info lists both
# rxe devices with NIC attributes and the parameters and honours hints;
# fi_pingpong runs messages of 1 B to 1 MiB both ways, data checked, in
# msg and tagged modes. Prints one PASS/FAIL line per check and
# "fi_info: N passed, M failed".
set -u
pass=0 fail=0
check() {
	local what=$1
	shift
	if "$@"; then
		echo "PASS: fi_info: $what"
		pass=$((pass + 1))
	else
		echo "FAIL: fi_info: $what"
		fail=$((fail + 1))
	fi
}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

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
check "-a FI_SOCKADDR_IN does not match" bash -c '! fi_info -p gdrfab -a FI_SOCKADDR_IN >/dev/null 2>&1'
check "-c FI_ATOMIC does not match" bash -c '! fi_info -p gdrfab -c FI_ATOMIC >/dev/null 2>&1'
if fi_info -p gdrfab -v | grep -A1 '^    caps:' | grep -q FI_TAGGED; then
	check "-c FI_TAGGED matches (advertised)" fi_info -p gdrfab -c FI_TAGGED
else
	check "-c FI_TAGGED does not match (not advertised)" bash -c '! fi_info -p gdrfab -c FI_TAGGED >/dev/null 2>&1'
fi
FI_PROVIDER=gdrfab fi_info >"$out" 2>&1
check "FI_PROVIDER=gdrfab selects it" grep -q "provider: gdrfab$" "$out"

fi_info -e >"$out" 2>&1
for p in DEVICE GID_INDEX TX_SIZE RX_SIZE CQ_SIZE EAGER_MAX RX_BUFS TX_BUFS CONN_TIMEOUT_MS PEER_TIMEOUT_MS TOPO_FILE GPU NIC_MAP CUDA_REG CUDA_FLUSH MR_CACHE_ENABLE MR_CACHE_MAX_SIZE MR_CACHE_MAX_COUNT KMOD_COPY_MAX; do
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

# The project's pingpong with GPU buffers (-D cuda): staged over rxe.
cuda_pingpong() {
	local port=47690
	LD_LIBRARY_PATH=$standin ./examples/gdrfab_pingpong -D cuda -d rxe0 -P $port -c -i 5 -s 1,8192,65536,1048576 >"$out.srv" 2>&1 &
	for _ in $(seq 200); do
		ss -ltn | grep -q ":$port " && break
		sleep 0.05
	done
	LD_LIBRARY_PATH=$standin timeout 120 ./examples/gdrfab_pingpong -D cuda -d rxe1 -P $port -c -i 5 -s 1,8192,65536,1048576 192.0.2.1 >"$out" 2>&1
	local rc=$?
	wait $! || rc=1
	cat "$out"
	grep -q "^ *1048576 " "$out" || rc=1
	[ $rc = 0 ] || cat "$out.srv"
	return $rc
}
check "gdrfab_pingpong -D cuda (stand-in, staged)" cuda_pingpong

# fi_pingpong: server on rxe0, client on rxe1 (its control socket comes
# up within seconds: wait for it, do not sleep).
pingpong() {
	local mode=$1 size=$2 port=$3
	fi_pingpong -p gdrfab -e rdm -m "$mode" -d rxe0 -B "$port" -I 10 -S "$size" -c >"$out.srv" 2>&1 &
	for _ in $(seq 200); do
		ss -ltn | grep -q ":$port " && break
		sleep 0.05
	done
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

echo "fi_info: $pass passed, $fail failed"
[ "$fail" = 0 ]
