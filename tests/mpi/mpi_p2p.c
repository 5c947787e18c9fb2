/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPI point-to-point over whatever the MPI library was told to use (here:
 * Open MPI's mtl ofi over gdrfab, or over verbs;ofi_rxm as the baseline).
 * Each check runs on every rank, compares data, and is agreed on by all
 * ranks; rank 0 prints "PASS: mpi: ..." or "FAIL: mpi: ..." per check and
 * "mpi: N passed, M failed" at the end. Works for 2 or more ranks.
 *
 *   mpirun -np 2 mpi_p2p [MAX_BYTES [ROUNDS [STOP_FILE]]]
 *
 * MAX_BYTES: the largest message (default 64 MiB). ROUNDS (default 0):
 * then up to that many rounds in which every rank exchanges MAX_BYTES
 * with every peer, data checked, as a long-running consumer does (a rail
 * taken down and back meanwhile: tests/vm/rails/rails-in-vm.sh); the
 * rounds stop early, all ranks together, once STOP_FILE exists (rank 0
 * looks before each round).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_agree.h"


static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 8));
}

static int same(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != (unsigned char)(seed * 131u + i * 7u + (i >> 8)))
			return 0;
	}
	return 1;
}

/* Blocking: each rank sends to the next and receives from the previous,
 * for every size from 0 B across gdrfab's eager limit to max. */
static void ring_blocking(size_t max)
{
	static const size_t sizes[] = {0,	  1,	   8191,    8192,
				       8193,	  65536,   1 << 20, 9 << 20,
				       64 << 20};
	unsigned char *out = malloc(max), *in = malloc(max);
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	char what[96];

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s];
		MPI_Status st;
		int ok, count;

		if (n > max)
			break;
		fill(out, n, (unsigned)(rank + s));
		memset(in, 0, n);
		MPI_Sendrecv(out, (int)n, MPI_BYTE, next, (int)s, in, (int)n,
			     MPI_BYTE, prev, (int)s, MPI_COMM_WORLD, &st);
		MPI_Get_count(&st, MPI_BYTE, &count);
		ok = same(in, n, (unsigned)(prev + s)) && count == (int)n &&
		     st.MPI_SOURCE == prev;
		snprintf(what, sizeof(what), "blocking ring, %zu bytes", n);
		agree(what, ok);
	}
	free(out);
	free(in);
}

/* Nonblocking: 64 messages of mixed sizes in flight to every peer. */
static void many_nonblocking(void)
{
	enum { N = 64 };
	size_t len = 20000;
	unsigned char *out = malloc((size_t)size * N * len);
	unsigned char *in = malloc((size_t)size * N * len);
	MPI_Request *req = malloc(sizeof(*req) * 2 * (size_t)size * N);
	int nreq = 0, ok = 1;

	for (int peer = 0; peer < size; peer++) {
		for (int i = 0; i < N; i++) {
			size_t n = (size_t)(i * 311) % len;
			unsigned char *b = in + ((size_t)peer * N + i) * len;

			MPI_Irecv(b, (int)n, MPI_BYTE, peer, i, MPI_COMM_WORLD,
				  &req[nreq++]);
		}
	}
	for (int peer = 0; peer < size; peer++) {
		for (int i = 0; i < N; i++) {
			size_t n = (size_t)(i * 311) % len;
			unsigned char *b = out + ((size_t)peer * N + i) * len;

			fill(b, n, (unsigned)(rank * 1000 + i));
			MPI_Isend(b, (int)n, MPI_BYTE, peer, i, MPI_COMM_WORLD,
				  &req[nreq++]);
		}
	}
	MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
	for (int peer = 0; peer < size; peer++) {
		for (int i = 0; i < N; i++) {
			size_t n = (size_t)(i * 311) % len;

			ok &= same(in + ((size_t)peer * N + i) * len, n,
				   (unsigned)(peer * 1000 + i));
		}
	}
	agree("nonblocking, 64 messages per peer in flight, every peer", ok);
	free(out);
	free(in);
	free(req);
}

/* Rank 0 receives from anyone, any tag; every other rank sends twice. */
static void any_source_any_tag(void)
{
	int ok = 1;

	if (!rank) {
		int seen[64] = {0};
		int expect = 2 * (size - 1);

		for (int i = 0; i < expect; i++) {
			int v[2];
			MPI_Status st;

			MPI_Recv(v, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG,
				 MPI_COMM_WORLD, &st);
			ok &= v[0] == st.MPI_SOURCE && v[1] == st.MPI_TAG;
			if (st.MPI_SOURCE > 0 && st.MPI_SOURCE < 64)
				seen[st.MPI_SOURCE]++;
		}
		for (int r = 1; r < size && r < 64; r++)
			ok &= seen[r] == 2;
	} else {
		for (int t = 7; t <= 8; t++) {
			int v[2] = {rank, t};

			MPI_Send(v, 2, MPI_INT, 0, t, MPI_COMM_WORLD);
		}
	}
	agree("any source, any tag", ok);
}

/* Probe, Iprobe, Mprobe/Mrecv: the size is learnt before receiving. */
static void probes(void)
{
	int ok = 1;
	size_t n = 100000;
	unsigned char *buf = malloc(n);

	if (rank == 1) {
		fill(buf, n, 5);
		MPI_Send(buf, (int)n, MPI_BYTE, 0, 21, MPI_COMM_WORLD);
		MPI_Send(buf, 33, MPI_BYTE, 0, 22, MPI_COMM_WORLD);
		MPI_Send(buf, 777, MPI_BYTE, 0, 23, MPI_COMM_WORLD);
	} else if (rank == 0) {
		MPI_Status st;
		MPI_Message msg;
		int count = 0, flag = 0;

		MPI_Probe(1, 21, MPI_COMM_WORLD, &st);
		MPI_Get_count(&st, MPI_BYTE, &count);
		ok &= count == (int)n;
		MPI_Recv(buf, count, MPI_BYTE, 1, 21, MPI_COMM_WORLD, &st);
		ok &= same(buf, n, 5);
		while (!flag)
			MPI_Iprobe(MPI_ANY_SOURCE, 22, MPI_COMM_WORLD, &flag, &st);
		MPI_Get_count(&st, MPI_BYTE, &count);
		ok &= count == 33 && st.MPI_SOURCE == 1;
		MPI_Recv(buf, count, MPI_BYTE, 1, 22, MPI_COMM_WORLD, &st);
		MPI_Mprobe(1, 23, MPI_COMM_WORLD, &msg, &st);
		MPI_Get_count(&st, MPI_BYTE, &count);
		ok &= count == 777;
		MPI_Mrecv(buf, count, MPI_BYTE, &msg, &st);
		ok &= same(buf, 777, 5);
	}
	agree("probe, iprobe, mprobe/mrecv", ok);
	free(buf);
}

/* A posted receive nobody matches is cancelled; a later message with
 * that tag goes to the next receive. */
static void cancel_receive(void)
{
	int ok = 1, v = 0, flag = 0;
	MPI_Request r;
	MPI_Status st;

	if (rank == 0) {
		MPI_Irecv(&v, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, &r);
		MPI_Cancel(&r);
		MPI_Wait(&r, &st);
		MPI_Test_cancelled(&st, &flag);
		ok &= flag;
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 1) {
		v = 42;
		MPI_Send(&v, 1, MPI_INT, 0, 99, MPI_COMM_WORLD);
	} else if (rank == 0) {
		MPI_Recv(&v, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, &st);
		ok &= v == 42;
	}
	agree("a cancelled receive takes nothing", ok);
}

/* Up to rounds rounds, each a shift exchange: every rank sends n bytes
 * to rank + k and receives them from rank - k, k = 1 .. size - 1, each
 * message's bytes its sender's, shift's and round's, checked. Stops
 * before a round once stop names a file that exists (rank 0 looks, all
 * ranks follow). One verdict for them all, which needs a round done. */
static void exchange_rounds(size_t n, long rounds, const char *stop)
{
	unsigned char *out = malloc(n ? n : 1), *in = malloc(n ? n : 1);
	long done = 0;
	int ok = out && in;
	char what[128];

	for (long r = 0; r < rounds; r++) {
		int halt = !rank && stop && !access(stop, F_OK);

		MPI_Bcast(&halt, 1, MPI_INT, 0, MPI_COMM_WORLD);
		if (halt)
			break;
		for (int k = 1; k < size; k++) {
			int to = (rank + k) % size,
			    from = (rank + size - k) % size;
			MPI_Status st;
			int count;

			fill(out, n, (unsigned)(rank * 7919 + k * 131 + r));
			memset(in, 0, n);
			MPI_Sendrecv(out, (int)n, MPI_BYTE, to, 1000 + k, in,
				     (int)n, MPI_BYTE, from, 1000 + k,
				     MPI_COMM_WORLD, &st);
			MPI_Get_count(&st, MPI_BYTE, &count);
			ok &= count == (int)n && st.MPI_SOURCE == from &&
			      same(in, n,
				   (unsigned)(from * 7919 + k * 131 + r));
		}
		done++;
	}
	snprintf(what, sizeof(what),
		 "%ld rounds of %zu bytes with every peer, data checked", done,
		 n);
	agree(what, ok && done > 0);
	free(out);
	free(in);
}

int main(int argc, char **argv)
{
	size_t max = argc > 1 ? strtoull(argv[1], NULL, 0) : 64u << 20;
	long rounds = argc > 2 ? strtol(argv[2], NULL, 0) : 0;
	const char *stop = argc > 3 ? argv[3] : NULL;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	ring_blocking(max);
	many_nonblocking();
	any_source_any_tag();
	if (size >= 2) {
		probes();
		cancel_receive();
	}
	if (rounds > 0)
		exchange_rounds(max, rounds, stop);
	if (!rank)
		printf("mpi: %d passed, %d failed\n", passed, failed);
	MPI_Finalize();
	return failed ? 1 : 0;
}
