#!/bin/bash
# The topology tool's answers for the real machines in
# tests/topo/fixtures/real and the hand-made corner cases in
# tests/topo/fixtures, compared with the expected results kept in
# tests/topo/expected (each checked by hand against
# `lstopo-no-graphics -i FILE --whole-io`). Prints "topo: N passed, M failed".
set -u
srcdir=${GDRFAB_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${GDRFAB_BUILDDIR:-$PWD}
fixtures=$srcdir/tests/topo/fixtures/real
tool=$builddir/examples/gdrfab_topo
pass=0 fail=0
for expected in "$srcdir"/tests/topo/expected/*.txt; do
	name=$(basename "$expected" .txt)
	xml=$srcdir/tests/topo/fixtures/$name.xml
	[ -r "$xml" ] || xml=$fixtures/$name.xml
	if [ ! -r "$xml" ]; then
		echo "FAIL: topo: $name: no fixture $xml"
		fail=$((fail + 1))
		continue
	fi
	# The first line names the file: compare what follows.
	if ! "$tool" --xml "$xml" >"$builddir/topo-$name.out" 2>&1; then
		echo "FAIL: topo: $name: the tool failed:"
		cat "$builddir/topo-$name.out"
		fail=$((fail + 1))
		continue
	fi
	if tail -n +2 "$builddir/topo-$name.out" | diff -u "$expected" - >"$builddir/topo-$name.diff"; then
		echo "PASS: topo: $name"
		pass=$((pass + 1))
		rm -f "$builddir/topo-$name.diff" "$builddir/topo-$name.out"
	else
		echo "FAIL: topo: $name"
		cat "$builddir/topo-$name.diff"
		fail=$((fail + 1))
	fi
done
# The launch wrapper, told its rank as launchers do, on saved topologies.
bind() { # expected-substring, then environment assignments
	local want=$1
	shift
	local got
	got=$(env GDRFAB_TOPO="$tool" "$@" "$srcdir/examples/gdrfab_bind.sh" --dry-run ./app 2>&1)
	if [[ "$got" == *"$want"* ]]; then
		echo "PASS: topo: gdrfab_bind.sh $*"
		pass=$((pass + 1))
	else
		echo "FAIL: topo: gdrfab_bind.sh $*: $got"
		fail=$((fail + 1))
	fi
}
bind "GPU gpu3 (0000:86:00.0), NICs rdmap130s0,rdmap131s0,rdmap132s0,rdmap133s0 [PIX], CPUs 0x0000ffff,0xffffffff: ./app" \
	HWLOC_XMLFILE="$fixtures/aws-p5.48xlarge.nixl.xml" OMPI_COMM_WORLD_LOCAL_RANK=3
bind "GPU gpu2 (0000:84:00.0), NICs mlx5_2 [PIX], CPUs 0xfc000000,0x0000fc00,0x0" \
	HWLOC_XMLFILE="$fixtures/juwels-booster-4xA100.psmgmt-jwb0004.xml" SLURM_LOCALID=6
bind "GPU gpu1 (0000:10:1d.0), NICs rdmap16s27 [PHB]" \
	HWLOC_XMLFILE="$fixtures/aws-p4d.24xlarge.nixl.xml" MPI_LOCALRANKID=1

# This machine: no GPU here, and the tool says so.
if "$tool" | grep -q "no NVIDIA GPU here"; then
	echo "PASS: topo: the live machine has no GPU and says so"
	pass=$((pass + 1))
elif "$tool" | grep -q "NIC choice per GPU"; then
	echo "PASS: topo: the live machine's GPUs get a choice"
	pass=$((pass + 1))
else
	echo "FAIL: topo: the live machine"
	fail=$((fail + 1))
fi
echo "topo: $pass passed, $fail failed"
[ "$fail" = 0 ]
