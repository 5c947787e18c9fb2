#!/bin/bash
# gdrfab_stat sums a job's FI_GDRFAB_STATS files: two processes' files,
# written here in the format the provider prints (gdrfab_stats_fmt.h), one
# with its endpoint and domain tables, one whose domain was never closed
# (its endpoint tables count instead). Checks the sums, the peers merged
# by fi_addr, the rails merged by NIC name, the note about the missing domain table, -e, and that a
# malformed file fails with its line. Prints PASS/FAIL lines; no VM.
set -u
builddir=${GDRFAB_BUILDDIR:-$PWD}
tool=$builddir/examples/gdrfab_stat
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
if [ ! -x "$tool" ]; then
	echo "SKIP: gdrfab_stat: $tool is not built"
	exit 77
fi

passed=0 failed=0
check() { # what, expected, got
	if [ "$2" = "$3" ]; then
		echo "PASS: gdrfab_stat: $1"
		passed=$((passed + 1))
	else
		echo "FAIL: gdrfab_stat: $1: expected '$2', got '$3'"
		fail=1 failed=$((failed + 1))
	fi
}

# value NAME FILE: a counter of the job's table.
value() { awk -v n="$1" '$1 == n { print $2 }' "$2"; }
# peer ADDR COLUMN FILE: a peer row's column (2 tx_msgs ... 6 errors).
peer() { awk -v a="$1" -v c="$2" '$1 == "peer" && $2 == a { print $(c + 1) }' "$3"; }
# rail NIC COLUMN FILE: a rail row's column (4 stripe_ops, 5 stripe_bytes,
# 6 errors, 7 back; a table of an earlier build has no back column).
rail() { awk -v n="$1" -v c="$2" '$1 == "rail" && $3 == n { print $c }' "$3"; }

cat >"$tmp/s.n1.100" <<'T'
gdrfab stats: endpoint rxe0 host=n1 pid=100
  counter                                 value
  tx_eager_msgs                              10
  tx_rndv_msgs                                2
  tx_rndv_bytes                         2097152
  endpoints                                   1
  peer   fi_addr    tx_msgs     tx_bytes    rx_msgs     rx_bytes   errors
  peer         1         12      2097232          0            0        0
end
gdrfab stats: domain rxe0 host=n1 pid=100
  counter                                 value
  tx_eager_msgs                              10
  tx_rndv_msgs                                2
  tx_rndv_bytes                         2097152
  err_completions                             1
  gpu_path                                    3 (staged)
  endpoints                                   1
  peer   fi_addr    tx_msgs     tx_bytes    rx_msgs     rx_bytes   errors
  peer         1         12      2097232          0            0        1
  rail index nic              stripe_ops   stripe_bytes   errors   back
  rail     0 rxe0                      2        1048576        0      0
  rail     1 rxe2                      2        1048576        1      2
end
T
cat >"$tmp/s.n2.200" <<'T'
gdrfab stats: endpoint rxe1 host=n2 pid=200
  counter                                 value
  rx_eager_msgs                              10
  rx_rndv_msgs                                2
  tx_eager_msgs                               5
  endpoints                                   1
  peer   fi_addr    tx_msgs     tx_bytes    rx_msgs     rx_bytes   errors
  peer         0          5           40         12      2097232        0
  peer         1          0            0          0            0        2
  peer     other          1            8          0            0        0
  rail index nic              stripe_ops   stripe_bytes   errors
  rail     0 rxe2                      1         524288        0
  rail     1 rxe1                      1         524288        0
end
T
"$tool" "$tmp/s.n1.100" "$tmp/s.n2.200" >"$tmp/job" 2>"$tmp/err"
check "exit status" 0 $?
check "the job's title" "gdrfab stats: job files=2 tables=2" "$(head -1 "$tmp/job")"
check "tx_eager_msgs summed" 15 "$(value tx_eager_msgs "$tmp/job")"
check "rx_rndv_msgs summed" 2 "$(value rx_rndv_msgs "$tmp/job")"
check "tx_rndv_bytes" 2097152 "$(value tx_rndv_bytes "$tmp/job")"
check "endpoints: one by its domain, one alone" 2 "$(value endpoints "$tmp/job")"
check "gpu_path is kept, not summed" 3 "$(value gpu_path "$tmp/job")"
check "peer 0 tx_msgs" 5 "$(peer 0 2 "$tmp/job")"
check "peer 1 tx_msgs" 12 "$(peer 1 2 "$tmp/job")"
check "peer 1 errors merged" 3 "$(peer 1 6 "$tmp/job")"
check "peer other" 1 "$(peer other 2 "$tmp/job")"
check "rail rxe0 bytes" 1048576 "$(rail rxe0 5 "$tmp/job")"
check "rail rxe2 merged by name" 1572864 "$(rail rxe2 5 "$tmp/job")"
check "rail rxe2 ops" 3 "$(rail rxe2 4 "$tmp/job")"
check "rail rxe2 errors" 1 "$(rail rxe2 6 "$tmp/job")"
check "rail rxe1 a row of its own" 524288 "$(rail rxe1 5 "$tmp/job")"
check "rail rxe2 back, with a table without the column" 2 "$(rail rxe2 7 "$tmp/job")"
check "rail rxe1 back: none" 0 "$(rail rxe1 7 "$tmp/job")"
check "three rails, in order" "rxe0 rxe2 rxe1" \
	"$(awk '$1 == "rail" && $2 ~ /^[0-9]+$/ { printf "%s%s", s, $3; s = " " }' "$tmp/job")"
check "a file without a domain table is named" 1 \
	"$(grep -c 's.n2.200: no domain table' "$tmp/err")"
"$tool" -e "$tmp/s.n1.100" "$tmp/s.n2.200" >"$tmp/job-e" 2>/dev/null
check "-e: endpoint tables only" 15 "$(value tx_eager_msgs "$tmp/job-e")"
check "-e: no domain errors" 0 "$(value err_completions "$tmp/job-e")"
printf 'gdrfab stats: domain x\n  bogus_counter 1\nend\n' >"$tmp/bad"
"$tool" "$tmp/bad" >/dev/null 2>"$tmp/err-bad"
check "a malformed file fails" 1 $?
check "and names its line" 1 "$(grep -c 'bad:2: not a gdrfab stats table' "$tmp/err-bad")"
# The line tests/totals.sh counts.
echo "gdrfab-stat: $passed passed, $failed failed"
exit $fail
