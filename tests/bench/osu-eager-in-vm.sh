#!/bin/bash
# Inside the VM, from the build directory: osu-eager-sweep.sh's runs.
#   osu-eager-in-vm.sh ROUNDS OSU-DIR
set -u
rounds=$1 osu=$2
. "$(dirname "$0")/lib/in-vm.sh" # the provider, bench_stats
raw=$PWD/osu-eager-raw.txt
: >"$raw"
# The gdrfab setting swept (osu-eager-sweep.sh: GDRFAB_SWEEP_VAR, its
# values GDRFAB_SWEEP_VALUES), the other at its default.
var=${GDRFAB_SWEEP_VAR:-FI_GDRFAB_EAGER_MAX}
read -r -a values <<<"${GDRFAB_SWEEP_VALUES:-8192 16384 32768 65536}"
configs=(rxm "${values[@]}")
for ((r = 1; r <= rounds; r++)); do
	for ((k = 0; k < ${#configs[@]}; k++)); do
		cfg=${configs[$(((k + r) % ${#configs[@]}))]}
		prov=gdrfab
		[ "$cfg" = rxm ] && prov="verbs;ofi_rxm"
		envs=()
		[ "$cfg" != rxm ] && envs=("$var=$cfg")
		env "${envs[@]}" \
			timeout 900 mpirun --allow-run-as-root --oversubscribe -np 2 \
			--bind-to core --mca pml cm --mca mtl ofi \
			--mca mtl_ofi_provider_include "$prov" --mca btl self \
			-x FI_PROVIDER_PATH -x FI_UNIVERSE_SIZE ${envs:+-x "$var"} \
			"$osu/osu_latency" -i 100 -x 10 2>&1 |
			awk -v c="$cfg" -v r="$r" \
				'/^[0-9]+[ \t]+[0-9.]+$/ { print c, r, $1, $2 }' >>"$raw"
		echo "round $r: $cfg: $(grep -c "^$cfg $r " "$raw") sizes" >&2
	done
done
echo
echo "osu_latency (us, median of $rounds rounds) through Open MPI's mtl ofi;" \
	"gdrfab at $var = ${values[*]}; ratio = gdrfab / rxm"
awk -v values="${values[*]}" -f "$bench_stats" -f "$bench_dir/osu-eager-sweep.awk" "$raw"
echo "(raw results in $raw)"
