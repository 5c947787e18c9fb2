#!/bin/bash
# Inside the VM booted with GDRFAB_VM_RAILS=3 (tests/vm/rails/run-rails.sh:
# rxe0/rxe1 on veth0/veth1, rxe2/rxe3 on veth2/veth3, rxe4/rxe5 on
# veth4/veth5), from the build
# directory: rail sets over real soft-RoCE. With
# FI_GDRFAB_RAILS=rxe0+rxe2,rxe1+rxe3, fi_info lists both sets; a pingpong
# between them moves 1 B .. 64 MiB with the data checked, and the rxe
# devices' own packet counters show the split: eager and segmented
# messages (up to 16 KiB) never go over rxe2/rxe3; rendezvous messages
# below FI_GDRFAB_STRIPE_MIN go whole on one rail, the rails taking turns,
# and above it are striped: either way rxe2/rxe3 carry a share of their
# own. The provider's public per-rail counters (FI_GDRFAB_STATS tables,
# summed per side by gdrfab_stat) must tell the same story: each rail
# named by its NIC, nothing on the rails below the rendezvous size, the
# rails' bytes adding up to the rendezvous bytes, split near even, and the
# striped bytes they give the
# rxe2-rxe3 link what its packets carried (a rail beyond rail 0 carries
# striped READs alone). fi_writedata between the sets (gdrfab_pingpong
# -m rma, the receiver checking the bytes when their CQ data arrives) is
# striped from the threshold too: rxe2/rxe3 carry a share of the packets
# and the counters' rail bytes are the written bytes but for each side's
# first write to the other's key (rail 0, asking for its rkeys), and
# windows of fi_write (gdrfab_bw -m rma) the same; below the threshold,
# or with a NIC alone, rxe2/rxe3 stay idle. The NICs alone (rxe0 to
# rxe1) and a rail set talking to a NIC alone, either way round, still
# work and leave rxe2/rxe3 idle (one rail), and a NIC alone reports no
# rail rows. A rail pulled mid-stream costs no message: its pieces go
# again on rail 0; one that comes back is taken back (striping again,
# said and counted once per side). Then the MPIs, as their users run them with FI_GDRFAB_RAILS
# set: Open MPI (mtl ofi) and MPICH (ch4:ofi) run mpi_p2p on 4 and 2 ranks, no
# domain named, and the ranks' counters must show the rail sets striping
# (rxe2 or rxe3 carried striped bytes). Last, with a third pair (rxe4,
# rxe5), three rails: striped three ways, and the third pulled and
# restored mid-stream while the other two carry on (below). Prints one
# PASS/FAIL line per check and "rails: N passed, M failed".
set -u
suite=rails
. "$(dirname "$0")/../runner/check-lib.sh"
export FI_GDRFAB_RAILS=rxe0+rxe2,rxe1+rxe3
stripe_min=${FI_GDRFAB_STRIPE_MIN:-262144}
pp=$PWD/examples/gdrfab_pingpong
bw=$PWD/examples/gdrfab_bw
stat=$PWD/examples/gdrfab_stat
rank_nics=$(cd "$(dirname "$0")" && pwd)/rank-nics.sh
dir=$(mktemp -d /tmp/rails.XXXXXX)
spid=''
trap '[ -n "$spid" ] && kill -9 "$spid" 2>/dev/null; rm -rf "$dir"' EXIT
# Eager and segmented (FI_GDRFAB_SEG_MAX, 16 KiB), rendezvous below the
# stripe threshold (the rails take turns), and striped.
small=1,64,4096,16384
mid=16385,65536,131072,$((stripe_min - 1))
large=$stripe_min,1048576,4194304,16777216,67108864
# The runs where one side is a NIC alone: the sizes around the stripe
# threshold, not the long ones (CI time; no striping to measure there).
fallback=1,65536,$stripe_min,4194304
port=47610
rxes="rxe0 rxe1 rxe2 rxe3"
# A third pair (GDRFAB_VM_RAILS=3) is for the three-rail checks at the
# end; until then the provider sees the first four NICs alone, which the
# checks before were written for (rxe4 and rxe5 listed alone would draw
# MPI ranks).
three=''
if [ -e /sys/class/infiniband/rxe4 ]; then
	three=1
	rxes="$rxes rxe4 rxe5"
	export FI_GDRFAB_DEVICE=rxe0,rxe1,rxe2,rxe3
fi
declare -A before delta

# pkts DEV: the RoCE packets DEV sent and received so far (rxe's own
# counters: they see every packet whichever QP sent it).
pkts() {
	local d=/sys/class/infiniband/$1/ports/1/hw_counters s r
	read -r s <"$d/sent_pkts"
	read -r r <"$d/rcvd_pkts"
	echo $((s + r))
}
# share RAIL OTHER: RAIL's share in percent of the packets RAIL and OTHER
# carried in the last run (0 when none).
share() {
	local sum=$((delta[$1] + delta[$2]))
	[ $sum -gt 0 ] && echo $((100 * delta[$1] / sum)) || echo 0
}

# pingpong NAME SERVER_DOMAIN CLIENT_DOMAIN SIZES ITERS [MODE]: one run
# with the data checked (-c), tagged messages or MODE's (rma:
# fi_writedata, its CQ data saying the bytes are there, the receiver
# checking them then), its output in $dir/NAME.{srv,cli} (the program
# is $prog when set, with $opts added: gdrfab_bw, a window); the packets each
# rxe device carried meanwhile in delta[rxe0] .. delta[rxe3]; each side's
# counters (FI_GDRFAB_STATS) summed by gdrfab_stat in $dir/NAME.{srv,cli}.job.
# The client must name the domain it opened (a fallback to another would
# be no pass).
pingpong() {
	local name=$1 sdom=$2 cdom=$3 sizes=$4 iters=$5 mode=${6:-tagged} rc=0 r
	for r in $rxes; do before[$r]=$(pkts "$r"); done
	port=$((port + 1))
	FI_GDRFAB_STATS=$dir/$name.srv.stats \
		timeout_stacks 180 "${prog:-$pp}" ${opts:-} -d "$sdom" -P $port -m "$mode" -c -i "$iters" -s "$sizes" >"$dir/$name.srv" 2>&1 &
	spid=$!
	wait_port $port || rc=1
	[ $rc = 0 ] && { FI_GDRFAB_STATS=$dir/$name.cli.stats \
		timeout_stacks 180 "${prog:-$pp}" ${opts:-} -d "$cdom" -P $port -m "$mode" -c -i "$iters" -s "$sizes" 192.0.2.1 >"$dir/$name.cli" 2>&1 || rc=1; }
	wait "$spid" || rc=1
	spid=''
	for r in $rxes; do
		delta[$r]=$(($(pkts "$r") - before[$r]))
	done
	grep -qF "($cdom)" "$dir/$name.cli" 2>/dev/null || rc=1
	for side in srv cli; do
		"$stat" "$dir/$name.$side".stats.* >"$dir/$name.$side.job" 2>/dev/null || rc=1
	done
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

# The public counters of run NAME's SIDE (srv, cli), from its job table:
# rail NAME SIDE NIC COLUMN: the rail row of NIC (4 stripe_ops,
# 5 stripe_bytes, 6 errors), empty when there is none; counter NAME SIDE
# COUNTER; rail_nics NAME SIDE: the rails' NICs, in order.
rail() { awk -v n="$3" -v c="$4" '$1 == "rail" && $3 == n { print $c }' "$dir/$1.$2.job"; }
counter() { awk -v n="$3" '$1 == n { print $2 }' "$dir/$1.$2.job"; }
rail_nics() { awk '$1 == "rail" && $2 ~ /^[0-9]+$/ { printf "%s%s", s, $3; s = "+" }' "$dir/$1.$2.job"; }
# rails_named NAME: the server's rails are rxe0+rxe2, the client's rxe1+rxe3.
rails_named() { [ "$(rail_nics "$1" srv)" = rxe0+rxe2 ] && [ "$(rail_nics "$1" cli)" = rxe1+rxe3 ]; }
# no_rail_rows NAME SIDE: a NIC alone reports no rails.
no_rail_rows() { [ -s "$dir/$1.$2.job" ] && [ -z "$(rail_nics "$1" "$2")" ]; }
# striped NAME SIDE: the bytes that side's rails carried (striped reads
# and RMA).
striped() {
	awk '$1 == "rail" && $2 ~ /^[0-9]+$/ { b += $5 } END { print b + 0 }' "$dir/$1.$2.job"
}
# nothing_striped NAME: neither side counted a striped byte or a rail error.
nothing_striped() {
	local side
	for side in srv cli; do
		[ "$(striped "$1" $side)" = 0 ] || return 1
		[ -z "$(awk '$1 == "rail" && $2 ~ /^[0-9]+$/ && $6 != 0' "$dir/$1.$side.job")" ] || return 1
	done
}
# split_adds_up NAME COUNTER [SIDES]: on each side (default both), the
# rails' bytes are at least 90% of the side's COUNTER bytes, never more
# (the rest went on rail 0 alone before striping could: see the two
# below); rail 1 carried 40-60% of them, and no rail counted an error.
split_adds_up() {
	local side r1 all total
	for side in ${3:-srv cli}; do
		all=$(striped "$1" $side)
		total=$(counter "$1" $side "$2")
		echo "    $side: striped $all B of $2 $total"
		[ "$all" -gt 0 ] && [ "$all" -le "$total" ] &&
			[ $((100 * all / total)) -ge 90 ] || return 1
		r1=$(rail "$1" $side "$( [ $side = srv ] && echo rxe2 || echo rxe3)" 5)
		[ $((100 * r1 / all)) -ge 40 ] && [ $((100 * r1 / all)) -le 60 ] || return 1
		[ -z "$(awk '$1 == "rail" && $2 ~ /^[0-9]+$/ && $6 != 0' "$dir/$1.$side.job")" ] || return 1
	done
}
# rails_add_up NAME: the rendezvous bytes received (striped, or whole
# on the rail of their turn), but for those that came before the pair's
# rails were up (the first, on rail 0 alone, not counted).
rails_add_up() { split_adds_up "$1" rx_rndv_bytes; }
# rma_adds_up NAME [SIDES]: (default both: each writes to the other) the
# RMA write bytes, but for the writes to the peer's key before its other
# rkeys came (on rail 0 alone: the first asks for them; a window's others
# went with it).
rma_adds_up() { split_adds_up "$1" rma_write_bytes "${2:-}"; }
# mtu DEV: the port's active MTU in bytes (1024, rxe's on a 1500 B link,
# when ibv_devinfo cannot say).
mtu() {
	local m
	m=$(ibv_devinfo -d "$1" 2>/dev/null | awk '$1 == "active_mtu:" { print $2; exit }')
	echo "${m:-1024}"
}
# link_agrees NAME: the rxe2-rxe3 link carries striped READs alone, each
# a request and its responses of at most an MTU: the packets rxe2 counted
# are at least the striped bytes the counters give that link (the
# server's on rxe2 and the client's on rxe3) over the MTU, and at most
# that plus three per READ (request, a last short response, slack) and
# half again: rxe resends READ responses when the emulated CPU lags (5%
# more seen here, and a slower CI machine lags more). Counters that
# missed one side's pieces would be off by half, which this still fails.
link_agrees() {
	local bytes ops m lo hi
	bytes=$(($(rail "$1" srv rxe2 5) + $(rail "$1" cli rxe3 5)))
	ops=$(($(rail "$1" srv rxe2 4) + $(rail "$1" cli rxe3 4)))
	m=$(mtu rxe2)
	lo=$((bytes / m))
	hi=$((lo + lo / 2 + 3 * ops + 16))
	echo "    rxe2-rxe3 link: counters $bytes B in $ops READs (MTU $m): $lo..$hi packets expected;" \
		"rxe2 ${delta[rxe2]}, rxe3 ${delta[rxe3]}"
	[ "${delta[rxe2]}" -ge "$lo" ] && [ "${delta[rxe2]}" -le "$hi" ] &&
		[ "${delta[rxe3]}" -ge "$lo" ] && [ "${delta[rxe3]}" -le "$hi" ]
}

active() {
	for r in $rxes; do
		grep -q ACTIVE "/sys/class/infiniband/$r/ports/1/state" 2>/dev/null || return 1
	done
}
check "rxe0 .. rxe3 are ACTIVE (GDRFAB_VM_RAILS=1 reached guest-setup)" active
[ -x "$pp" ] || { echo "FAIL: $suite: $pp is not built"; exit 1; }
[ -x "$stat" ] || { echo "FAIL: $suite: $stat is not built"; exit 1; }

fi_info -p gdrfab >"$dir/fi_info" 2>&1
grep 'domain: ' "$dir/fi_info" | sort | uniq -c | sed 's/^/    /'
check "fi_info lists the domain rxe0+rxe2" grep -q "domain: rxe0+rxe2$" "$dir/fi_info"
check "fi_info lists the domain rxe1+rxe3" grep -q "domain: rxe1+rxe3$" "$dir/fi_info"
# Asked for, the sets stand for their NICs (an MPI spreading its ranks
# over the entries puts each on a set); a NIC named still gets its own.
check "fi_info lists no NIC of a set alone" eval '! grep -q "domain: rxe[0-3]$" "$dir/fi_info"'
check "fi_info -d rxe0 still lists rxe0 alone" eval 'fi_info -p gdrfab -d rxe0 | grep -q "domain: rxe0$"'

check "rail sets, 1 B .. 16 KiB, data checked" pingpong small rxe0+rxe2 rxe1+rxe3 $small 20
check "eager and segmented: rxe2/rxe3 carry nothing" second_rails_idle
check "counters: the rails are named rxe0+rxe2 and rxe1+rxe3" rails_named small
check "counters: eager and segmented on no rail's counter, no rail error" nothing_striped small
check "rail sets, 16 KiB + 1 .. $((stripe_min - 1)) B, data checked" pingpong mid rxe0+rxe2 rxe1+rxe3 "$mid" 20
check "rendezvous below $stripe_min B take turns: rxe2 and rxe3 carry >= 30% of their set's packets" share_at_least 30
check "counters: the rails' bytes are the rendezvous bytes, split near even" rails_add_up mid
check "rail sets, $stripe_min B .. 64 MiB, data checked" pingpong large rxe0+rxe2 rxe1+rxe3 "$large" 3
check "striped: rxe2 and rxe3 carry >= 30% of their set's packets" share_at_least 30
sed -n '/^  rail/p' "$dir/large.srv.job" "$dir/large.cli.job" | sed 's/^/    /'
check "counters: the rails' bytes are the striped rendezvous bytes, split near even" rails_add_up large
check "counters: the striped bytes on rxe2/rxe3 agree with their packets" link_agrees large
check "rail sets, fi_writedata 1 B .. $((stripe_min - 1)) B, data checked" pingpong rsmall rxe0+rxe2 rxe1+rxe3 "$small,$mid" 20 rma
check "fi_writedata below $stripe_min B: rxe2/rxe3 carry nothing (its CQ data keeps it on rail 0)" second_rails_idle
check "counters: fi_writedata below $stripe_min B on no rail's counter" nothing_striped rsmall
check "rail sets, fi_writedata $stripe_min B .. 64 MiB, data checked at its CQ data" pingpong rlarge rxe0+rxe2 rxe1+rxe3 "$large" 3 rma
check "striped RMA: rxe2 and rxe3 carry >= 30% of their set's packets" share_at_least 30
sed -n '/^  rail/p' "$dir/rlarge.srv.job" "$dir/rlarge.cli.job" | sed 's/^/    /'
check "counters: the rails' bytes are the RMA's written bytes, split near even" rma_adds_up rlarge
prog=$bw opts="-w 4" check "rail sets, windows of 4 fi_write $stripe_min B .. 4 MiB, data checked" \
	pingpong wlarge rxe0+rxe2 rxe1+rxe3 "$stripe_min,1048576,4194304" 2 rma
check "striped fi_write windows: rxe2 and rxe3 carry >= 30% of their set's packets" share_at_least 30
check "counters: the writer's rails' bytes are its written bytes, split near even" rma_adds_up wlarge cli
prog=$bw opts="-w 4" check "rail sets, windows of 4 fi_write 64 KiB .. 128 KiB (below $stripe_min B), data checked" \
	pingpong wmid rxe0+rxe2 rxe1+rxe3 65536,131072 16 rma
check "fi_write below $stripe_min B takes turns: rxe2 and rxe3 carry >= 30% of their set's packets" share_at_least 30
check "counters: the writer's rails' bytes are its written bytes, split near even" rma_adds_up wmid cli
check "NICs alone (rxe0, rxe1), 1 B .. 4 MiB, data checked" pingpong single rxe0 rxe1 "$fallback" 3
check "NICs alone: rxe2/rxe3 carry nothing" second_rails_idle
check "counters: NICs alone report no rails" eval "no_rail_rows single srv && no_rail_rows single cli"
check "rail set server, NIC alone client, 1 B .. 4 MiB, data checked" pingpong mixed1 rxe0+rxe2 rxe1 "$fallback" 3
check "rail set to NIC alone: one rail, rxe2/rxe3 carry nothing" second_rails_idle
check "counters: the rail set names its rails, striped nothing; the NIC alone none" \
	eval '[ "$(rail_nics mixed1 srv)" = rxe0+rxe2 ] && no_rail_rows mixed1 cli && nothing_striped mixed1'
check "NIC alone server, rail set client, 1 B .. 4 MiB, data checked" pingpong mixed2 rxe0 rxe1+rxe3 "$fallback" 3
check "NIC alone to rail set: one rail, rxe2/rxe3 carry nothing" second_rails_idle
check "rail set server, NIC alone client, fi_writedata to 4 MiB, data checked" pingpong rmixed rxe0+rxe2 rxe1 "$fallback" 3 rma
check "fi_writedata between a rail set and a NIC alone: rxe2/rxe3 carry nothing" second_rails_idle

# A rail pulled mid-stream: the second pair's link (veth2-veth3, rxe2 and
# rxe3) goes down once 1 MiB pingpongs between the rail sets stripe on it,
# and stays down. Its READs fail once the RC retry budget is spent; each
# connection then reads those messages again on rail 0 and carries on
# there alone. The run must pass with every message checked, the
# failures counted on rxe2/rxe3 and logged; then the link comes back.
# The link and its routes in one ip call: a pair taking the rail back
# connects its QPs as soon as the ports are ACTIVE, which needs the
# routes there.
# link_up N: veth<N> (2 or 4, guest-setup's pairs) up with its routes,
# and rxe<N>/rxe<N+1> ACTIVE.
link_up() {
	local n=$1 m=$(($1 + 1)) a=192.0.$(($1 / 2 + 2)).1 b=192.0.$(($1 / 2 + 2)).2
	ip -batch - <<-EOF || return 1
		link set veth$n up
		route replace $b dev veth$n src $a table $((100 + n))
		route replace $a dev veth$m src $b table $((100 + m))
	EOF
	for _ in $(seq 100); do
		grep -q ACTIVE "/sys/class/infiniband/rxe$n/ports/1/state" &&
			grep -q ACTIVE "/sys/class/infiniband/rxe$m/ports/1/state" && return 0
		sleep 0.1
	done
	return 1
}
# pulled_counted: a rail error on rxe2 (the server's) or rxe3 (the
# client's), and that side's log line saying rail 0 carries on.
pulled_counted() {
	local e2 e3
	e2=$(rail pulled srv rxe2 6) e3=$(rail pulled cli rxe3 6)
	echo "    rail errors: rxe2 ${e2:-none}, rxe3 ${e3:-none}"
	grep -h "rail 1 .*to .* failed" "$dir/pulled.srv" "$dir/pulled.cli" | head -n 2 | sed 's/^/    /'
	[ "${e2:-0}" -gt 0 ] || [ "${e3:-0}" -gt 0 ] || return 1
	grep -q "rail 1 .*to .* failed" "$dir/pulled.srv" "$dir/pulled.cli"
}
# The pull waits until rxe2 carries striped pieces: the pair is up and
# striping (a domain opened with a rail down is refused, -FI_ENODEV).
# (pull_when_striping N: veth<N> once rxe<N> carries striped pieces;
# veth2 by default.)
pull_when_striping() {
	local n=${1:-2} start
	start=$(pkts "rxe$n")
	for _ in $(seq 600); do
		[ "$(pkts "rxe$n")" -gt $((start + 200)) ] && break
		sleep 0.1
	done
	ip link set "veth$n" down
}
pull_when_striping &
puller=$!
# Logging as users run it, so that the rail's failure is said.
export FI_LOG_LEVEL=warn FI_LOG_PROV=gdrfab
check "a rail pulled mid-stream: rail sets, 1 MiB x 150, data checked" \
	pingpong pulled rxe0+rxe2 rxe1+rxe3 1048576 150
unset FI_LOG_LEVEL FI_LOG_PROV
wait "$puller"
check "counters and log: the pulled rail's failures, rail 0 carrying on" pulled_counted
check "the pulled link comes back ACTIVE" link_up 2

# The rail taken back (issue 31): the same link goes down once 1 MiB
# pingpongs stripe on it, and comes back up once a side has said the
# rail failed, while the pingpongs go on (rail 0 alone meanwhile). Once
# the ports are ACTIVE the pair resets and connects the rail anew over
# rail 0 and stripes again: rxe2 and rxe3 carry striped packets after the
# link is back, every message checked, each side says "rail 1 (rxeN) to
# ... back: striping again" once and counts it (its rail row's back).
# FI_LOG_LEVEL is GDRFAB_RAILS_LOG's (warn unless set: debug checks the
# same with every line the provider logs).
flap_rail() {
	pull_when_striping
	for _ in $(seq 600); do
		grep -q "rail 1 .*failed" "$dir/flap.srv" "$dir/flap.cli" 2>/dev/null && break
		sleep 0.1
	done
	link_up 2 || return 1
	pkts rxe2 >"$dir/flap.rxe2"
	pkts rxe3 >"$dir/flap.rxe3"
}
# striping_again [RUN N PIECE]: rxe<N> and rxe<N+1> (2 and 3) each
# carried at least the packets of two striped pieces of PIECE bytes (a
# 1 MiB message's half, 512 KiB) at the port's MTU since the link was
# ACTIVE again, as counted from $dir/RUN.rxe<N> (flap's).
striping_again() {
	local run=${1:-flap} n=${2:-2} piece=${3:-524288} m a b want
	m=$((n + 1))
	[ -s "$dir/$run.rxe$n" ] || { echo "    the link did not come back in time"; return 1; }
	a=$(($(pkts "rxe$n") - $(cat "$dir/$run.rxe$n")))
	b=$(($(pkts "rxe$m") - $(cat "$dir/$run.rxe$m")))
	want=$((2 * piece / $(mtu "rxe$n")))
	echo "    after the link was back: rxe$n $a, rxe$m $b packets (at least $want each)"
	[ "$a" -ge "$want" ] && [ "$b" -ge "$want" ]
}
# back_once: each side logged the rail's return once and counted it once
# (rxe2's row on the server, rxe3's on the client).
back_once() {
	local s c b2 b3
	s=$(grep -c "rail 1 (rxe2) to .* back: striping again" "$dir/flap.srv")
	c=$(grep -c "rail 1 (rxe3) to .* back: striping again" "$dir/flap.cli")
	b2=$(rail flap srv rxe2 7) b3=$(rail flap cli rxe3 7)
	grep -h "rail 1 .*\(failed\|back\)" "$dir/flap.srv" "$dir/flap.cli" | sed 's/^/    /'
	echo "    back lines: server $s, client $c; counted: rxe2 ${b2:-none}, rxe3 ${b3:-none}"
	[ "$s" = 1 ] && [ "$c" = 1 ] && [ "${b2:-0}" = 1 ] && [ "${b3:-0}" = 1 ]
}
rm -f "$dir/flap.rxe2" "$dir/flap.rxe3"
flap_rail &
flapper=$!
export FI_LOG_LEVEL=${GDRFAB_RAILS_LOG:-warn} FI_LOG_PROV=gdrfab
check "a rail down and back mid-stream: rail sets, 1 MiB x 300, data checked" \
	pingpong flap rxe0+rxe2 rxe1+rxe3 1048576 300
unset FI_LOG_LEVEL FI_LOG_PROV
wait "$flapper"
check "the rail taken back: rxe2 and rxe3 carry striped packets again" striping_again
check "the rail's return logged once and counted once per side" back_once
check "the flapped link is ACTIVE" link_up 2

# mpi_rails NAME COMMAND...: an MPI run of mpi_p2p, its ranks' counters
# summed by gdrfab_stat into $dir/NAME.job; passes when every check of
# the program passed and a second rail (rxe2 or rxe3) carried striped
# bytes: the MPI took rail-set domains without being told their names.
mpi_rails() {
	local name=$1 rc=0
	shift
	FI_GDRFAB_STATS=$dir/$name.stats timeout 300 "$@" >"$dir/$name.out" 2>&1 || rc=1
	grep -q "^mpi: [0-9]* passed, 0 failed" "$dir/$name.out" || rc=1
	"$stat" "$dir/$name".stats.* >"$dir/$name.job" 2>/dev/null || rc=1
	grep -E '^mpi:' "$dir/$name.out" | sed 's/^/    /'
	sed -n '/^  rail/p' "$dir/$name.job" | sed 's/^/    /'
	[ -n "$(awk '$1 == "rail" && ($3 == "rxe2" || $3 == "rxe3") && $5 > 0' "$dir/$name.job")" ] || rc=1
	[ $rc = 0 ] || tail -n 20 "$dir/$name.out" | sed 's/^/    /'
	return $rc
}
# The MPICH wheel's environment (tests/consumers/check-mpich.sh), for
# its run alone.
mpich_rails() (
	export FI_PROVIDER_PATH=$FI_PROVIDER_PATH:$GDRFAB_RAILS_MPICH/lib/mpich/libfabric
	export FI_PROVIDER=gdrfab MPICH_CH4_NETMOD=ofi MPIR_CVAR_NOLOCAL=1
	mpi_rails mpich "$GDRFAB_RAILS_MPICH/bin/mpiexec" -hosts localhost -n 2 "$@"
)
# every_rank_on_a_set NAME: each rank's counters (one file per process)
# name a rail-set endpoint: asked for rails, the provider lists no NIC
# of a set alone, so Open MPI, which spreads its ranks over the alike
# entries (by pid when unbound), put each on a set.
every_rank_on_a_set() {
	local f n=0
	for f in "$dir/$1".stats.*; do
		head -n 1 "$f" | sed 's/^gdrfab stats: /    /'
		head -n 1 "$f" | grep -q '^gdrfab stats: endpoint [^ ]*+' || return 1
		n=$((n + 1))
	done
	[ "$n" = 4 ]
}
# A rail down and back under a real MPI with several peers: Open MPI's
# 4 ranks run mpi_p2p's checks to 1 MiB, then rounds in which every rank
# exchanges 1 MiB with every peer, data checked, until told to stop.
# rank-nics.sh places them as gdrfab_bind.sh would, one entry each:
# ranks 0 and 1 on rxe0+rxe2 and rxe1+rxe3, ranks 2 and 3 on rxe0 and
# rxe1 alone, so that the set ranks stripe to each other and use one
# NIC with the others (unplaced, Open MPI 4.1 picks by pid and the
# sets went to whichever ranks, one set or none in some runs). So the
# ranks with a set, read from their counters' headers, must be two, and
# each of them must show the flap. veth2 goes down once rxe2 or rxe3 carries
# striped pieces (down, it takes rxe3's port down too), and comes back
# once a rank has said the rail failed; once every set's rank has said
# "back: striping again" and their second rails carried two striped
# 1 MiB messages' halves since, the stop file ends the rounds (at most
# 400: bounded either way, and timeout-guarded, the ranks' stacks
# printed on a hang).
mpi_flapper() {
	local mpi=$1 out=$dir/mflap.out want start=$SECONDS base
	base=$(($(pkts rxe2) + $(pkts rxe3)))
	for _ in $(seq 600); do
		[ $(($(pkts rxe2) + $(pkts rxe3))) -gt $((base + 200)) ] && break
		kill -0 "$mpi" 2>/dev/null || break
		sleep 0.1
	done
	ip link set veth2 down
	echo "veth2 down: $((SECONDS - start)) s" >>"$dir/mflap.steps"
	for _ in $(seq 600); do
		grep -q "rail 1 .*failed" "$out" 2>/dev/null && break
		kill -0 "$mpi" 2>/dev/null || break
		sleep 0.1
	done
	echo "a rail's failure said: $((SECONDS - start)) s" >>"$dir/mflap.steps"
	link_up 2 || { touch "$dir/mflap.stop"; return 1; }
	echo "veth2 up, rxe2/rxe3 ACTIVE: $((SECONDS - start)) s" >>"$dir/mflap.steps"
	pkts rxe2 >"$dir/mflap.rxe2"
	pkts rxe3 >"$dir/mflap.rxe3"
	want=$((2 * 524288 / $(mtu rxe2)))
	for _ in $(seq 600); do
		kill -0 "$mpi" 2>/dev/null || break
		[ "$(grep -c "rail 1 (rxe[23]) to .* back: striping again" "$out")" -ge 1 ] &&
			[ $(($(pkts rxe2) - $(cat "$dir/mflap.rxe2") + $(pkts rxe3) - $(cat "$dir/mflap.rxe3"))) -ge "$want" ] &&
			sleep 2 && break
		sleep 0.1
	done
	echo "back and striping, the rounds told to stop: $((SECONDS - start)) s" >>"$dir/mflap.steps"
	touch "$dir/mflap.stop"
}
mpi_flap_run() {
	local rc=0 start=$SECONDS mpi flapper
	rm -f "$dir/mflap.stop" "$dir/mflap.rxe2" "$dir/mflap.rxe3" "$dir/mflap.steps"
	FI_LOG_LEVEL=${GDRFAB_RAILS_LOG:-warn} FI_LOG_PROV=gdrfab \
		FI_GDRFAB_STATS=$dir/mflap.stats timeout_stacks 150 \
		mpirun --allow-run-as-root --oversubscribe -np 4 --bind-to none \
		--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include gdrfab --mca btl self \
		-x FI_PROVIDER_PATH -x FI_GDRFAB_RAILS -x FI_GDRFAB_STATS -x FI_LOG_LEVEL -x FI_LOG_PROV \
		"$rank_nics" "$GDRFAB_RAILS_OPENMPI" 1048576 400 "$dir/mflap.stop" \
		>"$dir/mflap.out" 2>&1 &
	mpi=$!
	mpi_flapper "$mpi" &
	flapper=$!
	wait "$mpi" || rc=1
	wait "$flapper" || rc=1
	sed 's/^/    /' "$dir/mflap.steps"
	echo "    $((SECONDS - start)) s in all"
	grep -q "^mpi: [0-9]* passed, 0 failed" "$dir/mflap.out" || rc=1
	grep -q "^PASS: mpi: [0-9]* rounds of 1048576 bytes with every peer" "$dir/mflap.out" || rc=1
	grep -E '^(FAIL|mpi)|rounds of' "$dir/mflap.out" | sed 's/^/    /'
	[ $rc = 0 ] || tail -n 60 "$dir/mflap.out" | sed 's/^/    /'
	"$stat" "$dir/mflap".stats.* >"$dir/mflap.job" 2>/dev/null || rc=1
	head -qn 1 "$dir/mflap".stats.* | sed 's/^gdrfab stats: /    /'
	return $rc
}
# set_ranks: "PID NIC" for each rank whose endpoint is a rail set, NIC
# its rail 1 (from its counters' header and rail rows).
set_ranks() {
	local f pid
	for f in "$dir"/mflap.stats.*; do
		head -n 1 "$f" | grep -q '^gdrfab stats: endpoint [^ ]*+' || continue
		pid=$(head -n 1 "$f" | sed 's/.* pid=\([0-9]*\).*/\1/')
		"$stat" -e "$f" 2>/dev/null | awk -v p="$pid" '$1 == "rail" && $2 == 1 { print p, $3, $6, $7 }'
	done
}
# mpi_flap_logged: each rank on a set said its rail 1's return once per
# connection taken back (its own log lines: libfabric's carry its pid),
# as often as its counter has it; at least one said the
# failure (a rank whose reads were not on the rail when it went learns
# of it from its peer's offer, and says nothing).
mpi_flap_logged() {
	local out=$dir/mflap.out n=0 pid nic b fails
	fails=$(grep -c "rail 1 (rxe[23]) to .* failed" "$out")
	grep -h "rail 1 .*\(failed\|back\)" "$out" | cut -c1-160 | sed 's/^/    /'
	# Once per connection whose rail came back: as many lines as the
	# rank's counter says (a rank with two rail-set peers, when Open MPI
	# puts two ranks on one set, says it twice), at least one.
	while read -r pid nic _ bk; do
		b=$(grep -c "^libfabric:$pid:.*rail 1 ($nic) to .* back: striping again" "$out")
		echo "    rank pid $pid ($nic): back lines $b, counted $bk"
		[ "$b" -ge 1 ] && [ "$b" = "$bk" ] || return 1
		n=$((n + 1))
	done <<<"$(set_ranks)"
	echo "    failure lines: $fails; ranks on sets: $n"
	[ "$fails" -ge 1 ] && [ "$n" -ge 2 ]
}
# mpi_flap_counted: the set ranks' counters: a rail error on some rank's
# rail 1, each rank's rail 1 taken back (once per rail-set peer).
mpi_flap_counted() {
	local pid nic e b errs=0 n=0
	sed -n '/^  rail/p' "$dir/mflap.job" | sed 's/^/    /'
	while read -r pid nic e b; do
		echo "    rank pid $pid ($nic): rail errors $e, back $b"
		[ "$b" -ge 1 ] || return 1
		errs=$((errs + e)) n=$((n + 1))
	done <<<"$(set_ranks)"
	[ "$errs" -gt 0 ] && [ "$n" -ge 2 ]
}
# mpi_striping_again: as striping_again, after the link came back, on
# the set ranks' second rails (rxe3 alone when both ranks are on
# rxe1+rxe3: rank to rank over one device).
mpi_striping_again() {
	local a2 a3 want nic
	[ -s "$dir/mflap.rxe2" ] || { echo "    the link did not come back in time"; return 1; }
	a2=$(($(pkts rxe2) - $(cat "$dir/mflap.rxe2")))
	a3=$(($(pkts rxe3) - $(cat "$dir/mflap.rxe3")))
	want=$((2 * 524288 / $(mtu rxe2)))
	echo "    after the link was back: rxe2 $a2, rxe3 $a3 packets (at least $want on each set's)"
	for nic in $(set_ranks | awk '{ print $2 }' | sort -u); do
		if [ "$nic" = rxe2 ]; then
			[ "$a2" -ge "$want" ] || return 1
		else
			[ "$a3" -ge "$want" ] || return 1
		fi
	done
}
if [ -n "${GDRFAB_RAILS_OPENMPI:-}" ]; then
	# 4 ranks, FI_GDRFAB_RAILS as above and nothing else: the entries
	# are the two sets alone, so every rank stripes (two ranks per set,
	# whichever two: Open MPI's pick; unbound, as --bind-to core had
	# ranks take entries in a different order each run too).
	check "Open MPI (mtl ofi), 4 ranks, mpi_p2p 0 B .. 16 MiB: the ranks stripe" \
		mpi_rails openmpi mpirun --allow-run-as-root --oversubscribe -np 4 --bind-to none \
		--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include gdrfab --mca btl self \
		-x FI_PROVIDER_PATH -x FI_GDRFAB_RAILS -x FI_GDRFAB_STATS \
		"$GDRFAB_RAILS_OPENMPI" 16777216
	check "Open MPI: every rank took a rail set (no NIC of a set is listed alone)" \
		every_rank_on_a_set openmpi
	check "Open MPI, 4 ranks, a rail down and back mid-run: every exchange's data checked" \
		mpi_flap_run
	check "Open MPI: the striping ranks logged the rail's failure and its return" mpi_flap_logged
	check "Open MPI: the ranks' counters show the rail errors and the rails taken back" \
		mpi_flap_counted
	check "Open MPI: rxe2 and rxe3 carry striped packets again after the link is back" \
		mpi_striping_again
	check "the link flapped under MPI is ACTIVE" link_up 2
else
	echo "SKIP: $suite: Open MPI on rail sets: no mpicc/mpirun (scripts/install-deps.sh)"
fi
if [ -n "${GDRFAB_RAILS_MPICH:-}" ]; then
	check "MPICH (ch4:ofi), 2 ranks, mpi_p2p 0 B .. 16 MiB: the ranks stripe" \
		mpich_rails "$PWD/tests/vm/rails/mpi_p2p.mpich" 16777216
else
	echo "SKIP: $suite: MPICH on rail sets: its wheel did not come (tests/consumers/get-wheel.sh)"
fi

# Three rails (issue 31: with a rail beyond the first left, a failed one
# is taken out alone). rxe0+rxe2+rxe4 and rxe1+rxe3+rxe5 move 1 MiB ..
# 16 MiB in three pieces, data checked, each of rxe2 and rxe4 carrying a
# share of its set's packets and the counters naming three rails. Then
# the third pair's link (veth4-veth5) goes down once it carries striped
# pieces: what was on it goes again over the rails left, which carry the
# pingpongs on (rxe2 and rxe3 carry striped packets while it is down,
# not rail 0 alone), every message checked; once a side said so the
# link comes back and the pair takes its rails back: rxe4 and rxe5
# stripe again, the return said and counted once per side.
# share3 RAIL: RAIL's share in percent of the packets its set carried in
# the last run (rxe0+rxe2+rxe4 or rxe1+rxe3+rxe5).
share3() {
	local set sum=0 r
	case $1 in rxe[024]) set="rxe0 rxe2 rxe4" ;; *) set="rxe1 rxe3 rxe5" ;; esac
	for r in $set; do sum=$((sum + delta[$r])); done
	[ $sum -gt 0 ] && echo $((100 * delta[$1] / sum)) || echo 0
}
three_shares() {
	local r
	for r in rxe2 rxe3 rxe4 rxe5; do
		echo "    $r: $(share3 $r)% of its set's packets"
		[ "$(share3 $r)" -ge "$1" ] || return 1
	done
}
rails3_named() {
	[ "$(rail_nics "$1" srv)" = rxe0+rxe2+rxe4 ] && [ "$(rail_nics "$1" cli)" = rxe1+rxe3+rxe5 ]
}
# flap3: veth4 down once striping, and back once a side said rail 2
# failed and rxe2 and rxe3 each carried two 384 KiB pieces' packets
# since (the rails left carrying on: what they carried goes to
# $dir/flap3.left); the packets rxe4/rxe5 had then in $dir/flap3.rxe4/5.
flap3() {
	local l2 l3 want
	pull_when_striping 4
	for _ in $(seq 600); do
		grep -q "rail 2 .*failed" "$dir/flap3.srv" "$dir/flap3.cli" 2>/dev/null && break
		sleep 0.1
	done
	l2=$(pkts rxe2) l3=$(pkts rxe3)
	want=$((2 * 393216 / $(mtu rxe2)))
	for _ in $(seq 600); do
		[ $(($(pkts rxe2) - l2)) -ge "$want" ] && [ $(($(pkts rxe3) - l3)) -ge "$want" ] && break
		sleep 0.1
	done
	echo "$(($(pkts rxe2) - l2)) $(($(pkts rxe3) - l3)) $want" >"$dir/flap3.left"
	link_up 4 || return 1
	pkts rxe4 >"$dir/flap3.rxe4"
	pkts rxe5 >"$dir/flap3.rxe5"
}
# left_carried: rxe2 and rxe3 carried striped pieces while rxe4-rxe5 was
# down and the failure had been said.
left_carried() {
	local a2 a3 want
	[ -s "$dir/flap3.left" ] || return 1
	read -r a2 a3 want <"$dir/flap3.left"
	echo "    with rail 2 out: rxe2 $a2, rxe3 $a3 packets (at least $want each)"
	[ "$a2" -ge "$want" ] && [ "$a3" -ge "$want" ]
}
# failed3_said: a side said rail 2 failed, the rails left carrying on,
# and counted the error on rxe4 or rxe5; neither counted one on rails 0-1.
failed3_said() {
	local e4 e5 other
	e4=$(rail flap3 srv rxe4 6) e5=$(rail flap3 cli rxe5 6)
	other=$(awk '$1 == "rail" && ($3 == "rxe2" || $3 == "rxe3") && $6 != 0' \
		"$dir/flap3.srv.job" "$dir/flap3.cli.job")
	grep -h "rail 2 .*failed" "$dir/flap3.srv" "$dir/flap3.cli" | head -n 2 | cut -c1-200 | sed 's/^/    /'
	echo "    rail errors: rxe4 ${e4:-none}, rxe5 ${e5:-none}"
	[ $((${e4:-0} + ${e5:-0})) -gt 0 ] && [ -z "$other" ] &&
		grep -q "rail 2 (rxe[45]) to .* failed: what was on it goes again on the rails left" \
			"$dir/flap3.srv" "$dir/flap3.cli"
}
# back3_once: each side said "back: striping again" once and counted one
# return on its rails.
back3_once() {
	local side n b
	for side in srv cli; do
		n=$(grep -c "rail [12] (rxe[2-5]) to .* back: striping again" "$dir/flap3.$side")
		b=$(awk '$1 == "rail" && $2 ~ /^[0-9]+$/ { b += $7 } END { print b + 0 }' "$dir/flap3.$side.job")
		echo "    $side: back lines $n, counted $b"
		[ "$n" = 1 ] && [ "$b" = 1 ] || return 1
	done
}
if [ -n "$three" ]; then
	unset FI_GDRFAB_DEVICE
	export FI_GDRFAB_RAILS=rxe0+rxe2+rxe4,rxe1+rxe3+rxe5
	check "three rails, 1 MiB .. 16 MiB, data checked" \
		pingpong three rxe0+rxe2+rxe4 rxe1+rxe3+rxe5 1048576,4194304,16777216 3
	check "three rails: rxe2, rxe3, rxe4 and rxe5 each carry >= 20% of their set's packets" \
		three_shares 20
	check "counters: the rails are named rxe0+rxe2+rxe4 and rxe1+rxe3+rxe5" rails3_named three
	rm -f "$dir/flap3.left" "$dir/flap3.rxe4" "$dir/flap3.rxe5"
	flap3 &
	flapper=$!
	export FI_LOG_LEVEL=${GDRFAB_RAILS_LOG:-warn} FI_LOG_PROV=gdrfab
	check "three rails, the third down and back mid-stream: 1 MiB x 400, data checked" \
		pingpong flap3 rxe0+rxe2+rxe4 rxe1+rxe3+rxe5 1048576 400
	unset FI_LOG_LEVEL FI_LOG_PROV
	wait "$flapper"
	check "three rails: the failure said and counted on the third rail alone" failed3_said
	check "three rails: with the third out, rxe2 and rxe3 still carry striped pieces" left_carried
	check "three rails: rxe4 and rxe5 carry striped packets again after the link is back" \
		striping_again flap3 4 262144
	check "three rails: the return said once and counted once per side" back3_once
	check "the third link is ACTIVE" link_up 4
else
	echo "SKIP: $suite: three rails: no rxe4 (GDRFAB_VM_RAILS=3 makes a third veth pair)"
fi
echo "rails: ${SECONDS}s in the VM"
totals
