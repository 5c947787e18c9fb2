#!/bin/bash
# The whole test suite from a fresh machine: installs what is missing,
# builds, checks the style, runs the unit tests here and the integration
# tests inside the soft-RoCE VM, then prints Criterion's totals.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh || exit 1
scripts/build.sh || exit 1
cd build
make --no-print-directory format-check || { echo "style: run 'make -C build format'"; exit 1; }
make --no-print-directory check
status=$?
logs="tests/unit/gdrfab_unit.log tests/topo/check-topo.sh.log tests/vm/run-vm-tests.sh.log tests/kmod/run-kmod-tests.sh.log"
[ -r tests/gpu/gdrfab_gpu_tests.log ] && logs="$logs tests/gpu/gdrfab_gpu_tests.log"
for log in $logs; do
	echo "==== $log"
	[ -r "$log" ] && sed -e 's/\x1b\[[0-9;]*m//g' "$log"
done
# One total over every Criterion binary and the fi_info checks.
# shellcheck disable=SC2086
sed -e 's/\x1b\[[0-9;]*m//g; s/\r$//' $logs 2>/dev/null |
	awk '
	/Synthesis: Tested:/ {
		for (i = 1; i <= NF; i++) {
			if ($i == "Passing:") pass += $(i + 1)
			if ($i == "Failing:") fail += $(i + 1)
			if ($i == "Crashing:") fail += $(i + 1)
		}
	}
	/^(fi_info|topo): [0-9]+ passed, [0-9]+ failed$/ { pass += $2; fail += $4 }
	/^SKIP: / { skip += 1 }
	END { printf "gdrfab: %d passed, %d failed, %d skipped\n", pass, fail, skip }'
exit $status
