/* SPDX-License-Identifier: BSD-2-Clause */
/* The counting allocator hooks (alloc_count.h). */
#include <stddef.h>
#include <stdlib.h>

#include "alloc_count.h"

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void __real_free(void *p);
int __real_posix_memalign(void **p, size_t align, size_t size);
void *__real_aligned_alloc(size_t align, size_t size);

void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
void __wrap_free(void *p);
int __wrap_posix_memalign(void **p, size_t align, size_t size);
void *__wrap_aligned_alloc(size_t align, size_t size);

/* Thread-local: another thread's calls are never this test's. */
static _Thread_local bool on;
static _Thread_local int quiet;
static _Thread_local struct alloc_counts counts;

static void count_alloc(void)
{
	if (on && !quiet)
		counts.allocs++;
}

void *__wrap_malloc(size_t size)
{
	count_alloc();
	return __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
	count_alloc();
	return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
	count_alloc();
	return __real_realloc(p, size);
}

void __wrap_free(void *p)
{
	if (p && on && !quiet)
		counts.frees++;
	__real_free(p);
}

int __wrap_posix_memalign(void **p, size_t align, size_t size)
{
	count_alloc();
	return __real_posix_memalign(p, align, size);
}

void *__wrap_aligned_alloc(size_t align, size_t size)
{
	count_alloc();
	return __real_aligned_alloc(align, size);
}

void alloc_count_start(void)
{
	counts = (struct alloc_counts){0};
	on = true;
}

struct alloc_counts alloc_count_stop(void)
{
	on = false;
	return counts;
}

void alloc_count_quiet(bool q)
{
	quiet += q ? 1 : -1;
}
