#!/bin/bash
# Small GPU copies through gdrfab.ko's CPU mapping: builds the modules for
# the VM's kernel (tests/kmod/build-kmods.sh) and tests/kmod/kmod_copy_bench,
# boots the VM once with --check-dmesg, loads nvp2p_standin.ko
# (backing=process, so the CUDA stand-in's "GPU" pages are what gdrfab.ko
# maps) and gdrfab.ko, and prints the benchmark's table: gdrfab_kmod_copy
# against memcpy through a mapping of the same pages, 8 B .. 64 KiB, both
# directions, medians of interleaved rounds, then the one-time costs.
# Under TCG and over RAM pages: ratios and the software overhead mean
# something, the BAR's cost does not show (docs/results.md).
#
#   tests/bench/kmod-copy-bench.sh      (from the checkout; exit 77 when
#                                        no VM or no kernel headers)
set -uo pipefail
. "$(dirname "$0")/lib/bench-prelude.sh" "kmod copy benchmark"
[ -f "$top/build/Makefile" ] || "$top/scripts/build.sh" || exit 1
make -C "$top/build" --no-print-directory tests/kmod/kmod_copy_bench \
	tests/cuda/libcuda.la >/dev/null || exit 1
"$top/tests/kmod/build-kmods.sh" "$top/build/kmod-build" >/dev/null
case $? in
0) ;;
2) echo "SKIP: kmod copy benchmark: no kernel headers or sparse (scripts/install-deps.sh)"; exit 77 ;;
*) exit 1 ;;
esac

bench_vm "${GDRFAB_VM_TIMEOUT:-1800}" --check-dmesg -- bash -c '
	k=$PWD/kmod-build
	insmod "$k/standin/nvp2p_standin.ko" backing=process &&
		insmod "$k/gdrfab/gdrfab.ko" || exit 1
	echo "VM: $(nproc) vCPUs, kernel $(uname -r), $(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2-)"
	LD_LIBRARY_PATH=$PWD/tests/cuda/.libs taskset -c 0 \
		./tests/kmod/kmod_copy_bench
	status=$?
	rmmod gdrfab || status=1
	rmmod nvp2p_standin || status=1
	exit $status'
