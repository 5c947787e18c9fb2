/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The registration cache's own part of a GPU hit, without a GPU: the
 * thread's last hit (gdrfab_reg_get + gdrfab_reg_put) against the floor
 * its reference costs (two locked instructions), with a hit found under
 * the lock and a miss beside it. Interleaved rounds, medians, ns per call.
 * The GPU machine's benchmark (tests/gpu/gdrfab_gpu_tests.c) adds the
 * CUDA call; this one tells what the cache adds on a noisy machine.
 *
 *   mr_hit_bench                 the table
 *   mr_hit_bench --only NAME N   one loop (hit, locked_hit, miss, floor;
 *                                classify, classify_hit with a libcuda)
 *                                N times, for valgrind --tool=callgrind
 *                                --toggle-collect=mrhit_NAME (instructions
 *                                per call = Ir / N)
 *
 * mr_hit_bench_so runs the same loops from a shared library, as the
 * provider runs (thread-local variables reached through the dynamic
 * model the compiler chose, not relaxed by the linker).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mr_hit_loop.h"

#ifndef MRHIT_VARIANT
#define MRHIT_VARIANT "linked into the executable"
#endif

static const struct {
	const char *name, *what;
	int (*run)(long n);
} loops[] = {
	{"floor", "floor: lock cmpxchg + lock xadd", mrhit_floor},
	{"hit", "hit (the thread's last, no lock)", mrhit_hit},
	{"locked_hit", "hit under the lock (two buffers in turn)",
	 mrhit_locked_hit},
	{"miss", "miss (registration stubbed)", mrhit_miss},
	/* These two only where a libcuda.so.1 loads: */
	{"classify", "classification of a known allocation", mrhit_classify},
	{"classify_hit", "classification + hit", mrhit_classify_hit},
};
#define NCPU   4 /* the loops that need no CUDA */
#define NLOOPS (sizeof(loops) / sizeof(loops[0]))

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	enum { ROUNDS = 31, N = 200000 };
	static double v[NLOOPS][ROUNDS];
	size_t nloops = NCPU;
	int bad = 0;

	if (mrhit_setup()) {
		fprintf(stderr,
			"mr_hit_bench: the first registration failed\n");
		return 1;
	}
	if (!mrhit_cuda_setup())
		nloops = NLOOPS;
	if (argc == 4 && !strcmp(argv[1], "--only")) {
		for (size_t l = 0; l < nloops; l++) {
			if (!strcmp(argv[2], loops[l].name)) {
				bad = loops[l].run(atol(argv[3]));
				mrhit_teardown();
				return bad ? 1 : 0;
			}
		}
		fprintf(stderr, "mr_hit_bench: no loop %s\n", argv[2]);
		return 2;
	}
	if (argc != 1) {
		fprintf(stderr, "usage: %s [--only NAME N]\n", argv[0]);
		return 2;
	}
	for (size_t l = 0; l < nloops; l++)
		bad |= loops[l].run(N / 10); /* warm */
	for (int k = 0; k < ROUNDS; k++) {
		for (size_t l = 0; l < nloops; l++) {
			double t0 = now_ns();

			bad |= loops[l].run(N);
			v[l][k] = (now_ns() - t0) / N;
		}
	}
	printf("mr_hit_bench (%s): medians of %d interleaved rounds of %d calls\n",
	       MRHIT_VARIANT, ROUNDS, N);
	for (size_t l = 0; l < nloops; l++) {
		qsort(v[l], ROUNDS, sizeof(double), cmp_double);
		printf("%-44s %7.1f ns (%.2fx the floor)\n", loops[l].what,
		       v[l][ROUNDS / 2], v[l][ROUNDS / 2] / v[0][ROUNDS / 2]);
	}
	if (nloops == NCPU)
		printf("(no libcuda.so.1: classification not timed; the CUDA stand-in is build/tests/cuda/.libs)\n");
	if (!mrhit_fast_hits()) {
		fprintf(stderr,
			"mr_hit_bench: no hit took the lock-free path\n");
		bad = 1;
	}
	mrhit_teardown();
	return bad ? 1 : 0;
}
