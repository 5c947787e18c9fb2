#!/bin/bash
# The kernel module's tests: builds nvp2p_standin.ko and gdrfab.ko (W=1,
# sparse) for the VM's kernel, boots the VM once with --check-dmesg (any
# WARNING, BUG, refcount or KASAN-style line fails the run) and, inside,
# loads the modules in each configuration and runs the Criterion tests,
# then unloads them. Exit 77 (skipped) when no VM or no headers are here.
set -u
. "$(dirname "$0")/../vm/runner/vm-prelude.sh" "kernel module tests"
"$srcdir/tests/kmod/build-kmods.sh" kmod-build
case $? in
0) ;;
2) echo "SKIP: kernel module tests: no kernel headers or sparse (scripts/install-deps.sh)"; exit 77 ;;
*) exit 1 ;;
esac

exec "$srcdir/tests/vm/runner/vm-run" --check-dmesg --timeout "${GDRFAB_VM_TIMEOUT:-600}" -- bash -c '
	status=0
	k=$PWD/kmod-build
	mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
	load() { insmod "$k/standin/nvp2p_standin.ko" "$@" && insmod "$k/gdrfab/gdrfab.ko"; }
	unload() {
		rmmod gdrfab || { echo "kmod: rmmod gdrfab failed"; status=1; }
		rmmod nvp2p_standin || { echo "kmod: rmmod nvp2p_standin failed"; status=1; }
	}
	tests() { ./tests/kmod/gdrfab_kmod_tests --jobs 1 --color=never --timeout 900 "$@" || status=1; }

	# Page table major 2 (driver 580), private poisoned pages: everything.
	load backing=private table_major=2 || exit 1
	GDRFAB_KT_MAJOR=2 tests --filter "abi/*"
	tests --filter "map/*"
	tests --filter "race/*"
	unload
	# Major 1 (drivers before 580): the same pins and mappings work.
	load backing=private table_major=1 || exit 1
	GDRFAB_KT_MAJOR=1 tests --filter "abi/rounds_to_64k"
	tests --filter "map/write_read_two_mappings"
	unload
	# An unknown major: refused, and the table goes back.
	load table_major=3 || exit 1
	tests --filter "badversion/*"
	unload
	# The process'"'"'s own pages behind the "GPU" addresses.
	load backing=process || exit 1
	tests --filter "process/*"
	# The provider over it, with the CUDA stand-in as the GPU.
	LD_LIBRARY_PATH=$PWD/tests/cuda/.libs ./tests/vm/hmem/gdrfab_hmem_tests \
		--jobs 1 --color=never --timeout 240 --filter "hmem_kmod/*" || status=1
	unload
	exit $status'
