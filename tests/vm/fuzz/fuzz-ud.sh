#!/bin/bash
# Inside the VM, from the build directory: hostile datagrams against a
# gdrfab endpoint's UD QP while a legitimate client keeps pinging it.
#
# A target (fuzz_peer on rxe0) echoes tagged pings; a client (fuzz_peer on
# rxe1) checks every byte of every echo and logs each round trip; fuzz_ud,
# an attacker with a raw UD QP on rxe1, runs one class of datagrams after
# another at the target's UD QP (bounded in count and time; only the VM's
# veth pair exists). After each class the UD QP's state is read from the
# kernel (rdma resource), and the target and client must still be alive;
# a class that kills either or moves the UD QP to error is reported and
# the pair restarted, so that the later classes still measure something.
# Also measured: the target's RC QPs around a flood of invented names (at
# most FI_GDRFAB_HALF_OPEN_MAX more during it, back after
# FI_GDRFAB_CONN_TIMEOUT_MS), spoofed REQs (no live connection reset), and the
# client's round trips during a flood of REQs from GIDs nobody answers ARP
# for against an unattacked stretch just before (median within 2x).
#
# Prints per class the datagrams sent and the client's round trips, then
# the counts, then one PASS/FAIL line per check and "fuzz_ud: N passed, M
# failed" (tests/totals.sh counts it). GDRFAB_FUZZ_SEED replays a run.
set -u
suite=fuzz_ud
. "$(dirname "$0")/../runner/check-lib.sh"
bin=$PWD/tests/vm/fuzz
dir=$(mktemp -d /tmp/fuzz-ud.XXXXXX)
seed=${GDRFAB_FUZZ_SEED:-$(date +%s)}
hang_s=40 # a client round trip stalled longer is a hang
export FI_PROVIDER=gdrfab
# Half-open connections must be gone this long after the flood.
export FI_GDRFAB_CONN_TIMEOUT_MS=${FI_GDRFAB_CONN_TIMEOUT_MS:-5000}
half_open_max=${FI_GDRFAB_HALF_OPEN_MAX:-32}

packets=0 cases=0 crashes=0 hangs=0 corrupt=0 send_errors=0
ud_broken=() gen=0 tpid= cpid=
final=0 # the last class: leave the pair as it is, for the checks after it
trap 'for p in $tpid $cpid; do kill -9 "$p" 2>/dev/null; done; rm -rf "$dir"' EXIT
echo "fuzz_ud: seed $seed (GDRFAB_FUZZ_SEED=$seed replays it)"

now_us() { local t=${EPOCHREALTIME/./}; echo "$t"; }

# Waits up to $2 tenths of a second for the command in $1 to succeed.
wait_for() {
	for _ in $(seq "$2"); do
		eval "$1" && return 0
		sleep 0.1
	done
	return 1
}

# The kernel's view of the target's QPs.
ud_state() {
	rdma resource show qp lqpn "$tqpn" 2>/dev/null |
		sed -n 's/.* state \([A-Z_]*\) .*/\1/p' | head -n 1
}
rc_qps() { rdma resource show qp pid "$tpid" 2>/dev/null | grep -c ' type RC '; }

# Starts a target and a client that has made a few round trips.
start_pair() {
	gen=$((gen + 1))
	rm -f "$dir/target.name" "$dir/client.name"
	"$bin/fuzz_peer" target rxe0 "$dir/target.name" >"$dir/target.$gen.out" 2>&1 &
	tpid=$!
	wait_for "[ -s '$dir/target.name' ]" 300 || { echo "fuzz_ud: the target did not start"; return 1; }
	tqpn=$(sed -n 's/^target: ud_qpn=//p' "$dir/target.$gen.out")
	rtt=$dir/rtt.$gen.log
	"$bin/fuzz_peer" client rxe1 "$dir/target.name" "$dir/client.name" "$rtt" 0 $hang_s \
		>"$dir/client.$gen.out" 2>&1 &
	cpid=$!
	if ! wait_for "[ -e '$rtt' ] && [ \$(wc -l <'$rtt') -ge 30 ]" 600; then
		echo "fuzz_ud: the client made no round trips in 60 s:"
		cat "$dir/target.$gen.out" "$dir/client.$gen.out"
		return 1
	fi
	# The client's RC QP, for the replays.
	cqpn=$(rdma resource show qp pid "$cpid" 2>/dev/null |
		sed -n 's/.* lqpn \([0-9]*\) .* type RC .*/\1/p' | head -n 1)
	rc_start=$(rc_qps)
	echo "fuzz_ud: pair $gen: target pid $tpid (UD QP $tqpn, $rc_start RC QP), client pid $cpid (RC QP ${cqpn:-?})"
}

# Ends the pair: both must exit on SIGTERM within 10 s, with their counts.
stop_pair() {
	local p out
	for p in $tpid $cpid; do kill -TERM "$p" 2>/dev/null; done
	for p in $tpid $cpid; do
		if ! wait_for "! kill -0 $p 2>/dev/null" 100; then
			echo "fuzz_ud: HANG: pid $p did not exit on SIGTERM"
			hangs=$((hangs + 1))
			kill -9 "$p" 2>/dev/null
		fi
		wait "$p" 2>/dev/null
	done
	for out in "$dir/target.$gen.out" "$dir/client.$gen.out"; do
		grep -E '^(target|client):' "$out" | sed 's/^/    /'
		corrupt=$((corrupt + $(sed -n 's/.* corrupt=\([0-9]*\).*/\1/p' "$out" | tail -n 1 | grep . || echo 0)))
		send_errors=$((send_errors + $(sed -n 's/^client: .* send_errors=\([0-9]*\).*/\1/p' "$out" | grep . || echo 0)))
	done
	tpid= cpid=
}

# Median and max (µs) of the round trips over [$1, $2] µs, and how many;
# the round trip under way at $2 counts, with its full time.
rtt_stats() {
	awk -v from="$1" -v to="$2" '
		$1 >= from && $1 - $2 <= to { print $2 }
		$1 > to { exit }' "$rtt" | sort -n | awk '
		{ r[NR] = $1 }
		END { printf "%d %d %d\n", NR ? r[int((NR + 1) / 2)] : 0, r[NR], NR }' 
}

# Waits (up to the hang bound) for the client to finish a round trip that
# ended after $1 µs; false when it has not.
client_past() {
	wait_for "awk -v t=$1 '\$1 > t { f = 1; exit } END { exit !f }' '$rtt'" $((hang_s * 10))
}

# Runs one class of fuzz_ud; afterwards checks the pair and the UD QP.
# Sets first/last (µs) to the class's first and last datagram.
attack() {
	local class=$1 out sent n state med max cnt
	shift
	out=$("$bin/fuzz_ud" -d rxe1 -t "$dir/target.name" -c "$dir/client.name" \
		-q "${cqpn:-0}" -S "$seed" "$@" "$class" 2>&1)
	echo "$out" | sed 's/^/    /'
	sent=$(sed -n 's/.* sent=\([0-9]*\).*/\1/p' <<<"$out")
	n=$(sed -n 's/.* cases=\([0-9]*\).*/\1/p' <<<"$out")
	first=$(sed -n 's/.* first_us=\([0-9]*\).*/\1/p' <<<"$out")
	last=$(sed -n 's/.* last_us=\([0-9]*\).*/\1/p' <<<"$out")
	packets=$((packets + ${sent:-0})) cases=$((cases + ${n:-0}))
	[ -n "$first" ] && [ "$first" != 0 ] || first=$(now_us) last=$(now_us)
	client_past "$last"
	read -r med max cnt <<<"$(rtt_stats "$first" "$last")"
	state=$(ud_state)
	printf '  %-10s %6s datagrams  %5s cases  client: %5s round trips, median %6s us, max %8s us  UD QP %s\n' \
		"$class" "${sent:-0}" "${n:-0}" "$cnt" "$med" "$max" "${state:-gone}"
	health "$class" "$state"
}

# After a class: a dead process is a crash (the client's status 3 a hang),
# a UD QP not in RTS a failure; either restarts the pair.
health() {
	local class=$1 state=$2 rc restart=0 target_alive=1
	if ! kill -0 "$tpid" 2>/dev/null; then
		target_alive=0
		wait "$tpid"
		echo "fuzz_ud: CRASH: the target died during '$class' (status $?)"
		crashes=$((crashes + 1)) restart=1
	fi
	if ! kill -0 "$cpid" 2>/dev/null; then
		wait "$cpid"
		rc=$?
		if [ "$rc" = 3 ]; then
			echo "fuzz_ud: HANG: the client stalled over ${hang_s}s during '$class'"
			hangs=$((hangs + 1))
		else
			echo "fuzz_ud: CRASH: the client died during '$class' (status $rc)"
			crashes=$((crashes + 1))
		fi
		restart=1
	fi
	if [ $target_alive = 1 ] && [ "$state" != RTS ]; then
		echo "fuzz_ud: '$class' left the target's UD QP in ${state:-no state} (RTS expected): no new peer can connect"
		ud_broken+=("$class")
		restart=1
	fi
	if [ $restart = 1 ] && [ "$final" = 0 ]; then
		stop_pair
		start_pair || exit 1
	fi
}

start_pair || exit 1
echo "fuzz_ud: classes (datagrams, then the legit client's round trips while they were sent)"

# Unattacked, then REQs from unanswerable GIDs over as long a stretch.
base_from=$(now_us)
sleep 3
base_to=$(now_us)
read -r base_med base_max base_cnt <<<"$(rtt_stats "$base_from" "$base_to")"
printf '  %-10s %6s datagrams  %5s cases  client: %5s round trips, median %6s us, max %8s us\n' \
	unattacked 0 0 "$base_cnt" "$base_med" "$base_max"
attack bogus-gid -n 24 -s 3
client_past $((last + 500000))
read -r bog_med bog_max bog_cnt <<<"$(rtt_stats "$first" "$((last + 500000))")"

for class in random truncated fields bytes replay; do
	attack $class
done

# Invented names: the target's RC QPs and RSS before, right after, and
# once half-open connections have timed out.
rc0=$(rc_qps)
# The peak is what the cap bounds: sampled while the flood runs.
echo "$rc0" >"$dir/rc_peak"
(while :; do
	n=$(rc_qps)
	[ "${n:-0}" -gt "$(cat "$dir/rc_peak")" ] && echo "$n" >"$dir/rc_peak"
	sleep 0.1
done) &
sampler=$!
attack invented -n 256 -s 4
kill "$sampler" 2>/dev/null
wait "$sampler" 2>/dev/null
rc1=$(cat "$dir/rc_peak")
sleep $((FI_GDRFAB_CONN_TIMEOUT_MS / 1000 + 3))
rc2=$(rc_qps)
rc_base=$rc_start

attack flood -n 4000
attack spoof -n 3 -s 2
final=1
attack oversized

# A peer that was never connected must still get in.
fresh() {
	"$bin/fuzz_peer" client rxe1 "$dir/target.name" "$dir/client2.name" "$dir/rtt2.log" 20 15 \
		>"$dir/client2.out" 2>&1
	local rc=$?
	# Its counts; libfabric's warnings (why it failed) only on failure.
	[ $rc = 0 ] && grep '^client:' "$dir/client2.out" | sed 's/^/    fresh /' ||
		sed 's/^/    fresh /' "$dir/client2.out"
	return $rc
}
fresh
fresh_rc=$?
stop_pair

echo "fuzz_ud: packets=$packets cases=$cases crashes=$crashes hangs=$hangs corruptions=$corrupt"
echo "fuzz_ud: UD QP left in error by: ${ud_broken[*]:-none}"
echo "fuzz_ud: invented names: RC QPs $rc0 -> peak $rc1 -> $rc2 after ${FI_GDRFAB_CONN_TIMEOUT_MS} ms (the pair started with $rc_base)"
echo "fuzz_ud: bogus-GID flood: round trip median $bog_med us, max $bog_max us ($bog_cnt); unattacked median $base_med us, max $base_max us ($base_cnt)"
echo "fuzz_ud: legit client's sends that failed (a spoofed REQ resetting its connection would): $send_errors"

check "no crash (target and client alive after every class)" test "$crashes" = 0
check "no hang (round trips under ${hang_s}s, exit on SIGTERM)" test "$hangs" = 0
check "no corruption (every byte of every echo checked)" test "$corrupt" = 0
check "no datagram moves the UD QP to error" test ${#ud_broken[@]} = 0
check "a new client connects after the attack" test "$fresh_rc" = 0
# RSS cannot tell: soft-RoCE's QP memory is not in VmRSS. Counting the
# RC QPs can: at most FI_GDRFAB_HALF_OPEN_MAX wait at once, none after.
check "invented names: the flood opened connections (peak ${rc1:-?} > ${rc0:-?}: the count sees them)" \
	test "${rc1:-0}" -gt "${rc0:-0}"
check "invented names: RC QPs capped during the flood (peak ${rc1:-?} <= ${rc0:-?} + $half_open_max)" \
	test "${rc1:-999999}" -le $((${rc0:-0} + half_open_max))
check "invented names: RC QPs reclaimed (${rc2:-?} <= ${rc_base:-?} + 2)" \
	test "${rc2:-999999}" -le $((${rc_base:-0} + 2))
check "spoofed REQs reset no live connection ($send_errors sends failed)" \
	test "$send_errors" = 0
check "bogus-GID flood: median round trip within 2x unattacked ($bog_med vs $base_med us)" \
	test "$bog_cnt" -gt 0 -a "$bog_med" -le $((2 * base_med))
totals
