#!/bin/bash
# Runs inside the VM (see run-osu.sh), from the build directory.
set -u
rounds=$1 osu=$2
export FI_PROVIDER_PATH=$PWD/.libs
export FI_UNIVERSE_SIZE=64 # verbs;ofi_rxm sizes CQs beyond rxe's limit otherwise
results=$(mktemp)

# osu PROVIDER KIND PROGRAM ARGS...: "KIND PROVIDER SIZE VALUE" lines.
osu() {
	local prov=$1 kind=$2
	shift 2
	timeout 1200 mpirun --allow-run-as-root --oversubscribe -np 2 \
		--bind-to core --mca pml cm --mca mtl ofi \
		--mca mtl_ofi_provider_include "$prov" --mca btl self \
		-x FI_PROVIDER_PATH -x FI_UNIVERSE_SIZE "$@" 2>/dev/null |
		awk -v k="$kind" -v p="$prov" '/^[0-9]/ { print k, p, $1, $2 }' >>"$results"
}

for r in $(seq "$rounds"); do
	echo "round $r of $rounds" >&2
	order="gdrfab verbs;ofi_rxm"
	[ $((r % 2)) = 0 ] && order="verbs;ofi_rxm gdrfab"
	for prov in $order; do
		osu "$prov" lat "$osu/osu_latency" -i 100 -x 10
		osu "$prov" bw "$osu/osu_bw" -i 2 -x 1
	done
done
cp "$results" osu-raw.txt
awk '
function median(s,   n, v, i, j, t) {
	n = split(s, v, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
			t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
		}
	return n ? v[int((n + 1) / 2)] : ""
}
{ vals[$1 "|" $2 "|" $3] = vals[$1 "|" $2 "|" $3] " " $4; sizes[$3 + 0] = 1 }
END {
	n = asorti(sizes, order, "@ind_num_asc")
	for (k = 1; k <= 2; k++) {
		kind = k == 1 ? "lat" : "bw"
		printf "%s\n", kind == "lat" ? "osu_latency (us, median of rounds)" : "osu_bw (MB/s, median of rounds)"
		printf "%10s %12s %14s %8s\n", "size", "gdrfab", "verbs;ofi_rxm", "ratio"
		for (i = 1; i <= n; i++) {
			s = order[i]
			g = median(vals[kind "|gdrfab|" s]); b = median(vals[kind "|verbs;ofi_rxm|" s])
			if (g == "" && b == "") continue
			printf "%10d %12s %14s %8s\n", s, g, b, (g != "" && b + 0 > 0) ? sprintf("%.2f", g / b) : "-"
		}
		print ""
	}
}' "$results"
echo "(ratio: gdrfab / verbs;ofi_rxm; lower is better for latency, higher for bandwidth; raw results in osu-raw.txt)"
rm -f "$results"
