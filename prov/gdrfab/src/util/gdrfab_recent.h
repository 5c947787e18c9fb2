/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A thread's small table of recent lookups, kept without a lock: the
 * registration cache's hits (mem/gdrfab_mr_cache.c) and the allocations
 * the CUDA classification met (hmem/gdrfab_cuda_ptr.c). The tables hold
 * their own entries; this says which slot a new entry takes (round robin)
 * and which one was found last, so that a buffer used again and again is
 * looked at first.
 */
#ifndef GDRFAB_RECENT_H
#define GDRFAB_RECENT_H

struct gdrfab_recent_slots {
	unsigned next; /* the slot a new entry takes */
	unsigned last; /* the slot found or written last */
};

/* The slot to write an entry into, out of n: found when the entry
 * already has one (found < n), else the next round robin. It becomes the
 * last one. */
static inline unsigned gdrfab_recent_take(struct gdrfab_recent_slots *s,
					  unsigned found, unsigned n)
{
	if (found >= n) {
		found = s->next;
		s->next = (found + 1) % n;
	}
	s->last = found;
	return found;
}

#endif /* GDRFAB_RECENT_H */
