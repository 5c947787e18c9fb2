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
exec "$srcdir/tests/vm/vm-run" --timeout "${GDRFAB_VM_TIMEOUT:-1200}" -- bash -c '
	status=0
	./tests/vm/gdrfab_vm_tests --jobs 2 --color=never --timeout 300 || status=1
	./tests/vm/gdrfab_wire_tests --jobs 1 --color=never --timeout 120 || status=1
	LD_LIBRARY_PATH=$PWD/tests/cuda/.libs ./tests/vm/gdrfab_hmem_tests --jobs 2 --color=never --timeout 240 --filter "hmem/*" || status=1
	LD_LIBRARY_PATH=$PWD/tests/cuda/.libs ./tests/vm/gdrfab_hmem_tests --jobs 1 --color=never --timeout 300 --filter "hmem_pipe/*" || status=1
	LD_LIBRARY_PATH=$PWD/tests/cuda/.libs ./tests/vm/gdrfab_hmem_tests --jobs 1 --color=never --timeout 240 --filter "hmem_copy/*" || status=1
	LD_LIBRARY_PATH=$PWD/tests/cuda/.libs ./tests/vm/gdrfab_hmem_tests --jobs 1 --color=never --timeout 240 --filter "hmem_async/*" || status=1
	LD_LIBRARY_PATH=$PWD/tests/cuda/.libs ./tests/vm/gdrfab_hmem_tests --jobs 1 --color=never --timeout 240 --filter "hmem_nocuda/*" || status=1
	LD_LIBRARY_PATH=$PWD/tests/cuda/.libs ./tests/vm/gdrfab_hmem_tests --jobs 1 --color=never --timeout 240 --filter "nccl/*" || status=1
	LD_LIBRARY_PATH=$PWD/tests/cuda/.libs ./tests/vm/gdrfab_hmem_tests --jobs 1 --color=never --timeout 240 --filter "nccl_gdr/*" || status=1
	LD_LIBRARY_PATH=$PWD/tests/cuda/.libs ./tests/vm/gdrfab_hmem_tests --jobs 1 --color=never --timeout 240 --filter "nccl_rdma/*" || status=1
	"$1/tests/vm/check-fi-tools.sh" || status=1
	exit $status' vm-tests "$srcdir"
