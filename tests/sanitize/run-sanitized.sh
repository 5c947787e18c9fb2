#!/bin/bash
# gdrfab built with AddressSanitizer and UndefinedBehaviorSanitizer in its
# own build directory (build/asan beside the plain build, made here when
# missing), and its tests run under them:
#   tests/sanitize/run-sanitized.sh unit   the unit tests, here
#   tests/sanitize/run-sanitized.sh vm     the integration suites, in the VM
# (both without an argument). LeakSanitizer runs at every process's exit,
# after libfabric has unloaded the provider, so memory gdrfab still holds
# then counts as a leak (its frames read "<unknown module>", under
# libfabric's: the provider is gone by then).
#
# libfabric dlopen()s the provider: a program not built with the sanitizers
# (fi_info) must have their runtimes preloaded, or the provider cannot even
# load; the test programs get them preloaded too, so that every process runs
# with the same runtimes first in its library list. Only the tested
# programs get them, never the shell, whose own leaks are not ours.
#
# Any report fails the run. Criterion runs each test in a child process, and
# a report at the child's exit, after the test passed (a leak, or undefined
# behaviour in the provider's unload), does not fail the test: so ASan's
# reports go to a file per process (log_path), and after the run any such
# file, or any UBSan "runtime error:" in the output (UBSan ignores log_path
# beside ASan in GCC 12), is shown and fails it. Exit 77 (automake's
# "skipped", with a SKIP line) when the VM cannot run here.
set -u
mode=${1:-all}
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
build=${GDRFAB_ASAN_BUILDDIR:-$srcdir/build/asan}
cc=${CC:-gcc}
# -O1 keeps the reports' stacks close to the source; UBSan stops at the first
# report instead of printing it and going on.
cflags="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"

# Configures (once) and builds the variant with the test programs.
build_variant() {
	[ -x "$srcdir/configure" ] || (cd "$srcdir" && ./autogen.sh) || return 1
	mkdir -p "$build" && cd "$build" || return 1
	if [ ! -f Makefile ]; then
		"$srcdir/configure" --quiet CC="$cc" CFLAGS="$cflags" >configure.out 2>&1 ||
			{ tail -n 30 configure.out; return 1; }
	fi
	# Only the programs: a make above (make check) passes its variables
	# down in MAKEFLAGS, TEST_LOGS among them, which would run the suites.
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		make -j"$(nproc)" --no-print-directory check TESTS= TEST_LOGS= >make.out 2>&1 ||
		{ tail -n 30 make.out; return 1; }
}

# Prints every report in a directory and UBSan's lines in an output; fails
# if there is one. A report that holds nothing but LeakSanitizer's own
# fatal error (its tracer thread crashed stopping the process's threads:
# in the VM, at the exit of every nccl and nccl_rdma replay test, with
# this tree's code and with code a day older alike, and with or without
# gdrfab's memory monitor) found no error: it is listed as a process
# whose leaks could not be checked, and does not fail the run.
reports() { # dir output
	local f n=0 unchecked=()
	for f in "$1"/*; do
		[ -f "$f" ] || continue
		if grep -q 'LeakSanitizer has encountered a fatal error' "$f" &&
			! grep -qE 'ERROR: |runtime error:|leak of' "$f"; then
			unchecked+=("$(basename "$f")")
			continue
		fi
		echo "==== sanitizer report: $f"
		cat "$f"
		n=$((n + 1))
	done
	[ ${#unchecked[@]} = 0 ] ||
		echo "sanitizers: leaks not checked in ${#unchecked[@]} process(es), LeakSanitizer's tracer crashed there: ${unchecked[*]}"
	if grep -q 'runtime error:' "$2"; then
		echo "==== UBSan's reports in $2"
		grep -A 12 'runtime error:' "$2"
		n=$((n + $(grep -c 'runtime error:' "$2")))
	fi
	[ "$n" = 0 ] && return 0
	echo "sanitizers: $n report(s), above"
	return 1
}

# The runtimes' environment, for a run whose reports go to $1.
sanitizer_env() { # report dir
	rm -rf "$1" && mkdir -p "$1" || return 1
	local asan ubsan
	asan=$(readlink -f "$("$cc" -print-file-name=libasan.so)")
	ubsan=$(readlink -f "$("$cc" -print-file-name=libubsan.so)")
	if [ ! -f "$asan" ] || [ ! -f "$ubsan" ]; then
		echo "no sanitizer runtimes for $cc"
		return 1
	fi
	export GDRFAB_SAN_PRELOAD="$asan $ubsan"
	# Libraries built without frame pointers (Criterion's) end the fast
	# unwinder's stacks at their first frame: the slow one walks through
	# them, so that a suppression can name the function that allocated.
	# The program's name in each report's file tells the processes apart.
	export ASAN_OPTIONS="detect_leaks=1:fast_unwind_on_malloc=0:log_path=$1/asan:log_exe_name=1"
	# Without print_suppressions=0 a suppressed leak still writes a report
	# file (the list of suppressions used), which would fail the run.
	export LSAN_OPTIONS="suppressions=$srcdir/tests/sanitize/lsan.supp:print_suppressions=0"
	export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
	# Criterion names each skipped test and its reason only from verbosity 1.
	export CRITERION_VERBOSITY_LEVEL=1
}

run_unit() {
	local status=0
	sanitizer_env "$build/san-unit" || return 1
	# GDRFAB_SAN_UNIT_PLAIN=0 leaves out this first run, logging off:
	# scripts/test.sh, where make check ran the unit tests with logging
	# off already and the logged run below takes every path it takes.
	if [ "${GDRFAB_SAN_UNIT_PLAIN:-1}" != 0 ]; then
		GDRFAB_SRCDIR=$srcdir LD_PRELOAD=$GDRFAB_SAN_PRELOAD \
			./tests/unit/gdrfab_unit --jobs "$(nproc)" --color=never 2>&1 |
			tee "$build/san-unit.out"
		[ "${PIPESTATUS[0]}" = 0 ] || status=1
	fi
	# Again with libfabric's logging at debug (tests/unit/logging_on.c):
	# a log line must not change what a call does. Its log lines go to a
	# file; Criterion's closing line and any failure are shown.
	GDRFAB_SRCDIR=$srcdir LD_PRELOAD=$GDRFAB_SAN_PRELOAD FI_LOG_LEVEL=debug \
		./tests/unit/gdrfab_unit --jobs "$(nproc)" --color=never \
		>"$build/san-unit-logging-on.out" 2>&1 || {
		status=1
		echo "FAIL: the unit tests with FI_LOG_LEVEL=debug (all of it in $build/san-unit-logging-on.out):"
		grep -a -E '^\[(FAIL|----)\]|Crash|SIGSEGV' "$build/san-unit-logging-on.out" | tail -n 40
	}
	grep -a Synthesis "$build/san-unit-logging-on.out" | sed 's/^/logging on: /'
	reports "$build/san-unit" "$build/san-unit-logging-on.out" || status=1
	echo "asan-unit: $([ "$status" = 0 ] && echo passed || echo FAILED)"
	return "$status"
}

# The suites run-vm-tests.sh runs (tests/vm/runner/vm-suites.sh), with twice their
# time-outs (the sanitizers slow the guest down), and libfabric's tools
# (check-fi-tools.sh), which are not built with them.
run_vm() {
	local status=0
	(
		export GDRFAB_BUILDDIR=$build GDRFAB_SRCDIR=$srcdir
		. "$srcdir/tests/vm/runner/vm-prelude.sh" "asan-vm"
		sanitizer_env "$build/san-vm" || exit 1
		# hwloc's libpciaccess component parses pci.ids with a malloc a
		# line: under ASan's allocator in the VM that cost 17 s in every
		# process that loads the topology (a wire test: 36 s, 18 s
		# without), and the VM's topology is the same without it
		# (lstopo --whole-io and gdrfab_topo print the same): hwloc's
		# Linux backend reads the PCI devices from sysfs instead.
		export HWLOC_COMPONENTS=-pci
		exec "$srcdir/tests/vm/runner/vm-run" --timeout "${GDRFAB_VM_TIMEOUT:-1800}" -- bash -c '
			. "$1/tests/vm/runner/vm-suites.sh" || exit 1
			status=0
			run_vm_suites 2 "$GDRFAB_SAN_PRELOAD" || status=1
			"$1/tests/vm/fi_tools/check-fi-tools.sh" || status=1
			exit $status' asan-vm "$srcdir"
	) 2>&1 | tee "$build/san-vm.out"
	status=${PIPESTATUS[0]}
	[ "$status" = 77 ] && return 77
	reports "$build/san-vm" "$build/san-vm.out" || status=1
	echo "asan-vm: $([ "$status" = 0 ] && echo passed || echo FAILED)"
	return "$status"
}

build_variant || exit 1
case $mode in
unit) run_unit ;;
vm) run_vm ;;
all)
	run_unit
	u=$?
	run_vm
	v=$?
	[ $u = 0 ] && { [ $v = 0 ] || [ $v = 77 ]; } && exit 0
	exit 1
	;;
*) echo "usage: $0 [unit|vm]" >&2; exit 2 ;;
esac
