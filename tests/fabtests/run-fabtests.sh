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
# Not part of `make check`: it takes ~10 minutes of VM time. Its status is
# 0 when all four runs finished, whatever gdrfab's results (it cannot pass
# before node/service addressing and atomics exist);
# GDRFAB_FABTESTS_STRICT=1 also fails it on any gdrfab failure.
# GDRFAB_FABTESTS_TIMEOUT (default 60) is runfabtests' -T, the seconds
# after which one test's server and client are killed;
# GDRFAB_FABTESTS_SET (default quick) is its -t, for a shorter look
# (unit, functional, short); GDRFAB_FABTESTS_MODES (default "default oob")
# runs one mode only, replacing that mode's results and keeping the
# other's from an earlier run in the table.
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
mkdir -p "$outdir"
for mode in $modes; do
	rm -f "$outdir"/*."$mode".yaml
done
# 4 runs of 87 tests; a hanging test costs $limit seconds, plus the boot.
"$srcdir/tests/vm/vm-run" --timeout "${GDRFAB_VM_TIMEOUT:-3600}" -- \
	"$srcdir/tests/fabtests/check-fabtests.sh" "$ft" "$outdir" "$limit" "${GDRFAB_FABTESTS_SET:-quick}" "$modes"
vmrc=$?

tsv=$outdir/tests.tsv
awk -v timeout="$limit" -f "$srcdir/tests/fabtests/summarize.awk" \
	"$outdir"/*.yaml >"$tsv" 2>/dev/null
# Runs of this call that printed runfabtests' summary.
finished=0
for mode in $modes; do
	finished=$((finished + $(awk -F'\t' -v m="$mode" '$1 == "total" && $3 == m' "$tsv" | wc -l)))
done
expected=$((2 * $(wc -w <<<"$modes")))
{
	echo "fabtests 1.17.0, ${GDRFAB_FABTESTS_SET:-quick} set, soft-RoCE VM, $(date -u '+%Y-%m-%d %H:%M UTC'), -T $limit"
	printf '%-16s %-22s %-22s\n' "" "default (node/svc)" "-b (out of band)"
	printf '%-16s %6s %6s %8s %6s %6s %8s\n' provider pass fail notrun pass fail notrun
	for prov in gdrfab 'verbs;ofi_rxm'; do
		row=$(printf '%-16s' "$prov")
		for mode in default oob; do
			# The counts of runfabtests' own summary, "-" where the run
			# ended without one.
			line=$(awk -F'\t' -v p="$prov" -v m="$mode" \
				'$1 == "total" && $2 == p && $3 == m { print $4, $6, $5 }' "$tsv")
			if [ -n "$line" ]; then
				row+=$(printf ' %6s %6s %8s' $line)
			else
				row+=$(printf ' %6s %6s %8s' - - -)
			fi
		done
		echo "$row"
	done
	for mode in default oob; do
		for what in Fail Notrun Excluded; do
			list=$(awk -F'\t' -v m="$mode" -v r="$what" \
				'$1 == "gdrfab" && $2 == m && $3 == r { printf "  %-44s %s\n", $5, $6 }' "$tsv")
			[ -n "$list" ] || continue
			echo
			echo "gdrfab, $mode mode, $what ($(wc -l <<<"$list")):"
			echo "$list"
		done
		# The baseline should pass what it runs: its failures say what
		# this VM cannot do.
		list=$(awk -F'\t' -v m="$mode" \
			'$1 == "verbs;ofi_rxm" && $2 == m && $3 == "Fail" { printf "  %-44s %s\n", $5, $6 }' "$tsv")
		if [ -n "$list" ]; then
			echo
			echo "verbs;ofi_rxm, $mode mode, Fail ($(wc -l <<<"$list")):"
			echo "$list"
		fi
	done
} | tee "$outdir/summary.txt"
echo "fabtests: runfabtests' output in $outdir/*.yaml"

if [ "$finished" != "$expected" ]; then
	echo "fabtests: FAIL: $((expected - finished)) of the $expected runs ended without runfabtests' summary (vm-run status $vmrc)"
	exit 1
fi
if [ "${GDRFAB_FABTESTS_STRICT:-0}" = 1 ]; then
	nfail=$(awk -F'\t' '$1 == "total" && $2 == "gdrfab" { n += $6 } END { print n + 0 }' "$tsv")
	if [ "$nfail" != 0 ]; then
		echo "fabtests: FAIL: gdrfab failed $nfail tests (GDRFAB_FABTESTS_STRICT=1)"
		exit 1
	fi
fi
exit 0
