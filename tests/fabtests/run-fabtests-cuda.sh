#!/bin/bash
# fabtests with CUDA buffers over gdrfab (issue 14): builds fabtests 1.17.0
# from ../shared for -D cuda (tests/fabtests/build-fabtests.sh, once, into
# fabtests-1.17-cuda in the build directory) and runs its rdm pingpongs and
# rma bw with CUDA buffers inside the VM, the CUDA stand-in as the GPU
# (tests/fabtests/check-fabtests-cuda.sh). Exit 77, named, without the
# fabtests tarball or a CUDA toolkit's cuda_runtime.h (GDRFAB_CUDA_DIR,
# default /usr/local/cuda), or where no VM runs.
set -u
. "$(dirname "$0")/../vm/runner/vm-prelude.sh" "fabtests -D cuda"
cuda=${GDRFAB_CUDA_DIR:-/usr/local/cuda}
if [ ! -r "$cuda/include/cuda_runtime.h" ]; then
	echo "SKIP: fabtests -D cuda: no $cuda/include/cuda_runtime.h (a CUDA toolkit; GDRFAB_CUDA_DIR names another)"
	exit 77
fi
ft=$builddir/fabtests-1.17-cuda
"$srcdir/tests/fabtests/build-fabtests.sh" "$ft" "$cuda"
case $? in
0) ;;
77) exit 77 ;;
*) exit 1 ;;
esac
exec "$srcdir/tests/vm/runner/vm-run" --timeout "${GDRFAB_VM_TIMEOUT:-900}" -- \
	"$srcdir/tests/fabtests/check-fabtests-cuda.sh" "$ft/bin"
