#!/bin/bash
# Runs inside the VM (see lat-parts.sh), from the build directory.
set -u
rounds=$1 sizes=$2 iters=${GDRFAB_LAT_ITERS:-3000}
. "$(dirname "$0")/lib/in-vm.sh" # the provider, wait_port, bench_stats
stamp=$PWD/tests/bench/.libs/write_stamp.so
results=$(mktemp)

# "WHAT SIDE SIZE key=value..." lines, both sides.
parts() {
	local what=$1 s=$2 prov=gdrfab path=$PWD/.libs
	[ "$what" = rxm ] && prov="verbs;ofi_rxm"
	[ "$what" = gdrfab-before ] && path=$GDRFAB_LAT_BEFORE
	FI_PROVIDER_PATH=$path LD_PRELOAD=$stamp taskset -c 0 \
		./tests/bench/lat_parts -p "$prov" -d rxe0 -s "$s" -i "$iters" |
		awk -v w="$what" '$1 == "parts" { $1 = w; $3 = ""; print }' >>"$results" &
	wait_port 47593
	FI_PROVIDER_PATH=$path LD_PRELOAD=$stamp timeout 600 taskset -c 1 \
		./tests/bench/lat_parts -p "$prov" -d rxe1 -s "$s" -i "$iters" 192.0.2.1 |
		awk -v w="$what" '$1 == "parts" { $1 = w; $3 = ""; print }' >>"$results"
	wait
}
# The floor: raw RC SEND/RECV of the payload alone (what gdrfab puts on
# the wire for a message whose header the peer holds), its typical
# (median) one-way time doubled.
floor() {
	local s=$1
	taskset -c 0 ib_send_lat -d rxe0 -x 1 -s "$s" -n "$iters" >/dev/null 2>&1 &
	wait_port 18515
	timeout 600 taskset -c 1 ib_send_lat -d rxe1 -x 1 -s "$s" -n "$iters" \
		192.0.2.1 2>/dev/null |
		awk -v s="$s" '$1 == s { print "ib_send_lat client", s, "rtt=" 2 * $5 }' >>"$results"
	wait
}
set -- gdrfab rxm ib_send_lat
[ -n "${GDRFAB_LAT_BEFORE:-}" ] && set -- gdrfab gdrfab-before rxm ib_send_lat
for r in $(seq "$rounds"); do
	echo "round $r of $rounds" >&2
	for s in $sizes; do
		for w in "$@"; do
			case $w in ib_*) floor "$s" ;; *) parts "$w" "$s" ;; esac
		done
	done
	set -- "${@:2}" "$1"
done
cp "$results" lat-parts-raw.txt
awk -f "$bench_stats" -f "$bench_dir/lat-parts.awk" "$results"
rm -f "$results"
