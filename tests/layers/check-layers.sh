#!/bin/bash
# The provider's layers, checked from what the build made and what the
# sources include. Each folder of prov/gdrfab/src is a layer:
#
#   obj -> proto -> {verbs, hmem, mem, topo} -> util
#
# A file may call (a symbol another object file defines, from `nm`) or
# include (a private header, by the folder it sits in) its own folder or a
# lower one; in the middle tier only along the edges of MIDDLE below. Any
# other edge fails, printed with its file and symbol or header, and so does
# any cycle among the folders. Edges named in tests/layers/allowed-upward.txt
# ("caller-file symbol-or-header" a line) are counted as "allowed upward: N"
# instead: debts to pay, not rules.
#
#   check-layers.sh            the check (a test of `make check`)
#   check-layers.sh --counts   folder -> folder edge counts, allowed or not
#
# Prints "layers: N passed, M failed"; exit 77 (with a SKIP: line) when the
# objects are not built or nm is missing.
set -u
srcdir=${GDRFAB_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${GDRFAB_BUILDDIR:-$PWD}
src=prov/gdrfab/src
allow=$srcdir/tests/layers/allowed-upward.txt
# Peers of the middle tier: hmem registers GPU memory through mem's
# registration cache and makes its flush QP with verbs. verbs, mem and topo
# call no peer.
MIDDLE="hmem>mem hmem>verbs"

skip() {
	echo "SKIP: layers: $*"
	exit 77
}
command -v nm >/dev/null || skip "nm (binutils) is not installed"
[ -d "$srcdir/$src" ] || skip "no sources in $srcdir/$src"

work=$(mktemp -d "${TMPDIR:-/tmp}/gdrfab-layers.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Symbols: "D file sym" for what an object defines, "U file sym" for what
# it needs; file is the source, relative to src/ (obj/gdrfab_cq.c).
for c in "$srcdir/$src"/*/*.c; do
	rel=${c#"$srcdir/$src/"}
	dir=$(dirname "$rel")
	base=$(basename "$rel" .c)
	o=$builddir/$src/$dir/.libs/$base.o
	[ -f "$o" ] || o=$builddir/$src/$dir/$base.o
	[ -f "$o" ] || skip "$src/$dir/$base.o is not built (run make first)"
	nm "$o" | awk -v f="$rel" '
		$1 == "U" { print "U", f, $2; next }
		NF == 3 && $2 ~ /^[BCDGRSTVW]$/ { print "D", f, $3 }'
done >"$work/syms"

# Includes: "I file header" for each #include "x.h" of a provider source or
# header; the header's folder is where a file of that name sits.
for f in "$srcdir/$src"/*/*.[ch]; do
	rel=${f#"$srcdir/$src/"}
	sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
		while read -r h; do echo "I $rel $h"; done
done >"$work/incs"
(cd "$srcdir/$src" && ls -- */*.h) | awk -F/ '{ print "H", $2, $0 }' >"$work/hdrs"

# Edges: "call|include caller callee what", between different files.
awk '
	$1 == "D" { def[$3] = $2; next }
	$1 == "H" { hdr[$2] = $3; next }
	$1 == "U" && ($3 in def) && def[$3] != $2 { print "call", $2, def[$3], $3; next }
	$1 == "I" && ($3 in hdr) && hdr[$3] != $2 { print "include", $2, hdr[$3], $3 }
' "$work/syms" "$work/hdrs" "$work/incs" "$work/syms" | sort -u >"$work/edges"
[ -s "$work/edges" ] || skip "no edges found: nm printed nothing usable"

if [ "${1:-}" = --counts ]; then
	awk '{
		split($2, a, "/"); split($3, b, "/")
		if (a[1] != b[1]) n[a[1] " -> " b[1] " " $1]++
	} END { for (k in n) print k, n[k] }' "$work/edges" |
		sort | awk '{ printf "%-16s %-8s %4d\n", $1 " " $2 " " $3, $4, $5 }'
	exit 0
fi

# Classify each edge across folders: ok, allowed (listed), or bad.
grep -v '^[[:space:]]*\(#\|$\)' "$allow" 2>/dev/null >"$work/allow"
awk -v middle="$MIDDLE" '
	BEGIN {
		rank["obj"] = 0; rank["proto"] = 1; rank["verbs"] = 2
		rank["hmem"] = 2; rank["mem"] = 2; rank["topo"] = 2
		rank["util"] = 3
		n = split(middle, m, " ")
		for (i = 1; i <= n; i++) peer[m[i]] = 1
	}
	FILENAME ~ /allow$/ { allowed[$1 " " $2] = 1; next }
	{
		split($2, a, "/"); split($3, b, "/")
		from = a[1]; to = b[1]
		if (from == to) next
		if (!(from in rank) || !(to in rank)) {
			print "bad", $0 "; a folder outside the layers"
			next
		}
		if (rank[to] > rank[from] || (rank[to] == rank[from] && peer[from ">" to]))
			print "ok", $0
		else if (($2 " " $4) in allowed) {
			print "allowed", $0
			seen[$2 " " $4] = 1
		} else
			print "bad", $0
	}
	END {
		for (k in allowed)
			if (!(k in seen)) print "stale", k
	}
' "$work/allow" "$work/edges" >"$work/class"

pass=0 fail=0
bad=$(grep -c '^bad ' "$work/class")
if [ "$bad" = 0 ]; then
	echo "PASS: layers: every call and include goes down the layers"
	pass=$((pass + 1))
else
	echo "FAIL: layers: $bad edges go up or across the layers:"
	awk '$1 == "bad" { printf "  %s %s -> %s (%s)\n", $2, $3, $4, $5 }' "$work/class"
	fail=$((fail + 1))
fi

# Cycles among folders, over every edge not allowed by the list (tsort
# names a loop on stderr).
awk '$1 != "allowed" && $1 != "stale" {
	split($3, a, "/"); split($4, b, "/"); print a[1], b[1]
}' "$work/class" | sort -u >"$work/folders"
if tsort "$work/folders" >/dev/null 2>"$work/tsort"; then
	echo "PASS: layers: the folders form no cycle"
	pass=$((pass + 1))
else
	echo "FAIL: layers: the folders form a cycle:"
	awk '/input contains a loop/ { if (c != "") print "  " c; c = ""; next }
		{ sub(/^tsort: /, ""); c = c (c == "" ? "" : " -> ") $0 }
		END { if (c != "") print "  " c }' "$work/tsort" | sort -u
	fail=$((fail + 1))
fi

echo "allowed upward: $(grep -c '^allowed ' "$work/class") (tests/layers/allowed-upward.txt)"
awk '$1 == "allowed" { printf "  %s %s -> %s (%s)\n", $2, $3, $4, $5 }' "$work/class"
stale=$(grep -c '^stale ' "$work/class")
if [ "$stale" != 0 ]; then
	echo "allowed but no longer seen (delete these lines): $stale"
	awk '$1 == "stale" { print "  " $2, $3 }' "$work/class"
fi
echo "layers: $pass passed, $fail failed"
[ "$fail" = 0 ]
