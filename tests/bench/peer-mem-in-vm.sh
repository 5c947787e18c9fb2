#!/bin/bash
# Inside the VM, from the build directory: tests/bench/peer-mem.sh's runs.
set -uo pipefail
. "$(dirname "$0")/lib/in-vm.sh"
rounds=${1:-3}
shift || true
sizes=${*:-8 16 32 64}
raw=$PWD/peer-mem-raw.txt
: >"$raw"
for ((r = 1; r <= rounds; r++)); do
	for np in $sizes; do
		for prov in gdrfab "verbs;ofi_rxm"; do
			line=$(timeout 900 mpirun --allow-run-as-root --oversubscribe -np "$np" \
				--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$prov" \
				--mca btl self -x FI_PROVIDER_PATH -x FI_UNIVERSE_SIZE \
				./tests/mpi/mpi_alltoall 1024 2 2>&1 | grep '^mpi-alltoall:')
			# "mpi-alltoall: ranks N, bytes B, first round S s, KiB per
			# peer: median M, max X"
			echo "$r $np ${prov%%;*} $line" | tee -a "$raw"
		done
	done
done
awk -f "$bench_stats" -f "$bench_dir/peer-mem.awk" "$raw"
