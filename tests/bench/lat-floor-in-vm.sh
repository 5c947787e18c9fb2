#!/bin/bash
# Runs inside the VM (see lat-floor.sh), from the build directory.
set -u
rounds=$1 sizes=$2 iters=${GDRFAB_LAT_ITERS:-3000}
. "$(dirname "$0")/lib/in-vm.sh" # the provider, wait_port, bench_stats
results=$(mktemp)

# One-way latency in µs (round trip / 2, as perftest's t_avg is), one
# "WHAT SIZE US" line per measurement.
pingpong() {
	local what=$1 prov=${1%-rma} mode=tagged s=$2 path=$PWD/.libs
	[ "$prov" = "$what" ] || mode=rma
	# gdrfab-before: an earlier build's provider (GDRFAB_LAT_BEFORE).
	[ "$what" = gdrfab-before ] && prov=gdrfab path=$GDRFAB_LAT_BEFORE
	FI_PROVIDER_PATH=$path taskset -c 0 ./examples/gdrfab_pingpong \
		-p "$prov" -m $mode -d rxe0 -s "$s" -i "$iters" >/dev/null 2>&1 &
	wait_port 47593
	FI_PROVIDER_PATH=$path timeout 600 taskset -c 1 \
		./examples/gdrfab_pingpong -p "$prov" -m $mode \
		-d rxe1 -s "$s" -i "$iters" 192.0.2.1 |
		awk -v p="$what" '/^ *[0-9]/ { print p, $1, $3 }' >>"$results"
	wait
}
# perftest moves the message alone; a provider adds its header (gdrfab's
# is 40 bytes, struct gdrfab_pkt_hdr), which decides how many packets a
# message takes (rxe's MTU is 4096 here: 4 KiB + 40 B is two). So the
# floor is perftest at the same bytes on the wire, reported under the
# payload's size.
hdr=40
perftest() {
	local tool=$1 s=$2 w=$(($2 + hdr))
	taskset -c 0 "$tool" -d rxe0 -x 1 -s "$w" -n "$iters" >/dev/null 2>&1 &
	wait_port 18515
	timeout 600 taskset -c 1 "$tool" -d rxe1 -x 1 -s "$w" -n "$iters" \
		192.0.2.1 2>/dev/null | awk -v t="$tool" -v s="$s" -v w="$w" '$1 == w { print t, s, $6 }' >>"$results"
	wait
}
run() { case $1 in ib_*) perftest "$1" "$2" ;; *) pingpong "$1" "$2" ;; esac; }

# gdrfab-rma: gdrfab_pingpong -m rma (fi_writedata: an RDMA WRITE with
# immediate data into the peer's buffer, no copy), the zero-copy path.
set -- gdrfab "verbs;ofi_rxm" ib_send_lat ib_write_lat gdrfab-rma
# GDRFAB_LAT_BEFORE=DIR (a directory holding an earlier build's
# libgdrfab-fi.so): this build against that one and rxm only, to tell
# whether a change moved the latency.
[ -n "${GDRFAB_LAT_BEFORE:-}" ] && set -- gdrfab gdrfab-before "verbs;ofi_rxm"
for r in $(seq "$rounds"); do
	echo "round $r of $rounds" >&2
	for s in $sizes; do
		for w in "$@"; do run "$w" "$s"; done
	done
	set -- "${@:2}" "$1" # the next round starts with the next one
done
cp "$results" lat-floor-raw.txt
awk -f "$bench_stats" -f "$bench_dir/lat-floor.awk" "$results"
rm -f "$results"
