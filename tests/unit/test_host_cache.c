/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The host registration cache and its userfaultfd monitor, with a backend
 * that "pins" a buffer by remembering its first 8 bytes (no NIC): a
 * registration made from another mapping's pages remembers other bytes,
 * so a stale hit shows as a wrong token. Skips where userfaultfd is
 * refused (containers' seccomp filters often refuse it).
 */
#include <criterion/criterion.h>
#include <infiniband/verbs.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gdrfab.h"
#include "gdrfab_host_cache.h"
#include "gdrfab_memmon.h"

#define MB (1UL << 20)

static atomic_int regs, deregs;

/* The "registration": the token the buffer held when it was pinned. */
static int fake_reg(void *ctx, struct gdrfab_reg *r)
{
	struct ibv_mr *mr = calloc(1, sizeof(*mr));

	(void)ctx;
	if (!mr)
		return -FI_ENOMEM;
	memcpy(&mr->handle, (void *)r->start, sizeof(mr->handle));
	r->mr = mr;
	atomic_fetch_add(&regs, 1);
	return 0;
}

static void fake_dereg(void *ctx, struct gdrfab_reg *r)
{
	(void)ctx;
	free(r->mr);
	atomic_fetch_add(&deregs, 1);
}

static struct gdrfab_mr_cache cache;

/* Tests of what glibc's allocator does skip under AddressSanitizer, whose
 * allocator keeps freed blocks mapped in its quarantine. */
#if defined(__SANITIZE_ADDRESS__)
#define SKIP_UNDER_ASAN()                                                      \
	cr_skip_test("AddressSanitizer's allocator does not unmap on free")
#else
#define SKIP_UNDER_ASAN() (void)0
#endif

static void open_cache(enum gdrfab_host_cache_mode mode, size_t max_count)
{
	struct gdrfab_reg_backend be = {.reg = fake_reg, .dereg = fake_dereg};
	const char *why = NULL;

	if (mode == GDRFAB_HOST_CACHE_UFFD && gdrfab_memmon_start(&why))
		cr_skip_test("no userfaultfd monitor here: %s", why);
	atomic_store(&regs, 0);
	atomic_store(&deregs, 0);
	gdrfab_mr_cache_init(&cache, &be, true, 1UL << 40, max_count);
	gdrfab_host_cache_init(&cache, mode);
}

static void close_cache(void)
{
	gdrfab_host_cache_fini(&cache);
	gdrfab_mr_cache_fini(&cache);
}

static uint32_t token_of(const struct gdrfab_reg *r)
{
	return r->mr->handle;
}

static void put_token(void *p, uint32_t t)
{
	memcpy(p, &t, sizeof(t));
}

/* Looks buf up and checks the registration holds its current token;
 * returns whether it was a hit. */
static bool use(void *buf, size_t len)
{
	uint64_t hits = cache.host_hits;
	struct gdrfab_reg *r = NULL;
	uint32_t now;

	cr_assert_eq(gdrfab_host_reg_get(&cache, buf, len, 1, &r), 0);
	memcpy(&now, (void *)r->start, sizeof(now));
	cr_assert_eq(token_of(r), now,
		     "stale registration: token %u, memory now holds %u",
		     token_of(r), now);
	gdrfab_reg_put(&cache, r);
	return cache.host_hits != hits;
}

static void *map(void *at, size_t len, uint32_t token)
{
	void *p =
		mmap(at, len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0);

	cr_assert_neq(p, MAP_FAILED);
	put_token(p, token);
	return p;
}

/* Invalidations seen so far, after delivering what is queued. */
static uint64_t invalidated(void)
{
	gdrfab_memmon_sync();
	return cache.host_invalidated;
}

/* malloc'd memory, token 1, used once through a monitored cache (the
 * allocator's own unmaps are what the tests after it watch for). */
static char *malloc_and_use(size_t len)
{
	char *p;

	SKIP_UNDER_ASAN();
	open_cache(GDRFAB_HOST_CACHE_UFFD, 1024);
	p = malloc(len);
	cr_assert(p);
	put_token(p, 1);
	use(p, len);
	return p;
}

TestSuite(host_cache, .fini = close_cache);

Test(host_cache, second_use_hits)
{
	void *p;

	open_cache(GDRFAB_HOST_CACHE_UFFD, 1024);
	p = map(NULL, MB, 1);
	cr_assert(!use(p, MB));
	cr_assert(use(p, MB));
	cr_assert(use((char *)p + 4096, 8192), "a sub-range hits too");
	cr_assert_eq(atomic_load(&regs), 1);
	munmap(p, MB);
}

Test(host_cache, munmap_then_mmap_at_the_same_address_misses)
{
	void *p;

	open_cache(GDRFAB_HOST_CACHE_UFFD, 1024);
	p = map(NULL, MB, 1);
	use(p, MB);
	cr_assert_eq(munmap(p, MB), 0);
	cr_assert_eq(invalidated(), 1);
	map(p, MB, 2);
	cr_assert(!use(p, MB), "the new mapping is registered anew");
	cr_assert_eq(atomic_load(&deregs), 1);
	munmap(p, MB);
}

Test(host_cache, large_malloc_free_malloc)
{
	size_t len = 8 * MB; /* above the mmap threshold: free unmaps */
	char *p, *q;

	p = malloc_and_use(len);
	free(p);
	cr_assert_geq(invalidated(), 1, "glibc's free unmapped it unseen");
	q = malloc(len);
	cr_assert(q);
	put_token(q, 2);
	cr_assert(!use(q, len));
	free(q);
}

Test(host_cache, mremap_that_moves)
{
	char *p, *q, *target;

	open_cache(GDRFAB_HOST_CACHE_UFFD, 1024);
	p = map(NULL, MB, 1);
	target = map(NULL, MB, 0);
	use(p, MB);
	q = mremap(p, MB, MB, MREMAP_MAYMOVE | MREMAP_FIXED, target);
	cr_assert_eq(q, target);
	cr_assert_eq(invalidated(), 1);
	map(p, MB, 2);
	cr_assert(!use(p, MB));
	cr_assert(!use(q, MB), "the moved range was not cached there");
	munmap(p, MB);
	munmap(q, MB);
}

Test(host_cache, madvise_dontneed)
{
	uint32_t *p;

	open_cache(GDRFAB_HOST_CACHE_UFFD, 1024);
	p = map(NULL, MB, 1);
	use(p, MB);
	cr_assert_eq(madvise(p, MB, MADV_DONTNEED), 0);
	cr_assert_eq(invalidated(), 1);
	/* The zapped pages fault normally again: zero, then writable. */
	cr_assert_eq(p[0], 0);
	cr_assert_eq(p[MB / 4 - 1], 0);
	put_token(p, 3);
	cr_assert(!use(p, MB));
	munmap(p, MB);
}

Test(host_cache, realloc_that_moves)
{
	size_t len = 4 * MB, ps = (size_t)sysconf(_SC_PAGESIZE);
	char *p, *q, *end, *block;

	p = malloc_and_use(len);
	/* A page right after the chunk keeps mremap from growing it in
	 * place, so realloc moves it. */
	end = (char *)(((uintptr_t)p + len + ps - 1) & ~(ps - 1));
	block = mmap(end, ps, PROT_READ,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	q = realloc(p, 16 * len);
	cr_assert(q);
	cr_assert_neq(q, p, "realloc did not move");
	cr_assert_geq(invalidated(), 1);
	put_token(q, 2);
	cr_assert(!use(q, len));
	free(q);
	if (block != MAP_FAILED)
		munmap(block, ps);
}

Test(host_cache, brk_shrink)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), len = MB;
	char *old, *buf;

	open_cache(GDRFAB_HOST_CACHE_UFFD, 1024);
	/* malloc's own heap growth must not land in our range. */
	mallopt(M_MMAP_THRESHOLD, 64 * 1024);
	free(malloc(256 * 1024));
	old = sbrk(0);
	cr_assert_neq(sbrk((intptr_t)(len + ps)), (void *)-1);
	buf = (char *)(((uintptr_t)old + ps - 1) & ~(ps - 1));
	put_token(buf, 1);
	use(buf, len);
	if (sbrk(0) != old + len + ps)
		cr_skip_test("malloc moved the break meanwhile");
	cr_assert_neq(sbrk(-(intptr_t)(len + ps)), (void *)-1);
	cr_assert_eq(invalidated(), 1);
}

Test(host_cache, partial_munmap_in_the_middle)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	char *p;

	open_cache(GDRFAB_HOST_CACHE_UFFD, 1024);
	p = map(NULL, 16 * ps, 1);
	put_token(p + 14 * ps, 14);
	use(p, 2 * ps);		  /* B: the first two pages */
	use(p + 14 * ps, 2 * ps); /* C: the last two */
	use(p, 16 * ps);	  /* A: all */
	cr_assert_eq(atomic_load(&regs), 3);
	cr_assert_eq(munmap(p + 7 * ps, 2 * ps), 0);
	cr_assert_eq(invalidated(), 1, "only A overlaps the hole");
	cr_assert(use(p, 2 * ps));
	cr_assert(use(p + 14 * ps, 2 * ps));
	cr_assert(!use(p, 4 * ps), "A is gone");
	munmap(p, 16 * ps);
}

Test(host_cache, an_entry_in_use_is_deregistered_by_its_last_user)
{
	struct gdrfab_reg *r;
	char *p;

	open_cache(GDRFAB_HOST_CACHE_UFFD, 1024);
	p = map(NULL, MB, 1);
	cr_assert_eq(gdrfab_host_reg_get(&cache, p, MB, 1, &r), 0);
	munmap(p, MB);
	cr_assert_eq(invalidated(), 1);
	cr_assert_eq(atomic_load(&deregs), 0, "deregistered under its user");
	cr_assert_eq(token_of(r), 1);
	gdrfab_reg_put(&cache, r);
	cr_assert_eq(atomic_load(&deregs), 1);
}

/* A range nobody caches any more stops being watched (its unmaps no
 * longer wait for the monitor), but not the pages another entry covers. */
Test(host_cache, ranges_are_unwatched_when_no_entry_needs_them)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	uint64_t events;
	char *p;

	open_cache(GDRFAB_HOST_CACHE_UFFD, 1);
	p = map(NULL, 16 * ps, 1);
	use(p, 4 * ps); /* A: pages 0-3 */
	put_token(p + 2 * ps, 2);
	use(p + 2 * ps, 6 * ps); /* B: pages 2-7; evicts A (max 1) */
	cr_assert_eq(cache.evictions, 1);
	events = gdrfab_memmon_sync();
	cr_assert_eq(munmap(p, ps), 0); /* page 0: A's alone */
	cr_assert_eq(gdrfab_memmon_sync(), events, "page 0 is still watched");
	cr_assert_eq(munmap(p + 3 * ps, ps), 0); /* page 3: B's too */
	cr_assert_eq(gdrfab_memmon_sync(), events + 1);
	cr_assert(!use(p + 2 * ps, ps), "B was dropped");
	gdrfab_mr_cache_purge(&cache);
	events = gdrfab_memmon_sync();
	cr_assert_eq(munmap(p + ps, 15 * ps), 0);
	cr_assert_eq(gdrfab_memmon_sync(), events, "nothing is watched now");
}

Test(host_cache, bounded_by_count_least_recently_used_first)
{
	char *p[3];

	open_cache(GDRFAB_HOST_CACHE_UFFD, 2);
	for (int i = 0; i < 3; i++) {
		p[i] = map(NULL, MB, (uint32_t)i);
		use(p[i], MB);
	}
	cr_assert_eq(cache.count, 2);
	cr_assert_eq(cache.evictions, 1);
	cr_assert(!use(p[0], MB), "the oldest was evicted");
	for (int i = 0; i < 3; i++)
		munmap(p[i], MB);
}

Test(host_cache, off_registers_each_time)
{
	char *p;

	open_cache(GDRFAB_HOST_CACHE_OFF, 1024);
	cr_assert(!cache.host);
	p = map(NULL, MB, 1);
	cr_assert(!use(p, MB));
	cr_assert(!use(p, MB));
	cr_assert_eq(atomic_load(&regs), 2);
	cr_assert_eq(atomic_load(&deregs), 2);
	munmap(p, MB);
}

/* A forked child shares the parent's userfaultfd but has no monitor
 * thread: it registers per operation and caches nothing. */
Test(host_cache, a_forked_child_caches_nothing)
{
	int status;
	pid_t pid;
	char *p;

	open_cache(GDRFAB_HOST_CACHE_UFFD, 1024);
	p = map(NULL, MB, 1);
	use(p, MB);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		struct gdrfab_reg *r;
		int bad = gdrfab_memmon_active();

		for (int i = 0; i < 2 && !bad; i++) {
			bad = gdrfab_host_reg_get(&cache, p, MB, 1, &r) ||
			      r->cached;
			if (!bad)
				gdrfab_reg_put(&cache, r);
		}
		_exit(bad);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && !WEXITSTATUS(status));
	cr_assert(use(p, MB), "the parent still hits");
	munmap(p, MB);
}

/* What the monitor prevents: without it, the remapped address is served
 * the old mapping's registration. */
Test(host_cache, without_a_monitor_a_stale_registration_is_served)
{
	struct gdrfab_reg *r;
	char *p;

	open_cache(GDRFAB_HOST_CACHE_NOMONITOR, 1024);
	p = map(NULL, MB, 1);
	use(p, MB);
	munmap(p, MB);
	map(p, MB, 2);
	cr_assert_eq(gdrfab_host_reg_get(&cache, p, MB, 1, &r), 0);
	cr_assert_eq(token_of(r), 1, "the stale token, as expected");
	gdrfab_reg_put(&cache, r);
	munmap(p, MB);
}

/* Threads that map, use, and unmap buffers of one size, so that the
 * kernel hands each one addresses the others just unmapped, while they
 * all look up in one cache: no lookup may return a registration of
 * another mapping. */
#define THREADS 4
#define ROUNDS	1500

static atomic_uint next_token = 1;
static atomic_int stale, failed;

/* Criterion's asserts belong to the test's thread: these count. */
static void use_counting(char *p, size_t len, uint32_t token)
{
	struct gdrfab_reg *r;

	if (gdrfab_host_reg_get(&cache, p, len, 1, &r)) {
		atomic_fetch_add(&failed, 1);
		return;
	}
	if (token_of(r) != token)
		atomic_fetch_add(&stale, 1);
	gdrfab_reg_put(&cache, r);
}

static void *churn(void *arg)
{
	size_t len = 64 * 1024;

	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		uint32_t token = atomic_fetch_add(&next_token, 1);
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			atomic_fetch_add(&failed, 1);
			break;
		}
		put_token(p, token);
		use_counting(p, len, token);
		if (i % 3)
			use_counting(p, len, token);
		munmap(p, len);
	}
	return NULL;
}

Test(host_cache, concurrent_lookups_and_unmaps, .timeout = 120)
{
	pthread_t t[THREADS];

	open_cache(GDRFAB_HOST_CACHE_UFFD, 64);
	for (int i = 0; i < THREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, churn, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(atomic_load(&failed), 0);
	cr_assert_eq(atomic_load(&stale), 0, "%d stale registrations served",
		     atomic_load(&stale));
	invalidated();
	cr_log_info(
		"hits %lu misses %lu invalidated %lu uncached %lu evicted %lu",
		(unsigned long)cache.host_hits,
		(unsigned long)cache.host_misses,
		(unsigned long)cache.host_invalidated,
		(unsigned long)cache.host_uncached,
		(unsigned long)cache.evictions);
	cr_assert_gt(cache.host_invalidated, 0);
	cr_assert_gt(cache.host_hits, 0);
}
