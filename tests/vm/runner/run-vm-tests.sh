#!/bin/bash
# The integration tests: boots the soft-RoCE VM once and runs, inside it,
# the Criterion integration tests and the fi_info checks against this
# build's provider. Exit 77 (automake's "skipped") when no VM can run here.
set -u
. "$(dirname "$0")/vm-prelude.sh" "VM tests"
# GDRFAB_VM_TESTS_SANITIZED=1 (scripts/test.sh) runs the same suites once,
# against the build with AddressSanitizer and UndefinedBehaviorSanitizer,
# instead of this build: CI's VM time goes to one stricter run, not two.
# Its build's make must not inherit this make check's variables (TEST_LOGS
# would make it run every suite again), nor this setting.
if [ "${GDRFAB_VM_TESTS_SANITIZED:-0}" = 1 ]; then
	exec env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u GDRFAB_VM_TESTS_SANITIZED \
		"$srcdir/tests/sanitize/run-sanitized.sh" vm
fi
# The suites are listed in vm-suites.sh, which the sanitized run reads too.
exec "$srcdir/tests/vm/runner/vm-run" --timeout "${GDRFAB_VM_TIMEOUT:-1200}" -- bash -c '
	. "$1/tests/vm/runner/vm-suites.sh" || exit 1
	status=0
	run_vm_suites 1 || status=1
	"$1/tests/vm/fi_tools/check-fi-tools.sh" || status=1
	exit $status' vm-tests "$srcdir"
