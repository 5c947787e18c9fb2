/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * gdrfab.ko internals: the per-open-file state and the pinned regions.
 *
 * Locking, outermost first:
 *   mmap_lock (held by the mm core around mmap and faults)
 *   gdrfab_file.lock (mutex: the region list, the counts, the mapping)
 *   gdrfab_region.map_lock (rwsem: faults read, revocation writes)
 *   i_mmap_rwsem (taken by unmap_mapping_range)
 * The NVIDIA driver calls the revocation callback holding a lock of its own
 * and the callback takes gdrfab_file.lock and map_lock, so neither is ever
 * held while gdrfab calls into the driver.
 */
#ifndef GDRFAB_DRV_H
#define GDRFAB_DRV_H

#include <linux/atomic.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/types.h>

#ifdef GDRFAB_USE_NV_P2P_H
#include <nv-p2p.h>
#else
#include "gdrfab_nv_p2p.h"
#endif
#include "gdrfab/gdrfab_ioctl.h"

/*
 * Locks, and their order. f->lock (a mutex) covers a file's region list,
 * its counts, next_handle and mapping; it may be taken under the mm's
 * mmap_lock (mmap) and takes i_mmap_rwsem inside (unmap_mapping_range).
 * r->map_lock (an rw_semaphore) keeps a region's page table and state
 * still: faults and setup read it, a revocation writes
 * it. No path holds f->lock and map_lock together. Functions that need a
 * lock held say so with lockdep_assert_held().
 */

/* One open of /dev/gdrfab. Freed when the file and its regions are gone. */
struct gdrfab_file {
	struct kref ref;
	struct mm_struct *mm; /* the opener's; pinned with mmgrab() */
	struct mutex lock;
	struct list_head regions;
	/* for revocation to zap PTEs; NULL once the file is released */
	struct address_space *mapping;
	u64 next_handle;
	u64 pinned_bytes;
	u32 nregions;
	atomic64_t generation; /* regions revoked by the driver so far */
};

/* Who tears a region's page table down: see gdrfab_region.c. */
enum gdrfab_region_state {
	GDRFAB_R_LIVE,      /* pinned; faults may map it */
	GDRFAB_R_UNPINNING, /* the owner is returning it with put_pages */
	GDRFAB_R_REVOKED,   /* the driver's callback took it back */
};

enum gdrfab_cb_state {
	GDRFAB_CB_NONE,     /* persistent pin: no callback */
	GDRFAB_CB_ARMED,    /* the driver may still call it */
	GDRFAB_CB_ENTERED,  /* it ran (or runs) */
	GDRFAB_CB_DISARMED, /* put_pages succeeded first: it never will */
};

struct gdrfab_region {
	/*
	 * One reference for the owner (dropped by unpin or close), one for an
	 * armed callback (dropped when it runs or is disarmed), one per VMA.
	 */
	struct kref ref;
	struct gdrfab_file *owner; /* holds a reference on it */
	struct list_head link;     /* in owner->regions, under owner->lock */
	u64 handle;
	u64 va;          /* 64 KB-aligned GPU address */
	u64 len;         /* 64 KB multiple */
	u64 mmap_offset; /* unique across the module, never reused */
	struct nvidia_p2p_page_table *pt; /* valid while state is LIVE */
	u32 page_size;   /* bytes, from pt */
	u32 pt_version;
	u32 entries;
	bool persistent;
	bool contiguous;
	bool wc;
	bool wc_reserved; /* a WC memtype reservation covers [phys, +len) */
	u64 phys;         /* first byte, when contiguous */
	atomic_t state;   /* enum gdrfab_region_state */
	atomic_t cb_state; /* enum gdrfab_cb_state */
	atomic_t put_started; /* the owner is about to call put_pages */
	struct rw_semaphore map_lock;
};

/* Module parameters (gdrfab_main.c). */
extern bool gdrfab_persistent;
extern bool gdrfab_wc;
extern unsigned long gdrfab_max_pinned_bytes;
extern unsigned int gdrfab_max_regions;

/* gdrfab_file.c */
struct gdrfab_file *gdrfab_file_new(void);
void gdrfab_file_get(struct gdrfab_file *f);
void gdrfab_file_put(struct gdrfab_file *f);
bool gdrfab_file_is_owner(const struct gdrfab_file *f);

/* gdrfab_region.c */
int gdrfab_region_pin(struct gdrfab_file *f, struct gdrfab_ioc_pin *arg);
int gdrfab_region_unpin(struct gdrfab_file *f, u64 handle);
int gdrfab_region_info(struct gdrfab_file *f, struct gdrfab_ioc_info *arg);
void gdrfab_region_release_all(struct gdrfab_file *f);
void gdrfab_region_get(struct gdrfab_region *r);
void gdrfab_region_put(struct gdrfab_region *r);
/* The pfn behind byte off of the region, or 0 when out of range. */
unsigned long gdrfab_region_pfn(const struct gdrfab_region *r, u64 off);

/* gdrfab_vma.c */
int gdrfab_vma_mmap(struct gdrfab_file *f, struct vm_area_struct *vma);

#endif /* GDRFAB_DRV_H */
