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
# Function pointers count too (from `objdump`: relocations and rip-relative
# addresses). A file that names another file's function without calling it
# (a table entry, an assignment) depends on it like a call: a "pointer"
# edge. And a function that takes a function's address and calls into
# another folder hands that pointer down: the receiving file will call it,
# a "callback" edge from the receiver to the function's file. A callback is
# what DESIGN.md allows a lower layer, but only back along one allowed step
# (proto answers obj, mem answers hmem): a callback that skips a tier is a
# call going up past the layer that should own the work (mem's cache
# calling obj's GPU registration). Receivers are files that make indirect
# calls; every cross-folder callee of the hander counts, so a callback edge
# may be wider than the real one (list it, with why, in the allow-list).
# Only addresses taken in code count for callbacks: a static table is
# mostly a fid ops table handed to libfabric, not down the layers.
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
MIDDLE="hmem>mem hmem>verbs hmem>topo"

skip() {
	echo "SKIP: layers: $*"
	exit 77
}
command -v nm >/dev/null || skip "nm (binutils) is not installed"
command -v objdump >/dev/null || skip "objdump (binutils) is not installed"
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
	{
		echo @syms
		objdump -t "$o"
		echo @relocs
		objdump -r "$o"
		echo @code
		objdump -dr --no-show-raw-insn "$o"
	} | awk -v file="$rel" -f "$(dirname "$0")/pointer-refs.awk" >>"$work/ptrs"
done >"$work/syms"

# Pointer and callback edges (see the top), "pointer|callback caller
# callee symbol", from pointer-refs.awk's lines.
awk '
	function folder(f) { sub(/\/.*/, "", f); return f }
	function bare(s) { sub(/^.*:/, "", s); return s }
	$1 == "def" { deffile[$3] = $2; next }
	$1 == "holds" { held[$3] = held[$3] " " $4; holder[$3] = $2; next }
	$1 == "indirect" { receiver[$2] = 1; next }
	$1 == "ref" { refs[$2 " " $3] = refs[$2 " " $3] " " $4; next }
	$1 == "calls" { calls[$2 " " $3] = calls[$2 " " $3] " " $4; next }
	END {
		for (t in held) { # a table naming a function of another file
			n = split(held[t], x, " ")
			for (i = 1; i <= n; i++)
				if ((x[i] in deffile) && deffile[x[i]] != holder[t])
					print "pointer", holder[t], deffile[x[i]], bare(x[i])
		}
		for (k in refs) {
			split(k, fg, " "); f = fg[1]
			# The functions this one takes the address of in its code
			# (a struct of callbacks built there, or an argument): a
			# static table is mostly a fid ops table given to libfabric,
			# and its entries count only as pointer edges.
			fns = ""
			n = split(refs[k], x, " ")
			for (i = 1; i <= n; i++) {
				if (x[i] in deffile) {
					fns = fns " " x[i]
					if (deffile[x[i]] != f)
						print "pointer", f, deffile[x[i]], bare(x[i])
				}
			}
			if (fns == "" || !(k in calls)) continue
			m = split(calls[k], c, " ")
			nf = split(fns, p, " ")
			for (j = 1; j <= m; j++) {
				if (!(c[j] in deffile)) continue
				b = deffile[c[j]]
				if (folder(b) == folder(f) || !(b in receiver)) continue
				for (i = 1; i <= nf; i++)
					if ((p[i] in deffile) && deffile[p[i]] != b)
						print "callback", b, deffile[p[i]], bare(p[i])
			}
		}
	}
' "$work/ptrs" | sort -u >"$work/ptr-edges"

# Includes: "I file header" for each #include "x.h" of a provider source or
# header; the header's folder is where a file of that name sits.
for f in "$srcdir/$src"/*/*.[ch]; do
	rel=${f#"$srcdir/$src/"}
	sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
		while read -r h; do echo "I $rel $h"; done
done >"$work/incs"
(cd "$srcdir/$src" && ls -- */*.h 2>/dev/null) | awk -F/ '{ print "H", $2, $0 }' >"$work/hdrs"

# Edges: "call|include caller callee what", between different files.
awk '
	$1 == "D" { def[$3] = $2; next }
	$1 == "H" { hdr[$2] = $3; next }
	$1 == "U" && ($3 in def) && def[$3] != $2 { print "call", $2, def[$3], $3; next }
	$1 == "I" && ($3 in hdr) && hdr[$3] != $2 { print "include", $2, hdr[$3], $3 }
' "$work/syms" "$work/hdrs" "$work/incs" "$work/syms" | cat - "$work/ptr-edges" | sort -u >"$work/edges"
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
		if ($1 == "callback") # back along one allowed step: the
			# callee folder may call the receiver, one tier apart
			# or as middle peers
			down = rank[from] - rank[to] == 1 || (rank[to] == rank[from] && peer[to ">" from])
		else
			down = rank[to] > rank[from] || (rank[to] == rank[from] && peer[from ">" to])
		if (down)
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
# Callbacks point up by design: they take no part in the order.
awk '$1 != "allowed" && $1 != "stale" && $2 != "callback" {
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
