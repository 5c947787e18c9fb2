#!/bin/bash
# End-to-end bandwidth of the staged GPU path over rxe: gdrfab_bw with its
# buffers in "GPU" memory (the CUDA stand-in, which the NIC cannot reach,
# so every byte goes D->H, over the wire, H->D) against the same run with
# host memory, tagged messages and RMA writes, interleaved in one VM boot;
# medians of the rounds and the staged/host ratio. Under TCG the stand-in's
# copies are CPU memcpy's on the same emulated cores as rxe, so the ratio
# is a lower bound of what overlap buys, not a GPU figure.
#
#   tests/bench/staged-bw.sh [ROUNDS]   (default 3; from the checkout)
set -euo pipefail
. "$(dirname "$0")/lib/bench-prelude.sh" "staged GPU bandwidth"
[ -x "$top/build/examples/gdrfab_bw" ] || "$top/scripts/build.sh"
[ -f "$top/build/tests/cuda/.libs/libcuda.so.1" ] || make -C "$top/build" tests/cuda/libcuda.la >/dev/null
bench_vm 3000 -- bash -c '
	rounds=$1
	sizes=65536,1048576,16777216
	. "$2/tests/bench/lib/in-vm.sh" # the provider, wait_port
	export LD_LIBRARY_PATH=$PWD/tests/cuda/.libs
	for r in $(seq "$rounds"); do
		order="host cuda"
		[ $((r % 2)) = 0 ] && order="cuda host"
		for mode in tagged rma; do
			for buf in $order; do
				d=; [ $buf = cuda ] && d="-D cuda"
				for s in ${sizes//,/ }; do
					case $s in 65536) n=100 ;; 1048576) n=20 ;; *) n=3 ;; esac
					taskset -c 0 ./examples/gdrfab_bw -d rxe0 -m $mode $d -s $s -i $n -w 8 >/dev/null 2>&1 &
					wait_port 47593
					timeout 900 taskset -c 1 ./examples/gdrfab_bw -d rxe1 -m $mode $d -s $s -i $n -w 8 192.0.2.1 |
						awk -v k="$mode $buf" "/^ *[0-9]/ { print k, \$1, \$4 }"
					wait
				done
			done
		done
	done | awk -f "$2/tests/bench/lib/stats.awk" -f "$2/tests/bench/staged-bw.awk"' staged-bw "${1:-3}" "$top"
