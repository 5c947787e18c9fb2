#!/bin/bash
# The hostile-traffic run against gdrfab's UD QP (tests/vm/fuzz/fuzz-ud.sh):
# boots the soft-RoCE VM once and runs it there against this build's
# provider, in about two minutes. Exit 77 (automake's "skipped") when no
# VM can run here.
set -u
. "$(dirname "$0")/../runner/vm-prelude.sh" "UD fuzzing"
exec "$srcdir/tests/vm/runner/vm-run" --timeout "${GDRFAB_VM_TIMEOUT:-400}" -- \
	"$srcdir/tests/vm/fuzz/fuzz-ud.sh"
