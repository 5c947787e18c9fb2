#!/bin/bash
# Inside the VM, from the build directory: the link between rxe0 and rxe1
# goes down and comes back while flap_ops keeps operations in flight, for
# each provider, operation, side that starts them, and outage:
#   GDRFAB_FLAP_PROVIDERS (default "gdrfab verbs;ofi_rxm")
#   GDRFAB_FLAP_OPS       (default "eager rndv write read atomic")
#   GDRFAB_FLAP_SIDES     (default "client server": the client, on rxe0,
#                          or the server, on rxe1, starts the operations)
#   GDRFAB_FLAP_OUTAGES   (default "1 8": seconds down; 1 is within the
#                          RC retry budget, FI_GDRFAB_PEER_TIMEOUT_MS, 8
#                          past it)
# Without any of these set, a short run of gdrfab alone (CI's): the
# rendezvous, write, read and atomic, the client starting, the link down
# 6 s (past the 4 s budget);
# GDRFAB_FLAP_ALL=1 runs the whole matrix above.
# One run: the pair starts, its operations run 3 s, the link goes down (veth0: both
# ends lose their carrier) for the outage, comes back, and the pair runs
# 3 s more; then what is in flight must end within the drain time, the
# same endpoints must reach each other again, and the data must be whole
# (tests/vm/flap/flap_ops.c), and no gdrfab operation may take longer than
# FI_GDRFAB_PEER_TIMEOUT_MS and FI_GDRFAB_CONN_TIMEOUT_MS together to end
# (in flight when the link went, then waiting for a connection that cannot
# be made until it is back). gdrfab's runs are checks (PASS/FAIL lines,
# "flap: N passed, M failed"); the others are reported beside them as
# baselines, not counted.
set -u
suite=flap
. "$(dirname "$0")/../runner/check-lib.sh"
bin=$PWD/tests/vm/flap
dir=$(mktemp -d /tmp/flap.XXXXXX)
a0=192.0.2.1 a1=192.0.2.2
if [ "${GDRFAB_FLAP_ALL:-0}" = 1 ]; then
	provs="gdrfab verbs;ofi_rxm" ops="eager rndv write read atomic"
	sides="client server" outages="1 8"
else
	provs=gdrfab ops="rndv write read atomic" sides=client outages=6
fi
provs=${GDRFAB_FLAP_PROVIDERS:-$provs}
ops=${GDRFAB_FLAP_OPS:-$ops}
sides=${GDRFAB_FLAP_SIDES:-$sides}
outages=${GDRFAB_FLAP_OUTAGES:-$outages}
peer_ms=${FI_GDRFAB_PEER_TIMEOUT_MS:-4000}
conn_ms=${FI_GDRFAB_CONN_TIMEOUT_MS:-10000}
# gdrfab's bound on one operation: the RC retry budget once posted on a
# connection, plus a connection attempt's time-out while it waits for one.
longest_max=$((peer_ms + conn_ms))
# What is in flight when the run ends must end within two retry budgets;
# the peer must answer again within the connection time-out's reach.
drain_ms=$((2 * peer_ms)) recover_ms=30000
port=47600
spid='' cpid=''
trap 'for p in $spid $cpid; do kill -9 "$p" 2>/dev/null; done; link_up; rm -rf "$dir"' EXIT

ports_active() {
	grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state &&
		grep -q ACTIVE /sys/class/infiniband/rxe1/ports/1/state
}
link_down() { ip link set veth0 down; }
# Taking veth0 down removed its routes: the policy routes that send each
# address across the pair (tests/vm/runner/guest-setup) come back with it.
link_up() {
	ip link set veth0 up
	ip route replace $a1 dev veth0 src $a0 table 100
	ip route replace $a0 dev veth1 src $a1 table 101
	for _ in $(seq 100); do
		ports_active && return 0
		sleep 0.1
	done
	echo "flap: the rxe ports did not come back ACTIVE"
	return 1
}

# run_one PROVIDER OP SIDE OUTAGE: 0 when both sides exit 0.
run_one() {
	local prov=$1 op=$2 side=$3 down=$4 run_ms s c limit
	local -a env=()
	run_ms=$(((6 + down) * 1000))
	limit=$(((run_ms + 2 * drain_ms + recover_ms) / 1000 + 30))
	port=$((port + 1))
	[ "$prov" = gdrfab ] || env=(FI_UNIVERSE_SIZE=64)
	env "${env[@]}" timeout -s KILL "$limit" "$bin/flap_ops" -p "$prov" -d rxe1 \
		-o "$op" -a "$side" -P "$port" -r "$run_ms" -t "$drain_ms" \
		-R "$recover_ms" >"$dir/server" 2>&1 &
	spid=$!
	wait_port "$port" || { kill -9 "$spid"; return 1; }
	env "${env[@]}" timeout -s KILL "$limit" "$bin/flap_ops" -p "$prov" -d rxe0 \
		-o "$op" -a "$side" -P "$port" -r "$run_ms" -t "$drain_ms" \
		-R "$recover_ms" "$a1" >"$dir/client" 2>&1 &
	cpid=$!
	# The operations run (the active side said so) for 3 s first.
	for _ in $(seq 300); do
		grep -qs '^flap: running' "$dir/client" "$dir/server" && break
		sleep 0.1
	done
	sleep 3
	link_down
	sleep "$down"
	link_up
	wait "$cpid"
	c=$?
	wait "$spid"
	s=$?
	spid='' cpid=''
	grep -h '^flap: [a-z]* [a-z]*:' "$dir/client" "$dir/server" | sed 's/^/    /'
	[ "$c" = 137 ] || [ "$s" = 137 ] && echo "    killed after $limit s"
	if [ "$c" != 0 ] || [ "$s" != 0 ]; then
		echo "    client status $c, server status $s; their last words:"
		grep -hv '^flap:' "$dir/client" "$dir/server" | tail -n 8 | sed 's/^/    /'
		dmesg | grep -iE 'rxe|qp' | tail -n 4 | sed 's/^/    dmesg: /'
		return 1
	fi
	longest=$(sed -n 's/.*the longest took \([0-9]*\) ms.*/\1/p' "$dir/client" "$dir/server")
	if [ "$prov" = gdrfab ] && [ "${longest:-0}" -gt "$longest_max" ]; then
		echo "    an operation took $longest ms to end, more than $longest_max"
		return 1
	fi
	return 0
}

for prov in $provs; do
	for op in $ops; do
		for side in $sides; do
			for down in $outages; do
				what="$op, $side starts, link down ${down} s"
				echo "== $prov: $what"
				if [ "$prov" = gdrfab ]; then
					check "$what" run_one "$prov" "$op" "$side" "$down"
				else
					baseline "$prov: $what" run_one "$prov" "$op" "$side" "$down"
				fi
			done
		done
	done
done
totals
