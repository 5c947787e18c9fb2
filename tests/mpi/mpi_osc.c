/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPI one-sided communication over whatever the MPI library was told to use
 * (here: Open MPI's osc rdma over btl ofi over gdrfab): put, get,
 * accumulate, fetch_and_op, compare_and_swap, under fence, lock/unlock and
 * post/start/complete/wait, with the data checked on every rank and the
 * verdict agreed by all; rank 0 prints "PASS: mpi: ..." or "FAIL: mpi: ..."
 * per check and "mpi: N passed, M failed" at the end. 2 or more ranks.
 *
 *   mpirun -np 4 mpi_osc
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 1024 /* elements of each rank's window */

static int rank, size, passed, failed;

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

static int64_t value(int r, int i)
{
	return (int64_t)r * 100000 + i;
}

/* Fence: each rank puts its values into the next rank's window, then
 * gets the previous rank's back from it. */
static void put_get_fence(MPI_Win win, int64_t *base)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	int64_t *src = malloc(N * sizeof(*src)), *back = calloc(N, sizeof(*back));
	int ok = 1;

	for (int i = 0; i < N; i++)
		src[i] = value(rank, i);
	memset(base, 0, N * sizeof(*base));
	MPI_Win_fence(0, win);
	MPI_Put(src, N, MPI_INT64_T, next, 0, N, MPI_INT64_T, win);
	MPI_Win_fence(0, win);
	for (int i = 0; i < N; i++)
		ok &= base[i] == value(prev, i);
	MPI_Get(back, N, MPI_INT64_T, next, 0, N, MPI_INT64_T, win);
	MPI_Win_fence(0, win);
	for (int i = 0; i < N; i++)
		ok &= back[i] == value(rank, i);
	agree("put and get under fence", ok);
	free(src);
	free(back);
}

/* Every rank adds to every element of rank 0's window: sums are exact. */
static void accumulate_lock(MPI_Win win, int64_t *base)
{
	int64_t *src = malloc(N * sizeof(*src));
	int ok = 1;

	memset(base, 0, N * sizeof(*base));
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < N; i++)
		src[i] = rank + 1 + i;
	for (int k = 0; k < 10; k++) {
		MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
		MPI_Accumulate(src, N, MPI_INT64_T, 0, 0, N, MPI_INT64_T,
			       MPI_SUM, win);
		MPI_Win_unlock(0, win);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (!rank) {
		int64_t ranks = (int64_t)size * (size + 1) / 2;

		for (int i = 0; i < N; i++)
			ok &= base[i] == 10 * (ranks + (int64_t)size * i);
	}
	agree("accumulate (MPI_SUM) from every rank under shared locks", ok);
	/* Max, and a double sum, through the same path. */
	{
		double d = 0.5 * (rank + 1);
		int64_t m = rank * 7;

		MPI_Barrier(MPI_COMM_WORLD);
		if (!rank) {
			base[0] = 0;
			memcpy(&base[1], &(double){0}, sizeof(double));
		}
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
		MPI_Accumulate(&m, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T,
			       MPI_MAX, win);
		MPI_Accumulate(&d, 1, MPI_DOUBLE, 0, 1, 1, MPI_DOUBLE,
			       MPI_SUM, win);
		MPI_Win_unlock(0, win);
		MPI_Barrier(MPI_COMM_WORLD);
		ok = 1;
		if (!rank) {
			double got;

			memcpy(&got, &base[1], sizeof(got));
			ok = base[0] == (int64_t)(size - 1) * 7 &&
			     got == 0.25 * size * (size + 1);
		}
		agree("accumulate (MPI_MAX int64, MPI_SUM double)", ok);
	}
	free(src);
}

/* fetch_and_op: every rank takes 100 tickets from rank 0's counter; the
 * tickets are every number below the total exactly once. */
static void fetch_and_op(MPI_Win win, int64_t *base)
{
	int64_t one = 1, got[100], *all = NULL;
	int ok = 1;

	base[0] = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock_all(0, win);
	for (int k = 0; k < 100; k++) {
		MPI_Fetch_and_op(&one, &got[k], MPI_INT64_T, 0, 0, MPI_SUM,
				 win);
		MPI_Win_flush(0, win);
	}
	MPI_Win_unlock_all(win);
	MPI_Barrier(MPI_COMM_WORLD);
	if (!rank)
		all = calloc(100 * size, sizeof(*all));
	MPI_Gather(got, 100, MPI_INT64_T, all, 100, MPI_INT64_T, 0,
		   MPI_COMM_WORLD);
	if (!rank) {
		char *seen = calloc(100 * size, 1);

		ok = base[0] == 100 * size;
		for (int i = 0; i < 100 * size && ok; i++) {
			ok = all[i] >= 0 && all[i] < 100 * size &&
			     !seen[all[i]];
			if (ok)
				seen[all[i]] = 1;
		}
		free(seen);
		free(all);
	}
	agree("fetch_and_op: 100 tickets per rank, each once", ok);
}

/* compare_and_swap: a lock word at rank 0 taken and released by every
 * rank in turn guards a plain counter that each increments. */
static void compare_and_swap(MPI_Win win, int64_t *base)
{
	int64_t unlocked = 0, mine = rank + 1, old, one = 1, cur;
	int ok = 1;

	base[0] = 0; /* the lock */
	base[1] = 0; /* the counter it guards */
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock_all(0, win);
	for (int k = 0; k < 20; k++) {
		do {
			MPI_Compare_and_swap(&mine, &unlocked, &old,
					     MPI_INT64_T, 0, 0, win);
			MPI_Win_flush(0, win);
		} while (old != 0);
		MPI_Get(&cur, 1, MPI_INT64_T, 0, 1, 1, MPI_INT64_T, win);
		MPI_Win_flush(0, win);
		cur += one;
		MPI_Put(&cur, 1, MPI_INT64_T, 0, 1, 1, MPI_INT64_T, win);
		MPI_Win_flush(0, win);
		MPI_Compare_and_swap(&unlocked, &mine, &old, MPI_INT64_T, 0, 0,
				     win);
		MPI_Win_flush(0, win);
		ok &= old == mine;
	}
	MPI_Win_unlock_all(win);
	MPI_Barrier(MPI_COMM_WORLD);
	if (!rank)
		ok &= base[0] == 0 && base[1] == 20 * size;
	agree("compare_and_swap: a spin lock guarding a counter", ok);
}

/* Post/start/complete/wait: even ranks expose, odd ranks put into the
 * even rank below them (with 2 ranks: 0 exposes, 1 puts). */
static void pscw(MPI_Win win, int64_t *base)
{
	MPI_Group world, peer;
	int ok = 1, partner = rank ^ 1;
	int64_t src[16];

	memset(base, 0, N * sizeof(*base));
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Comm_group(MPI_COMM_WORLD, &world);
	if (partner < size) {
		MPI_Group_incl(world, 1, &partner, &peer);
		if (rank % 2 == 0) {
			MPI_Win_post(peer, 0, win);
			MPI_Win_wait(win);
			for (int i = 0; i < 16; i++)
				ok &= base[i] == value(partner, i);
		} else {
			for (int i = 0; i < 16; i++)
				src[i] = value(rank, i);
			MPI_Win_start(peer, 0, win);
			MPI_Put(src, 16, MPI_INT64_T, partner, 0, 16,
				MPI_INT64_T, win);
			MPI_Win_complete(win);
		}
		MPI_Group_free(&peer);
	}
	MPI_Group_free(&world);
	agree("put under post/start/complete/wait", ok);
}

int main(int argc, char **argv)
{
	MPI_Win win;
	int64_t *base;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Win_allocate(N * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL,
			 MPI_COMM_WORLD, &base, &win);
	put_get_fence(win, base);
	accumulate_lock(win, base);
	fetch_and_op(win, base);
	compare_and_swap(win, base);
	pscw(win, base);
	MPI_Win_free(&win);
	if (!rank)
		printf("mpi: %d passed, %d failed\n", passed, failed);
	MPI_Finalize();
	return failed ? 1 : 0;
}
