#!/bin/bash
# The OSU micro-benchmarks' osu_latency and osu_bw (5.3, from
# ../shared/consumers) through Debian's Open MPI 4.1 with pml cm and mtl
# ofi, and through MPICH 5.0.2 (PyPI's wheel, ch4:ofi on the libfabric
# 2.5.1 it embeds), over gdrfab and over verbs;ofi_rxm, interleaved round
# by round in one boot of the soft-RoCE VM; prints for each MPI a table:
# per size the median of the rounds for each provider and gdrfab's ratio
# (latency: lower is better; bandwidth: higher is better). A benchmark,
# not a test.
#
#   tests/bench/run-osu.sh [ROUNDS]        (default 3; from anywhere)
#   GDRFAB_OSU_MPIS=mpich tests/bench/run-osu.sh 5
#
# GDRFAB_OSU_MPIS (default "openmpi mpich") picks the MPIs; every round
# runs each of them over both providers. OSU is built once per MPI with
# its own mpicc: build/osu-5.3 (Debian's Open MPI), build/osu-5.3-mpich
# (the wheel's, which tests/consumers/get-wheel.sh fetches with pip into
# build/wheels once). MPICH runs with MPICH_CH4_NETMOD=ofi and
# MPIR_CVAR_NOLOCAL=1 (same-node traffic on the provider), as
# tests/consumers/check-mpich.sh does.
# v5.3 has no -m, so both run every size up to its 4 MiB (below the 8 MiB
# verbs;ofi_rxm takes on rxe); GDRFAB_OSU_LAT_ITERS (default 100) and
# GDRFAB_OSU_BW_ITERS (default 2) are their -i, the same at every size;
# GDRFAB_OSU_UNTIL (seconds since the epoch) starts no round that would
# end after it.
# Under TCG absolute numbers mean little: read the ratios. An MPI that
# cannot run here (no tarball, mpicc or wheel) is skipped with a SKIP line;
# exits 77 (SKIP) when none can, or without the VM.
set -euo pipefail
. "$(dirname "$0")/lib/bench-prelude.sh" "OSU micro-benchmarks"
mpis=${GDRFAB_OSU_MPIS:-openmpi mpich}
for mpi in $mpis; do
	case $mpi in
	openmpi | mpich) ;;
	*) echo "run-osu: unknown MPI '$mpi' in GDRFAB_OSU_MPIS (openmpi, mpich)" >&2; exit 2 ;;
	esac
done
bench_build full
args=() ready=0
for mpi in $mpis; do
	rc=0
	case $mpi in
	openmpi)
		"$here/build-osu.sh" "$top/build/osu-5.3" || rc=$?
		[ "$rc" = 0 ] && args+=(openmpi "$top/build/osu-5.3")
		;;
	mpich)
		prefix=$("$top/tests/consumers/get-wheel.sh" mpich mpich==5.0.2 "$top/build/wheels") || rc=$?
		if [ "$rc" = 0 ]; then
			"$here/build-osu.sh" "$top/build/osu-5.3-mpich" "$prefix/bin/mpicc" || rc=$?
			[ "$rc" = 0 ] && args+=(mpich "$top/build/osu-5.3-mpich" "$prefix")
		else
			echo "$prefix"
		fi
		;;
	esac
	case $rc in
	0) ready=$((ready + 1)) ;;
	77) ;;
	*) exit "$rc" ;;
	esac
done
[ "$ready" -gt 0 ] || exit 77
# A round of one MPI takes minutes of TCG; the VM's time grows with them.
bench_vm $((3000 * ready)) -- bash "$here/osu-in-vm.sh" "${1:-3}" "${args[@]}"
