/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The host registration cache: host memory that an operation names
 * without a descriptor (or with one that has no usable registration) is
 * registered once and found again in the domain's registration cache,
 * kept correct by the memory monitor (gdrfab_memmon.h). Where the
 * monitor cannot run, each operation registers its memory itself.
 */
#ifndef GDRFAB_HOST_CACHE_H
#define GDRFAB_HOST_CACHE_H

#include <stddef.h>

#include "gdrfab_mr_cache.h"

/* FI_GDRFAB_HOST_MR_CACHE. */
enum gdrfab_host_cache_mode {
	GDRFAB_HOST_CACHE_UFFD,	     /* cached, watched by userfaultfd */
	GDRFAB_HOST_CACHE_OFF,	     /* registered per operation */
	GDRFAB_HOST_CACHE_NOMONITOR, /* cached, unwatched: unsafe, tests only */
};

/* Turns host caching on for cache where mode and the monitor allow it;
 * says once per process, at info level, why not. */
void gdrfab_host_cache_init(struct gdrfab_mr_cache *cache,
			    enum gdrfab_host_cache_mode mode);
/* Before gdrfab_mr_cache_fini: stops hearing the monitor. */
void gdrfab_host_cache_fini(struct gdrfab_mr_cache *cache);

/* A registration of host memory [addr, addr + len) with exactly this
 * access, from the cache or made now (and kept if it can be); released
 * with gdrfab_reg_put. 0 or a negative FI_E* code. */
int gdrfab_host_reg_get(struct gdrfab_mr_cache *cache, const void *addr,
			size_t len, int access, struct gdrfab_reg **out);

#endif /* GDRFAB_HOST_CACHE_H */
