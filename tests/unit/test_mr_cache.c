/* SPDX-License-Identifier: BSD-2-Clause */
/* The registration cache with a counting backend (no NIC, no CUDA). */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "gdrfab.h"
#include "gdrfab_mr_cache.h"
#include "gpu_ptr_fixture.h"

static int regs, deregs, fail_next;

static int fake_reg(void *ctx, struct gdrfab_reg *r)
{
	(void)ctx, (void)r;
	if (fail_next) {
		fail_next--;
		return -FI_ENOSPC;
	}
	regs++;
	return 0;
}

static void fake_dereg(void *ctx, struct gdrfab_reg *r)
{
	(void)ctx, (void)r;
	deregs++;
}

static struct gdrfab_mr_cache cache;

static void open_cache(bool enabled, size_t max_size, size_t max_count)
{
	struct gdrfab_reg_backend be = {.reg = fake_reg, .dereg = fake_dereg};

	regs = deregs = fail_next = 0;
	gdrfab_mr_cache_init(&cache, &be, enabled, max_size, max_count);
}

/* An open cache and two GPU allocations, one after the other, at one
 * address: the old one's buffer ID 1, the fresh one's 2. */
static void open_with_reused_address(uintptr_t base,
				     struct gdrfab_cuda_ptr *old,
				     struct gdrfab_cuda_ptr *fresh)
{
	*old = gpu(base, 1 << 20, 1);
	*fresh = gpu(base, 1 << 20, 2);
	open_cache(true, 1 << 30, 16);
}

static struct gdrfab_reg *get(uintptr_t a, size_t len,
			      struct gdrfab_cuda_ptr *m)
{
	struct gdrfab_reg *r = NULL;

	cr_assert_eq(gdrfab_reg_get(&cache, (void *)a, len, 1, m, &r), 0);
	return r;
}

Test(mr_cache, gpu_registrations_cover_whole_64k_pages_and_are_shared)
{
	struct gdrfab_cuda_ptr m = gpu(0x7f0000000000, 1 << 20, 5);
	struct gdrfab_reg *a, *b;

	open_cache(true, 1 << 30, 16);
	a = get(0x7f0000000100, 100, &m);
	cr_assert_eq(a->start, 0x7f0000000000);
	cr_assert_eq(a->len, 65536);
	b = get(0x7f0000001000, 100, &m);
	cr_assert_eq(a, b, "same 64 KB page, same allocation: one entry");
	cr_assert_eq(regs, 1);
	gdrfab_reg_put(&cache, a);
	gdrfab_reg_put(&cache, b);
	cr_assert_eq(deregs, 0, "lazy: kept after the last user");
	cr_assert_eq(get(0x7f0000000100, 8, &m), a);
	cr_assert_eq(gdrfab_mr_cache_hits(&cache), 2);
	gdrfab_reg_put(&cache, a);
	gdrfab_mr_cache_fini(&cache);
	cr_assert_eq(deregs, 1);
}

Test(mr_cache, a_new_buffer_id_at_the_same_address_is_a_miss)
{
	struct gdrfab_cuda_ptr old, fresh;
	struct gdrfab_reg *a, *b;

	open_with_reused_address(0x10000000, &old, &fresh);
	a = get(0x10000000, 4096, &old);
	gdrfab_reg_put(&cache, a);
	b = get(0x10000000, 4096, &fresh);
	cr_assert_neq(b->mem.buffer_id, 1);
	cr_assert_eq(cache.stale, 1);
	cr_assert_eq(deregs, 1, "the stale registration is dropped");
	gdrfab_reg_put(&cache, b);
	gdrfab_mr_cache_fini(&cache);
}

Test(mr_cache, another_allocation_in_a_shared_page_is_not_stale)
{
	/* Two allocations, 4 KB each, in one 64 KB page. */
	struct gdrfab_cuda_ptr x = gpu(0x20000000, 4096, 7);
	struct gdrfab_cuda_ptr y = gpu(0x20001000, 4096, 8);
	struct gdrfab_reg *a, *b;

	open_cache(true, 1 << 30, 16);
	a = get(0x20000000, 4096, &x);
	b = get(0x20001000, 4096, &y);
	cr_assert_neq(a, b);
	cr_assert_eq(cache.stale, 0);
	cr_assert_eq(get(0x20000000, 16, &x), a, "x still cached");
	gdrfab_reg_put(&cache, a);
	gdrfab_reg_put(&cache, a);
	gdrfab_reg_put(&cache, b);
	gdrfab_mr_cache_fini(&cache);
}

Test(mr_cache, least_recently_used_is_evicted_over_the_count_limit)
{
	struct gdrfab_cuda_ptr m[3];
	struct gdrfab_reg *r[3];

	open_cache(true, 1 << 30, 2);
	for (int i = 0; i < 3; i++) {
		m[i] = gpu(0x30000000 + i * 0x100000, 65536, 10 + i);
		r[i] = get(m[i].base, 65536, &m[i]);
		gdrfab_reg_put(&cache, r[i]);
	}
	cr_assert_eq(cache.count, 2);
	cr_assert_eq(deregs, 1);
	cr_assert_eq(cache.evictions, 1);
	gdrfab_reg_put(&cache, get(m[1].base, 1, &m[1]));
	cr_assert_eq(regs, 3, "the second is still there");
	gdrfab_mr_cache_fini(&cache);
}

Test(mr_cache, out_of_resources_evicts_and_retries_once)
{
	struct gdrfab_cuda_ptr a = gpu(0x40000000, 65536, 1);
	struct gdrfab_cuda_ptr b = gpu(0x50000000, 65536, 2);
	struct gdrfab_reg *r = NULL;

	open_cache(true, 1 << 30, 16);
	gdrfab_reg_put(&cache, get(a.base, 10, &a));
	fail_next = 1;
	r = get(b.base, 10, &b);
	cr_assert_eq(deregs, 1, "the unused entry made room");
	gdrfab_reg_put(&cache, r);
	fail_next = 2;
	cr_assert_eq(gdrfab_reg_get(&cache, (void *)0x60000000, 10, 1,
				    &(struct gdrfab_cuda_ptr){
					    .kind = GDRFAB_MEM_CUDA_DEVICE,
					    .buffer_id = 3},
				    &r),
		     -FI_ENOSPC, "a second failure is the caller's");
	gdrfab_mr_cache_fini(&cache);
}

Test(mr_cache, host_memory_and_a_disabled_cache_keep_nothing)
{
	struct gdrfab_cuda_ptr m = gpu(0x70000000, 65536, 4);
	struct gdrfab_reg *r;
	char host[64];

	open_cache(true, 1 << 30, 16);
	cr_assert_eq(gdrfab_reg_get(&cache, host, sizeof(host), 1, NULL, &r),
		     0);
	gdrfab_reg_put(&cache, r);
	cr_assert_eq(deregs, 1, "host registrations are never kept");
	gdrfab_mr_cache_fini(&cache);
	open_cache(false, 1 << 30, 16);
	gdrfab_reg_put(&cache, get(m.base, 10, &m));
	cr_assert_eq(deregs, 1);
	gdrfab_mr_cache_fini(&cache);
}

/* Dropped from the cache (stale, evicted, or the cache closed) while a user
 * holds it: deregistered once, at the user's put, never before. */
Test(mr_cache, a_held_registration_outlives_the_cache_that_drops_it)
{
	struct gdrfab_cuda_ptr old, fresh;
	struct gdrfab_reg *held, *b;

	open_with_reused_address(0x20000000, &old, &fresh);
	held = get(0x20000000, 4096, &old);
	b = get(0x20000000, 4096, &fresh); /* makes held stale */
	cr_assert_eq(cache.stale, 1);
	cr_assert_eq(deregs, 0, "still held");
	gdrfab_reg_put(&cache, held);
	cr_assert_eq(deregs, 1);
	gdrfab_mr_cache_purge(&cache); /* b is held: kept */
	cr_assert_eq(deregs, 1);
	gdrfab_mr_cache_fini(&cache);
	cr_assert_eq(deregs, 1, "the cache is gone, b's holder is not");
	gdrfab_reg_put(&cache, b);
	cr_assert_eq(deregs, 2);
}
