#!/bin/bash
# Runs inside the VM (see host-cache-bench.sh), from the build directory.
set -u
rounds=$1
sizes="65536 1048576"
export FI_PROVIDER_PATH=$PWD/.libs
results=$(mktemp)
. "$(dirname "$0")/../vm/runner/check-lib.sh" # wait_port

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
awk '
function median(key,   n, i, j, t, a) {
	n = split(vals[key], a, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ key = $1 " " $3; vals[key " " $2] = vals[key " " $2] " " $4; seen[key] = 1; cnt[key " " $2]++ }
END {
	for (k in seen) {
		on = median(k " uffd"); off = median(k " off")
		split(k, f, " ")
		printf "%-8s %9s %12.1f %12.1f %8.2f %d/%d\n", f[1], f[2], on, off, off ? on / off : 0, cnt[k " uffd"], cnt[k " off"]
	}
}' "$results" | sort
rm -f "$results"
