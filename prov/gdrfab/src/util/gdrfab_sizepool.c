/* SPDX-License-Identifier: BSD-2-Clause */
/* Heap blocks kept for reuse in size classes (gdrfab_sizepool.h). */
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>

#include "gdrfab_sizepool.h"

/* Beyond the classes: malloc'd and freed as asked. */
#define HEAP_CLASS UINT32_MAX

/* What precedes a block's bytes: its class, so that a put needs no size;
 * padded so that the bytes keep malloc's alignment. While the block is
 * free its first bytes link it into its class's list. */
struct gdrfab_sizepool_blk {
	alignas(max_align_t) uint32_t cls;
};

struct free_link {
	struct gdrfab_sizepool_blk *next;
};

/* The smallest class of at least len bytes, or HEAP_CLASS. */
static uint32_t class_of(size_t len)
{
	uint32_t shift = GDRFAB_SIZEPOOL_MIN_SHIFT;

	while (shift <= GDRFAB_SIZEPOOL_MAX_SHIFT && ((size_t)1 << shift) < len)
		shift++;
	return shift > GDRFAB_SIZEPOOL_MAX_SHIFT
		       ? HEAP_CLASS
		       : shift - GDRFAB_SIZEPOOL_MIN_SHIFT;
}

static size_t class_bytes(uint32_t cls)
{
	return (size_t)1 << (cls + GDRFAB_SIZEPOOL_MIN_SHIFT);
}

static struct free_link *link_of(struct gdrfab_sizepool_blk *b)
{
	return (struct free_link *)(b + 1);
}

void *gdrfab_sizepool_get(struct gdrfab_sizepool *p, size_t len)
{
	uint32_t cls = class_of(len);
	struct gdrfab_sizepool_blk *b;

	if (cls != HEAP_CLASS && p->free[cls]) {
		b = p->free[cls];
		p->free[cls] = link_of(b)->next;
		p->nfree[cls]--;
		p->kept -= class_bytes(cls);
	} else {
		size_t bytes = cls == HEAP_CLASS ? len : class_bytes(cls);

		if (bytes > SIZE_MAX - sizeof(*b))
			return NULL;
		b = malloc(sizeof(*b) + bytes);
		if (!b)
			return NULL;
		b->cls = cls;
	}
	p->out++;
	return b + 1;
}

void gdrfab_sizepool_put(struct gdrfab_sizepool *p, void *mem)
{
	struct gdrfab_sizepool_blk *b;
	uint32_t cls;

	if (!mem)
		return;
	b = (struct gdrfab_sizepool_blk *)mem - 1;
	cls = b->cls;
	p->out--;
	if (cls == HEAP_CLASS ||
	    (p->nfree[cls] + 1) * class_bytes(cls) > GDRFAB_SIZEPOOL_KEEP ||
	    p->kept + class_bytes(cls) > GDRFAB_SIZEPOOL_KEEP_ALL) {
		free(b);
		return;
	}
	link_of(b)->next = p->free[cls];
	p->free[cls] = b;
	p->nfree[cls]++;
	p->kept += class_bytes(cls);
}

size_t gdrfab_sizepool_fini(struct gdrfab_sizepool *p)
{
	for (uint32_t cls = 0; cls < GDRFAB_SIZEPOOL_CLASSES; cls++) {
		while (p->free[cls]) {
			struct gdrfab_sizepool_blk *b = p->free[cls];

			p->free[cls] = link_of(b)->next;
			free(b);
		}
		p->nfree[cls] = 0;
	}
	p->kept = 0;
	return p->out;
}
