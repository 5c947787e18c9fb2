#!/bin/bash
# Reads what runfabtests.sh wrote in OUTDIR (PROVIDER.MODE.yaml, from
# check-fabtests.sh) into OUTDIR/tests.tsv, a line per test
# (summarize.awk), and prints the table of pass, fail and notrun per
# provider and mode, gdrfab's failures and notruns and the baseline's
# failures with their reasons; the same goes to OUTDIR/summary.txt.
# run-fabtests.sh ends with it; run alone, it prints the last results
# again without a VM.
#   tests/fabtests/summarize.sh OUTDIR [TIMEOUT [SET]]
set -u
outdir=$1 limit=${2:-60} set=${3:-quick}
tsv=$outdir/tests.tsv
awk -v timeout="$limit" -f "$(dirname "$0")/summarize.awk" \
	"$outdir"/*.yaml >"$tsv" 2>/dev/null
cut=()
{
	echo "fabtests 1.17.0, $set set, soft-RoCE VM, summarized $(date -u "+%Y-%m-%d %H:%M UTC")"
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
				continue
			fi
			# A run cut short: what the tests that ran said, marked.
			line=$(awk -F'\t' -v p="$prov" -v m="$mode" '$1 == p && $2 == m {
					n++
					if ($3 == "Pass") a++
					else if ($3 ~ /^Fail/) f++
					else o++
				} END { if (n) print a + 0, f + 0, o + 0, n }' "$tsv")
			if [ -n "$line" ]; then
				set -- $line
				row+=$(printf ' %6s %6s %7s*' "$1" "$2" "$3")
				cut+=("$prov, $mode mode: cut short after $4 tests")
			else
				row+=$(printf ' %6s %6s %8s' - - -)
			fi
		done
		echo "$row"
	done
	for c in "${cut[@]}"; do
		echo "* $c (no summary from runfabtests)"
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
