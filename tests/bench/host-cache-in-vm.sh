#!/bin/bash
# Runs inside the VM (see host-cache-bench.sh), from the build directory.
set -u
rounds=$1
sizes="65536 1048576"
. "$(dirname "$0")/lib/in-vm.sh" # the provider, wait_port, bench_stats
results=$(mktemp)

lat_iters() { case $1 in 65536) echo 300 ;; *) echo 40 ;; esac; }
bw_iters() { case $1 in 65536) echo 40 ;; *) echo 8 ;; esac; }

# run PROG MODE KIND COLUMN ITERS-FN EXTRA...: one run per size, each
# adding a "KIND MODE SIZE VALUE" line.
run() {
	local prog=$1 mode=$2 kind=$3 col=$4 iters_of=$5 s n
	shift 5
	for s in $sizes; do
		n=$($iters_of "$s")
		FI_GDRFAB_HOST_MR_CACHE=$mode taskset -c 0 ./examples/$prog -N -d rxe0 -s "$s" -i "$n" "$@" >/dev/null 2>&1 &
		wait_port 47593
		FI_GDRFAB_HOST_MR_CACHE=$mode timeout 900 taskset -c 1 ./examples/$prog -N -d rxe1 -s "$s" -i "$n" "$@" 192.0.2.1 |
			awk -v k="$kind" -v m="$mode" -v c="$col" '/^ *[0-9]/ { print k, m, $1, $c }' >>"$results"
		wait
	done
}

for r in $(seq "$rounds"); do
	echo "round $r of $rounds" >&2
	order="uffd off"
	[ $((r % 2)) = 0 ] && order="off uffd"
	for mode in $order; do
		run gdrfab_pingpong "$mode" lat_us 3 lat_iters -c
		run gdrfab_bw "$mode" bw_MBps 4 bw_iters -w 8 -c
	done
done

cp "$results" host-cache-raw.txt
printf "%-8s %9s %12s %12s %8s %s\n" what size "cache on" "cache off" on/off rounds
awk -f "$bench_stats" -f <(echo '
{ key = $1 " " $3; vals[key " " $2] = vals[key " " $2] " " $4; seen[key] = 1; cnt[key " " $2]++ }
END {
	for (k in seen) {
		on = median(vals[k " uffd"]); off = median(vals[k " off"])
		split(k, f, " ")
		printf "%-8s %9s %12.1f %12.1f %8.2f %d/%d\n", f[1], f[2], on, off, off ? on / off : 0, cnt[k " uffd"], cnt[k " off"]
	}
}') "$results" | sort
rm -f "$results"
