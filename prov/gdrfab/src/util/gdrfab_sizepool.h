/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Heap blocks kept for reuse, in power-of-two size classes from 64 B to
 * 1 MiB (issue 34: no malloc or free per message). A block handed back
 * goes on its class's free list instead of to free(), and the next get
 * of that class takes it: once a workload's peak is reached, getting and
 * putting cost a few instructions and no call into the allocator.
 *
 * What is kept is bounded: a class keeps free blocks only up to
 * GDRFAB_SIZEPOOL_KEEP bytes and the pool up to GDRFAB_SIZEPOOL_KEEP_ALL
 * (beyond, a put frees), so a burst leaves at most that much behind; blocks
 * larger than the largest class are plain malloc/free. The lists are plain
 * pointers: the owner serializes every call (an endpoint's pool under the
 * endpoint's lock).
 */
#ifndef GDRFAB_SIZEPOOL_H
#define GDRFAB_SIZEPOOL_H

#include <stddef.h>

#define GDRFAB_SIZEPOOL_MIN_SHIFT 6  /* 64 B */
#define GDRFAB_SIZEPOOL_MAX_SHIFT 20 /* 1 MiB */
#define GDRFAB_SIZEPOOL_CLASSES                                                \
	(GDRFAB_SIZEPOOL_MAX_SHIFT - GDRFAB_SIZEPOOL_MIN_SHIFT + 1)
/* Bytes of free blocks a class keeps at most, and the pool in all: after
 * a burst of large messages an endpoint (a rank) keeps at most this much
 * beyond what it uses. */
#define GDRFAB_SIZEPOOL_KEEP	 ((size_t)4 << 20)
#define GDRFAB_SIZEPOOL_KEEP_ALL ((size_t)8 << 20)

struct gdrfab_sizepool_blk;

/* Zeroed memory is an empty pool. */
struct gdrfab_sizepool {
	struct gdrfab_sizepool_blk *free[GDRFAB_SIZEPOOL_CLASSES];
	size_t nfree[GDRFAB_SIZEPOOL_CLASSES];
	size_t kept; /* bytes of the free blocks, all classes */
	size_t out;  /* blocks handed out and not yet put back */
};

/* A block of at least len bytes (aligned as malloc's), not cleared;
 * NULL when the heap has no memory for a new one. */
void *gdrfab_sizepool_get(struct gdrfab_sizepool *p, size_t len);
/* Hands back a block of this pool (NULL: nothing). */
void gdrfab_sizepool_put(struct gdrfab_sizepool *p, void *mem);
/* Frees the free blocks; those still out are the caller's bug (the
 * count is returned so that it can say so). */
size_t gdrfab_sizepool_fini(struct gdrfab_sizepool *p);

#endif /* GDRFAB_SIZEPOOL_H */
