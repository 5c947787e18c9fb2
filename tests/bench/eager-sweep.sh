#!/bin/bash
# Where eager (copy through bounce buffers) stops beating rendezvous (RDMA
# READ into the posted buffer): pingpong latency around the threshold with
# everything eager and everything rendezvous, interleaved in one VM boot.
# The crossover is what FI_GDRFAB_EAGER_MAX defaults to.
#
#   tests/bench/eager-sweep.sh [ROUNDS]   (default 3)
set -euo pipefail
. "$(dirname "$0")/lib/bench-prelude.sh" "eager sweep"
bench_build full
bench_vm 3000 -- bash -c '
	rounds=$1
	sizes=1024,2048,4096,8192,16384,32768,65536
	. "$2/lib/in-vm.sh" # the provider
	for r in $(seq "$rounds"); do
		for eager in 512 65536; do
			export FI_GDRFAB_EAGER_MAX=$eager
			taskset -c 0 ./examples/gdrfab_pingpong -d rxe0 -s $sizes -i 300 >/dev/null 2>&1 &
			timeout 900 taskset -c 1 ./examples/gdrfab_pingpong -d rxe1 -s $sizes -i 300 192.0.2.1 |
				awk -v e=$eager "/^ *[0-9]/ { print e, \$1, \$3 }"
			wait
		done
	done | awk -f "$2/lib/stats.awk" -f "$2/eager-sweep.awk"' sweep "${1:-3}" "$here"
