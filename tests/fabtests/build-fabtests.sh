#!/bin/bash
# Builds libfabric's own test suite, fabtests 1.17.0, from ../shared/fabtests
# (its source is not redistributed with gdrfab) against the system
# libfabric's headers and library, the runtime gdrfab is loaded into, and
# installs it into DIR (default ./fabtests-1.17 in the build directory):
# DIR/bin holds runfabtests.sh and the test programs, DIR/share/fabtests
# the exclude lists. Built once; a second call finds it. Exit 77 with a
# SKIP line when the tarball is absent. With CUDA_DIR (a CUDA toolkit with
# cuda_runtime.h) it is built for -D cuda: fabtests then dlopen()s
# libcudart.so and libcuda.so when a test asks for CUDA memory.
#   tests/fabtests/build-fabtests.sh [DIR [CUDA_DIR]]
set -euo pipefail
. "$(dirname "$0")/../lib/build-tarball.sh"
tarball_paths "${1:-fabtests-1.17}" fabtests/fabtests-1.17.0.tar.gz
build() {
	# The release tarball carries configure.ac but no configure.
	[ -x configure ] || ./autogen.sh
	# No --with-libfabric: the headers and library of libfabric-dev, in
	# the default search paths, are the 1.17 that the tests run on.
	./configure --prefix="$dest" ${cuda:+--with-cuda="$cuda"}
	make -j"$(nproc)"
	make install
}
cuda=${2:-}
build_tarball "fabtests" "libfabric's test suite is not part of gdrfab" \
	bin/runfabtests.sh build
echo "build-fabtests: $(ls "$dest/bin" | wc -l) programs in $dest/bin"
