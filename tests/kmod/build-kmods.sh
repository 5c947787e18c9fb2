#!/bin/bash
# Builds the test stand-in nvp2p_standin.ko and gdrfab.ko (against the
# stand-in's Module.symvers, as against a real driver's) for the kernel the
# VM boots, with W=1 and sparse, in DIR (default ./kmod-build). Any compiler,
# sparse or modpost warning fails the build.
#   tests/kmod/build-kmods.sh [DIR]
set -euo pipefail
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mkdir -p "${1:-kmod-build}" && cd "${1:-kmod-build}" && pwd)
kver=${GDRFAB_VM_KVER:-$(for k in $(ls /lib/modules 2>/dev/null); do
	[ -r "/boot/vmlinuz-$k" ] && echo "$k"
done | sort -V | tail -n 1)}
kdir=/lib/modules/$kver/build
[ -d "$kdir" ] || { echo "build-kmods: no headers for $kver (install linux-headers-amd64)" >&2; exit 2; }
command -v sparse >/dev/null || { echo "build-kmods: sparse is missing (scripts/install-deps.sh)" >&2; exit 2; }

# Kbuild writes its objects next to the sources, and its M= cannot hold a
# space: build from copies in a scratch directory, then keep the results
# in $out.
work=$(mktemp -d /tmp/gdrfab-kmod.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/gdrfab" "$work/standin" "$work/include/gdrfab"
cp "$srcdir"/kmod/*.[ch] "$srcdir/kmod/Kbuild" "$work/gdrfab/"
cp "$srcdir/include/gdrfab/gdrfab_ioctl.h" "$work/include/gdrfab/"
cp "$srcdir"/tests/kmod/nvp2p_standin.c "$srcdir/tests/kmod/Kbuild" "$work/standin/"

build() { # dir, extra make arguments
	local dir=$1 log
	shift
	log=$(make -C "$kdir" M="$dir" W=1 C=1 "$@" modules 2>&1) || { echo "$log"; return 1; }
	# Kbuild's own lines are "  CC [M]  ..." and the like; anything else is
	# a diagnostic.
	if echo "$log" | grep -v -E '^(make(\[[0-9]+\])?: |  [A-Z]+ |Skipping BTF generation)' | grep -q .; then
		echo "$log"
		echo "build-kmods: warnings in $dir" >&2
		return 1
	fi
}
build "$work/standin"
build "$work/gdrfab" KBUILD_EXTRA_SYMBOLS="$work/standin/Module.symvers"
rm -rf "$out/gdrfab" "$out/standin"
mkdir -p "$out/gdrfab" "$out/standin"
cp "$work/gdrfab/gdrfab.ko" "$out/gdrfab/"
cp "$work/standin/nvp2p_standin.ko" "$out/standin/"
echo "build-kmods: $out/gdrfab/gdrfab.ko $out/standin/nvp2p_standin.ko ($kver)"
