/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Counts the heap allocations and frees of code linked into the unit test
 * binary (the provider's convenience library, the tests, the fake verbs
 * device): the binary is linked with --wrap for malloc, calloc, realloc,
 * free, posix_memalign and aligned_alloc (tests/unit/Makefile.am's part of
 * the top Makefile.am), so that every such call made by those objects
 * passes through here. Calls made inside shared libraries (libc's own
 * strdup, libfabric, Criterion) are not seen.
 *
 * Counting is per thread and off until alloc_count_start: a test counts
 * what the provider does on its own thread (its data calls and progress),
 * not what a helper thread of the provider or Criterion does meanwhile.
 * The fake device's own memory per work request is not the provider's:
 * it allocates inside alloc_count_quiet.
 */
#ifndef ALLOC_COUNT_H
#define ALLOC_COUNT_H

#include <stdbool.h>

struct alloc_counts {
	long allocs; /* malloc, calloc, realloc, posix_memalign, aligned_alloc
		      */
	long frees;  /* free of a non-NULL pointer */
};

/* Starts counting this thread's calls from zero. */
void alloc_count_start(void);
/* Stops counting and returns what was counted since the start. */
struct alloc_counts alloc_count_stop(void);
/* Calls between quiet(true) and quiet(false) are not counted (nests). */
void alloc_count_quiet(bool quiet);

#endif /* ALLOC_COUNT_H */
