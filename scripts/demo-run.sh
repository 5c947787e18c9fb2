#!/bin/bash
# The demo's measurements (scripts/demo.sh runs this, inside the soft-RoCE
# VM or on this machine's own RDMA NIC), from the build directory:
#   scripts/demo-run.sh SERVER_DEVICE CLIENT_DEVICE SERVER_ADDRESS
# Two endpoints, a server and a client, move data through gdrfab and through
# libfabric's verbs;ofi_rxm over the same NICs, in turn: tagged ping-pong
# latency and fi_write bandwidth over a few sizes, every transfer's data
# checked by the receiver. Prints one table with gdrfab's ratio to rxm.
set -u
sdev=$1 cdev=$2 saddr=$3
export FI_PROVIDER_PATH=$PWD/.libs
# verbs;ofi_rxm sizes its CQs beyond soft-RoCE's limit of 32767 otherwise.
export FI_UNIVERSE_SIZE=64
sizes=8,4096,65536,1048576
port=47593
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# GPU buffers where CUDA and a GPU are here (gdrfab only: Debian's libfabric
# is built without CUDA, so verbs;ofi_rxm gets host buffers).
gpu=()
where="host memory"
if [ -e /dev/nvidiactl ] && ldconfig -p | grep -q 'libcuda\.so\.1'; then
	gpu=(-D cuda)
	where="GPU memory for gdrfab (FI_HMEM_CUDA), host memory for verbs;ofi_rxm"
fi

# wait_port: the examples' server is up (tests/vm/runner/check-lib.sh).
. "$(dirname "$0")/../tests/vm/runner/check-lib.sh"

# run PROGRAM PROVIDER MODE NAME [EXTRA...]: a server and a client (the
# examples choose the iterations per size), the client's table saved as NAME.
run() {
	local prog=$1 prov=$2 mode=$3 name=$4 rc=0
	shift 4
	printf '  %-45s ' "$prog -m $mode over $prov"
	./examples/"$prog" -p "$prov" -m "$mode" -d "$sdev" -s $sizes -c "$@" \
		>"$out/$name.server" 2>&1 &
	local server=$!
	if ! wait_port "$port"; then
		echo "FAILED: the server did not start:"
		cat "$out/$name.server"
		return 1
	fi
	timeout 300 ./examples/"$prog" -p "$prov" -m "$mode" -d "$cdev" -s $sizes -c "$@" \
		"$saddr" >"$out/$name" 2>&1 || rc=$?
	wait "$server" || rc=$?
	if [ $rc = 0 ]; then
		echo "ok, data checked"
	else
		echo "FAILED ($rc):"
		cat "$out/$name" "$out/$name.server"
	fi
	return $rc
}

# column NAME SIZE COLUMN: one value of a saved table.
column() { awk -v s="$2" -v c="$3" '$1 == s { print $c }' "$out/$1"; }

echo "gdrfab serves: $(fi_info -p gdrfab 2>/dev/null | awk '/domain:/ { printf "%s%s", sep, $2; sep = ", " }')"
echo "buffers: $where"
echo "measuring (server on $sdev, client on $cdev):"
status=0
run gdrfab_pingpong gdrfab tagged lat.gdrfab "${gpu[@]}" || status=1
run gdrfab_pingpong "verbs;ofi_rxm" tagged lat.rxm || status=1
run gdrfab_bw gdrfab rma bw.gdrfab -w 16 "${gpu[@]}" || status=1
run gdrfab_bw "verbs;ofi_rxm" rma bw.rxm -w 16 || status=1
[ $status = 0 ] || exit 1

echo
printf '%9s | %-38s | %-33s\n' "" "tagged latency (half a round trip), us" "fi_write bandwidth, MB/s"
printf '%9s | %9s %9s %18s | %9s %9s %13s\n' bytes gdrfab rxm "gdrfab/rxm" gdrfab rxm "gdrfab/rxm"
for s in ${sizes//,/ }; do
	lg=$(column lat.gdrfab "$s" 3) lr=$(column lat.rxm "$s" 3)
	bg=$(column bw.gdrfab "$s" 4) br=$(column bw.rxm "$s" 4)
	awk -v s="$s" -v lg="$lg" -v lr="$lr" -v bg="$bg" -v br="$br" 'BEGIN {
		printf "%9d | %9.1f %9.1f %17.2fx | %9.1f %9.1f %12.2fx\n",
			s, lg, lr, lr ? lg / lr : 0, bg, br, br ? bg / br : 0 }'
done
echo
echo "Latency: lower is better; bandwidth: higher is better. Under the VM's"
echo "emulation absolute numbers mean little and one run is noisy; the"
echo "benchmark (tests/bench/run-bench.sh) takes medians of interleaved rounds."
