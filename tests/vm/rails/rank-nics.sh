#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# rank-nics.sh COMMAND...: runs COMMAND with the NICs of its Open MPI rank,
# as gdrfab_bind.sh does on a GPU machine (FI_GDRFAB_DEVICE per rank), so
# that each rank sees one entry and the rails suite's 4 ranks are placed
# the same way every run: ranks 0 and 1 on the rail sets rxe0+rxe2 and
# rxe1+rxe3, ranks 2 and 3 on rxe0 and rxe1 alone. Unbound, Open MPI 4.1
# picks among alike entries by pid, so without this the sets went to
# whichever ranks' pids fell on them (one set, or none, in some runs).
case ${OMPI_COMM_WORLD_RANK:?not started by Open MPI} in
0) export FI_GDRFAB_DEVICE=rxe0,rxe2 FI_GDRFAB_RAILS=rxe0+rxe2 ;;
1) export FI_GDRFAB_DEVICE=rxe1,rxe3 FI_GDRFAB_RAILS=rxe1+rxe3 ;;
2) export FI_GDRFAB_DEVICE=rxe0 ;;
3) export FI_GDRFAB_DEVICE=rxe1 ;;
*) echo "rank-nics.sh: rank $OMPI_COMM_WORLD_RANK: 4 ranks at most" >&2; exit 1 ;;
esac
exec "$@"
