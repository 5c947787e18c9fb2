# Sourced by the scripts that run tests inside the soft-RoCE VM, with what
# they test as $1: sets builddir and srcdir, skips (exit 77, automake's
# "skipped", with one line saying why) where no VM can run, enters the build
# directory and points libfabric at the build's provider.
builddir=${GDRFAB_BUILDDIR:-$PWD}
srcdir=${GDRFAB_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}
if [ "${GDRFAB_SKIP_VM:-0}" = 1 ]; then
	echo "SKIP: $1 (GDRFAB_SKIP_VM=1)"
	exit 77
fi
if ! command -v qemu-system-x86_64 >/dev/null || ! ls /boot/vmlinuz-* >/dev/null 2>&1; then
	echo "SKIP: $1 need qemu-system-x86 and linux-image-amd64 (scripts/install-deps.sh)"
	exit 77
fi
cd "$builddir" || exit 99
export FI_PROVIDER_PATH="$builddir/.libs"
