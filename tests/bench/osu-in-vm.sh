#!/bin/bash
# Runs inside the VM (see run-osu.sh), from the build directory:
#   osu-in-vm.sh ROUNDS OSU-DIR
# Each round runs osu_latency then osu_bw over both providers, the order of
# the providers alternating between rounds so that neither always goes
# first. Appends "KIND PROVIDER ROUND SIZE VALUE" lines to osu-raw.txt,
# keeps every run's own output in osu-logs/, then prints the table
# (osu-summarize.awk).
set -u
rounds=$1 osu=$2
. "$(dirname "$0")/lib/in-vm.sh" # the provider, bench_stats
# OSU 5.3 runs the same count at every size, 0 B to 4 MiB: these keep a
# round to minutes under TCG (the 4 MiB sizes take most of it).
lat_iters=${GDRFAB_OSU_LAT_ITERS:-100}
bw_iters=${GDRFAB_OSU_BW_ITERS:-2}
raw=$PWD/osu-raw.txt logs=$PWD/osu-logs
: >"$raw"
rm -rf "$logs" && mkdir -p "$logs"
failed=0

# osu PROVIDER KIND ROUND PROGRAM ARGS...: one mpirun, 2 ranks, a vCPU each.
osu() {
	local prov=$1 kind=$2 round=$3 log rows start
	shift 3
	log=$logs/$kind-${prov//;/_}-$round.txt
	start=$(date +%s)
	timeout 1200 mpirun --allow-run-as-root --oversubscribe -np 2 \
		--bind-to core --mca pml cm --mca mtl ofi \
		--mca mtl_ofi_provider_include "$prov" --mca btl self \
		-x FI_PROVIDER_PATH -x FI_UNIVERSE_SIZE "$@" >"$log" 2>&1
	awk -v k="$kind" -v p="$prov" -v r="$round" \
		'/^[0-9]+[ \t]+[0-9.]+$/ { print k, p, r, $1, $2 }' "$log" >>"$raw"
	# 0 B (latency only) and 1 B to 4 MiB: a run that stopped early is
	# reported, its sizes missing from the medians.
	rows=$(grep -cE '^[0-9]+[[:space:]]+[0-9.]+$' "$log")
	echo "round $round: $kind over $prov: $rows sizes in $(($(date +%s) - start)) s" >&2
	if [ "$rows" -lt 23 ]; then
		failed=$((failed + 1))
		echo "  incomplete; the end of $log:" >&2
		tail -n 15 "$log" | sed 's/^/    /' >&2
	fi
}

# GDRFAB_OSU_UNTIL (seconds since the epoch): no round is started that
# would end after it, judged by the last round's length, so a run shares
# a machine's VM time with a known end.
until=${GDRFAB_OSU_UNTIL:-0} ran=0
for r in $(seq "$rounds"); do
	t0=$(date +%s)
	order="gdrfab verbs;ofi_rxm"
	[ $((r % 2)) = 0 ] && order="verbs;ofi_rxm gdrfab"
	for prov in $order; do
		osu "$prov" lat "$r" "$osu/osu_latency" -i "$lat_iters" -x 10
		osu "$prov" bw "$r" "$osu/osu_bw" -i "$bw_iters" -x 1
	done
	ran=$r
	now=$(date +%s)
	if [ "$until" -gt 0 ] && [ $((now + now - t0)) -gt "$until" ] && [ "$r" -lt "$rounds" ]; then
		echo "stopping after round $r of $rounds: another would end after GDRFAB_OSU_UNTIL" >&2
		break
	fi
done
rounds=$ran

echo
echo "OSU 5.3 over Open MPI's mtl ofi (pml cm), 2 ranks on rxe0/rxe1, $rounds rounds" \
	"(osu_latency -i $lat_iters -x 10, osu_bw -i $bw_iters -x 1)"
awk -v eager="${FI_GDRFAB_EAGER_MAX:-8192}" -f "$bench_stats" -f "$bench_dir/osu-summarize.awk" "$raw"
echo "(raw results in $raw, each run's output in $logs/)"
[ "$failed" = 0 ] || { echo "osu: $failed runs incomplete" >&2; exit 1; }
