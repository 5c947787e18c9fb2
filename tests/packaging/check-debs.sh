#!/bin/bash
# Builds gdrfab's Debian packages (scripts/build-debs.sh, from the committed
# tree), checks them with lintian (no error, no warning; overrides carry
# their reasons in contrib/debian/*.lintian-overrides), installs them with
# apt into a clean Debian 12 chroot (debootstrap --variant=minbase), checks
# that libfabric finds the provider there without FI_PROVIDER_PATH and that
# the dkms source tree is in place (and builds, against the VM kernel's
# headers when this machine has them), then purges them and checks that
# nothing of them is left.
#   tests/packaging/check-debs.sh      (as root; 200 s, 70 s with its cache)
# The chroot's tarball (remade after 30 days) and apt's downloads are
# cached in build/packaging/, so a rerun fetches only apt's indexes. Skips (77) without
# root, debootstrap or the mirror (GDRFAB_DEB_MIRROR, default Debian's).
# GDRFAB_DEB_REF: the commit to package (default HEAD).
set -euo pipefail
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
mirror=${GDRFAB_DEB_MIRROR:-http://deb.debian.org/debian}
cache=$srcdir/build/packaging
debs=$srcdir/build/debs
skip() { echo "SKIP: packaging: $*"; exit 77; }
fail() { echo "FAIL: packaging: $*"; exit 1; }
say() { echo "packaging: $*"; }

[ "$(id -u)" = 0 ] || skip "needs root (debootstrap and chroot)"
git -C "$srcdir" rev-parse --verify -q HEAD >/dev/null 2>&1 ||
	skip "not a git checkout (the packages are built from the committed tree)"
command -v debootstrap >/dev/null || skip "debootstrap is not installed (scripts/install-deps.sh)"
command -v lintian >/dev/null || fail "lintian is not installed (scripts/install-deps.sh)"
wget -q -T 15 -t 2 -O /dev/null "$mirror/dists/bookworm/InRelease" ||
	skip "the mirror $mirror cannot be reached"

start=$SECONDS
"$srcdir/scripts/build-debs.sh" "${GDRFAB_DEB_REF:-HEAD}" || fail "scripts/build-debs.sh failed"
version=$(git -C "$srcdir" show "${GDRFAB_DEB_REF:-HEAD}:configure.ac" |
	sed -n 's/^AC_INIT(\[gdrfab\], *\[\([^]]*\)\].*/\1/p')
say "built in $((SECONDS - start)) s"

# Source and binary packages, as a Debian upload would be checked (the
# information tags are shown, not counted; overridden tags must not count,
# so no --show-overrides).
lintian --fail-on error,warning --display-info "$debs"/gdrfab_*.changes ||
	fail "lintian found errors or warnings (above)"
say "lintian: no error, no warning"

root=$(mktemp -d /tmp/gdrfab-chroot.XXXXXX)
cleanup() {
	umount "$root/proc" 2>/dev/null || true
	rm -rf --one-file-system "$root"
}
trap cleanup EXIT
mkdir -p "$cache"
tarball=$cache/bookworm-minbase.tar.gz
find "$tarball" -mtime +30 -delete 2>/dev/null || true
if [ ! -f "$tarball" ]; then
	say "debootstrap --variant=minbase bookworm (cached in $tarball)"
	debootstrap --variant=minbase bookworm "$root" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
		{ tail -n 5 "$cache/debootstrap.log"; skip "debootstrap could not make a bookworm chroot from $mirror"; }
	# (debootstrap's own downloads are not worth keeping)
	rm -f "$root"/var/cache/apt/archives/*.deb
	tar -C "$root" -czf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
else
	tar -C "$root" -xzf "$tarball"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
echo "deb $mirror bookworm main" >"$root/etc/apt/sources.list"
mount -t proc proc "$root/proc"
# Nothing from the host's environment: FI_PROVIDER_PATH above all.
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@"; }

mkdir -p "$root/tmp/debs" "$cache/apt"
cp "$debs"/*.deb "$root/tmp/debs/"
cp "$cache"/apt/*.deb "$root/var/cache/apt/archives/" 2>/dev/null || true
in_root apt-get update -q >"$cache/apt-update.log" 2>&1 ||
	{ tail -n 5 "$cache/apt-update.log"; skip "apt-get update failed in the chroot ($mirror)"; }
# Recommends left out: dkms recommends the kernel headers, another 100 MB
# to fetch and a module build in the chroot; the installed tree is built
# below instead, with the headers this machine already has.
pkgs=(libfabric-bin)
for p in libfabric-gdrfab libfabric-gdrfab-dev gdrfab-dkms; do
	pkgs+=("/tmp/debs/$(cd "$debs" && echo "${p}"_*.deb)")
done
in_root apt-get install -s --no-install-recommends "${pkgs[@]}" >/dev/null ||
	fail "apt cannot resolve the packages' dependencies in bookworm"
if ! in_root apt-get install -y -q --no-install-recommends "${pkgs[@]}" >"$cache/apt-install.log" 2>&1; then
	tail -n 20 "$cache/apt-install.log"
	grep -q '^E: Failed to fetch' "$cache/apt-install.log" && skip "apt could not download from $mirror"
	fail "installing the packages failed"
fi
rm -rf "$cache/apt" && mkdir "$cache/apt"
cp "$root"/var/cache/apt/archives/*.deb "$cache/apt/"
say "installed in a clean bookworm chroot ($((SECONDS - start)) s so far)"

# libfabric finds the provider in its own directory.
in_root fi_info -l >"$cache/fi_info.txt" 2>&1 || true
grep -qx 'gdrfab:' "$cache/fi_info.txt" ||
	{ cat "$cache/fi_info.txt"; fail "fi_info -l does not list gdrfab without FI_PROVIDER_PATH"; }
say "fi_info -l lists gdrfab: $(grep -A1 -x 'gdrfab:' "$cache/fi_info.txt" | tail -n 1 | xargs)"
# The tools load (their libraries resolved) and answer a bad command line
# with their usage (exit 2), where a missing library would exit 127.
for tool in "gdrfab_pingpong -h" "gdrfab_bw -h" "gdrfab_topo -h" gdrfab_bind gdrfab_stat; do
	rc=0
	# shellcheck disable=SC2086 # the tool and its option
	in_root $tool >"$cache/tool.out" 2>&1 || rc=$?
	if [ $rc != 2 ] || ! grep -q '^usage: ' "$cache/tool.out"; then
		cat "$cache/tool.out"
		fail "$tool exited $rc without its usage"
	fi
done
say "gdrfab_pingpong, gdrfab_bw, gdrfab_topo, gdrfab_bind and gdrfab_stat run"

# The dkms tree: the module's sources, its ABI header and dkms.conf with
# the version filled in, registered with dkms.
src=$root/usr/src/gdrfab-$version
for f in dkms.conf Kbuild Makefile gdrfab_main.c gdrfab_drv.h include/gdrfab/gdrfab_ioctl.h; do
	[ -f "$src/$f" ] || fail "/usr/src/gdrfab-$version/$f is missing"
done
grep -qx "PACKAGE_VERSION=\"$version\"" "$src/dkms.conf" ||
	fail "dkms.conf's PACKAGE_VERSION is not $version"
in_root dkms status 2>&1 | grep -q "^gdrfab/$version" ||
	fail "dkms does not know gdrfab/$version: $(in_root dkms status 2>&1)"
say "dkms: $(in_root dkms status 2>&1 | grep gdrfab)"

# dkms.conf's build command in a copy of the installed tree, against the
# headers of the kernel the project's VM boots (tests/kmod/build-kmods.sh's
# choice): the tree builds on its own, as dkms builds it.
kver=$(for k in /lib/modules/*; do
	k=${k##*/}
	[ -r "/boot/vmlinuz-$k" ] && [ -d "/lib/modules/$k/build" ] && echo "$k"
done | sort -V | tail -n 1)
if [ -n "$kver" ]; then
	work=$root/tmp/dkms-build
	cp -a "$src" "$work"
	# (dkms.conf reads kernelver and NVIDIA_SRC as dkms sets them)
	# shellcheck disable=SC2034,SC1091
	(cd "$work" && kernelver=$kver NVIDIA_SRC= && source ./dkms.conf &&
		eval "${MAKE[0]}") >"$cache/dkms-make.log" 2>&1 ||
		{ tail -n 20 "$cache/dkms-make.log"; fail "dkms.conf's MAKE failed for $kver"; }
	[ -f "$work/gdrfab.ko" ] || fail "dkms.conf's MAKE made no gdrfab.ko"
	rm -rf "$work"
	say "dkms.conf's MAKE built gdrfab.ko for $kver"
else
	say "no kernel headers here: the dkms tree was not built (linux-headers-amd64)"
fi

# Purge: nothing of gdrfab's is left in the chroot, and libfabric no longer
# lists it.
rm -rf "$root/tmp/debs"
in_root apt-get purge -y -q libfabric-gdrfab libfabric-gdrfab-dev gdrfab-dkms \
	>"$cache/apt-purge.log" 2>&1 || { tail -n 20 "$cache/apt-purge.log"; fail "purging failed"; }
left=$(cd "$root" && find . -xdev -iname '*gdrfab*' -not -path './proc/*' | head)
[ -z "$left" ] || fail "left after purge: $left"
in_root dpkg -l | grep -q gdrfab && fail "dpkg still lists a gdrfab package"
in_root fi_info -l 2>&1 | grep -qx 'gdrfab:' && fail "fi_info -l lists gdrfab after purge"
say "purged: no file, dkms entry or dpkg record of gdrfab left"
say "passed in $((SECONDS - start)) s"
