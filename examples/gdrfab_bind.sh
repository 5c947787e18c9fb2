#!/bin/sh
# gdrfab_bind: run one rank of a job on its GPU's nearest NIC(s) and CPUs.
#
#   mpirun -np 8 gdrfab_bind ./app            (Open MPI)
#   mpiexec -n 8 gdrfab_bind ./app            (MPICH / hydra)
#   srun -n 8 gdrfab_bind ./app               (Slurm)
#   gdrfab_bind --dry-run [--rank N] -- ./app (print the decision only)
#
# The local rank comes from the launcher (OMPI_COMM_WORLD_LOCAL_RANK,
# MPI_LOCALRANKID, SLURM_LOCALID, PMIX_LOCAL_RANK); the GPU is that rank
# modulo the GPUs, in PCI bus-id order. The rank then sees only the NICs
# gdrfab_topo picks for its GPU (FI_GDRFAB_DEVICE), tells gdrfab its GPU
# (FI_GDRFAB_GPU), and is bound to the CPUs near that GPU (hwloc-bind).
# HWLOC_XMLFILE (a saved topology) works with --dry-run.
set -eu
dry=0
rank=${OMPI_COMM_WORLD_LOCAL_RANK:-${MPI_LOCALRANKID:-${SLURM_LOCALID:-${PMIX_LOCAL_RANK:-0}}}}
while [ $# -gt 0 ]; do
	case "$1" in
	--dry-run) dry=1; shift ;;
	--rank) rank=$2; shift 2 ;;
	--) shift; break ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "usage: gdrfab_bind [--dry-run] [--rank N] [--] COMMAND..." >&2; exit 2; }
topo=${GDRFAB_TOPO:-$(dirname "$0")/gdrfab_topo}
command -v "$topo" >/dev/null 2>&1 || topo=gdrfab_topo
eval "$("$topo" --env --rank "$rank")"
cpus=$(hwloc-calc ${HWLOC_XMLFILE:+-i "$HWLOC_XMLFILE"} "pci=$GDRFAB_GPU_BUSID")
export FI_GDRFAB_GPU="$GDRFAB_GPU_BUSID"
[ -n "$GDRFAB_NICS" ] && export FI_GDRFAB_DEVICE="$GDRFAB_NICS"
if [ "$dry" = 1 ]; then
	echo "rank $rank: GPU $GDRFAB_GPU_NAME ($GDRFAB_GPU_BUSID), NICs ${GDRFAB_NICS:-none} [$GDRFAB_PATH_CLASS], CPUs $cpus: $*"
	exit 0
fi
exec hwloc-bind "$cpus" -- "$@"
