# Sourced by the scripts that run check lists inside the VM: set $suite
# first. check WHAT COMMAND... runs the command and prints "PASS: suite:
# WHAT" or "FAIL: ..."; wait_port PORT [TRIES [SECONDS]] waits (never
# sleeps blindly) for a server's TCP port; totals prints "suite: N
# passed, M failed" and is the script's status.
pass=0 fail=0
check() {
	local what=$1
	shift
	if "$@"; then
		echo "PASS: $suite: $what"
		pass=$((pass + 1))
	else
		echo "FAIL: $suite: $what"
		fail=$((fail + 1))
	fi
}
wait_port() { # PORT [TRIES [SECONDS between them]] (200 x 0.05 s)
	for _ in $(seq "${2:-200}"); do
		ss -ltn | grep -q ":$1 " && return 0
		sleep "${3:-0.05}"
	done
	return 1
}
totals() {
	echo "$suite: $pass passed, $fail failed"
	[ "$fail" = 0 ]
}
