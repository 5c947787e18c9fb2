#!/bin/bash
# The demo: installs what is missing, builds, then shows gdrfab doing its
# job: two endpoints moving data through it, tagged messages and RDMA
# writes with the data checked, side by side with libfabric's verbs;ofi_rxm
# on the same NICs (scripts/demo-run.sh). It runs on this machine's RDMA NIC
# when one is active, else inside the soft-RoCE VM (rxe0, rxe1).
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p build
log=$PWD/build/demo.log
: >"$log"
say() { printf 'demo: %s\n' "$*"; }
quiet() { # what, command...: runs it into the log, shows the log on failure
	local what=$1
	shift
	say "$what"
	if ! "$@" >>"$log" 2>&1; then
		tail -n 30 "$log"
		say "failed: $what (whole log: build/demo.log)"
		exit 1
	fi
}
quiet "installing what is missing (scripts/install-deps.sh)" scripts/install-deps.sh
quiet "building (scripts/build.sh)" scripts/build.sh
cd build

dev=$(grep -ls ACTIVE /sys/class/infiniband/*/ports/*/state 2>/dev/null | head -n 1 | cut -d/ -f5)
if [ -n "$dev" ]; then
	# Both endpoints on this NIC; the examples meet over TCP on loopback.
	say "using this machine's RDMA device $dev"
	exec ../scripts/demo-run.sh "$dev" "$dev" 127.0.0.1
fi
say "no active RDMA device here: booting the soft-RoCE VM (qemu, emulated; about 20 s)"
start=$SECONDS
../tests/vm/runner/vm-run --timeout 900 -- ../scripts/demo-run.sh rxe0 rxe1 192.0.2.1
status=$?
say "done in $((SECONDS - start)) s$([ $status = 0 ] || echo ", FAILED ($status)")"
exit $status
