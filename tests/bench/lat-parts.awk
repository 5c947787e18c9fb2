# Summarises lat-parts-in-vm.sh's lines, "WHAT SIDE SIZE key=value...",
# one client and one server line per what, size and round (ib_send_lat:
# a client line with its rtt alone), into medians over the rounds.
function m(w, s, k) { return median(vals[w "|" s "|" k]) }
{
	side = $2 == "client" ? "c." : "s."
	for (i = 4; i <= NF; i++) {
		split($i, kv, "=")
		k = kv[1] == "rtt" ? "rtt" : side kv[1]
		vals[$1 "|" $3 "|" k] = vals[$1 "|" $3 "|" k] " " kv[2]
	}
	if (!($3 in seen)) { seen[$3] = 1; sizes[++nsizes] = $3 + 0 }
	if (!($1 in named) && $1 != "ib_send_lat") { named[$1] = 1; whats[++nwhats] = $1 }
}
# own and rest per round (the k-th client and server lines are one round).
function own_rest(w, s,   n, i, key, parts, p, own, rest, v) {
	split("c.send c.hit c.turn s.send s.hit s.turn", parts, " ")
	n = split(vals[w "|" s "|rtt"], v, " ")
	own = ""; rest = ""
	for (i = 1; i <= n; i++) {
		o = 0
		for (p = 1; p <= 6; p++) {
			split(vals[w "|" s "|" parts[p]], x, " ")
			o += x[i]
		}
		own = own " " o; rest = rest " " (v[i] - o)
	}
	OWN = median(own); REST = median(rest); ROUNDS = n
}
END {
	printf "# round trip (µs), medians over rounds; own = both sides' send + hit + turn (the provider's and the program's critical path); rest = rtt - own (the kernel's two deliveries and the polls' delay)\n"
	for (z = 1; z <= nsizes; z++) {
		s = sizes[z]
		fl = m("ib_send_lat", s, "rtt"); rx = m("rxm", s, "rtt")
		printf "\n%d bytes: ib_send_lat rtt %.2f (the floor)\n", s, fl
		printf "%-14s %7s %7s %7s %9s %9s %7s %7s %6s | %7s %7s %7s %7s | %7s %7s %7s %7s\n", "what", "rtt", "own", "rest", "rtt/rxm", "rtt/floor", "mean", "p90", "stalls",
			"c.send", "c.hit", "c.turn", "c.trecv", "s.send", "s.hit", "s.turn", "write"
		for (q = 1; q <= nwhats; q++) {
			w = whats[q]
			own_rest(w, s)
			r = m(w, s, "rtt")
			printf "%-14s %7.2f %7.2f %7.2f %9.2f %9.2f %7.2f %7.2f %6d | %7.2f %7.2f %7.2f %7.2f | %7.2f %7.2f %7.2f %7.2f\n", w, r, OWN, REST,
				rx ? r / rx : 0, fl ? r / fl : 0,
				m(w, s, "c.mean"), m(w, s, "c.p90"), m(w, s, "c.stalls"),
				m(w, s, "c.send"), m(w, s, "c.hit"), m(w, s, "c.turn"), m(w, s, "c.trecv"),
				m(w, s, "s.send"), m(w, s, "s.hit"), m(w, s, "s.turn"), m(w, s, "c.write")
			if (w == "gdrfab") { grest = REST; gown = OWN }
		}
		if (rx && ("gdrfab" in named))
			printf "gdrfab at 0.85x rxm: rtt %.2f, so with its rest (%.2f) own may be %.2f (now %.2f)\n", 0.85 * rx, grest, 0.85 * rx - grest, gown
	}
	printf "\n(%d rounds)\n", ROUNDS
}
