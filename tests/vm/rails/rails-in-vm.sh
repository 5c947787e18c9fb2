#!/bin/bash
# Inside the VM booted with GDRFAB_VM_RAILS=1 (tests/vm/rails/run-rails.sh:
# rxe0/rxe1 on veth0/veth1, rxe2/rxe3 on veth2/veth3), from the build
# directory: rail sets over real soft-RoCE. With
# FI_GDRFAB_RAILS=rxe0+rxe2,rxe1+rxe3, fi_info lists both sets; a pingpong
# between them moves 1 B .. 16 MiB with the data checked, and the rxe
# devices' own packet counters show the split: below FI_GDRFAB_STRIPE_MIN
# nothing goes over rxe2/rxe3, above it they carry a share of their own
# (the provider keeps its per-rail byte counts internal, so the NICs'
# counters are the evidence). The NICs alone (rxe0 to rxe1) and a rail set
# talking to a NIC alone, either way round, still work and leave
# rxe2/rxe3 idle (one rail). Prints one PASS/FAIL line per check and
# "rails: N passed, M failed".
set -u
suite=rails
. "$(dirname "$0")/../runner/check-lib.sh"
export FI_GDRFAB_RAILS=rxe0+rxe2,rxe1+rxe3
stripe_min=${FI_GDRFAB_STRIPE_MIN:-262144}
pp=$PWD/examples/gdrfab_pingpong
dir=$(mktemp -d /tmp/rails.XXXXXX)
spid=''
trap '[ -n "$spid" ] && kill -9 "$spid" 2>/dev/null; rm -rf "$dir"' EXIT
small=1,64,4096,65536
large=$stripe_min,1048576,4194304,16777216
# The runs where one side is a NIC alone: the sizes around the stripe
# threshold, not the long ones (CI time; no striping to measure there).
fallback=1,65536,$stripe_min,4194304
port=47610
rxes="rxe0 rxe1 rxe2 rxe3"
declare -A before delta

# pkts DEV: the RoCE packets DEV sent and received so far (rxe's own
# counters: they see every packet whichever QP sent it).
pkts() {
	local d=/sys/class/infiniband/$1/ports/1/hw_counters
	echo $(($(cat "$d/sent_pkts") + $(cat "$d/rcvd_pkts")))
}
# share RAIL OTHER: RAIL's share in percent of the packets RAIL and OTHER
# carried in the last run (0 when none).
share() {
	local sum=$((delta[$1] + delta[$2]))
	[ $sum -gt 0 ] && echo $((100 * delta[$1] / sum)) || echo 0
}

# pingpong NAME SERVER_DOMAIN CLIENT_DOMAIN SIZES ITERS: one run with the
# data checked (-c), its output in $dir/NAME.{srv,cli}; the packets each
# rxe device carried meanwhile in delta[rxe0] .. delta[rxe3]. The client must name
# the domain it opened (a fallback to another would be no pass).
pingpong() {
	local name=$1 sdom=$2 cdom=$3 sizes=$4 iters=$5 rc=0 r
	for r in $rxes; do before[$r]=$(pkts "$r"); done
	port=$((port + 1))
	timeout 180 "$pp" -d "$sdom" -P $port -c -i "$iters" -s "$sizes" >"$dir/$name.srv" 2>&1 &
	spid=$!
	wait_port $port || rc=1
	[ $rc = 0 ] && { timeout 180 "$pp" -d "$cdom" -P $port -c -i "$iters" -s "$sizes" 192.0.2.1 >"$dir/$name.cli" 2>&1 || rc=1; }
	wait "$spid" || rc=1
	spid=''
	for r in $rxes; do
		delta[$r]=$(($(pkts "$r") - before[$r]))
	done
	grep -qF "($cdom)" "$dir/$name.cli" 2>/dev/null || rc=1
	if [ $rc = 0 ]; then
		sed 's/^/    /' "$dir/$name.cli"
	else
		echo "    ---- server ($sdom)"
		sed 's/^/    /' "$dir/$name.srv"
		echo "    ---- client ($cdom)"
		sed 's/^/    /' "$dir/$name.cli" 2>/dev/null
	fi
	echo "    packets: rxe0 ${delta[rxe0]}, rxe2 ${delta[rxe2]} ($(share rxe2 rxe0)% of the set);" \
		"rxe1 ${delta[rxe1]}, rxe3 ${delta[rxe3]} ($(share rxe3 rxe1)% of the set)"
	return $rc
}
# share_at_least PCT: rxe2 carried at least PCT% of rxe0+rxe2's packets in
# the last run, and rxe3 of rxe1+rxe3's.
share_at_least() {
	[ "$(share rxe2 rxe0)" -ge "$1" ] && [ "$(share rxe3 rxe1)" -ge "$1" ]
}
# second_rails_idle: rxe2 and rxe3 carried nothing in the last run.
second_rails_idle() { [ "${delta[rxe2]}" = 0 ] && [ "${delta[rxe3]}" = 0 ]; }

active() {
	for r in $rxes; do
		grep -q ACTIVE "/sys/class/infiniband/$r/ports/1/state" 2>/dev/null || return 1
	done
}
check "rxe0 .. rxe3 are ACTIVE (GDRFAB_VM_RAILS=1 reached guest-setup)" active
[ -x "$pp" ] || { echo "FAIL: $suite: $pp is not built"; exit 1; }

fi_info -p gdrfab >"$dir/fi_info" 2>&1
grep 'domain: ' "$dir/fi_info" | sort | uniq -c | sed 's/^/    /'
check "fi_info lists the domain rxe0+rxe2" grep -q "domain: rxe0+rxe2$" "$dir/fi_info"
check "fi_info lists the domain rxe1+rxe3" grep -q "domain: rxe1+rxe3$" "$dir/fi_info"
check "fi_info still lists rxe0 alone" grep -q "domain: rxe0$" "$dir/fi_info"

check "rail sets, 1 B .. 64 KiB, data checked" pingpong small rxe0+rxe2 rxe1+rxe3 $small 20
check "below $stripe_min B rxe2/rxe3 carry nothing (not striped)" second_rails_idle
check "rail sets, $stripe_min B .. 16 MiB, data checked" pingpong large rxe0+rxe2 rxe1+rxe3 "$large" 3
check "striped: rxe2 and rxe3 carry >= 30% of their set's packets" share_at_least 30
check "NICs alone (rxe0, rxe1), 1 B .. 4 MiB, data checked" pingpong single rxe0 rxe1 "$fallback" 3
check "NICs alone: rxe2/rxe3 carry nothing" second_rails_idle
check "rail set server, NIC alone client, 1 B .. 4 MiB, data checked" pingpong mixed1 rxe0+rxe2 rxe1 "$fallback" 3
check "rail set to NIC alone: one rail, rxe2/rxe3 carry nothing" second_rails_idle
check "NIC alone server, rail set client, 1 B .. 4 MiB, data checked" pingpong mixed2 rxe0 rxe1+rxe3 "$fallback" 3
check "NIC alone to rail set: one rail, rxe2/rxe3 carry nothing" second_rails_idle
echo "rails: ${SECONDS}s in the VM"
totals
