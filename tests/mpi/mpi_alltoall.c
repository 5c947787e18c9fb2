/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Every rank sends to every other rank and receives from each, data
 * checked: the job that connects every pair, as an MPI application's
 * first all-to-all does. Prints, from rank 0, how long the first round
 * took (it sets up the connections) and what it cost in memory: the
 * growth of each rank's resident set over that round, divided by the
 * peers it connected to, as the median and the largest over the ranks.
 * Then the same number of rounds again, connected, with data checked.
 *
 *   mpirun -np N mpi_alltoall [BYTES [ROUNDS]]   (default 1024 B, 4 rounds)
 *
 * Rank 0 prints "PASS: mpi: ..." or "FAIL: mpi: ..." per check,
 * "mpi-alltoall: ranks N, bytes B, first round S s, KiB per peer: median
 * M, max X" and "mpi: N passed, M failed" at the end.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, passed, failed;

/* The byte rank src sends rank dst at offset i in round r. */
static unsigned char byte_at(int src, int dst, size_t i, int r)
{
	return (unsigned char)(src * 31 + dst * 17 + r * 7 + i * 13 + (i >> 8));
}

/* This process's resident set in KiB, from /proc (0 where unreadable). */
static long rss_kib(void)
{
	char line[256];
	long kib = 0;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* Agrees on ok over all ranks and counts the check once, on rank 0. */
static void check(int ok, const char *what)
{
	int all;

	MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
	if (rank == 0)
		printf("%s: mpi: %s\n", all ? "PASS" : "FAIL", what);
	if (all)
		passed++;
	else
		failed++;
}

/* One round: a send to and a receive from every other rank, posted
 * together, then the data compared. 1 when all of it arrived intact. */
static int round_trip(unsigned char *tx, unsigned char *rx, size_t bytes,
		      int r, MPI_Request *reqs)
{
	int n = 0, ok = 1;

	for (int peer = 0; peer < size; peer++) {
		if (peer == rank)
			continue;
		unsigned char *out = tx + (size_t)peer * bytes;

		for (size_t i = 0; i < bytes; i++)
			out[i] = byte_at(rank, peer, i, r);
		MPI_Irecv(rx + (size_t)peer * bytes, (int)bytes, MPI_BYTE, peer,
			  r, MPI_COMM_WORLD, &reqs[n++]);
		MPI_Isend(out, (int)bytes, MPI_BYTE, peer, r, MPI_COMM_WORLD,
			  &reqs[n++]);
	}
	MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
	for (int peer = 0; peer < size; peer++) {
		const unsigned char *in = rx + (size_t)peer * bytes;

		for (size_t i = 0; peer != rank && i < bytes; i++)
			if (in[i] != byte_at(peer, rank, i, r))
				ok = 0;
	}
	return ok;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	size_t bytes = argc > 1 ? strtoul(argv[1], NULL, 0) : 1024;
	int rounds = argc > 2 ? atoi(argv[2]) : 4, ok = 1;
	unsigned char *tx, *rx;
	MPI_Request *reqs;
	long before, grown, *all_grown = NULL;
	double t0, first;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	tx = calloc((size_t)size, bytes ? bytes : 1);
	rx = calloc((size_t)size, bytes ? bytes : 1);
	reqs = calloc(2 * (size_t)size, sizeof(*reqs));
	if (!tx || !rx || !reqs)
		MPI_Abort(MPI_COMM_WORLD, 1);
	/* The buffers touched first, so that their pages are not counted
	 * as the connections' memory. */
	memset(tx, 1, (size_t)size * bytes);
	memset(rx, 1, (size_t)size * bytes);
	MPI_Barrier(MPI_COMM_WORLD);
	before = rss_kib();
	t0 = MPI_Wtime();
	ok = round_trip(tx, rx, bytes, 0, reqs);
	first = MPI_Wtime() - t0;
	grown = rss_kib() - before;
	check(ok, "first all-to-all round (connects every pair), data intact");
	if (rank == 0)
		all_grown = calloc((size_t)size, sizeof(*all_grown));
	MPI_Gather(&grown, 1, MPI_LONG, all_grown, 1, MPI_LONG, 0,
		   MPI_COMM_WORLD);
	ok = 1;
	for (int r = 1; r <= rounds; r++)
		ok &= round_trip(tx, rx, bytes, r, reqs);
	check(ok, "further all-to-all rounds, data intact");
	if (rank == 0 && all_grown) {
		qsort(all_grown, (size_t)size, sizeof(*all_grown), cmp_long);
		printf("mpi-alltoall: ranks %d, bytes %zu, first round %.3f s, "
		       "KiB per peer: median %ld, max %ld\n",
		       size, bytes, first,
		       size > 1 ? all_grown[size / 2] / (size - 1) : 0,
		       size > 1 ? all_grown[size - 1] / (size - 1) : 0);
		printf("mpi: %d passed, %d failed\n", passed, failed);
	}
	free(all_grown);
	free(reqs);
	free(rx);
	free(tx);
	MPI_Finalize();
	return failed ? 1 : 0;
}
