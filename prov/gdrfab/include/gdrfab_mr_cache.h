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
 * Host memory is registered through the same calls but never kept: gdrfab
 * cannot see it being freed, so its invalidation would not be safe.
 *
 * The cache makes no CUDA call: the caller classifies the address first,
 * and the registration backend (which may call CUDA, for dma-buf) runs
 * with the cache lock released.
 */
#ifndef GDRFAB_MR_CACHE_H
#define GDRFAB_MR_CACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gdrfab_cuda.h"
#include "gdrfab_list.h"

#define GDRFAB_GPU_PAGE_SIZE (64UL * 1024)

struct ibv_mr;

/* One registration of [start, start + len). */
struct gdrfab_reg {
	struct ibv_mr *mr;
	int dmabuf_fd; /* -1 unless registered from a dma-buf */
	uintptr_t start;
	size_t len;
	int access; /* IBV_ACCESS_* */
	struct gdrfab_cuda_ptr mem;
	_Atomic unsigned refs;	/* users, and the cache while cached */
	bool cached;		/* in the cache's list */
	struct gdrfab_list lru; /* most recently used first */
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
	/* Statistics (for tests and the benchmark). */
	uint64_t hits, misses, evictions, stale;
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
/* Done with a registration: kept if cached, else deregistered. */
void gdrfab_reg_put(struct gdrfab_mr_cache *cache, struct gdrfab_reg *reg);

/* Deregisters every cached registration nobody holds. */
void gdrfab_mr_cache_purge(struct gdrfab_mr_cache *cache);

#endif /* GDRFAB_MR_CACHE_H */
