/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The size-class pool (gdrfab_sizepool.h): a block put back is the next
 * one got of its class, with no allocation (alloc_count.h); blocks past
 * the largest class, past a class's keep limit and past the pool's go
 * back to the heap;
 * fini frees what is kept and says what is still out.
 */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "alloc_count.h"
#include "gdrfab_sizepool.h"

Test(sizepool, reuses_blocks_of_a_class_without_the_heap)
{
	struct gdrfab_sizepool p = {0};
	struct alloc_counts c;
	void *a = gdrfab_sizepool_get(&p, 100), *b;

	cr_assert_not_null(a);
	cr_assert_eq((uintptr_t)a % _Alignof(max_align_t), 0, "aligned");
	memset(a, 0xab, 128); /* its class's size, 128 B, is its own */
	gdrfab_sizepool_put(&p, a);
	alloc_count_start();
	b = gdrfab_sizepool_get(&p, 128);
	gdrfab_sizepool_put(&p, b);
	b = gdrfab_sizepool_get(&p, 65);
	gdrfab_sizepool_put(&p, b);
	gdrfab_sizepool_put(&p, NULL);
	c = alloc_count_stop();
	cr_assert_eq(b, a, "the block of the class again");
	cr_assert_eq(c.allocs + c.frees, 0, "no heap call");
	/* Another class: a block of its own. */
	b = gdrfab_sizepool_get(&p, 129);
	cr_assert_neq(b, a);
	cr_assert_eq(gdrfab_sizepool_fini(&p), 1, "one block still out");
	gdrfab_sizepool_put(&p, b);
	cr_assert_eq(gdrfab_sizepool_fini(&p), 0);
}

Test(sizepool, large_blocks_and_the_keep_limit_go_back_to_the_heap)
{
	struct gdrfab_sizepool p = {0};
	size_t big = ((size_t)1 << GDRFAB_SIZEPOOL_MAX_SHIFT) + 1;
	size_t n = GDRFAB_SIZEPOOL_KEEP / ((size_t)1 << 16) + 2;
	void *blk[GDRFAB_SIZEPOOL_KEEP / ((size_t)1 << 16) + 2];
	struct alloc_counts c;
	void *v = gdrfab_sizepool_get(&p, big);

	cr_assert_not_null(v);
	memset(v, 1, big);
	alloc_count_start();
	gdrfab_sizepool_put(&p, v);
	c = alloc_count_stop();
	cr_assert_eq(c.frees, 1, "past the largest class: freed at once");
	for (size_t i = 0; i < n; i++)
		cr_assert_not_null(blk[i] = gdrfab_sizepool_get(&p, 1 << 16));
	alloc_count_start();
	for (size_t i = 0; i < n; i++)
		gdrfab_sizepool_put(&p, blk[i]);
	c = alloc_count_stop();
	cr_assert_eq(c.frees, 2, "kept up to GDRFAB_SIZEPOOL_KEEP bytes");
	cr_assert_eq(gdrfab_sizepool_fini(&p), 0);
}

Test(sizepool, the_pool_keeps_at_most_its_limit_in_all)
{
	/* 4 x 1 MiB, 4 x 512 KiB and 4 x 256 KiB put back (each class
	 * within its own 4 MiB) are 7 MiB, kept whole; 8 x 128 KiB more
	 * bring the pool to its 8 MiB, and 4 x 64 KiB more would pass it:
	 * those four are freed. */
	struct gdrfab_sizepool p = {0};
	static const size_t sizes[] = {1 << 20, 1 << 19, 1 << 18, 1 << 17,
				       1 << 16};
	static const int counts[] = {4, 4, 4, 8, 4};
	void *blk[24];
	struct alloc_counts c;
	int n = 0;

	for (int k = 0; k < 5; k++)
		for (int i = 0; i < counts[k]; i++)
			cr_assert_not_null(
				blk[n++] = gdrfab_sizepool_get(&p, sizes[k]));
	alloc_count_start();
	for (int i = 0; i < n; i++)
		gdrfab_sizepool_put(&p, blk[i]);
	c = alloc_count_stop();
	cr_assert_eq(p.kept, GDRFAB_SIZEPOOL_KEEP_ALL);
	cr_assert_eq(c.frees, 4, "past 8 MiB in all: the last four freed");
	cr_assert_eq(gdrfab_sizepool_fini(&p), 0);
	cr_assert_eq(p.kept, 0);
}
