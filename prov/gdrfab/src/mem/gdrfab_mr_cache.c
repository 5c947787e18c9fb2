/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The registration cache: an LRU list of registrations, searched for one
 * whose range holds the request (interval containment, most recently used
 * first, so hot buffers are found at the front), validated by buffer ID.
 *
 * A cached registration holds one reference of its own besides its users'.
 * Whoever drops the last one destroys it: a user's put needs no lock (the
 * count is atomic, and only unlinking under the lock drops the cache's).
 * Each thread's recent GPU hits (the last eight registrations it hit) are
 * found again without the lock (see fast_hit and gdrfab_mr_cache.h).
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "gdrfab.h"
#include "gdrfab_mr_cache.h"
#include "gdrfab_recent.h"

/* Serials start at 1: a thread that never hit has 0. */
static _Atomic uint64_t next_serial = 1;

/* The calling thread's recent GPU hits, so that a thread alternating
 * between a few buffers (a halo exchange, double buffering) finds each
 * without the lock: per slot which cache (its address and serial, since
 * another cache may live at that address later), the entry, and what it
 * was looked up as. r is only read through a successful reference (refs
 * was not 0), then checked against this copy. The buffer IDs stand
 * apart, in one cache line, because they are what a lookup scans. */
#define RECENT_HITS 8
struct recent_hit {
	const struct gdrfab_mr_cache *cache;
	uint64_t serial;
	struct gdrfab_reg *r;
	uintptr_t start;
	size_t len;
	int access;
};
static _Thread_local struct {
	uint64_t buffer_id[RECENT_HITS];
	struct recent_hit hit[RECENT_HITS];
	struct gdrfab_recent_slots slots;
} recent;

void gdrfab_mr_cache_init(struct gdrfab_mr_cache *cache,
			  const struct gdrfab_reg_backend *backend,
			  bool enabled, size_t max_size, size_t max_count)
{
	*cache = (struct gdrfab_mr_cache){
		.backend = *backend,
		.enabled = enabled,
		.max_size = max_size,
		.max_count = max_count,
		.serial = atomic_fetch_add(&next_serial, 1),
	};
	pthread_mutex_init(&cache->lock, NULL);
	gdrfab_list_init(&cache->lru);
}

/* Takes r out of the list and drops the cache's reference; true when that
 * was the last one (the caller destroys r outside the lock). */
static bool unlink_entry(struct gdrfab_mr_cache *cache, struct gdrfab_reg *r)
{
	gdrfab_list_remove(&r->lru);
	r->cached = false;
	cache->size -= r->len;
	cache->count--;
	return atomic_fetch_sub(&r->refs, 1) == 1;
}

/* r's memory goes to the spare list, not to free(): a thread's recent hit
 * may still point at it (its refs, 0 from now on, turns that away). */
static void recycle(struct gdrfab_mr_cache *cache, struct gdrfab_reg *r)
{
	if (!atomic_load(&cache->closed)) {
		pthread_mutex_lock(&cache->lock);
		if (!atomic_load(&cache->closed)) {
			r->spare = cache->spares;
			cache->spares = r;
			r = NULL;
		}
		pthread_mutex_unlock(&cache->lock);
	}
	free(r); /* after fini: no thread may use the cache any more */
}

static void destroy(struct gdrfab_mr_cache *cache, struct gdrfab_reg *r)
{
	cache->backend.dereg(cache->backend.ctx, r);
	if (r->watch) {
		gdrfab_memmon_unwatch(r->watch);
		free(r->watch);
	}
	recycle(cache, r);
}

/* A spare entry or a new one, refs 0 (unreachable by any thread's last
 * hit until make_reg publishes it), NULL without memory. */
static struct gdrfab_reg *alloc_reg(struct gdrfab_mr_cache *cache)
{
	struct gdrfab_reg *r;

	pthread_mutex_lock(&cache->lock);
	r = cache->spares;
	if (r)
		cache->spares = r->spare;
	pthread_mutex_unlock(&cache->lock);
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (r)
			atomic_init(&r->refs, 0);
	}
	return r;
}

/* Unlinks unused entries (LRU end first) until the cache is within its
 * limits with room for one more of `extra` bytes; all of them when force.
 * Returns the victims, chained through lru, for deregistration outside
 * the lock. */
static struct gdrfab_reg *evict_locked(struct gdrfab_mr_cache *cache,
				       size_t extra, bool force)
{
	struct gdrfab_reg *victims = NULL;
	struct gdrfab_list *it = cache->lru.prev, *prev;

	for (; it != &cache->lru; it = prev) {
		struct gdrfab_reg *r =
			gdrfab_list_entry(it, struct gdrfab_reg, lru);

		prev = it->prev;
		if (!force && cache->count + 1 <= cache->max_count &&
		    cache->size + extra <= cache->max_size)
			break;
		/* An entry held by the cache alone may gain a user without
		 * the lock (a thread's recent hit), but unlink_entry's count
		 * tells: the loser of that race destroys it. */
		if (atomic_load(&r->refs) > 1)
			continue;
		if (!force && atomic_exchange(&r->recent, false)) {
			/* Hit since: to the head, as a locked hit does. */
			gdrfab_list_remove(&r->lru);
			gdrfab_list_push_head(&cache->lru, &r->lru);
			continue;
		}
		if (unlink_entry(cache, r)) {
			r->lru.next = (struct gdrfab_list *)victims;
			victims = r;
		}
		cache->evictions++;
	}
	return victims;
}

static void destroy_chain(struct gdrfab_mr_cache *cache, struct gdrfab_reg *r)
{
	while (r) {
		struct gdrfab_reg *next = (struct gdrfab_reg *)r->lru.next;

		destroy(cache, r);
		r = next;
	}
}

/* Takes what the monitor unlinked; the caller destroys it unlocked. */
static struct gdrfab_reg *take_deferred_locked(struct gdrfab_mr_cache *cache)
{
	struct gdrfab_reg *d = cache->deferred;

	cache->deferred = NULL;
	return d;
}

static void reap_deferred(struct gdrfab_mr_cache *cache)
{
	struct gdrfab_reg *d;

	pthread_mutex_lock(&cache->lock);
	d = take_deferred_locked(cache);
	pthread_mutex_unlock(&cache->lock);
	destroy_chain(cache, d);
}

static bool is_cuda(const struct gdrfab_cuda_ptr *mem)
{
	return mem && mem->kind == GDRFAB_MEM_CUDA_DEVICE;
}

/* Looks for a valid registration; unlinks stale ones (the allocation that
 * held the address is gone) into *stale. */
static struct gdrfab_reg *lookup_locked(struct gdrfab_mr_cache *cache,
					uintptr_t a, size_t len, int access,
					const struct gdrfab_cuda_ptr *mem,
					struct gdrfab_reg **stale)
{
	struct gdrfab_list *it, *tmp;

	gdrfab_list_for_each_safe (&cache->lru, it, tmp) {
		struct gdrfab_reg *r =
			gdrfab_list_entry(it, struct gdrfab_reg, lru);

		if (a < r->start || a + len > r->start + r->len)
			continue;
		if (r->mem.buffer_id != mem->buffer_id) {
			/* Another allocation sharing a 64 KB page is fine;
			 * one that held this very address was freed. */
			if (a >= r->mem.base && a < r->mem.base + r->mem.size) {
				cache->stale++;
				if (unlink_entry(cache, r)) {
					r->lru.next = (void *)*stale;
					*stale = r;
				}
			}
			continue;
		}
		if (r->access != access || r->mem.kind != mem->kind)
			continue;
		gdrfab_list_remove(&r->lru);
		gdrfab_list_push_head(&cache->lru, &r->lru);
		return r;
	}
	return NULL;
}

static int make_reg(struct gdrfab_mr_cache *cache, uintptr_t start, size_t len,
		    int access, const struct gdrfab_cuda_ptr *mem,
		    struct gdrfab_reg **out)
{
	static const struct gdrfab_cuda_ptr none;
	struct gdrfab_reg *r = alloc_reg(cache);
	int ret;

	if (!r)
		return -FI_ENOMEM;
	/* Field by field, refs (0) untouched: a thread's recent hit may be
	 * reading it. */
	r->mr = NULL;
	r->watch = NULL;
	r->start = start;
	r->len = len;
	r->access = access;
	r->dmabuf_fd = -1;
	r->mem = mem ? *mem : none;
	atomic_store(&r->cached, false);
	atomic_store(&r->recent, false);
	r->spare = NULL;
	gdrfab_list_init(&r->lru);
	ret = cache->backend.reg(cache->backend.ctx, r);
	if (ret && is_cuda(mem) && (ret == -FI_ENOSPC || ret == -FI_ENOMEM)) {
		/* Out of BAR or NIC resources: free what nobody uses and
		 * try once more, as the guide's lazy unpinning says. */
		pthread_mutex_lock(&cache->lock);
		struct gdrfab_reg *victims = evict_locked(cache, 0, true);
		pthread_mutex_unlock(&cache->lock);

		if (victims) {
			GDRFAB_INFO(
				FI_LOG_MR,
				"registration failed for lack of resources: evicted the cache, retrying\n");
			destroy_chain(cache, victims);
			ret = cache->backend.reg(cache->backend.ctx, r);
		}
	}
	if (ret) {
		recycle(cache, r);
		return ret;
	}
	/* Published: the fields above are seen by whoever takes a
	 * reference from here on. */
	atomic_store(&r->refs, 1);
	*out = r;
	return 0;
}

/* Remembers r among the calling thread's recent hits in cache: in its own
 * slot if it has one, else in the next slot round robin. */
static void remember(struct gdrfab_mr_cache *cache, struct gdrfab_reg *r)
{
	unsigned i;

	for (i = 0; i < RECENT_HITS; i++)
		if (recent.hit[i].r == r && recent.hit[i].cache == cache)
			break;
	i = gdrfab_recent_take(&recent.slots, i, RECENT_HITS);
	recent.buffer_id[i] = r->mem.buffer_id;
	recent.hit[i] = (struct recent_hit){
		.cache = cache,
		.serial = cache->serial,
		.r = r,
		.start = r->start,
		.len = r->len,
		.access = r->access,
	};
}

/* Slot i of the recent hits holds [a, a + len) of allocation id in cache
 * with this access. */
static inline bool slot_holds(const __typeof__(recent) *rh, unsigned i,
			      const struct gdrfab_mr_cache *cache, uintptr_t a,
			      size_t len, int access, uint64_t id)
{
	const struct recent_hit *h = &rh->hit[i];

	return rh->buffer_id[i] == id && h->cache == cache &&
	       h->serial == cache->serial && h->access == access &&
	       a >= h->start && a + len <= h->start + h->len;
}

/* The slot of the calling thread's recent hits that holds [a, a + len) of
 * allocation id in cache with this access, or NULL. */
static inline const struct recent_hit *
recent_slot(const struct gdrfab_mr_cache *cache, uintptr_t a, size_t len,
	    int access, uint64_t id)
{
	__typeof__(recent) *rh = &recent;
	unsigned i = rh->slots.last;

	/* The slot found last time first: one buffer used again and again
	 * pays no scan. */
	if (slot_holds(rh, i, cache, a, len, access, id))
		return &rh->hit[i];
	for (i = 0; i < RECENT_HITS; i++) {
		if (slot_holds(rh, i, cache, a, len, access, id)) {
			rh->slots.last = i;
			return &rh->hit[i];
		}
	}
	return NULL;
}

/* One of the calling thread's recent hits, if it holds [a, a + len) of
 * the same allocation with this access and is still cached: referenced
 * for the caller. No lock: the reference is taken only while refs is not
 * 0 (an entry being destroyed or recycled has 0), and what it refers to
 * is checked after, since the entry may have been recycled meanwhile.
 *
 * This is the whole of a GPU hit, so it is written for its instructions:
 * the thread-local table is reached once (in a shared library each
 * access may be a __tls_get_addr call) and the slot read into locals
 * before the compare-exchange, after which the compiler would load it
 * again; the two locked instructions (this one and gdrfab_reg_put's) are
 * all that is left of the reference. */
static inline struct gdrfab_reg *fast_hit(struct gdrfab_mr_cache *cache,
					  uintptr_t a, size_t len, int access,
					  const struct gdrfab_cuda_ptr *mem)
{
	uint64_t id = mem->buffer_id;
	const struct recent_hit *h = recent_slot(cache, a, len, access, id);
	struct gdrfab_reg *r;
	uintptr_t start;
	size_t rlen;
	unsigned refs;

	if (!h)
		return NULL;
	r = h->r;
	start = h->start;
	rlen = h->len;
	refs = atomic_load_explicit(&r->refs, memory_order_relaxed);
	do {
		if (!refs)
			return NULL;
	} while (!atomic_compare_exchange_weak_explicit(
		&r->refs, &refs, refs + 1, memory_order_acquire,
		memory_order_relaxed));
	/* Acquire: what make_reg wrote before publishing refs is seen. */
	if (!atomic_load_explicit(&r->cached, memory_order_relaxed) ||
	    r->start != start || r->len != rlen || r->access != access ||
	    r->mem.kind != mem->kind || r->mem.buffer_id != id) {
		gdrfab_reg_put(cache, r);
		return NULL;
	}
	if (!atomic_load_explicit(&r->recent, memory_order_relaxed))
		atomic_store_explicit(&r->recent, true, memory_order_relaxed);
	/* A plain increment: a locked one would cost what the lock did. */
	atomic_store_explicit(
		&cache->fast_hits,
		atomic_load_explicit(&cache->fast_hits, memory_order_relaxed) +
			1,
		memory_order_relaxed);
	return r;
}

uint64_t gdrfab_mr_cache_hits(struct gdrfab_mr_cache *cache)
{
	uint64_t h;

	pthread_mutex_lock(&cache->lock);
	h = cache->hits + atomic_load(&cache->fast_hits);
	pthread_mutex_unlock(&cache->lock);
	return h;
}

/* Links r in, most recently used; returns the evicted, to destroy. */
static struct gdrfab_reg *insert_locked(struct gdrfab_mr_cache *cache,
					struct gdrfab_reg *r)
{
	struct gdrfab_reg *victims = evict_locked(cache, r->len, false);

	atomic_fetch_add(&r->refs, 1); /* the cache's */
	r->cached = true;
	gdrfab_list_push_head(&cache->lru, &r->lru);
	cache->size += r->len;
	cache->count++;
	return victims;
}

/* Everything but the thread's recent hits: out of line, so that the hit
 * saves no registers for it. */
static __attribute__((noinline)) int
reg_get_slow(struct gdrfab_mr_cache *cache, const void *addr, size_t len,
	     int access, const struct gdrfab_cuda_ptr *mem,
	     struct gdrfab_reg **out)
{
	uintptr_t a = (uintptr_t)addr, start = a;
	struct gdrfab_reg *r, *stale = NULL, *victims;
	size_t rlen = len;
	int ret;

	if (is_cuda(mem)) {
		/* Whole 64 KB GPU pages: what the BAR maps anyway. */
		start = a & ~(GDRFAB_GPU_PAGE_SIZE - 1);
		rlen = ((a + len + GDRFAB_GPU_PAGE_SIZE - 1) &
			~(GDRFAB_GPU_PAGE_SIZE - 1)) -
		       start;
	}
	if (!is_cuda(mem) || !cache->enabled)
		return make_reg(cache, start, rlen, access, mem, out);

	pthread_mutex_lock(&cache->lock);
	r = lookup_locked(cache, a, len, access, mem, &stale);
	if (r) {
		atomic_fetch_add(&r->refs, 1);
		cache->hits++;
		remember(cache, r);
	} else {
		cache->misses++;
	}
	victims = take_deferred_locked(cache);
	pthread_mutex_unlock(&cache->lock);
	destroy_chain(cache, victims);
	destroy_chain(cache, stale);
	if (r) {
		*out = r;
		return 0;
	}

	ret = make_reg(cache, start, rlen, access, mem, &r);
	if (ret)
		return ret;
	pthread_mutex_lock(&cache->lock);
	victims = insert_locked(cache, r);
	remember(cache, r);
	pthread_mutex_unlock(&cache->lock);
	destroy_chain(cache, victims);
	*out = r;
	return 0;
}

int gdrfab_reg_get(struct gdrfab_mr_cache *cache, const void *addr, size_t len,
		   int access, const struct gdrfab_cuda_ptr *mem,
		   struct gdrfab_reg **out)
{
	struct gdrfab_reg *r;

	if (is_cuda(mem) && cache->enabled) {
		r = fast_hit(cache, (uintptr_t)addr, len, access, mem);
		if (r) {
			*out = r;
			return 0;
		}
	}
	return reg_get_slow(cache, addr, len, access, mem, out);
}

void gdrfab_reg_put(struct gdrfab_mr_cache *cache, struct gdrfab_reg *reg)
{
	if (reg && atomic_fetch_sub(&reg->refs, 1) == 1)
		destroy(cache, reg);
}

/* Chains b's registrations after a's. */
static struct gdrfab_reg *chain(struct gdrfab_reg *a, struct gdrfab_reg *b)
{
	struct gdrfab_reg *last = a;

	if (!a)
		return b;
	while (last->lru.next)
		last = (struct gdrfab_reg *)last->lru.next;
	last->lru.next = (struct gdrfab_list *)b;
	return a;
}

struct gdrfab_reg *gdrfab_mr_cache_find_host(struct gdrfab_mr_cache *cache,
					     const void *addr, size_t len,
					     int access,
					     struct gdrfab_reg **dead)
{
	static const struct gdrfab_cuda_ptr host = {.kind = GDRFAB_MEM_HOST};
	struct gdrfab_reg *r, *stale = NULL;

	pthread_mutex_lock(&cache->lock);
	r = lookup_locked(cache, (uintptr_t)addr, len, access, &host, &stale);
	if (r) {
		atomic_fetch_add(&r->refs, 1);
		cache->host_hits++;
	} else {
		cache->host_misses++;
	}
	*dead = chain(*dead, chain(stale, take_deferred_locked(cache)));
	pthread_mutex_unlock(&cache->lock);
	return r;
}

int gdrfab_mr_cache_make_host(struct gdrfab_mr_cache *cache, const void *addr,
			      size_t len, int access, struct gdrfab_reg **out)
{
	return make_reg(cache, (uintptr_t)addr, len, access, NULL, out);
}

void gdrfab_mr_cache_insert(struct gdrfab_mr_cache *cache, struct gdrfab_reg *r,
			    bool keep, struct gdrfab_reg **dead)
{
	pthread_mutex_lock(&cache->lock);
	if (keep)
		*dead = chain(*dead, insert_locked(cache, r));
	else
		cache->host_uncached++;
	pthread_mutex_unlock(&cache->lock);
}

void gdrfab_mr_cache_drop(struct gdrfab_mr_cache *cache, struct gdrfab_reg *r,
			  struct gdrfab_reg **dead)
{
	pthread_mutex_lock(&cache->lock);
	/* The caller's reference cannot be the last while it is cached. */
	if (r->cached) {
		cache->host_invalidated++;
		cache->host_hits--;
		cache->host_misses++;
		(void)unlink_entry(cache, r);
	}
	pthread_mutex_unlock(&cache->lock);
	if (atomic_fetch_sub(&r->refs, 1) == 1) {
		r->lru.next = (struct gdrfab_list *)*dead;
		*dead = r;
	}
}

void gdrfab_mr_cache_reap(struct gdrfab_mr_cache *cache,
			  struct gdrfab_reg *dead)
{
	destroy_chain(cache, dead);
}

void gdrfab_mr_cache_invalidate(struct gdrfab_mr_cache *cache, uintptr_t start,
				uintptr_t end)
{
	struct gdrfab_list *it, *tmp;

	pthread_mutex_lock(&cache->lock);
	gdrfab_list_for_each_safe (&cache->lru, it, tmp) {
		struct gdrfab_reg *r =
			gdrfab_list_entry(it, struct gdrfab_reg, lru);

		if (r->mem.kind == GDRFAB_MEM_CUDA_DEVICE || r->start >= end ||
		    r->start + r->len <= start)
			continue;
		cache->host_invalidated++;
		/* In use: unlinked, so no lookup finds it again, and
		 * deregistered by its holder's put (the operation under way
		 * still reads or writes the pages it pinned, never another
		 * mapping's). */
		if (unlink_entry(cache, r)) {
			r->lru.next = (struct gdrfab_list *)cache->deferred;
			cache->deferred = r;
		}
	}
	pthread_mutex_unlock(&cache->lock);
}

void gdrfab_mr_cache_purge(struct gdrfab_mr_cache *cache)
{
	struct gdrfab_reg *victims;

	reap_deferred(cache);
	pthread_mutex_lock(&cache->lock);
	victims = evict_locked(cache, 0, true);
	pthread_mutex_unlock(&cache->lock);
	destroy_chain(cache, victims);
}

void gdrfab_mr_cache_fini(struct gdrfab_mr_cache *cache)
{
	struct gdrfab_list *it, *tmp;
	struct gdrfab_reg *last = NULL;

	gdrfab_mr_cache_purge(cache);
	/* Held ones are freed by their last put. */
	pthread_mutex_lock(&cache->lock);
	gdrfab_list_for_each_safe (&cache->lru, it, tmp) {
		struct gdrfab_reg *r =
			gdrfab_list_entry(it, struct gdrfab_reg, lru);

		/* Purged above unless held: the holder's put frees it
		 * (or, had the holder just put it, this). */
		if (unlink_entry(cache, r)) {
			r->lru.next = (struct gdrfab_list *)last;
			last = r;
		}
	}
	pthread_mutex_unlock(&cache->lock);
	destroy_chain(cache, last);
	reap_deferred(cache);
	pthread_mutex_lock(&cache->lock);
	atomic_store(&cache->closed, true);
	last = cache->spares;
	cache->spares = NULL;
	pthread_mutex_unlock(&cache->lock);
	while (last) {
		struct gdrfab_reg *next = last->spare;

		free(last);
		last = next;
	}
	/* The lock stays usable: a held registration's last put may come
	 * after this (recycle then frees without taking it). */
}

void gdrfab_mr_cache_stats(struct gdrfab_mr_cache *cache,
			   struct fi_gdrfab_mr_cache_stats *out)
{
	pthread_mutex_lock(&cache->lock);
	*out = (struct fi_gdrfab_mr_cache_stats){
		.hits = cache->hits + atomic_load(&cache->fast_hits),
		.misses = cache->misses,
		.evictions = cache->evictions,
		.stale = cache->stale,
		.host_hits = cache->host_hits,
		.host_misses = cache->host_misses,
		.host_invalidated = cache->host_invalidated,
		.host_uncached = cache->host_uncached,
		.entries = cache->count,
		.bytes = cache->size,
		.host_cached = cache->host,
	};
	pthread_mutex_unlock(&cache->lock);
}
