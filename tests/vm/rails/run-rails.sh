#!/bin/bash
# Rail sets over real soft-RoCE (tests/vm/rails/rails-in-vm.sh): boots the
# VM once with GDRFAB_VM_RAILS=1, which gives it a second veth pair with
# rxe2/rxe3 (tests/vm/runner/guest-setup), and runs the checks there:
# fi_info's rail-set domains, transfers of 1 B .. 16 MiB between rail
# sets, NICs alone and the two mixed, data checked, and the rxe counters'
# split of the striped ones, which the provider's public per-rail counters
# (FI_GDRFAB_STATS) must agree with. Exit 77 (automake's "skipped") when no VM can
# run here.
set -u
. "$(dirname "$0")/../runner/vm-prelude.sh" "rails"
export GDRFAB_VM_RAILS=1
exec "$srcdir/tests/vm/runner/vm-run" --timeout "${GDRFAB_VM_TIMEOUT:-600}" -- \
	"$srcdir/tests/vm/rails/rails-in-vm.sh"
