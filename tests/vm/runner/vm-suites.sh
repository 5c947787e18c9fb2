# shellcheck shell=bash
# The Criterion suites the VM runs, listed once for both runners: sourced
# inside the guest, in the build directory, by tests/vm/runner/run-vm-tests.sh
# (this build) and tests/sanitize/run-sanitized.sh (the sanitized build,
# with every time-out doubled). A suite added here runs in both.
#
# One line a run: the program (under tests/vm/), Criterion's --jobs, its
# --timeout in seconds for the plain build, and --filter ("-": every test
# of the program). hmem/gdrfab_hmem_tests runs with the CUDA stand-in
# (tests/cuda/.libs) first on LD_LIBRARY_PATH.
# gdrfab_wire_tests is not here: its checks read the warnings it causes,
# so it always runs with logging on; it runs once, below, at debug.
vm_suites='
api/gdrfab_vm_tests    2 300 -
hmem/gdrfab_hmem_tests 2 240 hmem/*
hmem/gdrfab_hmem_tests 2 300 hmem_pipe/*
hmem/gdrfab_hmem_tests 2 240 hmem_copy/*
hmem/gdrfab_hmem_tests 2 240 hmem_async/*
hmem/gdrfab_hmem_tests 2 240 hmem_nocuda/*
hmem/gdrfab_hmem_tests 2 240 nccl/*
hmem/gdrfab_hmem_tests 2 240 nccl_gdr/*
hmem/gdrfab_hmem_tests 2 240 nccl_rdma/*
'

# The suites that meet API misuse and hostile peers, run a second time
# with libfabric's logging at its most verbose: a log line must never
# change what a call does (issue 33: formatting one recursed until the
# stack ran out, only with logging on). Same columns as above. Their
# output, megabytes of log lines, goes to a file; the run prints each
# program's failures and Criterion's closing line.
vm_logged_suites='
api/gdrfab_vm_tests    2 240 misuse*/*
api/gdrfab_vm_tests    2 120 errors/*
api/gdrfab_vm_tests    2 120 objects/*
wire/gdrfab_wire_tests 1 240 -
'

# run_suite_list LIST FACTOR PRELOAD [LOG]: runs every line of LIST, in
# order, its time-out multiplied by FACTOR and, when PRELOAD is not
# empty, with LD_PRELOAD=PRELOAD for the test program alone; with LOG,
# with FI_LOG_LEVEL=debug and its output appended to LOG. Every run
# happens whatever the ones before did; 1 if any failed, else 0.
run_suite_list() {
	local list=$1 factor=$2 preload=$3 log=${4:-} status=0 line prog jobs secs filter
	local -a lines cmd
	# Read before the loop: the programs keep the caller's stdin.
	mapfile -t lines <<<"$list"
	for line in "${lines[@]}"; do
		read -r prog jobs secs filter <<<"$line"
		[ -n "$prog" ] || continue
		cmd=(env)
		[ -z "$preload" ] || cmd+=("LD_PRELOAD=$preload")
		[ -z "$log" ] || cmd+=(FI_LOG_LEVEL=debug)
		[ "$prog" != hmem/gdrfab_hmem_tests ] ||
			cmd+=("LD_LIBRARY_PATH=$PWD/tests/cuda/.libs")
		cmd+=("./tests/vm/$prog" --jobs "$jobs" --color=never
			--timeout "$((secs * factor))")
		[ "$filter" = - ] || cmd+=(--filter "$filter")
		SECONDS=0
		if [ -z "$log" ]; then
			"${cmd[@]}" || status=1
			# Where CI's time goes, a line a run.
			echo "time: $prog $filter: ${SECONDS} s"
			continue
		fi
		echo "==== logging on: ${cmd[*]}" >>"$log"
		if "${cmd[@]}" >>"$log.run" 2>&1; then
			grep -a 'Synthesis' "$log.run" | sed "s|^|logging on, $prog $filter: |"
		else
			status=1
			echo "FAIL: logging on, $prog $filter: its failures (the whole output is in $log):"
			grep -a -E '^\[(FAIL|----)\]|Synthesis|Crash|SIGSEGV|runtime error' "$log.run" | tail -n 40
		fi
		cat "$log.run" >>"$log" && rm -f "$log.run"
		echo "time: logging on, $prog $filter: ${SECONDS} s"
	done
	return "$status"
}

# run_vm_suites FACTOR [PRELOAD]: the suites above, then the logged ones
# with their log in tests/vm/logging-on.log of the build directory.
run_vm_suites() {
	local status=0 log=$PWD/tests/vm/logging-on.log
	run_suite_list "$vm_suites" "$1" "${2:-}" || status=1
	rm -f "$log"
	run_suite_list "$vm_logged_suites" "$1" "${2:-}" "$log" || status=1
	return "$status"
}
