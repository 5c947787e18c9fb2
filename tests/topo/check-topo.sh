#!/bin/bash
# The topology tool's answers for the real machines in ../shared/topologies,
# compared with the expected results kept in tests/topo/expected (each
# checked by hand against `lstopo-no-graphics -i FILE --whole-io`).
# Prints "topo: N passed, M failed"; exits 77 (skipped) without fixtures.
set -u
srcdir=${GDRFAB_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${GDRFAB_BUILDDIR:-$PWD}
fixtures=${GDRFAB_TOPO_FIXTURES:-$srcdir/../shared/topologies}
tool=$builddir/examples/gdrfab_topo
if [ ! -d "$fixtures" ]; then
	echo "SKIP: topology fixtures: no $fixtures"
	exit 77
fi
pass=0 fail=0
for expected in "$srcdir"/tests/topo/expected/*.txt; do
	name=$(basename "$expected" .txt)
	xml=$fixtures/$name.xml
	if [ ! -r "$xml" ]; then
		echo "FAIL: topo: $name: no fixture $xml"
		fail=$((fail + 1))
		continue
	fi
	# The first line names the file: compare what follows.
	if "$tool" --xml "$xml" | tail -n +2 | diff -u "$expected" - >"$builddir/topo-$name.diff"; then
		echo "PASS: topo: $name"
		pass=$((pass + 1))
		rm -f "$builddir/topo-$name.diff"
	else
		echo "FAIL: topo: $name"
		cat "$builddir/topo-$name.diff"
		fail=$((fail + 1))
	fi
done
echo "topo: $pass passed, $fail failed"
[ "$fail" = 0 ]
