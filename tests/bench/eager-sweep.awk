# Summarises eager-sweep.sh's "EAGER_MAX SIZE US" lines: per size, the
# median latency all eager (65536) and all rendezvous (512), and their ratio.
{ v[$1 " " $2] = v[$1 " " $2] " " $3; s[$2 + 0] = 1 }
END {
	printf "%10s %14s %14s %10s\n", "bytes", "eager_us", "rendezvous_us", "ratio"
	for (x = 1024; x <= 65536; x *= 2) {
		e = median(v["65536 " x]); r = median(v["512 " x])
		printf "%10d %14.2f %14.2f %10.2f\n", x, e, r, (r > 0 ? e / r : 0)
	}
}
