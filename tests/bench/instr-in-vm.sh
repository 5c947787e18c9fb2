#!/bin/bash
# Runs inside the VM (see instr-per-msg.sh), from the build directory.
set -u
sizes=$1
iters=${GDRFAB_INSTR_ITERS:-200}
rt=$((iters + iters / 10 + 1)) # gdrfab_pingpong adds iters/10+1 warm-up trips
# A second, longer run per side, to take setup out (0: none).
long=${GDRFAB_INSTR_LONG:-$((iters * 3))}
[ "$long" = 0 ] && long=
. "$(dirname "$0")/lib/in-vm.sh" # the provider, wait_port
# An earlier build to measure beside this one (see measure below).
[ -d instr-before ] && : "${GDRFAB_INSTR_BEFORE:=$PWD/instr-before}"
out=$PWD/instr-per-msg
mkdir -p "$out"
rm -f "$out"/cg.* "$out"/counts.txt
# One empty poll's cost is measured, not estimated: after its round trips
# each side polls its drained CQ $idle times in ex_idle_polls (the
# example does, given EX_IDLE_POLLS), counted apart below.
idle=${GDRFAB_INSTR_IDLE:-2000}
export EX_IDLE_POLLS=$idle
# An array: the checkout's path may hold spaces, and so may $out.
cg=(valgrind --tool=callgrind --collect-atstart=no --toggle-collect=ex_post
	--toggle-collect=ex_wait --toggle-collect=ex_idle_polls --dump-instr=no)
# gdrfab's housekeeping, which runs by the clock (once per millisecond:
# connection timers, the UD CQ for connection setup), not per message:
# under callgrind in the VM a round trip takes milliseconds, so each one
# pays it once or more, where on a real NIC (a few us per round trip)
# hundreds of messages share one. Toggling collection at their entry and
# exit leaves them out (neither calls the other; the calls outside the
# counted part, at setup and close, toggle it on for their length in both
# runs alike, and the two runs' difference takes them out).
housekeeping=(--toggle-collect=gdrfab_conn_timers --toggle-collect=gdrfab_conn_poll_ud)


# counts FILE: "TOTAL READ_SOME_CALLS IDLE" from a callgrind file: the
# events summary, the calls into read_some (the example's one CQ poll in
# its round trips) and the instructions of ex_idle_polls.
counts() {
	local idle_ir
	idle_ir=$(callgrind_annotate --inclusive=yes --auto=no "$1" 2>/dev/null |
		awk '/:ex_idle_polls / { gsub(",", "", $1); print $1; exit }')
	echo "$(counts_calls "$1") ${idle_ir:-0}"
}

counts_calls() {
	awk '
	/^summary:/ { total = $2 }
	/^c?fn=/ { # names are given once, "(id) name", then "(id)" alone
		s = $0; sub(/^c?fn=/, "", s)
		if (match(s, /^\([0-9]+\) /)) {
			id = substr(s, 1, RLENGTH - 1); name = substr(s, RLENGTH + 1)
			names[id] = name
		} else if (s ~ /^\([0-9]+\)$/) name = names[s]
		else name = s
		if ($0 ~ /^cfn=/) cur = name
		next
	}
	/^calls=/ { split($0, a, /[= ]/); if (cur == "read_some") calls += a[2]; cur = "" }
	END { print total + 0, calls + 0 }' "$1"
}

# run PROV SIZE TAG SIDE: one run of the pingpong, SIDE (server or client)
# under callgrind, its peer native. Commands are arrays, never split
# strings: the callgrind file's path is the checkout's, spaces and all.
run() {
	local prov=$1 size=$2 tag=$3 side=$4
	local f="$out/cg.$tag.$side"
	local -a server=(taskset -c 0) client=(timeout 1200 taskset -c 1)
	# Only the side measured now: the other may be an earlier run's.
	rm -f "$f"
	local -a vg=("${cg[@]}" "--callgrind-out-file=$f")
	# gdrfab-nohk: the same build, its timers and UD CQ poll not
	# counted (see the end).
	[[ $tag == gdrfab-nohk.* ]] && vg+=("${housekeeping[@]}")
	if [ "$side" = server ]; then
		server+=("${vg[@]}")
	else
		client+=("${vg[@]}")
	fi
	"${server[@]}" ./examples/gdrfab_pingpong \
		-p "$prov" -m tagged -d rxe0 -s "$size" -i "$iters" >/dev/null 2>"$out/err.$tag.server" &
	# valgrind under TCG takes a while to start: 600 x 0.2 s.
	wait_port 47593 600 0.2 || { echo "server did not start ($tag)" >&2; kill %1; return 1; }
	"${client[@]}" ./examples/gdrfab_pingpong \
		-p "$prov" -m tagged -d rxe1 -s "$size" -i "$iters" 192.0.2.1 >/dev/null 2>"$out/err.$tag.client"
	wait
	[ -s "$f" ] && echo "${tag%%.*} $size $tag $side $(counts "$f")" >>"$out/counts.txt"
	return 0
}

# measure PROV LABEL SIZE: each side alone (its peer native).
measure() {
	local prov=$1 label=$2 size=$3
	echo "measuring $label $size B" >&2
	run "$prov" "$size" "$label.$size.alone" server
	run "$prov" "$size" "$label.$size.alone" client
	# Each side alone again with $long iterations; the
	# difference to the first takes out setup (rxm connects on its
	# first send, which counts inside ex_post).
	if [ -n "$long" ]; then
		iters=$long run "$prov" "$size" "$label.$size.long" server
		iters=$long run "$prov" "$size" "$label.$size.long" client
	fi
}

# The floor: ibv_rc_pingpong (rdma-core's RC example: one post_send, one
# post_recv and the CQ polls per round trip, nothing else) under the same
# counting, each side once with $iters and once with $long round trips; the
# difference leaves its setup out. The whole program is counted (it and
# the driver have no symbols to toggle on), so its empty polls stay in:
# their number per round trip is printed, the driver's function it calls
# most often being its poll.
run_verbs() {
	local size=$1 n=$2 side=$3
	local f="$out/cg.verbs.$size.$n.$side"
	local -a server=(taskset -c 0 ibv_rc_pingpong -d rxe0 -g 1 -s "$size" -n "$n")
	local -a client=(timeout 1200 taskset -c 1 ibv_rc_pingpong -d rxe1 -g 1 -s "$size" -n "$n")
	local -a vg=(valgrind --tool=callgrind --dump-instr=no "--callgrind-out-file=$f")
	rm -f "$f"
	if [ "$side" = server ]; then server=("${server[@]:0:3}" "${vg[@]}" "${server[@]:3}"); fi
	if [ "$side" = client ]; then client=("${client[@]:0:5}" "${vg[@]}" "${client[@]:5}"); fi
	"${server[@]}" >/dev/null 2>"$out/err.verbs.$size.server" &
	wait_port 18515 600 0.2 || { echo "ibv_rc_pingpong server did not start" >&2; kill %1; return 1; }
	"${client[@]}" 192.0.2.1 >/dev/null 2>"$out/err.verbs.$size.client"
	wait
	[ -s "$f" ] || return 0
	echo "floor $size $n $side $(awk '
	# Names come once as "(id) name", then as "(id)" alone.
	function name(s, kind,   id) {
		if (match(s, /^\([0-9]+\) /)) {
			id = substr(s, 1, RLENGTH - 1); nm[kind, id] = substr(s, RLENGTH + 1)
			return nm[kind, id]
		}
		if (s ~ /^\([0-9]+\)$/) return nm[kind, s]
		return s
	}
	/^summary:/ { total = $2 }
	/^ob=/ { ob = name(substr($0, 4), "ob"); cob = ob }
	/^fn=/ { infn = (ob ~ /ibv_rc_pingpong$/); name(substr($0, 4), "fn"); cob = ob }
	/^cob=/ { cob = name(substr($0, 5), "ob") }
	/^cfn=/ { callee = name(substr($0, 5), "fn") }
	/^calls=/ { if (infn && cob ~ /librxe/) { split($0, a, /[= ]/); calls[callee] += a[2] } cob = ob }
	END { m = 0; for (k in calls) if (calls[k] > m) m = calls[k]; print total + 0, m }' "$f")" >>"$out/floor.txt"
}

# GDRFAB_INSTR_BEFORE: a directory holding another libgdrfab-fi.so (an
# earlier build) to measure beside this one, as "gdrfab-before".
for size in $sizes; do
	measure gdrfab gdrfab "$size"
	# GDRFAB_INSTR_NOHK=0: not the row without housekeeping.
	[ "${GDRFAB_INSTR_NOHK:-1}" = 0 ] || measure gdrfab gdrfab-nohk "$size"
	if [ -n "${GDRFAB_INSTR_BEFORE:-}" ]; then
		FI_PROVIDER_PATH=$GDRFAB_INSTR_BEFORE measure gdrfab gdrfab-before "$size"
	fi
	# GDRFAB_INSTR_BASELINE=0: gdrfab alone (comparing two builds).
	[ "${GDRFAB_INSTR_BASELINE:-1}" = 0 ] || measure "verbs;ofi_rxm" "verbs;ofi_rxm" "$size"
done

# Work per round trip: (I - (C - 2*RT) * e) / RT, where I counts ex_post and
# ex_wait, C their polls and e one empty poll (ex_idle_polls' count over
# its $idle polls): each side finds two completions per round trip (its
# send's and its receive's), usually in two polls, and every other poll
# found nothing.
awk -v rt="$rt" -v long="${long:-0}" -v idle="$idle" '
{
	k = $1 " " $2 " " $4
	if ($3 ~ /long$/) { i3[k] = $5 - $7; c3[k] = $6; e3[k] = $7 / idle }
	else { i1[k] = $5 - $7; c1[k] = $6; e1[k] = $7 / idle }
	if (!(k in seen)) { seen[k] = 1; order[++n] = k }
}
END {
	printf "# instructions per round trip (one send and one receive per side), tagged, %d round trips per run\n", rt
	printf "%-14s %6s %-6s %10s %8s %10s %10s\n", "provider", "bytes", "side", "counted", "polls", "per_poll", "work"
	for (j = 1; j <= n; j++) {
		k = order[j]
		split(k, f, " ")
		e = e1[k]
		w = (i1[k] - (c1[k] - 2 * rt) * e) / rt
		if (k in i3) { # setup taken out: the longer run minus the first
			e = (e1[k] + e3[k]) / 2
			rl = long + int(long / 10) + 1
			w = ((i3[k] - i1[k]) - (c3[k] - c1[k] - 2 * (rl - rt)) * e) / (rl - rt)
		}
		work[k] = w
		printf "%-14s %6s %-6s %10.0f %8.1f %10.0f %10.0f\n", f[1], f[2], f[3], i1[k] / rt, c1[k] / rt, e, w
	}
	print "# gdrfab / verbs;ofi_rxm, work per round trip"
	for (j = 1; j <= n; j++) {
		k = order[j]
		split(k, f, " ")
		if (f[1] !~ /^gdrfab/) continue
		b = "verbs;ofi_rxm " f[2] " " f[3]
		if (work[b] > 0) printf "ratio %-14s %6s %-6s %.2f\n", f[1], f[2], f[3], work[k] / work[b]
	}
}' "$out/counts.txt"
# The floor's rows: (instructions with $long - with $iters) per extra round trip.
if command -v ibv_rc_pingpong >/dev/null && [ -n "$long" ] && [ "${GDRFAB_INSTR_FLOOR:-1}" = 1 ]; then
	rm -f "$out/floor.txt"
	for size in $sizes; do
		for side in server client; do
			run_verbs "$size" "$iters" "$side"
			run_verbs "$size" "$long" "$side"
		done
	done
	awk '
	{ k = $2 " " $4; if (!(k in i)) { i[k] = $5; c[k] = $6; n[k] = $3; order[++m] = k }
	  else { printf "%-14s %6s %-6s %10.0f %8.1f\n", "ibv_rc_pingpong", $2, $4, ($5 - i[k]) / ($3 - n[k]), ($6 - c[k]) / ($3 - n[k]) } }
	BEGIN { print "# the floor: ibv_rc_pingpong, all of its loop per round trip (empty polls included), setup out"
		printf "%-14s %6s %-6s %10s %8s\n", "program", "bytes", "side", "per_rt", "polls" }' "$out/floor.txt"
fi
echo "callgrind files: $out (callgrind_annotate --inclusive=yes FILE)"
