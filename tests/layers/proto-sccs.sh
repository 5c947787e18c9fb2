#!/bin/bash
# The file-level dependency circles of one provider folder (default
# proto): from `nm` of its built objects, file A depends on file B when A
# uses a symbol B defines. Prints each strongly connected component of
# more than one file (largest first, with its files), then one line
# "FOLDER: N files, largest circle M, sizes S..." . A measure for a
# reader (docs/DESIGN.md), not a test: it fails nothing.
#
#   proto-sccs.sh [FOLDER]   run from the build directory
set -u
folder=${1:-proto}
srcdir=${GDRFAB_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${GDRFAB_BUILDDIR:-$PWD}
objs=$builddir/prov/gdrfab/src/$folder/.libs
# The folder's sources say which objects count (a stale one of a removed
# source does not).
for c in "$srcdir/prov/gdrfab/src/$folder"/*.c; do
	o=$objs/$(basename "$c" .c).o
	[ -f "$o" ] || {
		echo "SKIP: proto-sccs: $o is not built (run make first)"
		exit 77
	}
done
for c in "$srcdir/prov/gdrfab/src/$folder"/*.c; do
	o=$objs/$(basename "$c" .c).o
	nm "$o" | awk -v f="$(basename "$o" .o)" '
		$1 == "U" { print "U", f, $2; next }
		NF == 3 && $2 ~ /^[BCDGRSTVW]$/ { print "D", f, $3 }'
done | awk '
	$1 == "D" { def[$3] = $2; files[$2] = 1; next }
	{ use[NR] = $2 " " $3; files[$2] = 1 }
	END {
		for (i in use) {
			split(use[i], u, " ")
			if ((u[2] in def) && def[u[2]] != u[1] && !((u[1], def[u[2]]) in seen)) {
				seen[u[1], def[u[2]]] = 1
				adj[u[1]] = adj[u[1]] " " def[u[2]]
			}
		}
		# Tarjan, recursive (awk locals are extra parameters).
		for (f in files)
			if (!(f in idx))
				visit(f)
		for (c = 1; c <= ncomp; c++)
			print csize[c], cmembers[c]
	}
	function visit(v,   w, k, ws, nw) {
		idx[v] = low[v] = ++counter
		stack[++sp] = v; onstack[v] = 1
		nw = split(adj[v], ws, " ")
		for (k = 1; k <= nw; k++) {
			w = ws[k]
			if (!(w in idx)) {
				visit(w)
				if (low[w] < low[v]) low[v] = low[w]
			} else if (onstack[w] && idx[w] < low[v]) {
				low[v] = idx[w]
			}
		}
		if (low[v] == idx[v]) {
			ncomp++
			do {
				w = stack[sp--]; onstack[w] = 0
				csize[ncomp]++
				cmembers[ncomp] = cmembers[ncomp] " " w
			} while (w != v)
		}
	}' | sort -k1,1nr >"${TMPDIR:-/tmp}/sccs.$$"
comps=${TMPDIR:-/tmp}/sccs.$$
awk '$1 > 1' "$comps"
awk -v folder="$folder" '
	{ n += $1; sizes = sizes " " $1; if ($1 > max) max = $1 }
	END { printf "%s: %d files, largest circle %d, sizes%s\n", folder, n, max, sizes }' "$comps"
rm -f "$comps"
