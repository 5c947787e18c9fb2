# Sourced by the scripts that run check lists inside the VM: set $suite
# first. check WHAT COMMAND... runs the command and prints "PASS: suite:
# WHAT" or "FAIL: ..."; wait_port PORT [TRIES [SECONDS]] waits (never
# sleeps blindly) for a server's TCP port; timeout_stacks is timeout
# that prints a hung command's stacks first; totals prints "suite: N
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
# timeout_stacks SECONDS COMMAND...: timeout's job, except that a
# command still running at the limit first has its threads' stacks
# printed (gdb) to stderr, and those of its children (a launcher's
# ranks: mpirun's), so that a hang in a check explains itself in the
# check's output; its status is then 124, as timeout's.
timeout_stacks() {
	local limit=$1 pid watcher rc
	shift
	"$@" &
	pid=$!
	(
		sleep "$limit"
		kill -0 "$pid" 2>/dev/null || exit 0
		kids=$(cat /proc/"$pid"/task/*/children 2>/dev/null)
		for p in $pid $kids; do
			echo "---- $(cat /proc/"$p"/comm 2>/dev/null) ($p) of $1 still running after $limit s: its threads' stacks" >&2
			command -v gdb >/dev/null &&
				timeout 60 gdb -batch -nx -p "$p" -ex 'thread apply all bt 24' 2>&1 |
				grep -E '^(Thread|#)' >&2
		done
		# shellcheck disable=SC2086 # the children's ids, one word each
		kill -9 "$pid" $kids 2>/dev/null
	) &
	watcher=$!
	wait "$pid"
	rc=$?
	kill "$watcher" 2>/dev/null
	[ "$rc" = 137 ] && rc=124
	return "$rc"
}
totals() {
	echo "$suite: $pass passed, $fail failed"
	[ "$fail" = 0 ]
}
# baseline WHAT COMMAND...: a run of the baseline provider, reported as
# "BASELINE: suite: WHAT: passed" (or "failed") and not counted: its
# failure is that provider's, not gdrfab's.
baseline() {
	local what=$1
	shift
	if "$@"; then
		echo "BASELINE: $suite: $what: passed"
	else
		echo "BASELINE: $suite: $what: failed (reported, not counted)"
	fi
}
# mpi_outcome OUT STATUS LINE...: an MPI program's run, whose output is
# in OUT and exit status STATUS, passed when it exited 0, printed "mpi: N
# passed, 0 failed" and contains every LINE (the first: the provider its
# MPI names as taken, so that a fallback to another is no pass). Shows
# those lines and the program's PASS/FAIL lines, or all of it on failure.
mpi_outcome() {
	local out=$1 rc=$2 want
	shift 2
	for want in "$@"; do
		grep -qF -- "$want" "$out" || rc=1
	done
	grep -q "^mpi: [0-9]* passed, 0 failed" "$out" || rc=1
	if [ "$rc" = 0 ]; then
		for want in "$@"; do
			grep -F -- "$want" "$out" | head -n 1 | sed 's/^/    /'
		done
		grep -E '^(PASS|FAIL|SKIP|mpi):' "$out" | sed 's/^/    /'
	else
		sed 's/^/    /' "$out"
	fi
	return "$rc"
}
