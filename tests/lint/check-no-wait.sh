#!/bin/bash
# No sleep or spin in progress (issue 16): lists every place in prov/ that
# can wait (sleeps, yields, condition waits, CUDA synchronizes, the
# synchronous CUDA copies and the protocol's copy wrappers built on them,
# and ibv_poll_cq loops that wait for a completion or a deadline), prints
# each hit with its allow-list entry, and fails on a hit the allow-list
# (tests/lint/no-wait-allow.txt) does not name, or on an entry that names
# nothing any more. The allow-list says, per entry, why the wait is not in
# progress (setup, teardown, the application's own blocking wait, a
# helper thread, a call the API makes synchronous) or that it is a known
# synchronous copy still to make asynchronous (kind "todo", printed on
# every run). Run first against a made-up tree with known hits (self-test),
# so that a pattern that stops matching fails too.
#   tests/lint/check-no-wait.sh [ROOT [ALLOW]]   (default: this checkout)
# Prints "no-wait: N passed, M failed".
set -u
srcdir=${GDRFAB_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}

# The waiting calls (a call: indented, so neither a definition at column 0
# nor a comment line; a whole name, so gdrfab_waitobj_sleep is not sleep).
calls='(^|[^[:alnum:]_])(usleep|nanosleep|sleep|sched_yield|pthread_cond_wait|pthread_cond_timedwait|cuStreamSynchronize|cuCtxSynchronize|cuEventSynchronize|gdrfab_cuda_copy_wait|gdrfab_cuda_copy_to_host|gdrfab_cuda_copy_to_device|gdrfab_copy_from_buf|gdrfab_copy_to_buf)[[:space:]]*\('

# hits ROOT: "path:line:text" for every waiting call and waiting poll loop.
hits() {
	local root=$1
	(cd "$root" && find prov -name '*.[ch]' | sort | while read -r f; do
		awk -v f="$f" -v calls="$calls" '
			{ line[NR] = $0 }
			END {
				for (i = 1; i <= NR; i++) {
					t = line[i]
					if (t ~ /^[[:space:]]*(\*|\/\*|\/\/)/) continue
					if (t ~ /^[[:space:]]/ && t ~ calls) {
						print f ":" i ":" t; continue
					}
					# ibv_poll_cq, or through the verbs seam
					# (gdrfab_vops->poll_cq).
					if (t !~ /(ibv_|->)poll_cq\(/) continue
					# A poll that repeats while nothing came, or
					# that runs against a clock.
					wait = t ~ /(while|for)[[:space:]]*\(.*!\(?[[:space:]]*[a-z_]*[[:space:]]*=?[[:space:]]*[a-z_]*(ibv_|->)poll_cq/ ||
					       t ~ /(ibv_|->)poll_cq\([^)]*\)\)?[[:space:]]*(==[[:space:]]*0|<[[:space:]]*1)/
					for (j = i - 2; j <= i + 2 && !wait; j++)
						if (j >= 1 && j <= NR &&
						    line[j] ~ /deadline|timeout|TIMEOUT|now_ns|clock_gettime/ &&
						    line[j] !~ /^[[:space:]]*(\*|\/\*|\/\/)/)
							wait = 1
					if (wait) print f ":" i ":" t
				}
			}' "$f"
	done)
}

# check ROOT ALLOW: prints the hits and their entries; 0 when every hit is
# allowed and every entry is used.
check() {
	local root=$1 allow=$2 status=0 path sub kind why used hit
	local -a entries=()
	mapfile -t entries < <(grep -v -e '^#' -e '^[[:space:]]*$' "$allow")
	declare -A usedmap=()
	while IFS= read -r hit; do
		[ -n "$hit" ] || continue
		local file=${hit%%:*} text=${hit#*:*:} found=""
		for i in "${!entries[@]}"; do
			IFS='|' read -r path sub kind why <<<"${entries[$i]}"
			if [ "$file" = "$path" ] && [[ $text == *"$sub"* ]]; then
				found="$kind: $why"
				usedmap[$i]=1
				break
			fi
		done
		if [ -n "$found" ]; then
			case $found in
			todo:*) echo "KNOWN (still synchronous): $hit  [$found]" ;;
			*) echo "allowed: $hit  [$found]" ;;
			esac
		else
			echo "NOT ALLOWED: $hit"
			status=1
		fi
	done < <(hits "$root")
	for i in "${!entries[@]}"; do
		[ -n "${usedmap[$i]:-}" ] && continue
		echo "STALE allow-list entry (matches nothing): ${entries[$i]}"
		status=1
	done
	return $status
}

self_test() {
	local t status=0 out
	t=$(mktemp -d /tmp/gdrfab-nowait.XXXXXX)
	mkdir -p "$t/prov"
	cat >"$t/prov/bad.c" <<'C'
static int flush(void)
{
	/* usleep(1) in a comment is no call */
	while (!(n = ibv_poll_cq(cq, 1, &wc)) && now_ns() < deadline)
		;
	usleep(10);
	while (gdrfab_vops->poll_cq(cq, 1, &wc) == 0)
		;
	gdrfab_waitobj_sleep(w, false, 10, 0);
	gdrfab_cuda_copy_to_host(d, s, 4, 0);
	n = ibv_poll_cq(cq, 8, wc);
	return 0;
}
C
	: >"$t/empty.txt"
	out=$(check "$t" "$t/empty.txt")
	if [ "$(grep -c '^NOT ALLOWED' <<<"$out")" != 4 ]; then
		echo "FAIL: no-wait self-test: expected 4 hits (the poll loop," \
			"the seam's poll loop, usleep, the synchronous copy; not" \
			"gdrfab_waitobj_sleep), got:"
		echo "$out"
		status=1
	fi
	printf '%s\n' 'prov/bad.c|ibv_poll_cq(cq, 1|setup|test' \
		'prov/bad.c|usleep(10)|setup|test' \
		'prov/bad.c|gdrfab_vops->poll_cq(cq, 1|setup|test' \
		'prov/bad.c|gdrfab_cuda_copy_to_host|todo|test' >"$t/allow.txt"
	if ! out=$(check "$t" "$t/allow.txt"); then
		echo "FAIL: no-wait self-test: the allow-list did not cover them:"
		echo "$out"
		status=1
	fi
	echo 'prov/bad.c|nothing like this|setup|test' >>"$t/allow.txt"
	if check "$t" "$t/allow.txt" >/dev/null; then
		echo "FAIL: no-wait self-test: a stale allow-list entry passed"
		status=1
	fi
	rm -rf "$t"
	return $status
}

pass=0 fail=0
if self_test; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
if check "${1:-$srcdir}" "${2:-$srcdir/tests/lint/no-wait-allow.txt}"; then
	pass=$((pass + 1))
else
	echo "FAIL: no-wait: a wait in prov/ that the allow-list does not name" \
		"(no sleep or spin under a lock in progress: make it an" \
		"asynchronous step, or say in the allow-list why it is not in" \
		"progress)"
	fail=$((fail + 1))
fi
echo "no-wait: $pass passed, $fail failed"
[ "$fail" = 0 ]
