# Summarises benchmark results ("KIND PROVIDER SIZE VALUE" lines, or
# "lat raw SIZE US" / "bw raw SIZE MBPS" from perftest) into medians and
# gdrfab's ratios to each baseline (median: lib/stats.awk).
{
	if ($1 == "lat" && $2 == "raw") key = "lat|raw|" $3
	else if ($1 == "bw" && $2 == "raw") key = "bw|raw|" $3
	else key = $1 "|" $2 "|" $3
	vals[key] = vals[key] " " ($1 == "lat" && $2 == "raw" ? $4 : $NF)
	sizes[$3 + 0] = 1
}
# The median of the rounds' own ratios: each round measured both in the
# same minutes, so this follows drift within a boot better than a ratio
# of medians does.
function round_ratio(ka, kb,   n, m, i, a, b, rs) {
	n = split(vals[ka], a, " "); m = split(vals[kb], b, " ")
	if (n != m || !n)
		return "   n/a"
	rs = ""
	for (i = 1; i <= n; i++)
		rs = rs " " (b[i] > 0 ? a[i] / b[i] : 0)
	vals["ratio|" ka] = rs
	return sprintf("%6.2f", median(vals["ratio|" ka]))
}
function r(a, b) { return (a == "" || b == "" || b == 0) ? "   n/a" : sprintf("%6.2f", a / b) }
END {
	n = 0
	for (s in sizes)
		sorted[++n] = s + 0
	for (i = 2; i <= n; i++) # mawk has no asort
		for (j = i; j > 1 && sorted[j - 1] > sorted[j]; j--) {
			t = sorted[j]; sorted[j] = sorted[j - 1]; sorted[j - 1] = t
		}
	printf "\nLatency (us, one way): median of rounds, then best of rounds;\n"
	printf "rounds: the median of each round's gdrfab / verbs;ofi_rxm\n"
	printf "%10s %10s %14s %12s %8s %8s | %10s %14s %12s %8s %8s | %6s\n", "bytes", "gdrfab", "verbs;ofi_rxm", "ib_send_lat", "vs_rxm", "vs_raw", "gdrfab", "verbs;ofi_rxm", "ib_send_lat", "vs_rxm", "vs_raw", "rounds"
	for (i = 1; i <= n; i++) {
		s = sorted[i]
		g = median(vals["lat|gdrfab|" s]); x = median(vals["lat|verbs;ofi_rxm|" s]); w = median(vals["lat|raw|" s])
		gm = minimum(vals["lat|gdrfab|" s]); xm = minimum(vals["lat|verbs;ofi_rxm|" s]); wm = minimum(vals["lat|raw|" s])
		printf "%10d %10s %14s %12s %8s %8s | %10s %14s %12s %8s %8s | %6s\n", s, g, x, w == "" ? "n/a" : w, r(g, x), r(g, w), gm, xm, wm == "" ? "n/a" : wm, r(gm, xm), r(gm, wm), round_ratio("lat|gdrfab|" s, "lat|verbs;ofi_rxm|" s)
	}
	printf "\nBandwidth (MB/s = 10^6 B/s; median of rounds)\n"
	printf "%10s %12s %12s %14s %14s %12s %12s %12s\n", "bytes", "gdrfab_tag", "gdrfab_write", "rxm_tag", "rxm_write", "ib_write_bw", "write/raw", "write/rxm"
	for (i = 1; i <= n; i++) {
		s = sorted[i]
		gt = median(vals["bw_tagged|gdrfab|" s]); gw = median(vals["bw_write|gdrfab|" s])
		xt = median(vals["bw_tagged|verbs;ofi_rxm|" s]); xw = median(vals["bw_write|verbs;ofi_rxm|" s])
		w = median(vals["bw|raw|" s])
		printf "%10d %12s %12s %14s %14s %12s %12s %12s\n", s, gt, gw, xt, xw, w, r(gw, w), r(gw, xw)
	}
}