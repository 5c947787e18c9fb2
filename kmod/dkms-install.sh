#!/bin/bash
# Installs gdrfab.ko with dkms, so that it is rebuilt for every new kernel:
#   sudo kmod/dkms-install.sh            # then: sudo modprobe gdrfab
#   sudo NVIDIA_SRC=/usr/src/nvidia-580.95.05 kmod/dkms-install.sh
#   sudo KVER=6.1.0-56-amd64 kmod/dkms-install.sh   # another installed kernel
# gdrfab.ko needs the NVIDIA driver's nvidia.ko loaded first (it resolves
# nvidia_p2p_* there); `modprobe gdrfab` after `modprobe nvidia` does it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# The module's dkms version is the project's (dkms.conf holds a placeholder,
# as dh_dkms expects).
version=$(sed -n 's/^AC_INIT(\[gdrfab\], *\[\([^]]*\)\].*/\1/p' "$here/../configure.ac")
[ -n "$version" ] || { echo "dkms-install: no version in configure.ac" >&2; exit 1; }
dest=/usr/src/gdrfab-$version
command -v dkms >/dev/null || { echo "dkms-install: install dkms first (apt-get install dkms)" >&2; exit 1; }
if dkms status -m gdrfab -v "$version" | grep -q gdrfab; then
	dkms remove -m gdrfab -v "$version" --all
fi
rm -rf "$dest"
mkdir -p "$dest/include/gdrfab"
cp "$here"/*.c "$here"/*.h "$here/Kbuild" "$here/Makefile" "$dest/"
sed "s/#MODULE_VERSION#/$version/" "$here/dkms.conf" >"$dest/dkms.conf"
cp "$here/../include/gdrfab/gdrfab_ioctl.h" "$dest/include/gdrfab/"
dkms add -m gdrfab -v "$version"
kver=${KVER:-$(uname -r)}
dkms build -m gdrfab -v "$version" -k "$kver"
dkms install -m gdrfab -v "$version" -k "$kver"
echo "dkms-install: gdrfab $version installed; load it with: modprobe gdrfab"
