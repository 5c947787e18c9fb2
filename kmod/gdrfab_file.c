// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The state of one open of /dev/gdrfab. It outlives the file while regions
 * pinned through it wait for the driver's revocation callback, which still
 * takes its lock and bumps its generation counter.
 */
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "gdrfab_drv.h"

struct gdrfab_file *gdrfab_file_new(void)
{
	struct gdrfab_file *f = kzalloc(sizeof(*f), GFP_KERNEL);

	if (!f)
		return NULL;
	kref_init(&f->ref);
	mutex_init(&f->lock);
	INIT_LIST_HEAD(&f->regions);
	atomic64_set(&f->generation, 0);
	f->next_handle = 1;
	/*
	 * Keep the opener's mm_struct (not its address space) so that the
	 * pointer stays unique: a process that later reuses the address can
	 * never pass for the owner.
	 */
	f->mm = current->mm;
	if (f->mm)
		mmgrab(f->mm);
	return f;
}

void gdrfab_file_get(struct gdrfab_file *f)
{
	kref_get(&f->ref);
}

static void gdrfab_file_free(struct kref *ref)
{
	struct gdrfab_file *f = container_of(ref, struct gdrfab_file, ref);

	if (f->mm)
		mmdrop(f->mm);
	mutex_destroy(&f->lock);
	kfree(f);
}

void gdrfab_file_put(struct gdrfab_file *f)
{
	kref_put(&f->ref, gdrfab_file_free);
}

/*
 * Only the process that opened the file may pin, map, query or unpin: the
 * driver resolves GPU addresses in the caller's address space (tokens are
 * 0), so another process, a forked child included, must get nothing.
 */
bool gdrfab_file_is_owner(const struct gdrfab_file *f)
{
	return f->mm && current->mm == f->mm;
}
