/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The registration cache of a domain (GPUDirect RDMA guide, "Lazy
 * Unpinning" and "Registration Cache"). A registration of GPU memory covers
 * whole 64 KB GPU pages, so two buffers of one allocation in the same
 * 64 KB page share it; it stays registered after its last user is done
 * and is deregistered lazily, least recently used first, when the cache
 * is over its limits or when a new registration fails for lack of BAR or
 * NIC resources (then retried once). Every hit is checked against the
 * address's current CUDA buffer ID, so memory freed and reallocated at the
 * same address is never served by a stale registration.
 *
 * Host memory registered through fi_mr_reg is never kept (closing the MR
 * must revoke its keys). Host memory an operation names without a
 * descriptor is kept where a memory monitor watches it
 * (mem/gdrfab_host_cache.c): the monitor's events unlink what an unmap,
 * mremap or madvise made stale.
 *
 * The cache makes no CUDA call: the caller classifies the address first,
 * and the registration backend (which may call CUDA, for dma-buf) runs
 * with the cache lock released.
 *
 * A GPU hit is the data path's cost, so each thread remembers its last
 * hit and finds it again without the lock: it takes a reference only if
 * the entry still has one (a destroyed entry has none), then checks that
 * the entry is still cached and still the same registration of the same
 * buffer ID. Entries are never freed while their cache lives (a destroyed
 * one waits on a spare list for the next registration), so a thread's
 * stale pointer always points at some gdrfab_reg.
 */
#ifndef GDRFAB_MR_CACHE_H
#define GDRFAB_MR_CACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gdrfab_cuda_dev.h"
#include "gdrfab_list.h"
#include "gdrfab_memmon.h"

#define GDRFAB_GPU_PAGE_SIZE (64UL * 1024)

struct ibv_mr;

/* One registration of [start, start + len). */
/* Rails a registration may be made on (GDRFAB_RAILS_MAX, which hmem
 * checks): the cache keeps them, its backend makes them. */
#define GDRFAB_REG_RAILS_MAX 8

struct gdrfab_reg {
	struct ibv_mr *mr; /* rail 0's */
	/* A rail-set domain's rails 1 and on: the same memory registered
	 * on each rail's PD by the backend (NULL beyond the domain's
	 * rails). */
	struct ibv_mr *more_mr[GDRFAB_REG_RAILS_MAX - 1];
	int dmabuf_fd;	     /* -1 unless registered from a dma-buf */
	uint64_t dmabuf_off; /* where start lies in dmabuf_fd */
	uintptr_t start;
	size_t len;
	int access; /* IBV_ACCESS_* */
	struct gdrfab_cuda_ptr mem;
	struct gdrfab_memmon_watch *watch; /* host memory the monitor watches */
	_Atomic unsigned refs; /* users, and the cache while cached */
	_Atomic bool cached;   /* in the cache's list */
	/* Hit without the lock since eviction last looked: a second chance
	 * (such hits do not move the entry to the list's head). */
	_Atomic bool recent;
	struct gdrfab_list lru;	  /* most recently used first */
	struct gdrfab_reg *spare; /* next on the cache's spare list */
};

/* How registrations are made and undone: the domain's verbs calls (or a
 * test's). reg returns 0 or a negative FI_E* code; -FI_ENOSPC or
 * -FI_ENOMEM mean "out of BAR or NIC resources": the cache evicts and
 * retries once. */
struct gdrfab_reg_backend {
	int (*reg)(void *ctx, struct gdrfab_reg *reg);
	void (*dereg)(void *ctx, struct gdrfab_reg *reg);
	void *ctx;
};

struct gdrfab_mr_cache {
	pthread_mutex_t lock;
	struct gdrfab_reg_backend backend;
	bool enabled;
	size_t max_size, max_count;
	size_t size, count; /* of cached registrations */
	struct gdrfab_list lru;
	/* Unlinked by the monitor, which must not deregister: destroyed by
	 * the next application call (chained through lru.next). */
	struct gdrfab_reg *deferred;
	/* Destroyed entries, reused by the next registration, freed at fini
	 * (threads' recent hits may still point at them); closed: fini ran,
	 * so a late last put frees. */
	struct gdrfab_reg *spares;
	_Atomic bool closed;
	/* Names this cache among all that ever lived at its address, for
	 * the threads' recent hits. */
	uint64_t serial;
	/* Host memory is cached (a monitor watches it), and how. */
	bool host;
	struct gdrfab_memmon_sub sub;
	/* Statistics (for tests and the benchmark). */
	uint64_t hits, misses, evictions, stale;
	/* Hits without the lock: counted with a plain increment (no locked
	 * instruction), so two threads hitting at once may count one. */
	_Atomic uint64_t fast_hits;
	uint64_t host_hits, host_misses, host_invalidated, host_uncached;
};

void gdrfab_mr_cache_init(struct gdrfab_mr_cache *cache,
			  const struct gdrfab_reg_backend *backend,
			  bool enabled, size_t max_size, size_t max_count);
/* Deregisters everything cached; registrations still held are left to
 * their holders. */
void gdrfab_mr_cache_fini(struct gdrfab_mr_cache *cache);

/* A registration covering [addr, addr + len) with exactly this access,
 * for memory classified as mem: found, or made. 0 or a negative FI_E*. */
int gdrfab_reg_get(struct gdrfab_mr_cache *cache, const void *addr, size_t len,
		   int access, const struct gdrfab_cuda_ptr *mem,
		   struct gdrfab_reg **out);
/* GPU hits so far, with and without the lock. */
uint64_t gdrfab_mr_cache_hits(struct gdrfab_mr_cache *cache);
/* Done with a registration: kept if cached, else deregistered. */
void gdrfab_reg_put(struct gdrfab_mr_cache *cache, struct gdrfab_reg *reg);

/* Deregisters every cached registration nobody holds. */
void gdrfab_mr_cache_purge(struct gdrfab_mr_cache *cache);

struct fi_gdrfab_mr_cache_stats;
/* Its counters (FI_GDRFAB_MR_CACHE_OPS). */
void gdrfab_mr_cache_stats(struct gdrfab_mr_cache *cache,
			   struct fi_gdrfab_mr_cache_stats *out);

/* For the host cache (mem/gdrfab_host_cache.c): */
/* Deregistration is the caller's, outside any lock it holds: these hand
 * back the chain of registrations to destroy (gdrfab_mr_cache_reap). */
/* A cached registration holding [addr, addr + len) with this access,
 * referenced for the caller, or NULL. Counts a host hit or miss. */
struct gdrfab_reg *gdrfab_mr_cache_find_host(struct gdrfab_mr_cache *cache,
					     const void *addr, size_t len,
					     int access,
					     struct gdrfab_reg **dead);
/* A registration of host memory that the cache does not keep. */
int gdrfab_mr_cache_make_host(struct gdrfab_mr_cache *cache, const void *addr,
			      size_t len, int access, struct gdrfab_reg **out);
/* Keeps r (its caller's reference stays the caller's), evicting unused
 * entries beyond the limits; or, when keep is false, counts it uncached. */
void gdrfab_mr_cache_insert(struct gdrfab_mr_cache *cache, struct gdrfab_reg *r,
			    bool keep, struct gdrfab_reg **dead);
/* Drops the caller's reference to r and unlinks it: it was found stale. */
void gdrfab_mr_cache_drop(struct gdrfab_mr_cache *cache, struct gdrfab_reg *r,
			  struct gdrfab_reg **dead);
void gdrfab_mr_cache_reap(struct gdrfab_mr_cache *cache,
			  struct gdrfab_reg *dead);
/* Unlinks every host registration overlapping [start, end): later
 * lookups miss them; holders keep theirs until their put. Deregisters
 * nothing itself (the monitor's thread calls it): the next call does. */
void gdrfab_mr_cache_invalidate(struct gdrfab_mr_cache *cache, uintptr_t start,
				uintptr_t end);

#endif /* GDRFAB_MR_CACHE_H */
