#!/bin/bash
# Runs what needs a real GPU, from a build carried to the GPU machine (the
# `device` tool): the CUDA layer's tests and benchmark, and the topology
# tool on the real GPU's PCI id, and the small-copy benchmark's CUDA path.
# Output goes to stdout and, when set, $OUT.
set -u
b=${1:-build}
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,pci.bus_id,driver_version --format=csv,noheader 2>&1 | tee "$out/gpu.txt"
"$b/tests/gpu/gdrfab_gpu_tests" 2>&1 | tee "$out/gpu-tests.txt"
rc=${PIPESTATUS[0]}
FI_LOG_LEVEL=info FI_PROVIDER=gdrfab "$b/examples/gdrfab_topo" 2>&1 | tee "$out/topo.txt"
# One process's answer, asked by the real GPU's PCI id, as a job would.
bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader -i 0 | sed 's/^0000\(....:\)/\1/')
"$b/examples/gdrfab_topo" --gpu "${bus,,}" --json 2>&1 | tee -a "$out/topo.txt"
# The small-copy benchmark's CUDA half (no gdrfab.ko there): a table, not
# a test, so its exit status does not count.
if [ -x "$b/tests/kmod/kmod_copy_bench" ]; then
	"$b/tests/kmod/kmod_copy_bench" 2>&1 | tee "$out/kmod-copy-bench.txt"
fi
echo "gpu tests exit $rc"
exit "$rc"
