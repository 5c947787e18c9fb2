/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The host registration cache's policy: when host memory may be kept,
 * and the order of watching, registering and keeping that makes a kept
 * registration never name pages the address no longer maps.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "gdrfab.h"
#include "gdrfab_host_cache.h"
#include "gdrfab_memmon.h"

static void on_invalidate(void *ctx, uintptr_t start, uintptr_t end)
{
	gdrfab_mr_cache_invalidate(ctx, start, end);
}

static enum gdrfab_host_cache_mode mode_of(const struct gdrfab_mr_cache *c)
{
	return c->sub.ctx ? GDRFAB_HOST_CACHE_UFFD
			  : GDRFAB_HOST_CACHE_NOMONITOR;
}

void gdrfab_host_cache_init(struct gdrfab_mr_cache *cache,
			    enum gdrfab_host_cache_mode mode)
{
	static atomic_bool told;
	const char *why = NULL;

	cache->host = false;
	cache->sub = (struct gdrfab_memmon_sub){0};
	if (mode == GDRFAB_HOST_CACHE_OFF)
		why = "FI_GDRFAB_HOST_MR_CACHE=off";
	else if (!cache->enabled)
		why = "FI_GDRFAB_MR_CACHE_ENABLE=0";
	else if (mode == GDRFAB_HOST_CACHE_UFFD)
		(void)gdrfab_memmon_start(&why);
	if (why) {
		if (!atomic_exchange(&told, true))
			GDRFAB_INFO(
				FI_LOG_MR,
				"no host registration cache (%s): host memory without a descriptor is registered for each operation\n",
				why);
		return;
	}
	if (mode == GDRFAB_HOST_CACHE_NOMONITOR) {
		if (!atomic_exchange(&told, true))
			GDRFAB_WARN(
				FI_LOG_MR,
				"FI_GDRFAB_HOST_MR_CACHE=nomonitor: host registrations are cached with nothing watching for unmaps (unsafe: for tests only)\n");
		cache->host = true;
		return;
	}
	cache->sub.invalidate = on_invalidate;
	cache->sub.ctx = cache;
	gdrfab_memmon_subscribe(&cache->sub);
	cache->host = true;
}

void gdrfab_host_cache_fini(struct gdrfab_mr_cache *cache)
{
	if (cache->host && cache->sub.ctx)
		gdrfab_memmon_unsubscribe(&cache->sub);
	cache->host = false;
}

/*
 * The race between an unmap and an operation using the range, and how it
 * is closed:
 * - Whatever the monitor has read is delivered (the entries unlinked)
 *   before anyone can look up: reading, delivering and looking up all
 *   happen under the monitor's lock (gdrfab_memmon_hold).
 * - An unmap's event is queued only after the kernel has unmapped the
 *   range and released mmap_lock; in that instant another thread may
 *   map the same address anew and post from it, and the event is not
 *   there to drain yet. So a hit is also checked, under the same lock,
 *   with gdrfab_memmon_check: from before the unmap until its event has
 *   been read the kernel says an unmap is under way (CHANGING: the hit
 *   is not used, this operation registers its memory itself), and
 *   afterwards the event has been delivered; a mapping made anew at the
 *   address is not watched (UNWATCHED: the entry is dropped).
 * - A registration made now is kept only if no event was delivered
 *   between the hold before the lookup and the insertion (both under the
 *   monitor's lock), and if the range is still one watched mapping: an
 *   unmap after the watch is either counted (not kept) or delivered
 *   after the insertion (and unlinks it); an unmap before the watch left
 *   the new mapping watched and registered, which is right.
 * - An operation holding an entry when its range is unmapped keeps it
 *   (unlinked, deregistered at its put): the NIC reads or writes the
 *   old, still pinned pages, never another mapping's.
 * Nothing is deregistered or freed under the monitor's lock (the chain
 * "dead" is reaped after the release): a free could trim the heap over a
 * watched range, and its event would wait for this thread.
 */
static int get_watched(struct gdrfab_mr_cache *cache, const void *addr,
		       size_t len, int access, struct gdrfab_reg **out)
{
	struct gdrfab_reg *r, *dead = NULL;
	struct gdrfab_memmon_watch *w;
	enum gdrfab_memmon_check state = GDRFAB_MEMMON_WATCHED;
	uint64_t before;
	int ret;

	gdrfab_memmon_hold();
	before = gdrfab_memmon_events();
	r = gdrfab_mr_cache_find_host(cache, addr, len, access, &dead);
	if (r) {
		state = gdrfab_memmon_check((void *)r->start, r->len);
		if (state != GDRFAB_MEMMON_WATCHED)
			gdrfab_mr_cache_drop(cache, r, &dead);
	}
	gdrfab_memmon_release();
	gdrfab_mr_cache_reap(cache, dead);
	if (r && state == GDRFAB_MEMMON_WATCHED) {
		*out = r;
		return 0;
	}
	/* Memory the monitor cannot watch, or that is being unmapped now,
	 * is registered for this operation only. The watch comes first: an
	 * unmap between registering and watching would go unseen. */
	if (state == GDRFAB_MEMMON_CHANGING || !(w = calloc(1, sizeof(*w))))
		return gdrfab_mr_cache_make_host(cache, addr, len, access, out);
	if (gdrfab_memmon_watch(w, addr, len)) {
		free(w);
		return gdrfab_mr_cache_make_host(cache, addr, len, access, out);
	}
	ret = gdrfab_mr_cache_make_host(cache, addr, len, access, &r);
	if (ret) {
		gdrfab_memmon_unwatch(w);
		free(w);
		return ret;
	}
	r->watch = w; /* unwatched when r is destroyed */
	dead = NULL;
	gdrfab_memmon_hold();
	gdrfab_mr_cache_insert(cache, r,
			       gdrfab_memmon_events() == before &&
				       gdrfab_memmon_check(addr, len) ==
					       GDRFAB_MEMMON_WATCHED,
			       &dead);
	gdrfab_memmon_release();
	gdrfab_mr_cache_reap(cache, dead);
	*out = r;
	return 0;
}

int gdrfab_host_reg_get(struct gdrfab_mr_cache *cache, const void *addr,
			size_t len, int access, struct gdrfab_reg **out)
{
	struct gdrfab_reg *r, *dead = NULL;
	int ret;

	if (!cache->host)
		return gdrfab_mr_cache_make_host(cache, addr, len, access, out);
	if (mode_of(cache) == GDRFAB_HOST_CACHE_UFFD) {
		if (!gdrfab_memmon_active())
			return gdrfab_mr_cache_make_host(cache, addr, len,
							 access, out);
		return get_watched(cache, addr, len, access, out);
	}
	/* nomonitor: cached on trust (tests show what that breaks). */
	r = gdrfab_mr_cache_find_host(cache, addr, len, access, &dead);
	gdrfab_mr_cache_reap(cache, dead);
	if (r) {
		*out = r;
		return 0;
	}
	ret = gdrfab_mr_cache_make_host(cache, addr, len, access, &r);
	if (ret)
		return ret;
	dead = NULL;
	gdrfab_mr_cache_insert(cache, r, true, &dead);
	gdrfab_mr_cache_reap(cache, dead);
	*out = r;
	return 0;
}
