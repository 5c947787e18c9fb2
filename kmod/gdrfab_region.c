// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Pinned GPU regions: pin, unpin, the driver's revocation callback, and
 * who frees what.
 *
 * A region's page table is returned to the driver exactly once, by whoever
 * moves its state away from LIVE first:
 *   - the owner (unpin, close) moves it to UNPINNING and calls put_pages;
 *   - the driver's callback moves it to REVOKED and calls free_page_table.
 * The owner calls put_pages only if it won, so never for a region it
 * knows revoked; the callback, whenever the driver runs it, frees the
 * table. One window stays open by design: the owner has won and is on its
 * way into put_pages when the driver revokes. Closing it would take a lock
 * held across put_pages that the callback also takes, which deadlocks
 * against the driver's own lock; so the callback instead waits until the
 * owner has reached the call, which keeps the window to a few
 * instructions, and the driver fails that put_pages (the table is gone).
 * Nothing here relies on the driver serialising the callback with
 * put_pages, which drivers R515-R535 do not.
 *
 * The region itself is freed when its last reference goes: the owner's,
 * the armed callback's and one per VMA. The callback's reference (and a
 * module reference, so that the driver never calls into an unloaded
 * module) is dropped when the callback has run, or when put_pages has
 * succeeded and the callback can no longer come.
 */
#include <linux/io.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/wait_bit.h>

#include "gdrfab_drv.h"

/* mmap offsets are handed out once and never reused across the module. */
static atomic64_t gdrfab_next_offset = ATOMIC64_INIT(0);

void gdrfab_region_get(struct gdrfab_region *r)
{
	kref_get(&r->ref);
}

static void gdrfab_region_free(struct kref *ref)
{
	struct gdrfab_region *r = container_of(ref, struct gdrfab_region, ref);

#ifdef CONFIG_X86
	if (r->wc_reserved)
		arch_io_free_memtype_wc(r->phys, r->len);
#endif
	gdrfab_file_put(r->owner);
	kfree(r);
}

void gdrfab_region_put(struct gdrfab_region *r)
{
	kref_put(&r->ref, gdrfab_region_free);
}

static u32 gdrfab_page_bytes(u32 page_size_type)
{
	switch (page_size_type) {
	case NVIDIA_P2P_PAGE_SIZE_4KB:
		return 4096;
	case NVIDIA_P2P_PAGE_SIZE_64KB:
		return 64 * 1024;
	case NVIDIA_P2P_PAGE_SIZE_128KB:
		return 128 * 1024;
	default:
		return 0;
	}
}

unsigned long gdrfab_region_pfn(const struct gdrfab_region *r, u64 off)
{
	u64 lead = r->va & (r->page_size - 1);
	u64 pos = lead + off;
	u64 idx = pos / r->page_size;

	/* r->pt is freed by a revocation, which takes map_lock for writing. */
	lockdep_assert_held(&r->map_lock);
	if (off >= r->len || idx >= r->entries)
		return 0;
	return (r->pt->pages[idx]->physical_address + pos % r->page_size) >>
	       PAGE_SHIFT;
}

/*
 * Stop all CPU access: faults that already passed the state check finish
 * (map_lock), later ones see the new state and raise SIGBUS, and the PTEs
 * already installed in any process are zapped.
 */
static void gdrfab_region_kill_mappings(struct gdrfab_region *r)
{
	/* map_lock for writing, then released: a barrier that waits out
	 * faults already past the state check (never held with f->lock). */
	down_write(&r->map_lock);
	up_write(&r->map_lock);
	/* f->lock: owner->mapping, cleared when the file is released. */
	mutex_lock(&r->owner->lock);
	if (r->owner->mapping)
		unmap_mapping_range(r->owner->mapping, r->mmap_offset, r->len,
				    1);
	mutex_unlock(&r->owner->lock);
}

/* The callback's reference goes exactly once, by whoever sets cb_state. */
static void gdrfab_region_drop_callback_ref(struct gdrfab_region *r)
{
	gdrfab_region_put(r);
	module_put(THIS_MODULE);
}

/*
 * The driver revokes the pages: the GPU memory was freed, its context
 * destroyed, or its process is exiting. Called synchronously, possibly with
 * the driver's lock held; may sleep briefly.
 */
static void gdrfab_region_revoke(void *data)
{
	struct gdrfab_region *r = data;

	if (atomic_cmpxchg(&r->cb_state, GDRFAB_CB_ARMED, GDRFAB_CB_ENTERED) !=
	    GDRFAB_CB_ARMED) {
		pr_warn_ratelimited("gdrfab: revocation callback for a region already disarmed\n");
		return;
	}
	switch (atomic_xchg(&r->state, GDRFAB_R_REVOKED)) {
	case GDRFAB_R_LIVE:
		gdrfab_region_kill_mappings(r);
		atomic64_inc(&r->owner->generation);
		pr_debug("gdrfab: region %llx+%llx revoked\n", r->va, r->len);
		break;
	case GDRFAB_R_UNPINNING:
		/*
		 * The owner decided to unpin and has zapped the mappings but
		 * may not have reached put_pages yet. Wait until it is about
		 * to (it takes nothing the driver holds to get there), so
		 * that its put_pages is, all but always, pending while this
		 * callback runs; the driver fails it, and the table is ours
		 * to free.
		 */
		wait_var_event(&r->put_started, atomic_read(&r->put_started));
		break;
	}
	nvidia_p2p_free_page_table(r->pt);
	gdrfab_region_drop_callback_ref(r);
}

static int gdrfab_region_put_pages(struct gdrfab_region *r)
{
	if (r->persistent) {
#ifdef NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API
		return nvidia_p2p_put_pages_persistent(r->va, r->pt, 0);
#else
		return -EINVAL;
#endif
	}
	return nvidia_p2p_put_pages(0, 0, r->va, r->pt);
}

/*
 * The owner is done with the region. may_put says whether this context may
 * call put_pages: only the pinning process may for a revocable pin, since
 * the driver looks the mapping up in the calling process (and, from any
 * other, would fail and leave the callback armed).
 */
static void gdrfab_region_teardown(struct gdrfab_region *r, bool may_put)
{
	int ret;

	if (!r->persistent && !may_put) {
		/*
		 * Leave the region armed: the driver revokes it when it frees
		 * the GPU memory (at the latest when the pinning process's
		 * CUDA context goes), and the callback frees the table.
		 */
		gdrfab_region_kill_mappings(r);
		gdrfab_region_put(r);
		return;
	}
	if (atomic_cmpxchg(&r->state, GDRFAB_R_LIVE, GDRFAB_R_UNPINNING) ==
	    GDRFAB_R_LIVE) {
		gdrfab_region_kill_mappings(r);
		atomic_set(&r->put_started, 1);
		wake_up_var(&r->put_started);
		ret = gdrfab_region_put_pages(r);
		if (ret && atomic_read(&r->cb_state) != GDRFAB_CB_ENTERED)
			pr_warn_ratelimited("gdrfab: put_pages of %llx+%llx failed: %d\n",
					    r->va, r->len, ret);
		else if (ret)
			pr_debug("gdrfab: put_pages lost the race with revocation\n");
		else if (atomic_cmpxchg(&r->cb_state, GDRFAB_CB_ARMED,
					GDRFAB_CB_DISARMED) == GDRFAB_CB_ARMED)
			gdrfab_region_drop_callback_ref(r);
	}
	gdrfab_region_put(r);
}

/*
 * Is the page table one we can read? Major 1 (minor >= 2, the layout the
 * GPUDirect guide documents) and major 2 (driver 580, a flags member
 * appended) share every member read here.
 */
static int gdrfab_region_check_table(struct gdrfab_region *r)
{
	struct nvidia_p2p_page_table *pt = r->pt;
	u64 lead, need, i;

	lockdep_assert_held(&r->map_lock); /* the callback may free pt */
	if (!pt)
		return -EPROTO;
	r->pt_version = pt->version;
	switch (NVIDIA_P2P_MAJOR_VERSION(pt->version)) {
	case 1:
		if (NVIDIA_P2P_MINOR_VERSION(pt->version) < 2)
			goto bad_version;
		break;
	case 2:
		break;
	default:
		goto bad_version;
	}
	r->page_size = gdrfab_page_bytes(pt->page_size);
	if (!r->page_size) {
		pr_warn("gdrfab: unknown GPU page size type %u\n", pt->page_size);
		return -EPROTO;
	}
	lead = r->va & (r->page_size - 1);
	need = DIV_ROUND_UP(lead + r->len, r->page_size);
	if (pt->entries < need || !pt->pages) {
		pr_warn("gdrfab: the driver returned %u GPU pages for %llu bytes\n",
			pt->entries, r->len);
		return -EPROTO;
	}
	r->entries = pt->entries;
	r->phys = pt->pages[0]->physical_address + lead;
	r->contiguous = true;
	for (i = 1; i < need; i++)
		if (pt->pages[i]->physical_address !=
		    pt->pages[i - 1]->physical_address + r->page_size)
			r->contiguous = false;
	return 0;

bad_version:
	pr_warn("gdrfab: unsupported NVIDIA page table version %#x\n",
		pt->version);
	return -EPROTO;
}

/*
 * Ask the platform for write-combining on the BAR range, as gdrcopy and
 * the guide's Tegra section do: on x86 with PAT a PFN mapping gets the
 * memory type reserved for its range, so without a reservation it would be
 * uncached. RAM (the test stand-in's pages) keeps its own type.
 */
static void gdrfab_region_reserve_wc(struct gdrfab_region *r)
{
	lockdep_assert_held(&r->map_lock);
	if (!r->wc)
		return;
#ifdef CONFIG_X86
	if (!r->contiguous || page_is_ram(PHYS_PFN(r->phys)))
		return;
	if (arch_io_reserve_memtype_wc(r->phys, r->len) == 0)
		r->wc_reserved = true;
	else
		pr_info_once("gdrfab: no write-combining reservation for GPU memory; CPU mappings are uncached\n");
#endif
}

static int gdrfab_region_get_pages(struct gdrfab_region *r)
{
	if (r->persistent) {
#ifdef NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API
		return nvidia_p2p_get_pages_persistent(r->va, r->len, &r->pt,
						       NVIDIA_P2P_FLAGS_DEFAULT);
#else
		return -EOPNOTSUPP;
#endif
	}
	/* Never a NULL callback: drivers from R535 refuse it. */
	return nvidia_p2p_get_pages(0, 0, r->va, r->len, &r->pt,
				    gdrfab_region_revoke, r);
}

/* Rounds [addr, addr + length) out to 64 KB; -EINVAL on zero or overflow. */
static int gdrfab_region_range(u64 addr, u64 length, u64 *va, u64 *len)
{
	u64 end;

	if (!length)
		return -EINVAL;
	if (check_add_overflow(addr, length, &end) ||
	    end > U64_MAX - (GDRFAB_GPU_PAGE_SIZE - 1))
		return -EINVAL;
	*va = round_down(addr, GDRFAB_GPU_PAGE_SIZE);
	end = round_up(end, GDRFAB_GPU_PAGE_SIZE);
	if (end > TASK_SIZE_MAX)
		return -EINVAL;
	*len = end - *va;
	return 0;
}

static int gdrfab_region_reserve(struct gdrfab_file *f, u64 len)
{
	int ret = 0;

	/* f->lock: the file's region count and pinned bytes. */
	mutex_lock(&f->lock);
	if (f->nregions >= gdrfab_max_regions ||
	    len > gdrfab_max_pinned_bytes ||
	    f->pinned_bytes > gdrfab_max_pinned_bytes - len) {
		ret = -ENOSPC;
	} else {
		f->nregions++;
		f->pinned_bytes += len;
	}
	mutex_unlock(&f->lock);
	return ret;
}

static void gdrfab_region_unreserve(struct gdrfab_file *f, u64 len)
{
	mutex_lock(&f->lock);
	f->nregions--;
	f->pinned_bytes -= len;
	mutex_unlock(&f->lock);
}

static struct gdrfab_region *gdrfab_region_new(struct gdrfab_file *f, u64 va,
					       u64 len, bool persistent)
{
	struct gdrfab_region *r = kzalloc(sizeof(*r), GFP_KERNEL);

	if (!r)
		return NULL;
	kref_init(&r->ref);
	gdrfab_file_get(f);
	r->owner = f;
	INIT_LIST_HEAD(&r->link);
	init_rwsem(&r->map_lock);
	r->va = va;
	r->len = len;
	r->persistent = persistent;
	r->wc = gdrfab_wc;
	r->mmap_offset = atomic64_fetch_add(len, &gdrfab_next_offset);
	atomic_set(&r->state, GDRFAB_R_LIVE);
	atomic_set(&r->cb_state, GDRFAB_CB_NONE);
	if (!persistent) {
		kref_get(&r->ref);
		__module_get(THIS_MODULE);
		atomic_set(&r->cb_state, GDRFAB_CB_ARMED);
	}
	return r;
}

/*
 * Validates the new table and sets the region up under map_lock: the
 * callback may run as soon as get_pages returns, and it frees the table
 * only after taking map_lock for writing.
 */
static int gdrfab_region_accept(struct gdrfab_region *r)
{
	int ret;

	/* map_lock (read): r->pt stays while we read it. */
	down_read(&r->map_lock);
	if (atomic_read(&r->state) != GDRFAB_R_LIVE) {
		ret = -EAGAIN; /* revoked already: the memory went away */
	} else {
		ret = gdrfab_region_check_table(r);
		if (!ret)
			gdrfab_region_reserve_wc(r);
	}
	up_read(&r->map_lock);
	return ret;
}

int gdrfab_region_pin(struct gdrfab_file *f, struct gdrfab_ioc_pin *arg)
{
	struct gdrfab_region *r;
	bool persistent;
	u64 va, len;
	int ret;

	if (arg->reserved || (arg->flags & ~GDRFAB_PIN_FLAGS_ALL))
		return -EINVAL;
	ret = gdrfab_region_range(arg->addr, arg->length, &va, &len);
	if (ret)
		return ret;
	ret = gdrfab_region_reserve(f, len);
	if (ret)
		return ret;
	persistent = gdrfab_persistent && !(arg->flags & GDRFAB_PIN_REVOCABLE);
#ifndef NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API
	persistent = false;
#endif
	r = gdrfab_region_new(f, va, len, persistent);
	if (!r) {
		gdrfab_region_unreserve(f, len);
		return -ENOMEM;
	}
	ret = gdrfab_region_get_pages(r);
	if (ret) {
		if (ret > 0)
			ret = -EIO;
		pr_debug("gdrfab: get_pages %llx+%llx: %d\n", va, len, ret);
		r->pt = NULL;
		if (!persistent) {
			/* No table, so the driver holds no callback. */
			atomic_set(&r->cb_state, GDRFAB_CB_DISARMED);
			gdrfab_region_drop_callback_ref(r);
		}
		gdrfab_region_put(r);
		gdrfab_region_unreserve(f, len);
		return ret;
	}
	ret = gdrfab_region_accept(r);
	if (ret) {
		gdrfab_region_teardown(r, true);
		gdrfab_region_unreserve(f, len);
		return ret;
	}

	/* f->lock: the region list and the handle counter. */
	mutex_lock(&f->lock);
	r->handle = f->next_handle++;
	list_add_tail(&r->link, &f->regions);
	mutex_unlock(&f->lock);

	arg->handle = r->handle;
	arg->mmap_offset = r->mmap_offset;
	arg->pinned_addr = va;
	arg->pinned_length = len;
	return 0;
}

/* Under f->lock (the list it walks). */
static struct gdrfab_region *gdrfab_region_find(struct gdrfab_file *f,
						u64 handle)
{
	struct gdrfab_region *r;

	lockdep_assert_held(&f->lock);
	list_for_each_entry(r, &f->regions, link)
		if (r->handle == handle)
			return r;
	return NULL;
}

int gdrfab_region_unpin(struct gdrfab_file *f, u64 handle)
{
	struct gdrfab_region *r;

	mutex_lock(&f->lock);
	r = gdrfab_region_find(f, handle);
	if (r) {
		list_del_init(&r->link);
		f->nregions--;
		f->pinned_bytes -= r->len;
	}
	mutex_unlock(&f->lock);
	if (!r)
		return -ENOENT;
	gdrfab_region_teardown(r, true);
	return 0;
}

int gdrfab_region_info(struct gdrfab_file *f, struct gdrfab_ioc_info *arg)
{
	struct gdrfab_region *r;
	int ret = 0;

	mutex_lock(&f->lock);
	r = gdrfab_region_find(f, arg->handle);
	if (!r) {
		ret = -ENOENT;
	} else {
		arg->pinned_addr = r->va;
		arg->pinned_length = r->len;
		arg->mmap_offset = r->mmap_offset;
		arg->page_size = r->page_size;
		arg->pt_version = r->pt_version;
		arg->entries = r->entries;
		arg->state = atomic_read(&r->state) == GDRFAB_R_REVOKED ?
				     GDRFAB_REGION_REVOKED :
				     GDRFAB_REGION_PINNED;
		arg->flags = (r->persistent ? GDRFAB_REGION_PERSISTENT : 0) |
			     (r->contiguous ? GDRFAB_REGION_CONTIGUOUS : 0) |
			     (r->wc ? GDRFAB_REGION_WC : 0);
		arg->reserved = 0;
	}
	arg->generation = atomic64_read(&f->generation);
	mutex_unlock(&f->lock);
	return ret;
}

/*
 * The file is closing: no VMA maps it any more (each holds the file), so
 * only the pins are left. The close may run in the owner (close(), exit)
 * or in another process that inherited the descriptor.
 */
void gdrfab_region_release_all(struct gdrfab_file *f)
{
	struct gdrfab_region *r, *tmp;
	LIST_HEAD(regions);
	bool may_put = gdrfab_file_is_owner(f);

	mutex_lock(&f->lock);
	list_splice_init(&f->regions, &regions);
	f->nregions = 0;
	f->pinned_bytes = 0;
	mutex_unlock(&f->lock);
	list_for_each_entry_safe(r, tmp, &regions, link) {
		list_del_init(&r->link);
		gdrfab_region_teardown(r, may_put);
	}
	mutex_lock(&f->lock);
	f->mapping = NULL;
	mutex_unlock(&f->lock);
}
