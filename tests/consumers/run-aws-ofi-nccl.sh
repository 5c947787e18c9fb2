#!/bin/bash
# aws-ofi-nccl 1.17.3, the real NCCL network plugin, over gdrfab: builds it
# once (tests/consumers/build-aws-ofi-nccl.sh, against libfabric 2.6's
# headers and CUDA's from CUDA_HOME; a named skip when any is missing),
# builds the program that drives its net API (nccl_net_driver.c, against
# the NCCL headers the plugin carries), and runs it inside the VM under the
# libfabric 2.6 runtime with the CUDA stand-in's libcuda and libcudart
# (tests/consumers/check-aws-ofi-nccl.sh). Exit 77 when it cannot run here.
set -u
. "$(dirname "$0")/../vm/runner/vm-prelude.sh" "aws-ofi-nccl over gdrfab"
lf=$builddir/libfabric-2.6
plugin=$builddir/aws-ofi-nccl
"$srcdir/tests/consumers/build-aws-ofi-nccl.sh" "$plugin" "$lf"
case $? in
0) ;;
77) exit 77 ;;
*) exit 1 ;;
esac
if [ ! -e tests/cuda/.libs/libcudart.so ]; then
	echo "SKIP: aws-ofi-nccl over gdrfab: no CUDA stand-in (make check builds tests/cuda)"
	exit 77
fi
cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -isystem "$plugin/include/nccl-net" \
	"$srcdir/tests/consumers/nccl_net_driver.c" -o "$plugin/nccl_net_driver" -ldl || exit 1
exec "$srcdir/tests/vm/runner/vm-run" --timeout "${GDRFAB_VM_TIMEOUT:-600}" -- \
	"$srcdir/tests/consumers/check-aws-ofi-nccl.sh" "$lf" "$plugin"
