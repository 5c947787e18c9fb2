/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The registration cache's lock-free hit (each thread's recent hits): it
 * must never hand out an entry that was dropped, recycled for another
 * buffer, or registered for another allocation at the same address.
 * A counting backend stands in for the NIC, buffer IDs for CUDA.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "gdrfab.h"
#include "gdrfab_mr_cache.h"
#include "gpu_ptr_fixture.h"

static _Atomic int regs, deregs;

/* r->mr marks a registration as live (a test's stand-in for the NIC's):
 * whoever holds one checks that it was not undone under it. */
static int count_reg(void *ctx, struct gdrfab_reg *r)
{
	(void)ctx;
	r->mr = (struct ibv_mr *)&regs;
	atomic_fetch_add(&regs, 1);
	return 0;
}

static void count_dereg(void *ctx, struct gdrfab_reg *r)
{
	(void)ctx;
	/* A registration is undone once, by whoever dropped its last
	 * reference: never while anybody still holds it. */
	cr_assert_eq(atomic_load(&r->refs), 0);
	r->mr = NULL;
	atomic_fetch_add(&deregs, 1);
}

static struct gdrfab_mr_cache cache;

static void open_cache(size_t max_count)
{
	struct gdrfab_reg_backend be = {.reg = count_reg, .dereg = count_dereg};

	atomic_store(&regs, 0);
	atomic_store(&deregs, 0);
	gdrfab_mr_cache_init(&cache, &be, true, 1ULL << 40, max_count);
}

static struct gdrfab_reg *get(uintptr_t a, size_t len,
			      const struct gdrfab_cuda_ptr *m)
{
	struct gdrfab_reg *r = NULL;

	cr_assert_eq(gdrfab_reg_get(&cache, (void *)a, len, 1, m, &r), 0);
	return r;
}

Test(mr_cache_fast, a_repeated_hit_takes_no_lock_and_counts)
{
	struct gdrfab_cuda_ptr m = gpu(0x100000000, 1 << 20, 9);
	struct gdrfab_reg *a;

	open_cache(16);
	a = get(m.base, 4096, &m);
	gdrfab_reg_put(&cache, a);
	for (int i = 0; i < 10; i++) {
		struct gdrfab_reg *b = get(m.base + 100, 200, &m);

		cr_assert_eq(b, a);
		gdrfab_reg_put(&cache, b);
	}
	cr_assert_eq(atomic_load(&cache.fast_hits), 10,
		     "every hit after the first miss is the thread's last");
	cr_assert_eq(cache.hits, 0);
	cr_assert_eq(gdrfab_mr_cache_hits(&cache), 10);
	cr_assert_eq(atomic_load(&a->refs), 1, "only the cache's is left");
	gdrfab_mr_cache_fini(&cache);
	cr_assert_eq(atomic_load(&deregs), 1);
}

/* Freed and allocated again at the same address: a new buffer ID. The
 * thread's last hit is the old registration; it must not be served. */
Test(mr_cache_fast, a_reallocation_at_the_same_address_never_hits_stale)
{
	struct gdrfab_cuda_ptr old = gpu(0x200000000, 1 << 20, 21);
	struct gdrfab_cuda_ptr fresh = gpu(0x200000000, 1 << 20, 22);
	struct gdrfab_reg *a, *b;

	open_cache(16);
	a = get(old.base, 4096, &old);
	gdrfab_reg_put(&cache, a);
	b = get(fresh.base, 4096, &fresh);
	cr_assert_eq(b->mem.buffer_id, 22);
	cr_assert_eq(cache.stale, 1, "the old entry was found stale");
	cr_assert_eq(atomic_load(&cache.fast_hits), 0);
	gdrfab_reg_put(&cache, b);
	/* The old ID again (a test's lie: CUDA never reuses one): its entry
	 * is gone, whatever the thread remembered. */
	b = get(old.base, 4096, &old);
	cr_assert_eq(atomic_load(&regs), 3);
	gdrfab_reg_put(&cache, b);
	gdrfab_mr_cache_fini(&cache);
	cr_assert_eq(atomic_load(&deregs), 3);
}

/* The remembered entry is destroyed and its memory reused, by another
 * thread, for another registration: this thread's last hit still names
 * the old one and must see that the entry changed, be it another
 * allocation's or another 64 KB page of the same allocation. */
static struct gdrfab_cuda_ptr z_alloc;
static uintptr_t z_addr;

static void *register_z(void *arg)
{
	*(struct gdrfab_reg **)arg = get(z_addr, 10, &z_alloc);
	return NULL;
}

static void recycled_for(struct gdrfab_cuda_ptr z, uintptr_t z_at)
{
	struct gdrfab_cuda_ptr x = gpu(0x300000000, 1 << 20, 31);
	struct gdrfab_reg *a, *b = NULL, *c;
	pthread_t t;

	z_alloc = z;
	z_addr = z_at;
	open_cache(16);
	a = get(x.base, 10, &x); /* this thread's last hit */
	gdrfab_reg_put(&cache, a);
	gdrfab_mr_cache_purge(&cache); /* a destroyed: a spare */
	cr_assert_eq(atomic_load(&deregs), 1);
	pthread_create(&t, NULL, register_z, &b);
	pthread_join(t, NULL);
	cr_assert_eq(b, a, "the spare was reused for z");
	c = get(x.base, 10, &x);
	cr_assert_neq(c, b, "x's last hit now holds z: not served");
	cr_assert_eq(c->mem.buffer_id, 31);
	cr_assert_eq(c->start, x.base);
	cr_assert_eq(b->mem.buffer_id, z.buffer_id);
	cr_assert_eq(b->start, z_at);
	cr_assert_eq(atomic_load(&b->refs), 2, "z's user and the cache");
	cr_assert_eq(atomic_load(&cache.fast_hits), 0);
	gdrfab_reg_put(&cache, b);
	gdrfab_reg_put(&cache, c);
	gdrfab_mr_cache_fini(&cache);
	cr_assert_eq(atomic_load(&deregs), 3);
}

Test(mr_cache_fast, a_recycled_entry_is_not_mistaken_for_the_old_one)
{
	recycled_for(gpu(0x310000000, 65536, 33), 0x310000000);
}

Test(mr_cache_fast, a_recycled_entry_of_another_page_is_not_the_old_one)
{
	/* x's own allocation (ID 31), its third 64 KB page. */
	recycled_for(gpu(0x300000000, 1 << 20, 31), 0x300020000);
}

/* Evicted while remembered: the next use is a miss, not a hit on an
 * entry whose registration is gone. A hot entry, hit without the lock,
 * is not evicted before colder ones. */
Test(mr_cache_fast, eviction_turns_the_last_hit_away_and_spares_hot_ones)
{
	struct gdrfab_cuda_ptr m[3];
	struct gdrfab_reg *r;

	open_cache(2);
	for (int i = 0; i < 3; i++)
		m[i] = gpu(0x400000000 + i * 0x1000000, 65536, 40 + i);
	gdrfab_reg_put(&cache, get(m[0].base, 1, &m[0]));
	gdrfab_reg_put(&cache, get(m[1].base, 1, &m[1]));
	/* Both remembered by this thread: hits without the lock. */
	gdrfab_reg_put(&cache, get(m[0].base, 1, &m[0]));
	gdrfab_reg_put(&cache, get(m[0].base, 1, &m[0]));
	cr_assert_eq(atomic_load(&cache.fast_hits), 2);
	/* m[1] is the least recently used: the third evicts it. */
	gdrfab_reg_put(&cache, get(m[2].base, 1, &m[2]));
	cr_assert_eq(atomic_load(&deregs), 1);
	gdrfab_reg_put(&cache, get(m[0].base, 1, &m[0]));
	cr_assert_eq(atomic_load(&regs), 3, "m[0] survived");
	gdrfab_mr_cache_purge(&cache); /* m[0], the last hit, is gone */
	r = get(m[0].base, 1, &m[0]);
	cr_assert_eq(atomic_load(&regs), 4, "a miss after the purge");
	cr_assert(atomic_load(&r->cached));
	gdrfab_reg_put(&cache, r);
	gdrfab_mr_cache_fini(&cache);
	cr_assert_eq(atomic_load(&deregs), atomic_load(&regs));
}

/* A thread alternating between up to eight buffers hits each without the
 * lock; a ninth takes the slot of the one remembered longest, which is
 * then found under the lock again (and remembered anew). */
Test(mr_cache_fast, eight_buffers_in_turn_are_hit_without_the_lock)
{
	struct gdrfab_cuda_ptr m[9];

	open_cache(16);
	for (int i = 0; i < 9; i++)
		m[i] = gpu(0x600000000 + i * 0x1000000, 65536, 200 + i);
	for (int i = 0; i < 8; i++)
		gdrfab_reg_put(&cache, get(m[i].base, 64, &m[i]));
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < 8; i++)
			gdrfab_reg_put(&cache, get(m[i].base + 128, 64, &m[i]));
	cr_assert_eq(atomic_load(&cache.fast_hits), 24);
	cr_assert_eq(cache.hits, 0, "none found under the lock");
	gdrfab_reg_put(&cache, get(m[8].base, 64, &m[8])); /* replaces m[0] */
	gdrfab_reg_put(&cache, get(m[0].base, 64, &m[0]));
	cr_assert_eq(cache.hits, 1, "m[0] found under the lock");
	gdrfab_reg_put(&cache, get(m[0].base, 64, &m[0]));
	cr_assert_eq(atomic_load(&cache.fast_hits), 25, "then remembered");
	cr_assert_eq(atomic_load(&regs), 9);
	gdrfab_mr_cache_fini(&cache);
	cr_assert_eq(atomic_load(&deregs), atomic_load(&regs));
}

/* Threads hit their own buffers while another keeps purging and
 * re-registering: every registration handed out is of the buffer asked
 * for and still registered (count_dereg checks no holder is left). */
enum { THREADS = 4, ROUNDS = 20000 };
static _Atomic bool stop;

static void *hitter(void *arg)
{
	uintptr_t k = (uintptr_t)arg;
	struct gdrfab_cuda_ptr m =
		gpu(0x500000000 + k * 0x1000000, 1 << 20, 100 + k);

	for (int i = 0; i < ROUNDS; i++) {
		struct gdrfab_reg *r = get(m.base + (i % 16) * 64, 64, &m);

		cr_assert_eq(r->mem.buffer_id, m.buffer_id);
		cr_assert_geq(atomic_load(&r->refs), 1);
		cr_assert(r->mr, "handed out deregistered");
		gdrfab_reg_put(&cache, r);
	}
	return NULL;
}

static void *purger(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		gdrfab_mr_cache_purge(&cache);
	return NULL;
}

Test(mr_cache_fast, threads_hitting_while_another_purges)
{
	pthread_t t[THREADS], p;

	open_cache(3); /* fewer than the threads: evictions too */
	atomic_store(&stop, false);
	pthread_create(&p, NULL, purger, NULL);
	for (uintptr_t k = 0; k < THREADS; k++)
		pthread_create(&t[k], NULL, hitter, (void *)k);
	for (int k = 0; k < THREADS; k++)
		pthread_join(t[k], NULL);
	atomic_store(&stop, true);
	pthread_join(p, NULL);
	cr_log_info("regs %d, fast hits %lu, locked hits %lu\n",
		    atomic_load(&regs),
		    (unsigned long)atomic_load(&cache.fast_hits),
		    (unsigned long)cache.hits);
	gdrfab_mr_cache_fini(&cache);
	cr_assert_eq(atomic_load(&deregs), atomic_load(&regs));
}

/* Registrations got on some threads (the thread's last hit, most of
 * them) and put on others, as completions reaped by another thread are,
 * while one purges: a held registration is never undone, and every one
 * is undone once at the end. */
enum { PAIRS = 2, HANDOFFS = 20000 };
static struct gdrfab_reg *_Atomic mailbox[PAIRS];

static void *getter(void *arg)
{
	uintptr_t k = (uintptr_t)arg;
	struct gdrfab_cuda_ptr m =
		gpu(0x600000000 + k * 0x1000000, 1 << 20, 200 + k);

	for (int i = 0; i < HANDOFFS; i++) {
		struct gdrfab_reg *r = get(m.base + (i % 2) * 4096, 64, &m);

		cr_assert(r->mr, "handed out deregistered");
		if (i % 3) { /* a third put here, the rest there */
			while (atomic_load(&mailbox[k]))
				sched_yield();
			atomic_store(&mailbox[k], r);
		} else {
			gdrfab_reg_put(&cache, r);
		}
	}
	while (atomic_load(&mailbox[k]))
		sched_yield();
	return NULL;
}

static void *putter(void *arg)
{
	uintptr_t k = (uintptr_t)arg;

	while (!atomic_load(&stop) || atomic_load(&mailbox[k])) {
		struct gdrfab_reg *r = atomic_exchange(&mailbox[k], NULL);

		if (r) {
			cr_assert(r->mr, "held, yet deregistered");
			gdrfab_reg_put(&cache, r);
		} else {
			sched_yield();
		}
	}
	return NULL;
}

Test(mr_cache_fast, registrations_put_on_other_threads_while_one_purges)
{
	pthread_t g[PAIRS], q[PAIRS], p;

	open_cache(2);
	atomic_store(&stop, false);
	pthread_create(&p, NULL, purger, NULL);
	for (uintptr_t k = 0; k < PAIRS; k++) {
		pthread_create(&q[k], NULL, putter, (void *)k);
		pthread_create(&g[k], NULL, getter, (void *)k);
	}
	for (int k = 0; k < PAIRS; k++)
		pthread_join(g[k], NULL);
	atomic_store(&stop, true);
	for (int k = 0; k < PAIRS; k++)
		pthread_join(q[k], NULL);
	pthread_join(p, NULL);
	gdrfab_mr_cache_fini(&cache);
	cr_assert_eq(atomic_load(&deregs), atomic_load(&regs));
}
