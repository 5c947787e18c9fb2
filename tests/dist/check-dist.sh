#!/bin/bash
# The release tarball holds every file git tracks: a file added to the
# tree but not to Makefile.am's EXTRA_DIST (or a _SOURCES list) is named.
# Files kept out on purpose are listed in tests/dist/not-shipped.txt.
#   tests/dist/check-dist.sh TARBALL     (from anywhere in the checkout)
# Prints "dist-contents: N passed, M failed"; exit 77 (SKIP) outside a git
# checkout, where there is nothing to compare with.
set -u
tarball=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
if ! git -C "$srcdir" rev-parse --git-dir >/dev/null 2>&1; then
	echo "SKIP: dist-contents: $srcdir is not a git checkout"
	exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/gdrfab-dist.XXXXXX")
trap 'rm -rf "$work"' EXIT
git -C "$srcdir" ls-files | sort >"$work/tracked"
grep -v '^[[:space:]]*\(#\|$\)' "$srcdir/tests/dist/not-shipped.txt" | sort >"$work/kept-out"
# The tarball's one top folder (gdrfab-VERSION/) taken off each name.
tar -tzf "$tarball" | sed 's|^[^/]*/||' | grep -v '/$' | sort >"$work/shipped"
comm -23 "$work/tracked" "$work/shipped" | comm -23 - "$work/kept-out" >"$work/missing"
if [ -s "$work/missing" ]; then
	echo "FAIL: dist-contents: $(wc -l <"$work/missing") tracked files are not in $(basename "$tarball") (add them to EXTRA_DIST):"
	sed 's/^/  /' "$work/missing"
	echo "dist-contents: 0 passed, 1 failed"
	exit 1
fi
echo "PASS: dist-contents: every tracked file is in $(basename "$tarball")"
echo "dist-contents: 1 passed, 0 failed"
