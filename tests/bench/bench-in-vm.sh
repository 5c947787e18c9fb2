#!/bin/bash
# Runs inside the VM (see run-bench.sh), from the build directory.
set -u
rounds=$1
sizes="8 4096 65536 1048576 16777216"
. "$(dirname "$0")/lib/in-vm.sh" # the provider, wait_port, bench_stats
results=$(mktemp)

# Iterations per size: enough that one measurement lasts a second or more
# (TCG's hiccups last milliseconds), few enough for the largest sizes.
lat_iters() { case $1 in 8 | 4096) echo 3000 ;; 65536) echo 300 ;; 1048576) echo 20 ;; *) echo 3 ;; esac; }
bw_iters() { case $1 in 8) echo 500 ;; 4096) echo 200 ;; 65536) echo 40 ;; 1048576) echo 6 ;; *) echo 1 ;; esac; }

# example PROG PROVIDER MODE KIND COLUMN ITERS-FN EXTRA: one run per size,
# each adding a "KIND PROVIDER SIZE VALUE" line.
example() {
	local prog=$1 prov=$2 mode=$3 kind=$4 col=$5 iters_of=$6 s n
	shift 6
	for s in $sizes; do
		n=$($iters_of "$s")
		taskset -c 0 ./examples/$prog -p "$prov" -m "$mode" -d rxe0 -s "$s" -i "$n" "$@" >/dev/null 2>&1 &
		wait_port 47593
		timeout 900 taskset -c 1 ./examples/$prog -p "$prov" -m "$mode" -d rxe1 -s "$s" -i "$n" "$@" 192.0.2.1 |
			awk -v k="$kind" -v p="$prov" -v c="$col" '/^ *[0-9]/ { print k, p, $1, $c }' >>"$results"
		wait
	done
}

# perftest: ib_send_lat (t_avg, one way) and ib_write_bw (MiB/s -> MB/s).
perftest() {
	local tool=$1 size=$2 iters=$3
	taskset -c 0 $tool -d rxe0 -x 1 -s "$size" -n "$iters" >/dev/null 2>&1 &
	wait_port 18515
	if [ "$tool" = ib_send_lat ]; then
		timeout 900 taskset -c 1 $tool -d rxe1 -x 1 -s "$size" -n "$iters" 192.0.2.1 2>/dev/null |
			awk -v s="$size" '$1 == s { print "lat raw", s, $6 }' >>"$results"
	else
		timeout 900 taskset -c 1 $tool -d rxe1 -x 1 -s "$size" -n "$iters" 192.0.2.1 2>/dev/null |
			awk -v s="$size" '$1 == s { print "bw raw", s, $4 * 1.048576 }' >>"$results"
	fi
	wait
}

# Server and client each on a vCPU of their own; the order of the
# providers alternates between rounds so neither always goes first.
for r in $(seq "$rounds"); do
	echo "round $r of $rounds" >&2
	order="gdrfab verbs;ofi_rxm"
	[ $((r % 2)) = 0 ] && order="verbs;ofi_rxm gdrfab"
	for prov in $order; do
		example gdrfab_pingpong "$prov" tagged lat 3 lat_iters
		example gdrfab_bw "$prov" tagged bw_tagged 4 bw_iters -w 8
		example gdrfab_bw "$prov" rma bw_write 4 bw_iters -w 8
	done
	for s in $sizes; do
		[ "$s" -le 1048576 ] && perftest ib_send_lat "$s" "$(lat_iters "$s")"
		perftest ib_write_bw "$s" $(($(bw_iters "$s") * 8)) # as many writes as gdrfab_bw's window of 8
	done
done

# Medians over rounds, then the table (raw results kept for re-reading).
cp "$results" bench-raw.txt
awk -f "$bench_stats" -f "$bench_dir/run-bench.awk" "$results"
rm -f "$results"
