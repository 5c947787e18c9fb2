# Summarises osu-eager-in-vm.sh's "CONFIG ROUND SIZE US" lines: per size,
# the median over the rounds of rxm and of each value of the setting swept
# (-v values="V1 V2 ...", bytes), and the ratios to rxm.
{ v[$1 " " $3] = v[$1 " " $3] " " $4 }
END {
	ne = split(values, e, " ")
	printf "%8s %9s", "bytes", "rxm"
	for (i = 1; i <= ne; i++)
		printf " %9s", "v" e[i] / 1024 "K"
	for (i = 1; i <= ne; i++)
		printf " %7s", "r" e[i] / 1024 "K"
	printf "\n"
	for (x = 4096; x <= 524288; x *= 2) {
		b = median(v["rxm " x])
		printf "%8d %9.1f", x, b
		for (i = 1; i <= ne; i++)
			m[i] = median(v[e[i] " " x])
		for (i = 1; i <= ne; i++)
			printf " %9.1f", m[i]
		for (i = 1; i <= ne; i++)
			printf " %7.2f", (b > 0 ? m[i] / b : 0)
		printf "\n"
	}
}
