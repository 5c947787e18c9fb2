#!/bin/bash
# The topology tool's answers for the real machines in
# tests/topo/fixtures/real and the hand-made corner cases in
# tests/topo/fixtures, compared with the expected results kept in
# tests/topo/expected (each checked by hand against
# `lstopo-no-graphics -i FILE --whole-io`). Prints "topo: N passed, M failed".
set -u
# The expected answers are FI_GDRFAB_RAILS's default ones.
unset FI_GDRFAB_RAILS
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

# Rail sets under FI_GDRFAB_RAILS (or --rails): a cap, named sets, and the
# values refused with their reason (the tool then fails).
rails() { # expected-substring, exit status, then the tool's arguments
	local want=$1 rc=$2
	shift 2
	local got status
	got=$("$tool" "$@" 2>&1)
	status=$?
	if [[ "$got" == *"$want"* ]] && [ "$status" = "$rc" ]; then
		echo "PASS: topo: rails: $*"
		pass=$((pass + 1))
	else
		echo "FAIL: topo: rails: $* (exit $status, want $rc): $got"
		fail=$((fail + 1))
	fi
}
p5=$fixtures/aws-p5.48xlarge.nixl.xml
vm=$srcdir/tests/topo/fixtures/vm-rxe.xml
rails "gpu3 (0000:86:00.0): rdmap130s0+rdmap131s0  [2 rail(s): 2 of 4 nearest NIC(s), at most 2]" 0 \
	--xml "$p5" --gpu 3 --rails 2
rails "gpu3 (0000:86:00.0): rdmap130s0  [1 rail(s)" 0 --xml "$p5" --gpu 3 --rails 1
rails "GDRFAB_RAILS=rdmap130s0+rdmap131s0+rdmap132s0+rdmap133s0" 0 --xml "$p5" --env --rank 3
rails "\"rails\": \"rdmap79s0+rdmap80s0+rdmap81s0+rdmap82s0\"" 0 --xml "$p5" --json --gpu 0
rails "gpu0 (0000:80:00.0): rxe1  [1 rail(s): named set 2 of 2: it holds rxe1, this GPU's nearest]" 0 \
	--xml "$vm" --rails rxe0,rxe1
rails "gdrfab_topo: FI_GDRFAB_RAILS: set 1 names rxe9, which is no RDMA NIC here (those are: rxe1 rxe0)" 1 \
	--xml "$vm" --rails rxe0+rxe9
rails "rxe0 is in set 1 and set 2: a NIC is a rail of one set only" 1 --xml "$vm" --rails rxe0+rxe1,rxe0
rails "set 2 is empty" 1 --xml "$vm" --rails rxe0,,rxe1
rails "\"9\": a count of rails is 1 to 8" 1 --xml "$vm" --rails 9
# Read from the environment when --rails is not given.
got=$(FI_GDRFAB_RAILS=1 "$tool" --xml "$p5" --gpu 0 2>&1)
if [[ "$got" == *"Rail set per GPU (FI_GDRFAB_RAILS=1):"*"gpu0 (0000:53:00.0): rdmap79s0  ["* ]]; then
	echo "PASS: topo: rails: FI_GDRFAB_RAILS=1 from the environment"
	pass=$((pass + 1))
else
	echo "FAIL: topo: rails: FI_GDRFAB_RAILS=1 from the environment: $got"
	fail=$((fail + 1))
fi

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
