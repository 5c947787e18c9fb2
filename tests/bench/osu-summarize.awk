# Summarises OSU runs ("KIND PROVIDER ROUND SIZE VALUE" lines, KIND lat in
# microseconds or bw in MB/s, as osu-in-vm.sh writes them) into one table:
# per size the median of the rounds for gdrfab and verbs;ofi_rxm and
# gdrfab's ratio, plus the median of each round's own ratio (a round ran
# both providers within minutes, so it follows drift within a boot). The
# "proto" column says which of gdrfab's paths the size takes under Open
# MPI's mtl ofi, which sends with fi_tinject up to the provider's
# inject_size (ompi mtl_ofi.h, ompi_mtl_ofi_send_generic): "inject" up to
# -v eager=BYTES (FI_GDRFAB_EAGER_MAX, gdrfab's inject_size), an eager
# message copied into a bounce buffer (an inject is never sent inline
# from the caller's buffer), "rndv" above, read by the receiver. MPICH's
# ch4:ofi likewise sends with fi_tinjectdata up to its max_buffered_send,
# the provider's inject_size (osu-in-vm.sh reads it from MPICH's debug
# summary for -v eager).
#   awk -v eager=8192 -f osu-summarize.awk osu-raw.txt
function ratio(a, b) {
	return (a != "" && b != "" && b + 0 > 0) ? sprintf("%.2f", a / b) : "-"
}
# The median over rounds of gdrfab/rxm measured in the same round.
function round_ratio(kind, size,   r, a, b, s) {
	s = ""
	for (r in rounds) {
		a = one[kind "|gdrfab|" r "|" size]; b = one[kind "|verbs;ofi_rxm|" r "|" size]
		if (a != "" && b != "" && b + 0 > 0)
			s = s " " a / b
	}
	return s == "" ? "-" : sprintf("%.2f", median(s))
}
function proto(size) {
	return size <= eager ? "inject" : "rndv"
}
{
	key = $1 "|" $2 "|" $4
	vals[key] = vals[key] " " $5
	one[$1 "|" $2 "|" $3 "|" $4] = $5
	rounds[$3] = 1
	sizes[$4 + 0] = 1
}
END {
	if (eager == "")
		eager = 8192
	n = 0
	for (s in sizes)
		list[++n] = s + 0
	for (i = 2; i <= n; i++) # sizes ascending
		for (j = i; j > 1 && list[j - 1] > list[j]; j--) {
			t = list[j]; list[j] = list[j - 1]; list[j - 1] = t
		}
	printf "%9s %-6s | %-33s | %s\n", "", "", "latency (us): lower is better",
	    "bandwidth (MB/s): higher is better"
	printf "%9s %-6s | %9s %9s %6s %6s | %9s %9s %6s %6s\n", "bytes", "proto",
	    "gdrfab", "rxm", "ratio", "rounds", "gdrfab", "rxm", "ratio", "rounds"
	for (i = 1; i <= n; i++) {
		s = list[i]
		lg = median(vals["lat|gdrfab|" s]); lr = median(vals["lat|verbs;ofi_rxm|" s])
		bg = median(vals["bw|gdrfab|" s]); br = median(vals["bw|verbs;ofi_rxm|" s])
		printf "%9d %-6s | %9s %9s %6s %6s | %9s %9s %6s %6s\n", s, proto(s),
		    lg == "" ? "-" : sprintf("%.1f", lg), lr == "" ? "-" : sprintf("%.1f", lr),
		    ratio(lg, lr), round_ratio("lat", s),
		    bg == "" ? "-" : sprintf("%.2f", bg), br == "" ? "-" : sprintf("%.2f", br),
		    ratio(bg, br), round_ratio("bw", s)
	}
	print "ratio: gdrfab / verbs;ofi_rxm, the medians' ratio; rounds: the median of each round's own ratio."
	print "Latency: below 1 gdrfab is faster. Bandwidth: above 1 gdrfab is faster."
}
