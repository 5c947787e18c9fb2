#!/bin/bash
# Inside the VM, from the build directory: fabtests' benchmarks with CUDA
# buffers (-D cuda) over gdrfab, as issue 14 names them: rdm tagged
# pingpong, rdm pingpong and rma bw, server on rxe1 and client on rxe0, with
# every transfer's data checked (-v). fabtests dlopen()s libcudart.so and
# libcuda.so; the CUDA stand-in answers both (tests/cuda/), and its device
# memory is unreadable by the CPU at the address fabtests registers, so a
# provider that touches it with the CPU crashes instead of passing. Prints
# "fabtests-cuda: N passed, M failed".
#   check-fabtests-cuda.sh FABTESTS_BIN
set -u
bin=$1
suite=fabtests-cuda
. "$(dirname "$0")/../vm/runner/check-lib.sh"
export FI_PROVIDER_PATH=$PWD/.libs
export LD_LIBRARY_PATH=$PWD/tests/cuda/.libs
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
port=3000

# pair PROGRAM ARGS...: the server, then the client once the server's
# out-of-band port listens (-E: names exchanged over TCP); both must exit 0.
# A pair takes 30-60 s in a usual boot; boots of this VM differ by up to
# 2-3x, so each side gets side_s seconds (run-fabtests-cuda.sh's limit
# for the whole boot is 1500 s).
side_s=300
pair() {
	local prog=$1 srv cli=0 s=0 start=$SECONDS
	shift
	port=$((port + 1))
	timeout "$side_s" "$bin/$prog" -p gdrfab -D cuda -E="$port" "$@" \
		-s 192.0.2.2 >"$out/server" 2>&1 &
	srv=$!
	if ! wait_port "$port"; then
		echo "    $prog: the server never listened on $port"
		kill "$srv" 2>/dev/null
	fi
	timeout "$side_s" "$bin/$prog" -p gdrfab -D cuda -E="$port" "$@" \
		-s 192.0.2.1 192.0.2.2 >"$out/client" 2>&1 || cli=$?
	wait "$srv" || s=$?
	sed 's/^/    client: /' "$out/client" | tail -n 12
	[ "$s" = 0 ] || sed 's/^/    server: /' "$out/server" | tail -n 12
	echo "    $prog: server status $s, client status $cli, $((SECONDS - start)) s"
	[ "$s" = 0 ] && [ "$cli" = 0 ] && return 0
	# What a failure needs to be told apart: 124 is timeout(1)'s (the
	# side_s ran out), and the kernel's view of rxe (a QP error, drops).
	[ "$s" = 124 ] || [ "$cli" = 124 ] &&
		echo "    $prog: timed out after $side_s s"
	dmesg | grep -iE 'rxe|rdma|oom|segfault' | tail -n 8 | sed 's/^/    dmesg: /'
	return 1
}
# Eight iterations a size (window 4), each one's data checked: 20 cost CI
# two and a half minutes more and found nothing more.
check "fi_rdm_tagged_pingpong -D cuda, 1 B to 8 MiB, data checked" \
	pair fi_rdm_tagged_pingpong -S all -I 8 -W 4 -v
check "fi_rdm_pingpong -D cuda, 1 B to 8 MiB, data checked" \
	pair fi_rdm_pingpong -S all -I 8 -W 4 -v
check "fi_rma_bw -D cuda (fi_write), 1 B to 8 MiB, data checked" \
	pair fi_rma_bw -o write -S all -I 8 -W 4 -v
check "fi_rma_bw -D cuda (fi_read), 1 B to 8 MiB, data checked" \
	pair fi_rma_bw -o read -S all -I 8 -W 4 -v
check "fi_rma_bw -D cuda (fi_writedata), 1 B to 8 MiB, data checked" \
	pair fi_rma_bw -o writedata -S all -I 8 -W 4 -v
totals
