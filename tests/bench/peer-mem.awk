# tests/bench/peer-mem-in-vm.sh's summary: lines "ROUND RANKS PROV
# mpi-alltoall: ranks N, bytes B, first round S s, KiB per peer: median M,
# max X"; medians over the rounds per ranks and provider, and gdrfab's
# ratios to verbs;ofi_rxm. Loaded after lib/stats.awk.
$4 == "mpi-alltoall:" {
	key = $2 " " $3
	setup[key] = setup[key] " " $11
	med[key] = med[key] " " ($17 + 0)
	max[key] = max[key] " " $19
	if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 }
}
function ratio(a, b) { return b + 0 > 0 ? sprintf("%.2f", a / b) : "-" }
END {
	printf "%-6s %-28s %-28s %s\n", "ranks", "KiB per peer, max (median)",
	       "first round s", "gdrfab/rxm: max KiB, first round"
	for (i = 1; i <= n; i++) {
		g = order[i] " gdrfab"; v = order[i] " verbs"
		printf "%-6s gdrfab %5.0f (%4.0f) rxm %5.0f (%4.0f)   gdrfab %6.3f rxm %6.3f   %s, %s\n",
		       order[i], median(max[g]), median(med[g]), median(max[v]),
		       median(med[v]), median(setup[g]), median(setup[v]),
		       ratio(median(max[g]), median(max[v])),
		       ratio(median(setup[g]), median(setup[v]))
	}
	print "goal (issue 33): gdrfab's largest KiB per peer <= 256 at the defaults"
}
