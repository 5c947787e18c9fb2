#!/bin/bash
# Runs inside the VM (see osu-lat-before.sh), from the build directory:
#   osu-lat-before-in-vm.sh ROUNDS OSU-DIR BEFORE-DIR
set -u
rounds=$1 osu=$2 before=$3
. "$(dirname "$0")/lib/in-vm.sh" # bench_stats; FI_PROVIDER_PATH is set per run below
hostname vm                # Open MPI wants a name; 9p refuses its FIFOs:
export TMPDIR=/dev/shm
raw=$PWD/osu-lat-before-raw.txt
: >"$raw"
for r in $(seq "$rounds"); do
	set -- gdrfab gdrfab-before "verbs;ofi_rxm"
	for _ in $(seq $(((r - 1) % 3))); do set -- "${@:2}" "$1"; done
	for what in "$@"; do
		prov=$what path=$PWD/.libs
		[ "$what" = gdrfab-before ] && prov=gdrfab path=$before
		FI_PROVIDER_PATH=$path timeout 600 mpirun --allow-run-as-root \
			--oversubscribe -np 2 --bind-to core --mca pml cm \
			--mca mtl ofi --mca mtl_ofi_provider_include "$prov" \
			--mca btl self -x FI_PROVIDER_PATH -x FI_UNIVERSE_SIZE \
			"$osu/osu_latency" -i 100 -x 10 2>/dev/null |
			awk -v w="$what" '/^[0-9]+[ \t]+[0-9.]+$/ { print w, $1, $2 }' >>"$raw"
	done
	echo "round $r of $rounds" >&2
done
awk -f "$bench_stats" -f "$bench_dir/lat-floor.awk" "$raw"
