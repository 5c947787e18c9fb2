# Summarises staged-bw.sh's "MODE BUF SIZE MBPS" lines: per mode and size,
# the median bandwidth from host and from "GPU" (staged) memory, and the ratio.
{ k = $1 " " $2 " " $3; v[k] = v[k] " " $4; s[$3 + 0] = 1 }
END {
	printf "%-7s %10s %14s %14s %7s\n", "mode", "bytes", "host MB/s", "staged MB/s", "ratio"
	split("tagged rma", m, " ")
	for (i = 1; i <= 2; i++)
		for (x = 65536; x <= 16777216; x *= 16) {
			h = median(v[m[i] " host " x]); g = median(v[m[i] " cuda " x])
			printf "%-7s %10d %14.1f %14.1f %6.2fx\n", m[i], x, h, g, (h > 0 ? g / h : 0)
		}
}
