#!/bin/bash
# The link that goes down and comes back (tests/vm/flap/flap-in-vm.sh):
# boots the soft-RoCE VM once and runs it there: by default CI's short
# run (gdrfab alone, four operations, one outage past the RC retry
# budget, about a minute); GDRFAB_FLAP_ALL=1 the whole matrix, gdrfab
# beside verbs;ofi_rxm, every operation, both sides, an outage within the
# budget and one past it (about 17 minutes under TCG); the other
# GDRFAB_FLAP_* variables that script reads choose a part. Exit 77
# (automake's "skipped") when no VM can run here.
set -u
. "$(dirname "$0")/../runner/vm-prelude.sh" "link flaps"
# CI's short run takes about 75 s: a hang costs it 7 minutes, not 30
# (the guest prints what hung a minute before: tests/vm/runner/guest-setup).
limit=420
env | grep -q '^GDRFAB_FLAP_' && limit=1800
exec "$srcdir/tests/vm/runner/vm-run" --timeout "${GDRFAB_VM_TIMEOUT:-$limit}" -- \
	"$srcdir/tests/vm/flap/flap-in-vm.sh"
