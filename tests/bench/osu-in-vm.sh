#!/bin/bash
# Runs inside the VM (see run-osu.sh), from the build directory:
#   osu-in-vm.sh ROUNDS [openmpi OSU-DIR] [mpich OSU-DIR PREFIX]
# Open MPI: Debian's mpirun, OSU built with its mpicc in OSU-DIR; MPICH:
# the wheel unpacked at PREFIX, OSU built with its mpicc. Either or both.
# Each round runs, for each MPI, osu_latency then osu_bw over both
# providers, the order of the providers alternating between rounds so that
# neither always goes first. Appends "KIND PROVIDER ROUND SIZE VALUE" lines
# to osu-raw.txt (Open MPI) or osu-mpich-raw.txt, keeps every run's own
# output in osu-logs/ or osu-mpich-logs/, then prints one table per MPI
# (osu-summarize.awk).
set -u
rounds=$1
shift
declare -A osu_of raw_of logs_of
mpis=() mpich=
while [ $# -gt 0 ]; do
	case $1 in
	openmpi)
		osu_of[openmpi]=$2 raw_of[openmpi]=$PWD/osu-raw.txt logs_of[openmpi]=$PWD/osu-logs
		shift 2
		mpis+=(openmpi)
		;;
	mpich)
		osu_of[mpich]=$2 mpich=$3
		raw_of[mpich]=$PWD/osu-mpich-raw.txt logs_of[mpich]=$PWD/osu-mpich-logs
		shift 3
		mpis+=(mpich)
		;;
	*) echo "osu-in-vm: unknown MPI '$1' (openmpi, mpich)" >&2; exit 2 ;;
	esac
done
. "$(dirname "$0")/lib/in-vm.sh" # the provider, bench_stats
# OSU 5.3 runs the same count at every size, 0 B to 4 MiB: these keep a
# round to minutes under TCG (the 4 MiB sizes take most of it).
lat_iters=${GDRFAB_OSU_LAT_ITERS:-100}
bw_iters=${GDRFAB_OSU_BW_ITERS:-2}
for mpi in "${mpis[@]}"; do
	: >"${raw_of[$mpi]}"
	rm -rf "${logs_of[$mpi]}" && mkdir -p "${logs_of[$mpi]}"
done
failed=0

# mpich_run PROVIDER PROGRAM ARGS...: MPICH's Hydra starts 2 ranks here
# (-hosts localhost: the VM's own name resolves nowhere), a vCPU each, on
# ch4:ofi (MPICH_CH4_NETMOD=ofi) and the wheel's libfabric 2.5.1, whose
# FI_PROVIDER_PATH lists gdrfab's directory and the wheel's own DL
# providers (verbs for the baseline). MPIR_CVAR_NOLOCAL=1 keeps same-node
# traffic off shared memory, on the provider. FI_PROVIDER is a comma list
# (verbs,ofi_rxm), as in tests/consumers/check-mpich.sh; the debug summary
# names the provider MPICH took, checked by osu below.
mpich_run() {
	local prov=$1
	shift
	FI_PROVIDER_PATH=$PWD/.libs:$mpich/lib/mpich/libfabric FI_PROVIDER=${prov//;/,} \
		MPICH_CH4_NETMOD=ofi MPIR_CVAR_NOLOCAL=1 MPIR_CVAR_DEBUG_SUMMARY=1 \
		timeout 1200 "$mpich/bin/mpiexec" -hosts localhost -bind-to core -n 2 "$@"
}

# osu MPI PROVIDER KIND ROUND PROGRAM ARGS...: one run, 2 ranks, a vCPU each.
osu() {
	local mpi=$1 prov=$2 kind=$3 round=$4 log rows start raw
	shift 4
	log=${logs_of[$mpi]}/$kind-${prov//;/_}-$round.txt raw=${raw_of[$mpi]}
	start=$(date +%s)
	if [ "$mpi" = mpich ]; then
		mpich_run "$prov" "$@" >"$log" 2>&1
		# A run on another provider than asked measures nothing here.
		if ! grep -qF "libfabric provider: ${prov%%;*}" "$log"; then
			failed=$((failed + 1))
			echo "round $round: $kind over $prov (mpich): MPICH did not name ${prov%%;*} as its provider; the end of $log:" >&2
			tail -n 15 "$log" | sed 's/^/    /' >&2
			return
		fi
	else
		timeout 1200 mpirun --allow-run-as-root --oversubscribe -np 2 \
			--bind-to core --mca pml cm --mca mtl ofi \
			--mca mtl_ofi_provider_include "$prov" --mca btl self \
			-x FI_PROVIDER_PATH -x FI_UNIVERSE_SIZE "$@" >"$log" 2>&1
	fi
	awk -v k="$kind" -v p="$prov" -v r="$round" \
		'/^[0-9]+[ \t]+[0-9.]+$/ { print k, p, r, $1, $2 }' "$log" >>"$raw"
	# 0 B (latency only) and 1 B to 4 MiB: a run that stopped early is
	# reported, its sizes missing from the medians.
	rows=$(grep -cE '^[0-9]+[[:space:]]+[0-9.]+$' "$log")
	if [ "$mpi" = openmpi ]; then
		echo "round $round: $kind over $prov: $rows sizes in $(($(date +%s) - start)) s" >&2
	else
		echo "round $round: $kind over $prov ($mpi): $rows sizes in $(($(date +%s) - start)) s" >&2
	fi
	if [ "$rows" -lt 23 ]; then
		failed=$((failed + 1))
		echo "  incomplete; the end of $log:" >&2
		tail -n 15 "$log" | sed 's/^/    /' >&2
	fi
}

# GDRFAB_OSU_UNTIL (seconds since the epoch): no round is started that
# would end after it, judged by the last round's length, so a run shares
# a machine's VM time with a known end.
until=${GDRFAB_OSU_UNTIL:-0} ran=0
for r in $(seq "$rounds"); do
	t0=$(date +%s)
	order="gdrfab verbs;ofi_rxm"
	[ $((r % 2)) = 0 ] && order="verbs;ofi_rxm gdrfab"
	for mpi in "${mpis[@]}"; do
		osu=${osu_of[$mpi]}
		for prov in $order; do
			osu "$mpi" "$prov" lat "$r" "$osu/osu_latency" -i "$lat_iters" -x 10
			osu "$mpi" "$prov" bw "$r" "$osu/osu_bw" -i "$bw_iters" -x 1
		done
	done
	ran=$r
	now=$(date +%s)
	if [ "$until" -gt 0 ] && [ $((now + now - t0)) -gt "$until" ] && [ "$r" -lt "$rounds" ]; then
		echo "stopping after round $r of $rounds: another would end after GDRFAB_OSU_UNTIL" >&2
		break
	fi
done
rounds=$ran

for mpi in "${mpis[@]}"; do
	raw=${raw_of[$mpi]} logs=${logs_of[$mpi]}
	echo
	if [ "$mpi" = openmpi ]; then
		echo "OSU 5.3 over Open MPI's mtl ofi (pml cm), 2 ranks on rxe0/rxe1, $rounds rounds" \
			"(osu_latency -i $lat_iters -x 10, osu_bw -i $bw_iters -x 1)"
		eager=${FI_GDRFAB_EAGER_MAX:-8192}
	else
		echo "OSU 5.3 over MPICH 5.0.2's ch4:ofi (PyPI wheel, libfabric 2.5.1), 2 ranks on rxe0/rxe1, $rounds rounds" \
			"(osu_latency -i $lat_iters -x 10, osu_bw -i $bw_iters -x 1)"
		# ch4:ofi injects up to its max_buffered_send, gdrfab's
		# inject_size, which its debug summary prints.
		eager=$(cat "$logs"/lat-gdrfab-*.txt 2>/dev/null |
			awk '/^max_buffered_send: [0-9]+$/ { print $2; exit }')
		eager=${eager:-${FI_GDRFAB_EAGER_MAX:-8192}}
	fi
	awk -v eager="$eager" -f "$bench_stats" -f "$bench_dir/osu-summarize.awk" "$raw"
	echo "(raw results in $raw, each run's output in $logs/)"
done
[ "$failed" = 0 ] || { echo "osu: $failed runs incomplete" >&2; exit 1; }
