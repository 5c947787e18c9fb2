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
# those of the tests named in GDRFAB_FABTESTS_KNOWN_FAIL (space-separated
# program names, each for every variant of it in both modes, or MODE:NAME
# for one mode: "fi_rdm_atomic oob:fi_poll"; each is reported, not
# counted).
# GDRFAB_FABTESTS_TIMEOUT (default 60) is runfabtests' -T, the seconds
# after which one test's server and client are killed;
# GDRFAB_FABTESTS_SET (default quick) is its -t, for a shorter look
# (unit, functional, short); GDRFAB_FABTESTS_MODES (default "default oob")
# and GDRFAB_FABTESTS_PROVIDERS (default "gdrfab verbs;ofi_rxm") run a
# part again: the runs made replace their earlier results, the others'
# results from an earlier call stay in the table.
set -u
. "$(dirname "$0")/../vm/vm-prelude.sh" "fabtests"
ft=$builddir/fabtests-1.17
"$srcdir/tests/fabtests/build-fabtests.sh" "$ft"
case $? in
0) ;;
77) exit 77 ;;
*) exit 1 ;;
esac
limit=${GDRFAB_FABTESTS_TIMEOUT:-60}
outdir=$builddir/fabtests-results
modes=${GDRFAB_FABTESTS_MODES:-default oob}
provs=${GDRFAB_FABTESTS_PROVIDERS:-gdrfab verbs;ofi_rxm}
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
"$srcdir/tests/vm/vm-run" --timeout "${GDRFAB_VM_TIMEOUT:-3600}" -- \
	"$srcdir/tests/fabtests/check-fabtests.sh" "$ft" "$outdir" "$limit" "${GDRFAB_FABTESTS_SET:-quick}" "$modes" "$provs"
vmrc=$?

tsv=$outdir/tests.tsv
"$srcdir/tests/fabtests/summarize.sh" "$outdir" "$limit" "${GDRFAB_FABTESTS_SET:-quick}"
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
	# The failures of this call's runs, less the known ones.
	known=${GDRFAB_FABTESTS_KNOWN_FAIL:-}
	fails=$(for mode in $modes; do
		awk -F'\t' -v m="$mode" '$1 == "gdrfab" && $2 == m && $3 ~ /^Fail/ { print m "\t" $5 }' "$tsv"
	done)
	nfail=0
	while IFS=$'\t' read -r mode test; do
		[ -n "$test" ] || continue
		prog=${test%% *}
		if [[ " $known " == *" $prog "* || " $known " == *" $mode:$prog "* ]]; then
			echo "fabtests: known failure, not counted (GDRFAB_FABTESTS_KNOWN_FAIL): $test ($mode mode)"
			continue
		fi
		nfail=$((nfail + 1))
	done <<<"$fails"
	if [ "$nfail" != 0 ]; then
		echo "fabtests: FAIL: gdrfab failed $nfail tests (GDRFAB_FABTESTS_STRICT=1)"
		exit 1
	fi
fi
exit 0
