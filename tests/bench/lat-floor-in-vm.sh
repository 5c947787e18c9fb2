#!/bin/bash
# Runs inside the VM (see lat-floor.sh), from the build directory.
set -u
rounds=$1 sizes=$2 iters=${GDRFAB_LAT_ITERS:-3000}
export FI_PROVIDER_PATH=$PWD/.libs
export FI_UNIVERSE_SIZE=64 # verbs;ofi_rxm sizes CQs beyond rxe's limit otherwise
. "$(dirname "$0")/../vm/check-lib.sh" # wait_port
results=$(mktemp)

# One-way latency in µs (round trip / 2, as perftest's t_avg is), one
# "WHAT SIZE US" line per measurement.
pingpong() {
	local prov=$1 s=$2
	taskset -c 0 ./examples/gdrfab_pingpong -p "$prov" -m tagged -d rxe0 \
		-s "$s" -i "$iters" >/dev/null 2>&1 &
	wait_port 47593
	timeout 600 taskset -c 1 ./examples/gdrfab_pingpong -p "$prov" -m tagged \
		-d rxe1 -s "$s" -i "$iters" 192.0.2.1 |
		awk -v p="$prov" '/^ *[0-9]/ { print p, $1, $3 }' >>"$results"
	wait
}
perftest() {
	local tool=$1 s=$2
	taskset -c 0 "$tool" -d rxe0 -x 1 -s "$s" -n "$iters" >/dev/null 2>&1 &
	wait_port 18515
	timeout 600 taskset -c 1 "$tool" -d rxe1 -x 1 -s "$s" -n "$iters" \
		192.0.2.1 2>/dev/null | awk -v t="$tool" -v s="$s" '$1 == s { print t, s, $6 }' >>"$results"
	wait
}
run() { case $1 in ib_*) perftest "$1" "$2" ;; *) pingpong "$1" "$2" ;; esac; }

set -- gdrfab "verbs;ofi_rxm" ib_send_lat ib_write_lat
for r in $(seq "$rounds"); do
	echo "round $r of $rounds" >&2
	for s in $sizes; do
		for w in "$@"; do run "$w" "$s"; done
	done
	set -- "${@:2}" "$1" # the next round starts with the next one
done
cp "$results" lat-floor-raw.txt
awk -f "$(dirname "$0")/lat-floor.awk" "$results"
rm -f "$results"
