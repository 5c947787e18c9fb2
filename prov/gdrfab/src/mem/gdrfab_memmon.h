/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The memory monitor: tells the host registration caches when a range of
 * the address space they registered stops holding the pages it held
 * (munmap, mremap, madvise(MADV_DONTNEED/MADV_REMOVE), brk shrinking,
 * mmap(MAP_FIXED) over it, glibc's free and realloc, which do these
 * internally). It is one userfaultfd per process, opened with the
 * non-cooperative UNMAP, REMOVE and REMAP events, and one thread that
 * reads them; mem/gdrfab_memmon.c says why and what it cannot see.
 */
#ifndef GDRFAB_MEMMON_H
#define GDRFAB_MEMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gdrfab_list.h"

/* A cache that wants to hear of invalidated ranges. invalidate runs on
 * any thread (the monitor's or one syncing), with the monitor's lock
 * held: it must not unmap or free memory (a free can trim the heap, whose
 * event would then wait for this very thread) nor log. */
struct gdrfab_memmon_sub {
	void (*invalidate)(void *ctx, uintptr_t start, uintptr_t end);
	void *ctx;
	struct gdrfab_list entry;
};

/* Starts the process's monitor once (later calls return the first
 * answer). 0, or a negative FI_E* code with *why saying why not. */
int gdrfab_memmon_start(const char **why);
/* Stops it (the provider's cleanup): every watched range is forgotten. */
void gdrfab_memmon_stop(void);
/* Whether ranges can be watched now (started, not in a forked child). */
bool gdrfab_memmon_active(void);

void gdrfab_memmon_subscribe(struct gdrfab_memmon_sub *sub);
/* After it returns, sub's invalidate is not running and will not run. */
void gdrfab_memmon_unsubscribe(struct gdrfab_memmon_sub *sub);

/* One watched range; the monitor lists them so that a range stops being
 * watched when no one needs it any more (each watched range is a mapping
 * of its own to the kernel, and its unmaps wait for the monitor). */
struct gdrfab_memmon_watch {
	struct gdrfab_list entry;
	uintptr_t start, end; /* whole pages */
};

/* Watches the pages of [addr, addr + len) for w's owner. 0, or a negative
 * FI_E* code when the kernel will not watch them (file mappings, another
 * userfaultfd's range): such memory must not be cached. */
int gdrfab_memmon_watch(struct gdrfab_memmon_watch *w, const void *addr,
			size_t len);
/* w's owner no longer needs its range: the pages no other watch covers
 * stop being watched. */
void gdrfab_memmon_unwatch(struct gdrfab_memmon_watch *w);

/* Delivers every event the kernel has queued to the subscribers, and
 * returns the number of events delivered since the start. An unmap whose
 * call has returned has been delivered once this returns. */
uint64_t gdrfab_memmon_sync(void);

/* Takes the monitor's lock, having delivered every queued event: until
 * gdrfab_memmon_release, no event is delivered, so what a cache finds
 * and checks under it stays true. Nothing under it may free or unmap
 * memory (the unmap's event would wait for this thread). */
void gdrfab_memmon_hold(void);
void gdrfab_memmon_release(void);

enum gdrfab_memmon_check {
	GDRFAB_MEMMON_WATCHED,	 /* one watched mapping, pages present */
	GDRFAB_MEMMON_UNWATCHED, /* not (all) watched: another mapping */
	GDRFAB_MEMMON_CHANGING,	 /* an unmap is under way: don't know */
};
/* Under gdrfab_memmon_hold: whether [addr, addr + len) still lies in one
 * mapping the monitor watches (a new mapping at a freed address is not
 * watched) and no unmap of a watched range is under way in the kernel. */
enum gdrfab_memmon_check gdrfab_memmon_check(const void *addr, size_t len);

/* Events delivered since the start (no syncing). */
uint64_t gdrfab_memmon_events(void);

#endif /* GDRFAB_MEMMON_H */
