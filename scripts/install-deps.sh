#!/bin/bash
# Installs, on Debian 12 as root, every package gdrfab needs to build, test
# and run its demo and benchmarks: libfabric, rdma-core, hwloc, Criterion,
# the soft-RoCE VM's qemu, kernel and userland, and the kernel headers
# and sparse that gdrfab.ko is built and checked with, and Debian's packaging
# tools. Installs only what is missing, so a second run takes a second.
set -euo pipefail

packages=(
	# build
	gcc make autoconf automake libtool pkg-config clang-format
	libfabric-dev libibverbs-dev libhwloc-dev
	# libfabric 2.6, the second runtime checked against (verbs needs rdmacm)
	librdmacm-dev
	# aws-ofi-nccl, the NCCL plugin built against gdrfab (C++17; it also
	# needs a CUDA toolkit's headers, which Debian does not ship: without
	# /usr/local/cuda its test skips, named)
	g++
	# hwloc's libxml2 plugin: its minimal parser refuses real exports (XML
	# comments), and apt leaves this recommended package out below
	libhwloc-plugins
	# tests
	libcriterion-dev
	# Open MPI, a consumer run in the VM (mtl ofi over gdrfab)
	openmpi-bin libopenmpi-dev
	# MPICH's and Intel MPI's wheels, fetched from PyPI by
	# tests/consumers/get-wheel.sh (pip download; nothing is installed)
	python3-pip
	# libfabric's fabtests (tests/fabtests/): runfabtests.sh asks python3
	# for errno values and finds leftover processes with ps
	python3 procps
	# tools the demo and tests run (fi_info, ibv_devinfo, rdma, lstopo)
	libfabric-bin rdma-core ibverbs-utils iproute2 hwloc-nox perftest
	# the soft-RoCE VM (tests/vm/runner/vm-run)
	qemu-system-x86 linux-image-amd64 busybox-static cpio kmod
	# a VM command that hangs prints its programs' stacks (guest-setup)
	gdb
	# gdrfab.ko and its stand-in, built for the VM's kernel (W=1, sparse)
	linux-headers-amd64 sparse
	# the Debian packages (scripts/build-debs.sh) and their check
	# (tests/packaging/check-debs.sh: lintian, a debootstrapped chroot)
	debhelper dh-dkms lintian debootstrap
	# the RPM spec's parse (tests/packaging/check-rpm-spec.sh: rpmspec)
	rpm
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "install-deps: run as root to install: ${missing[*]}" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
