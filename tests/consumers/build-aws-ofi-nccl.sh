#!/bin/bash
# Builds the real NCCL network plugin, aws-ofi-nccl 1.17.3, from
# ../shared/consumers (its source is not redistributed with gdrfab) into
# DIR (default ./aws-ofi-nccl in the build directory), once; a second call
# finds it. What it is built against, and why:
#   - libfabric 2.6's headers (tests/consumers/build-libfabric2.sh): the
#     plugin wants libfabric 1.18 or newer (its INSTALL.md); against
#     Debian's 1.17 headers its configure finds no FI_OPT_CUDA_API_PERMITTED,
#     FI_OPT_SHARED_MEMORY_PERMITTED or FI_MR_DMABUF, and the plugin then
#     compiles those steps out. Its rdma protocol asks for API 1.18 with no
#     fallback, which a 1.17 core refuses, so it runs under the 2.6 runtime.
#   - CUDA's headers from CUDA_HOME (default /usr/local/cuda): cuda.h,
#     cudaTypedefs.h and cuda_runtime_api.h, and libcudart for configure's
#     link test. Built with --enable-cudart-dynamic, so the plugin
#     dlopen()s libcudart.so at init and resolves the driver's functions
#     through cudaGetDriverEntryPointByVersion: the CUDA stand-in's
#     libcudart.so (tests/cuda/) can then serve it in the VM, which the
#     default, static cudart (it reaches libcuda.so.1 through the driver's
#     private export tables) could not.
#   - NCCL's net API headers come with the plugin (3rd-party/nccl); NCCL
#     itself is not needed.
# Exit 77 with a SKIP line naming the cause when the tarball, CUDA's
# headers, libcudart, the libfabric 2.6 build or a C++17 compiler are not
# there.
#   tests/consumers/build-aws-ofi-nccl.sh [DIR] [LIBFABRIC_2.6_DIR]
set -euo pipefail
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
dest=$(mkdir -p "${1:-aws-ofi-nccl}" && cd "${1:-aws-ofi-nccl}" && pwd)
lf=${2:-libfabric-2.6}
cuda=${CUDA_HOME:-/usr/local/cuda}
tarball=${GDRFAB_SHARED:-$srcdir/../shared}/consumers/aws-ofi-nccl-1.17.3.tar.gz
plugin=$dest/lib/libnccl-net-ofi.so
skip() {
	echo "SKIP: aws-ofi-nccl 1.17.3: $*"
	exit 77
}
if [ -r "$plugin" ] && [ -r "$dest/include/nccl-net/net.h" ] && [ -r "$dest/.built" ]; then
	exit 0
fi
[ -r "$tarball" ] || skip "no $tarball (the consumers' sources are not part of gdrfab)"
for h in cuda.h cudaTypedefs.h cuda_runtime_api.h; do
	[ -r "$cuda/include/$h" ] || skip "no $cuda/include/$h (set CUDA_HOME to a CUDA 12 or 13 toolkit)"
done
ls "$cuda"/lib64/libcudart.so* >/dev/null 2>&1 || skip "no libcudart.so in $cuda/lib64"
command -v g++ >/dev/null || skip "no C++17 compiler (scripts/install-deps.sh installs g++)"
if [ ! -r "$lf/include/rdma/fabric.h" ]; then
	rc=0
	"$srcdir/tests/consumers/build-libfabric2.sh" "$lf" || rc=$?
	case $rc in
	0) ;;
	77) skip "libfabric 2.6 is needed for its headers, and cannot be built here" ;;
	*) exit 1 ;;
	esac
fi
lf=$(cd "$lf" && pwd)
work=$(mktemp -d /tmp/gdrfab-aws-ofi-nccl.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "build-aws-ofi-nccl: building aws-ofi-nccl 1.17.3 into $dest (several minutes, once)"
tar -xzf "$tarball" -C "$work"
cd "$work"/aws-ofi-nccl-1.17.3
{
	autoreconf -ivf
	# No MPI tests, no NVTX or LTTng tracing; AWS platform code off (it
	# is chosen only on EC2).
	./configure --prefix="$dest" --with-libfabric="$lf" --with-cuda="$cuda" \
		--enable-cudart-dynamic --disable-tests --disable-platform-aws
	make -j"$(nproc)"
	make install
	# NCCL's net API headers, which come with the plugin, for the
	# program that drives it (tests/consumers/nccl_net_driver.c).
	mkdir -p "$dest/include/nccl-net"
	cp 3rd-party/nccl/cuda/include/nccl/*.h "$dest/include/nccl-net/"
} >"$dest/build.log" 2>&1 || {
	tail -n 30 "$dest/build.log"
	echo "build-aws-ofi-nccl: the build failed (whole log: $dest/build.log)" >&2
	exit 1
}
[ -r "$plugin" ] || {
	echo "build-aws-ofi-nccl: no $plugin after make install" >&2
	exit 1
}
touch "$dest/.built"
echo "build-aws-ofi-nccl: $plugin"
