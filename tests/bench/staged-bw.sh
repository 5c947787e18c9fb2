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
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
[ -x "$top/build/examples/gdrfab_bw" ] || "$top/scripts/build.sh"
[ -f "$top/build/tests/cuda/.libs/libcuda.so.1" ] || make -C "$top/build" tests/cuda/libcuda.la >/dev/null
cd "$top/build"
exec "$top/tests/vm/runner/vm-run" --timeout 3000 -- bash -c '
	rounds=$1
	sizes=65536,1048576,16777216
	export FI_PROVIDER_PATH=$PWD/.libs
	export LD_LIBRARY_PATH=$PWD/tests/cuda/.libs
	. "$2/tests/vm/runner/check-lib.sh"
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
	done | awk "
	{ k = \$1 \" \" \$2 \" \" \$3; v[k] = v[k] \" \" \$4; s[\$3 + 0] = 1 }
	function med(k,   n, a, i, j, t) {
		n = split(v[k], a, \" \")
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return a[int((n + 1) / 2)]
	}
	END {
		printf \"%-7s %10s %14s %14s %7s\n\", \"mode\", \"bytes\", \"host MB/s\", \"staged MB/s\", \"ratio\"
		split(\"tagged rma\", m, \" \")
		for (i = 1; i <= 2; i++)
			for (x = 65536; x <= 16777216; x *= 16) {
				h = med(m[i] \" host \" x); g = med(m[i] \" cuda \" x)
				printf \"%-7s %10d %14.1f %14.1f %6.2fx\n\", m[i], x, h, g, (h > 0 ? g / h : 0)
			}
	}"' staged-bw "${1:-3}" "$top"
