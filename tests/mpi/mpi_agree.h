/* SPDX-License-Identifier: BSD-2-Clause */
/* What the MPI programs share: the rank, the world's size, the tallies,
 * and agree(), which makes every check a verdict of all ranks. Included
 * once, by each program's one source file. */
#ifndef MPI_AGREE_H
#define MPI_AGREE_H

#include <mpi.h>
#include <stdio.h>

static int rank, size, passed, failed;

/* Every rank says whether its part held; all must. Rank 0 prints "PASS:
 * mpi: WHAT" or "FAIL: mpi: WHAT". */
static void agree(const char *what, int ok)
{
	int all;

	MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
	if (all)
		passed++;
	else
		failed++;
	if (!rank)
		printf("%s: mpi: %s\n", all ? "PASS" : "FAIL", what);
	fflush(stdout);
}

#endif
