# Medians per (what, size) of "WHAT SIZE US" lines, in the order they came
# (a round is one line per what and size), and the ratios lat-floor.sh
# prints.
# Fills order[1..n] with the sizes seen, increasing (POSIX awk has no
# sort); returns n.
function sort_sizes(   s, j, n) {
	n = 0
	for (s in sizes) {
		for (j = ++n; j > 1 && order[j - 1] > s + 0; j--) order[j] = order[j - 1]
		order[j] = s + 0
	}
	return n
}
# The median of the rounds' own ratios a/b (the k-th of each).
function rmed(a, b,   n, m, x, y, i, r) {
	n = split(vals[a], x, " "); m = split(vals[b], y, " ")
	r = ""
	for (i = 1; i <= n && i <= m; i++)
		if (y[i] > 0) r = r " " x[i] / y[i]
	return median(r)
}
{ vals[$1 "|" $2] = vals[$1 "|" $2] " " $3; sizes[$2 + 0] = 1 }
END {
	if (("gdrfab-before|" 8) in vals || ("gdrfab-before|" 4096) in vals) {
		before_table()
		exit
	}
	printf "# one-way latency (µs), medians of %d rounds; ratios: of medians (median of the rounds' ratios)\n", split(vals["gdrfab|" (8)], _t, " ")
	printf "%6s %9s %9s %9s %9s %9s  %-13s %-13s %-13s %-13s %-13s\n", "bytes", "gdrfab", "rxm", "send_lat", "write_lat", "gdrfab_rma",
		"gdrfab/rxm", "gdrfab/send", "rxm/send", "write/send", "rma/send"
	n = sort_sizes()
	for (k = 1; k <= n; k++) {
		s = order[k]
		g = median(vals["gdrfab|" s]); x = median(vals["verbs;ofi_rxm|" s])
		sl = median(vals["ib_send_lat|" s]); wl = median(vals["ib_write_lat|" s])
		rm = median(vals["gdrfab-rma|" s])
		printf "%6d %9.2f %9.2f %9.2f %9.2f %9.2f  %4.2f (%4.2f)   %4.2f (%4.2f)   %4.2f (%4.2f)   %4.2f (%4.2f)   %4.2f (%4.2f)\n", s, g, x, sl, wl, rm,
			x ? g / x : 0, rmed("gdrfab|" s, "verbs;ofi_rxm|" s),
			sl ? g / sl : 0, rmed("gdrfab|" s, "ib_send_lat|" s),
			sl ? x / sl : 0, rmed("verbs;ofi_rxm|" s, "ib_send_lat|" s),
			sl ? wl / sl : 0, rmed("ib_write_lat|" s, "ib_send_lat|" s),
			sl ? rm / sl : 0, rmed("gdrfab-rma|" s, "ib_send_lat|" s)
	}
}

# GDRFAB_LAT_BEFORE's runs: this build against an earlier one and rxm.
function before_table(   s, k, n, g, b, x) {
	printf "# one-way latency (µs), medians; ratios: of medians (median of the rounds' ratios)\n"
	printf "%6s %9s %9s %9s  %-13s %-13s %-13s\n", "bytes", "gdrfab", "before", "rxm",
		"gdrfab/before", "gdrfab/rxm", "before/rxm"
	n = sort_sizes()
	for (k = 1; k <= n; k++) {
		s = order[k]
		g = median(vals["gdrfab|" s]); b = median(vals["gdrfab-before|" s])
		x = median(vals["verbs;ofi_rxm|" s])
		printf "%6d %9.2f %9.2f %9.2f  %4.2f (%4.2f)   %4.2f (%4.2f)   %4.2f (%4.2f)\n", s, g, b, x,
			b ? g / b : 0, rmed("gdrfab|" s, "gdrfab-before|" s),
			x ? g / x : 0, rmed("gdrfab|" s, "verbs;ofi_rxm|" s),
			x ? b / x : 0, rmed("gdrfab-before|" s, "verbs;ofi_rxm|" s)
	}
}
