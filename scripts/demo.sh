#!/bin/bash
# The demo: installs what is missing, builds, and shows what an application
# sees of gdrfab through libfabric's fi_info: on this machine's RDMA NICs
# when it has an active one, else inside the soft-RoCE VM (rxe0, rxe1).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd build
export FI_PROVIDER_PATH=$PWD/.libs
show() {
	echo "\$ fi_info -p gdrfab"
	fi_info -p gdrfab
	echo
	echo "\$ fi_info -p gdrfab -v   (the NIC attributes)"
	fi_info -p gdrfab -v | sed -n '/^    nic:/,/^---/p' | sed '/^---/d' | head -40
}
if grep -qs ACTIVE /sys/class/infiniband/*/ports/*/state; then
	echo "gdrfab demo: using this machine's RDMA devices"
	show
else
	echo "gdrfab demo: no active RDMA device here; booting the soft-RoCE VM"
	../tests/vm/vm-run -- bash -c "$(declare -f show); show"
fi
