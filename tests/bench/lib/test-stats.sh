#!/bin/bash
# The benchmarks' statistics (stats.awk) on known data: odd and even
# counts, unsorted input, one value, none, negatives and decimals.
# Prints "bench-stats: N passed, M failed".
set -u
stats=$(dirname "$0")/stats.awk
pass=0 fail=0
expect() { # what, awk expression, expected output
	local got
	got=$(awk -f "$stats" -f <(echo "BEGIN { print $2 }"))
	if [ "$got" = "$3" ]; then
		echo "PASS: bench-stats: $1"
		pass=$((pass + 1))
	else
		echo "FAIL: bench-stats: $1: got '$got', want '$3'"
		fail=$((fail + 1))
	fi
}
expect "median of an odd count is the middle value" 'median("5 1 3")' 3
expect "median of an even count is the mean of the middle pair" 'median("4 1 3 2")' 2.5
expect "median sorts numerically, not as text" 'median("10 9 100")' 10
expect "median of one value is that value" 'median("7")' 7
expect "median of nothing is empty" '"[" median("") "]"' "[]"
expect "median takes negatives and decimals" 'median("-1.5 2.25 0.5 -3")' -0.5
expect "minimum is the smallest, numerically" 'minimum("10 9 100")' 9
expect "minimum of nothing is empty" '"[" minimum("") "]"' "[]"
echo "bench-stats: $pass passed, $fail failed"
[ "$fail" = 0 ]
