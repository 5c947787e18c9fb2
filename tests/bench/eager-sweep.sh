#!/bin/bash
# Where eager (copy through bounce buffers) stops beating rendezvous (RDMA
# READ into the posted buffer): pingpong latency around the threshold with
# everything eager and everything rendezvous, interleaved in one VM boot.
# The crossover is what FI_GDRFAB_EAGER_MAX defaults to.
#
#   tests/bench/eager-sweep.sh [ROUNDS]   (default 3)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
"$top/scripts/install-deps.sh"
"$top/scripts/build.sh"
cd "$top/build"
exec "$top/tests/vm/runner/vm-run" --timeout 3000 -- bash -c '
	rounds=$1
	sizes=1024,2048,4096,8192,16384,32768,65536
	export FI_PROVIDER_PATH=$PWD/.libs
	for r in $(seq "$rounds"); do
		for eager in 512 65536; do
			export FI_GDRFAB_EAGER_MAX=$eager
			taskset -c 0 ./examples/gdrfab_pingpong -d rxe0 -s $sizes -i 300 >/dev/null 2>&1 &
			timeout 900 taskset -c 1 ./examples/gdrfab_pingpong -d rxe1 -s $sizes -i 300 192.0.2.1 |
				awk -v e=$eager "/^ *[0-9]/ { print e, \$1, \$3 }"
			wait
		done
	done | awk "
	{ v[\$1 \" \" \$2] = v[\$1 \" \" \$2] \" \" \$3; s[\$2 + 0] = 1 }
	function med(k,   n, a, i, j, t) {
		n = split(v[k], a, \" \")
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return a[int((n + 1) / 2)]
	}
	END {
		printf \"%10s %14s %14s %10s\n\", \"bytes\", \"eager_us\", \"rendezvous_us\", \"ratio\"
		for (x = 1024; x <= 65536; x *= 2) {
			e = med(\"65536 \" x); r = med(\"512 \" x)
			printf \"%10d %14.2f %14.2f %10.2f\n\", x, e, r, e / r
		}
	}"' sweep "${1:-3}"
