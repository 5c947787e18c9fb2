#!/bin/bash
# Inside the VM, from the build directory: issue 33's sequence, which a
# fresh boot does not show. A 32-rank Open MPI job over gdrfab (and the
# p2p checks, tests/consumers/check-openmpi.sh, with the MPI programs
# tests/consumers/run-mpi.sh built into tests/mpi), then, in the same
# boot, the link flaps under gdrfab's RDMA writes and rendezvous sends
# (flap-in-vm.sh) with the link down 4 and 8 s. On 2026-11-28, before the
# port-outage watchdog (gdrfab_conn_timers), the write with the link down
# 8 s hung there (no completion, no error), as the issue reported; the
# other three passed. Run it with
#   FI_PROVIDER_PATH=$PWD/.libs ../tests/vm/runner/vm-run -- ../tests/vm/flap/flap-after-mpi.sh
set -u
srcdir=$(cd "$(dirname "$0")/../../.." && pwd)
GDRFAB_MPI_CHECKS=p2p "$srcdir/tests/consumers/check-openmpi.sh" "$PWD/tests/mpi" 2>&1 |
	grep -E "PASS|FAIL|openmpi:"
GDRFAB_FLAP_PROVIDERS=gdrfab GDRFAB_FLAP_OPS="write rndv" GDRFAB_FLAP_SIDES=client \
	GDRFAB_FLAP_OUTAGES="4 8" exec "$srcdir/tests/vm/flap/flap-in-vm.sh"
