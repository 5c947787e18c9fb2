# The benchmarks' statistics, one definition each, loaded before a
# summary's own script (awk -f lib/stats.awk -f its.awk). Values are kept
# as space-separated strings, one a round.

# median(S): the median of the numbers in S: the middle one of an odd
# count, the mean of the two middle ones of an even count; "" for none.
function median(s,   n, v, i, j, t) {
	n = split(s, v, " ")
	if (n == 0)
		return ""
	for (i = 2; i <= n; i++) # insertion sort: POSIX awk has no sort
		for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
			t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
		}
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}

# minimum(S): the smallest number in S; "" for none.
function minimum(s,   n, v, i, m) {
	n = split(s, v, " ")
	for (i = 1; i <= n; i++)
		if (i == 1 || v[i] + 0 < m + 0)
			m = v[i]
	return n ? m : ""
}
