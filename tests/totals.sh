#!/bin/bash
# Adds up what every test suite said, after `make check`, in the build
# directory:  tests/totals.sh SUITE...  (SUITE as in the Makefile's TESTS).
#
# A suite counts what it printed: Criterion's "Synthesis" line, "X: N passed,
# M failed" lines of the scripts, "[SKIP] test: why" and "SKIP: what: why"
# lines (a Criterion test that --filter left out says "Test is disabled":
# it was not meant to run there, and is not counted). On top of that, its automake result (SUITE.trs) is checked, so that
# nothing fails quietly:
# - no result at all (the suite never ran) is a failure;
# - FAIL or ERROR with no failing test counted (a crash before Criterion's
#   summary, a time-out, a VM that could not boot) is a failure;
# - SKIP with no reason printed is a skip without a reason, named as such.
# Prints a line per suite, the skips with their reasons, the failures, then
# "gdrfab: N passed, M failed, K skipped"; exits 1 if anything failed.
set -u
pass=0 fail=0 skip=0
skipped=() failed=()
for suite in "$@"; do
	log=$suite.log
	result=$(sed -n 's/^:test-result: //p' "$suite.trs" 2>/dev/null | head -n 1)
	if [ -z "$result" ]; then
		printf '  %-36s %-7s\n' "$suite" "NOT RUN"
		failed+=("$suite: never ran (no $suite.trs)")
		fail=$((fail + 1))
		continue
	fi
	# p f s, then one "name<TAB>why" line per skip.
	counts=$(sed -e 's/\x1b\[[0-9;]*m//g; s/\r$//' "$log" 2>/dev/null | awk '
		/Synthesis: Tested:/ {
			for (i = 1; i <= NF; i++) {
				if ($i == "Passing:") p += $(i + 1)
				if ($i == "Failing:") f += $(i + 1)
			}
		}
		/^[A-Za-z0-9_-]+: [0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$/ {
			p += $2; f += $4; if (NF >= 7) s += $6
		}
		# A test left out by --filter is "disabled": not a skip.
		/^\[SKIP\] / && !/: Test is disabled$/ {
			s++
			sub(/^\[SKIP\] /, ""); n = index($0, ": ")
			why[++k] = substr($0, 1, n - 1) "\t" substr($0, n + 2)
		}
		/^SKIP: / {
			s++
			sub(/^SKIP: /, ""); n = index($0, ": ")
			if (!n) n = index($0, " ")
			why[++k] = substr($0, 1, n - 1) "\t" substr($0, n + 1)
		}
		END {
			printf "%d %d %d\n", p, f, s
			for (i = 1; i <= k; i++) print why[i]
		}')
	read -r p f s <<<"$(head -n 1 <<<"$counts")"
	while IFS=$'\t' read -r name why; do
		[ -n "$name" ] && skipped+=("$suite: $name:${why:+ }${why# }")
	done < <(tail -n +2 <<<"$counts")
	case $result in
	FAIL | ERROR | XPASS)
		if [ "$f" = 0 ]; then
			f=1
			failed+=("$suite: $result with no failing test counted (a crash, a time-out or a setup error): see $log")
		else
			failed+=("$suite: $f failed: see $log")
		fi
		;;
	SKIP)
		if [ "$s" = 0 ]; then
			s=1
			skipped+=("$suite: skipped without saying why: see $log")
		fi
		;;
	esac
	printf '  %-36s %-7s %d passed, %d failed, %d skipped\n' "$suite" "$result" "$p" "$f" "$s"
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
done
if [ ${#skipped[@]} -gt 0 ]; then
	echo "skipped:"
	printf '  %s\n' "${skipped[@]}"
fi
if [ ${#failed[@]} -gt 0 ]; then
	echo "failed:"
	printf '  %s\n' "${failed[@]}"
fi
echo "gdrfab: $pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
