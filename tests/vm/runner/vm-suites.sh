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
vm_suites='
api/gdrfab_vm_tests    2 300 -
wire/gdrfab_wire_tests 1 120 -
hmem/gdrfab_hmem_tests 2 240 hmem/*
hmem/gdrfab_hmem_tests 1 300 hmem_pipe/*
hmem/gdrfab_hmem_tests 1 240 hmem_copy/*
hmem/gdrfab_hmem_tests 1 240 hmem_async/*
hmem/gdrfab_hmem_tests 1 240 hmem_nocuda/*
hmem/gdrfab_hmem_tests 1 240 nccl/*
hmem/gdrfab_hmem_tests 1 240 nccl_gdr/*
hmem/gdrfab_hmem_tests 1 240 nccl_rdma/*
'

# run_vm_suites FACTOR [PRELOAD]: runs every line, in order, its time-out
# multiplied by FACTOR and, when PRELOAD is given, with LD_PRELOAD=PRELOAD
# for the test program alone. Every run happens whatever the ones before
# did; 1 if any failed, else 0.
run_vm_suites() {
	local factor=$1 preload=${2:-} status=0 line prog jobs secs filter
	local -a lines cmd
	# Read before the loop: the programs keep the caller's stdin.
	mapfile -t lines <<<"$vm_suites"
	for line in "${lines[@]}"; do
		read -r prog jobs secs filter <<<"$line"
		[ -n "$prog" ] || continue
		cmd=(env)
		[ -z "$preload" ] || cmd+=("LD_PRELOAD=$preload")
		[ "$prog" != hmem/gdrfab_hmem_tests ] ||
			cmd+=("LD_LIBRARY_PATH=$PWD/tests/cuda/.libs")
		cmd+=("./tests/vm/$prog" --jobs "$jobs" --color=never
			--timeout "$((secs * factor))")
		[ "$filter" = - ] || cmd+=(--filter "$filter")
		"${cmd[@]}" || status=1
	done
	return "$status"
}
