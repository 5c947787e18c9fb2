#!/bin/bash
# libfabric's own test suite against gdrfab, beside verbs;ofi_rxm as the
# baseline: builds fabtests 1.17.0 from ../shared (skipped, named, when it
# is not there; tests/fabtests/build-fabtests.sh), boots the soft-RoCE VM
# once and runs runfabtests.sh's quick set for both providers in both of
# its modes (tests/fabtests/check-fabtests.sh), then prints pass, fail and
# notrun per provider and mode side by side, and every gdrfab test that
# failed or did not run with the reason its output gives. The table and
# the lists are also written to fabtests-results/summary.txt in the build
# directory, next to runfabtests' own output per run.
#
#   tests/fabtests/run-fabtests.sh          (from the build directory)
#
# Not part of `make check`: it takes ~40 minutes of VM time for both
# providers (scripts/test.sh runs gdrfab's part, strict). Its status is 0
# when every run it made finished, whatever gdrfab's results;
# GDRFAB_FABTESTS_STRICT=1 also fails it on any gdrfab failure, except
# those listed with their reasons in tests/fabtests/gdrfab-known-fail.txt
# (failures that are fabtests' own: each is reported, not counted).
# GDRFAB_FABTESTS_TIMEOUT (default 60) is runfabtests' -T, the seconds
# after which one test's server and client are killed;
# GDRFAB_FABTESTS_SET (default quick) is its -t, for a shorter look
# (unit, functional, short; a comma list works too);
# GDRFAB_FABTESTS_OOB_SET (default: the same) is the -t of the -b runs;
# GDRFAB_FABTESTS_MODES (default "default oob")
# and GDRFAB_FABTESTS_PROVIDERS (default "gdrfab verbs;ofi_rxm") run a
# part again: the runs made replace their earlier results, the others'
# results from an earlier call stay in the table.
# GDRFAB_FABTESTS_SKIP_NOTRUN=1 leaves out of gdrfab's runs the tests
# tests/fabtests/gdrfab-notrun.txt names (endpoint types and features
# gdrfab does not offer): runfabtests counts them Notrun/Excluded.
set -u
. "$(dirname "$0")/../vm/runner/vm-prelude.sh" "fabtests"
# One build serves this and run-fabtests-cuda.sh: built for -D cuda where
# a CUDA toolkit is, it dlopen()s the CUDA libraries only for a test that
# asks for CUDA memory.
cuda=${GDRFAB_CUDA_DIR:-/usr/local/cuda}
if [ -r "$cuda/include/cuda_runtime.h" ]; then
	ft=$builddir/fabtests-1.17-cuda
else
	ft=$builddir/fabtests-1.17 cuda=
fi
"$srcdir/tests/fabtests/build-fabtests.sh" "$ft" ${cuda:+"$cuda"}
case $? in
0) ;;
77) exit 77 ;;
*) exit 1 ;;
esac
limit=${GDRFAB_FABTESTS_TIMEOUT:-60}
set=${GDRFAB_FABTESTS_SET:-quick}
oob_set=${GDRFAB_FABTESTS_OOB_SET:-$set}
title=$set
[ "$oob_set" = "$set" ] || title="$set (-b: $oob_set)"
outdir=$builddir/fabtests-results
modes=${GDRFAB_FABTESTS_MODES:-default oob}
provs=${GDRFAB_FABTESTS_PROVIDERS:-gdrfab verbs;ofi_rxm}
excludes=
[ "${GDRFAB_FABTESTS_SKIP_NOTRUN:-0}" = 1 ] && excludes=$srcdir/tests/fabtests/gdrfab-notrun.txt
mkdir -p "$outdir"
for mode in $modes; do
	for prov in $provs; do
		rm -f "$outdir/${prov//;/_}.$mode.yaml"
	done
done
# fi_rdm_atomic sizes its buffer, result and compare arrays for 64 of the
# largest test size (8 MiB) and pins all three: ~3 GiB per process, two
# processes, beyond the VM's default 4 GiB (the OOM killer ends it).
export GDRFAB_VM_MEM=${GDRFAB_VM_MEM:-10240}
# Up to 4 runs of 87 tests, ~10 minutes each under TCG; a hanging test
# costs $limit seconds.
"$srcdir/tests/vm/runner/vm-run" --timeout "${GDRFAB_VM_TIMEOUT:-3600}" -- \
	"$srcdir/tests/fabtests/check-fabtests.sh" "$ft" "$outdir" "$limit" "$set" "$modes" "$provs" \
	"$excludes" "$oob_set"
vmrc=$?

tsv=$outdir/tests.tsv
"$srcdir/tests/fabtests/summarize.sh" "$outdir" "$limit" "$title"
# Runs of this call that printed runfabtests' summary.
finished=0
for mode in $modes; do
	for prov in $provs; do
		finished=$((finished + $(awk -F'\t' -v p="$prov" -v m="$mode" \
			'$1 == "total" && $2 == p && $3 == m' "$tsv" | wc -l)))
	done
done
expected=$(($(wc -w <<<"$provs") * $(wc -w <<<"$modes")))

if [ "$finished" != "$expected" ]; then
	echo "fabtests: FAIL: $((expected - finished)) of the $expected runs ended without runfabtests' summary (vm-run status $vmrc)"
	exit 1
fi
if [ "${GDRFAB_FABTESTS_STRICT:-0}" = 1 ]; then
	# This call's gdrfab failures, less those gdrfab-known-fail.txt
	# explains (its test, or that test with more options).
	nfail=$(awk -F'\t' -v modes=" $modes " '
		FNR == NR {
			if ($0 !~ /^#/ && NF >= 3) { km[++k] = $1; kt[k] = $2; kr[k] = $3 }
			next
		}
		$1 == "gdrfab" && $3 ~ /^Fail/ && index(modes, " " $2 " ") {
			for (i = 1; i <= k; i++)
				if (km[i] == $2 && ($5 == kt[i] || index($5, kt[i] " ") == 1)) {
					printf "fabtests: known failure, not counted: %s (%s mode): %s\n", $5, $2, kr[i]
					next
				}
			n++
			printf "fabtests: FAIL: %s (%s mode)\n", $5, $2
		}
		END { print n + 0 }' "$srcdir/tests/fabtests/gdrfab-known-fail.txt" "$tsv")
	printf '%s\n' "$nfail" | sed '$d'
	# What each counted failure printed, from runfabtests' YAML (the
	# build directory does not outlive CI; its log does).
	printf '%s\n' "$nfail" | sed -n 's/^fabtests: FAIL: \(.*\) (\(.*\) mode)$/\2\t\1/p' |
		while IFS=$'\t' read -r mode test; do
			awk -v want="- name:   $test -p \"gdrfab\"" '
				$0 == want { on = 1; next }
				on && /^- name:/ { exit }
				on { print "fabtests:   " $0 }' "$outdir/gdrfab.$mode.yaml" | tail -n 60
		done
	nfail=$(printf '%s\n' "$nfail" | tail -n 1)
	if [ "$nfail" != 0 ]; then
		echo "fabtests: FAIL: gdrfab failed $nfail tests (GDRFAB_FABTESTS_STRICT=1)"
		exit 1
	fi
fi
exit 0
