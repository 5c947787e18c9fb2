// SPDX-License-Identifier: GPL-2.0
/*
 * nvp2p_standin.ko: a test-only stand-in for the NVIDIA driver's p2p
 * kernel API, for machines without an NVIDIA GPU (the CI VM). It exports
 * nvidia_p2p_get_pages/put_pages/free_page_table and the persistent pair,
 * declared exactly as the driver declares them, and checks that its caller
 * keeps the driver's rules: a WARN (which fails the tests' dmesg check)
 * marks put_pages of an unknown table, put_pages from a process other than
 * the pinning one, a callback that does not free
 * its table, free_page_table outside a callback, a NULL callback, and
 * tables left at unload.
 *
 * Backing (module parameter "backing"):
 *   private  each table gets its own zeroed 64 KB chunks; freed chunks are
 *            poisoned with 0x5a and quarantined, so a stale CPU mapping
 *            reads poison instead of another user's data;
 *   process  the calling process's own pages at the address, 4 KB GPU
 *            pages (a memfd mapping is read through its file even when
 *            PROT_NONE, as the CUDA stand-in maps "device" memory), so the
 *            CUDA stand-in and gdrfab.ko see the same bytes.
 *
 * debugfs nvp2p_standin/:
 *   revoke         write "all" or a hex address, then optionally a delay in
 *                  ms slept inside the driver lock before the callback
 *   fail_next_get  write an errno for the next get_pages to return
 *   stats          counters, one "name value" per line
 */
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched/mm.h>
#include <linux/shmem_fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "gdrfab_nv_p2p.h"

static char *backing = "private";
module_param(backing, charp, 0444);
MODULE_PARM_DESC(backing, "private (poisoned own pages) or process (the caller's pages)");

static uint table_major = 2;
module_param(table_major, uint, 0444);
MODULE_PARM_DESC(table_major, "Page table major version to report: 1 (0x00010002), 2 (driver 580) or any other to test rejection");

#define STANDIN_CHUNK (64 * 1024)
#define STANDIN_QUARANTINE_MAX 1024 /* chunks: 64 MiB */
#define STANDIN_GRAVEYARD_MAX 4096
#define STANDIN_POISON 0x5a

struct standin_table {
	struct nvidia_p2p_page_table pt; /* what the caller sees */
	struct list_head link;           /* live tables, then the graveyard */
	struct mm_struct *mm;
	u64 va, len;
	void (*callback)(void *data);
	void *data;
	bool persistent;
	bool in_callback;   /* free_page_table is allowed now */
	bool freed_in_cb;   /* the callback did free it */
	long revoked_seq;   /* when its callback returned */
	struct nvidia_p2p_page *page_structs;
	struct page **backing_pages; /* private: chunks; process: 4 KB pages */
	bool *pinned;                /* process: pinned (vs page-cache ref) */
};

struct standin_chunk {
	struct list_head link;
	struct page *page;
};

/* The "driver lock": held around callbacks and by put_pages. */
static DEFINE_MUTEX(standin_lock);
static LIST_HEAD(standin_live);
static LIST_HEAD(standin_graveyard);
static LIST_HEAD(standin_quarantine);
static unsigned int standin_graveyard_len, standin_quarantine_len;
static atomic_long_t standin_seq = ATOMIC_LONG_INIT(0);
static int standin_fail_next;
static struct dentry *standin_dir;

static struct {
	long gets, puts, revoked, violations, live;
	long put_during_callback, put_after_callback;
} stats;

static bool standin_process_backed(void)
{
	return !strcmp(backing, "process");
}

static void standin_violation(const char *what)
{
	stats.violations++;
	WARN(1, "nvp2p_standin: contract violation: %s\n", what);
}

static void standin_quarantine_chunk(struct page *page)
{
	struct standin_chunk *c = kmalloc(sizeof(*c), GFP_KERNEL);

	memset(page_address(page), STANDIN_POISON, STANDIN_CHUNK);
	if (!c) {
		__free_pages(page, get_order(STANDIN_CHUNK));
		return;
	}
	c->page = page;
	list_add_tail(&c->link, &standin_quarantine);
	if (++standin_quarantine_len > STANDIN_QUARANTINE_MAX) {
		c = list_first_entry(&standin_quarantine, struct standin_chunk,
				     link);
		list_del(&c->link);
		standin_quarantine_len--;
		__free_pages(c->page, get_order(STANDIN_CHUNK));
		kfree(c);
	}
}

/* Returns the backing to the system; the table struct stays. Locked. */
static void standin_release_backing(struct standin_table *t)
{
	u32 i;

	if (!t->backing_pages)
		return;
	for (i = 0; i < t->pt.entries; i++) {
		struct page *p = t->backing_pages[i];

		if (!p)
			continue;
		if (!standin_process_backed())
			standin_quarantine_chunk(p);
		else if (t->pinned[i])
			unpin_user_page(p);
		else
			put_page(p);
	}
	kfree(t->backing_pages);
	kfree(t->pinned);
	kfree(t->pt.pages);
	kfree(t->page_structs);
	t->backing_pages = NULL;
	t->pinned = NULL;
	t->pt.pages = NULL;
	t->page_structs = NULL;
	stats.live--;
}

static void standin_table_free(struct standin_table *t)
{
	standin_release_backing(t);
	if (t->mm)
		mmdrop(t->mm);
	kfree(t);
}

/* The pages the CUDA stand-in and the caller see at addr. */
static int standin_process_page(u64 addr, struct page **page, bool *pinned)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	struct address_space *mapping = NULL;
	pgoff_t index = 0;
	int ret;

	mmap_read_lock(mm);
	vma = vma_lookup(mm, addr);
	if (vma && vma->vm_file && shmem_mapping(vma->vm_file->f_mapping)) {
		mapping = vma->vm_file->f_mapping;
		index = vma->vm_pgoff + ((addr - vma->vm_start) >> PAGE_SHIFT);
	}
	mmap_read_unlock(mm);
	if (!vma)
		return -EINVAL;
	if (mapping) {
		*page = shmem_read_mapping_page(mapping, index);
		*pinned = false;
		return IS_ERR(*page) ? PTR_ERR(*page) : 0;
	}
	ret = pin_user_pages_fast(addr, 1, FOLL_WRITE | FOLL_LONGTERM, page);
	*pinned = true;
	return ret == 1 ? 0 : (ret < 0 ? ret : -EFAULT);
}

static int standin_fill(struct standin_table *t)
{
	bool process = standin_process_backed();
	u32 size = process ? PAGE_SIZE : STANDIN_CHUNK;
	u32 n = t->len / size, i;
	int ret;

	t->pt.page_size = process ? NVIDIA_P2P_PAGE_SIZE_4KB :
				    NVIDIA_P2P_PAGE_SIZE_64KB;
	t->page_structs = kcalloc(n, sizeof(*t->page_structs), GFP_KERNEL);
	t->pt.pages = kcalloc(n, sizeof(*t->pt.pages), GFP_KERNEL);
	t->backing_pages = kcalloc(n, sizeof(*t->backing_pages), GFP_KERNEL);
	t->pinned = kcalloc(n, sizeof(*t->pinned), GFP_KERNEL);
	t->pt.entries = n;
	if (!t->page_structs || !t->pt.pages || !t->backing_pages || !t->pinned)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct page *p;

		if (process) {
			ret = standin_process_page(t->va + (u64)i * size, &p,
						   &t->pinned[i]);
			if (ret)
				return ret;
		} else {
			p = alloc_pages(GFP_KERNEL | __GFP_ZERO,
					get_order(STANDIN_CHUNK));
			if (!p)
				return -ENOMEM;
		}
		t->backing_pages[i] = p;
		t->page_structs[i].physical_address = page_to_phys(p);
		t->pt.pages[i] = &t->page_structs[i];
	}
	return 0;
}

static int standin_get(u64 va, u64 len, struct nvidia_p2p_page_table **out,
		       void (*cb)(void *), void *data, bool persistent)
{
	struct standin_table *t;
	int ret;

	if (!out)
		return -EINVAL;
	if (!IS_ALIGNED(va, STANDIN_CHUNK) || !len ||
	    !IS_ALIGNED(len, STANDIN_CHUNK)) {
		/* The driver refuses these; gdrfab.ko must round first. */
		standin_violation("unaligned get_pages");
		return -EINVAL;
	}
	mutex_lock(&standin_lock);
	ret = standin_fail_next;
	standin_fail_next = 0;
	mutex_unlock(&standin_lock);
	if (ret)
		return -ret;

	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->pt.version = table_major == 1 ? 0x00010002 : (table_major << 16);
	t->pt.flags = 0;
	t->va = va;
	t->len = len;
	t->callback = cb;
	t->data = data;
	t->persistent = persistent;
	t->mm = current->mm;
	if (t->mm)
		mmgrab(t->mm);
	ret = t->mm ? standin_fill(t) : -EINVAL;
	mutex_lock(&standin_lock);
	if (t->backing_pages)
		stats.live++; /* standin_release_backing() counts it down */
	if (ret) {
		standin_table_free(t);
	} else {
		list_add_tail(&t->link, &standin_live);
		stats.gets++;
		*out = &t->pt;
	}
	mutex_unlock(&standin_lock);
	return ret;
}

int nvidia_p2p_get_pages(u64 p2p_token, u32 va_space, u64 virtual_address,
			 u64 length, struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data)
{
	if (p2p_token || va_space)
		return -EINVAL;
	if (!free_callback) {
		standin_violation("NULL free_callback (refused since R535)");
		return -EINVAL;
	}
	return standin_get(virtual_address, length, page_table, free_callback,
			   data, false);
}
EXPORT_SYMBOL_GPL(nvidia_p2p_get_pages);

int nvidia_p2p_get_pages_persistent(u64 virtual_address, u64 length,
				    struct nvidia_p2p_page_table **page_table,
				    u32 flags)
{
	if (flags)
		return -EINVAL;
	return standin_get(virtual_address, length, page_table, NULL, NULL,
			   true);
}
EXPORT_SYMBOL_GPL(nvidia_p2p_get_pages_persistent);

static struct standin_table *standin_find(struct list_head *list,
					  struct nvidia_p2p_page_table *pt)
{
	struct standin_table *t;

	list_for_each_entry(t, list, link)
		if (&t->pt == pt)
			return t;
	return NULL;
}

static int standin_put(u64 va, struct nvidia_p2p_page_table *pt,
		       bool persistent)
{
	/* Taken before the lock: a callback returning later raced us. */
	long called = atomic_long_inc_return(&standin_seq);
	struct standin_table *t;
	int ret = 0;

	mutex_lock(&standin_lock);
	t = standin_find(&standin_live, pt);
	if (!t) {
		t = standin_find(&standin_graveyard, pt);
		/*
		 * A revoked table: the driver fails the call. Issued while
		 * the callback ran is the race no caller can close (it may
		 * not hold, across put_pages, a lock the callback takes);
		 * issued after the callback returned is a caller that did
		 * not look: the tests check that count where it is certain.
		 */
		if (!t)
			standin_violation("put_pages of an unknown page table");
		else if (called > t->revoked_seq)
			stats.put_after_callback++;
		else
			stats.put_during_callback++;
		if (t) {
			list_del(&t->link);
			standin_graveyard_len--;
			standin_table_free(t);
		}
		ret = -EINVAL;
	} else if (t->persistent != persistent || t->va != va) {
		standin_violation("put_pages with the wrong call or address");
		ret = -EINVAL;
	} else if (!persistent && current->mm != t->mm) {
		/* The driver would not find the mapping: callback stays armed. */
		standin_violation("put_pages from another process");
		ret = -EINVAL;
	} else {
		list_del(&t->link);
		standin_table_free(t);
		stats.puts++;
	}
	mutex_unlock(&standin_lock);
	return ret;
}

int nvidia_p2p_put_pages(u64 p2p_token, u32 va_space, u64 virtual_address,
			 struct nvidia_p2p_page_table *page_table)
{
	return standin_put(virtual_address, page_table, false);
}
EXPORT_SYMBOL_GPL(nvidia_p2p_put_pages);

int nvidia_p2p_put_pages_persistent(u64 virtual_address,
				    struct nvidia_p2p_page_table *page_table,
				    u32 flags)
{
	return standin_put(virtual_address, page_table, true);
}
EXPORT_SYMBOL_GPL(nvidia_p2p_put_pages_persistent);

/* Called by the callback with standin_lock held (by the revoker). */
int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table)
{
	struct standin_table *t =
		container_of(page_table, struct standin_table, pt);

	if (!page_table || !t->in_callback || t->freed_in_cb) {
		standin_violation("free_page_table outside its callback or twice");
		return -EINVAL;
	}
	t->freed_in_cb = true;
	return 0;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_free_page_table);

/* Locked. The GPU memory behind t goes away, as on cuMemFree. */
static void standin_revoke_one(struct standin_table *t, unsigned int delay_ms)
{
	list_del(&t->link);
	t->in_callback = true;
	if (delay_ms)
		msleep(delay_ms);
	t->callback(t->data);
	t->in_callback = false;
	t->revoked_seq = atomic_long_inc_return(&standin_seq);
	if (!t->freed_in_cb)
		standin_violation("callback returned without free_page_table");
	/* The pages go now; the struct waits for a pending put_pages. */
	standin_release_backing(t);
	stats.revoked++;
	list_add_tail(&t->link, &standin_graveyard);
	if (++standin_graveyard_len > STANDIN_GRAVEYARD_MAX) {
		t = list_first_entry(&standin_graveyard, struct standin_table,
				     link);
		list_del(&t->link);
		standin_graveyard_len--;
		standin_table_free(t);
	}
}

static ssize_t standin_revoke_write(struct file *file, const char __user *ubuf,
				    size_t count, loff_t *ppos)
{
	struct standin_table *t, *tmp;
	char buf[64], what[32];
	unsigned int delay = 0;
	u64 va = 0;
	bool all;
	int n;

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = 0;
	n = sscanf(buf, "%31s %u", what, &delay);
	if (n < 1)
		return -EINVAL;
	all = !strcmp(what, "all");
	if (!all && kstrtou64(what, 16, &va))
		return -EINVAL;
	mutex_lock(&standin_lock);
	list_for_each_entry_safe(t, tmp, &standin_live, link) {
		if (t->persistent)
			continue; /* persistent pages are never revoked */
		if (all || (va >= t->va && va - t->va < t->len))
			standin_revoke_one(t, delay);
	}
	mutex_unlock(&standin_lock);
	return count;
}

static const struct file_operations standin_revoke_fops = {
	.owner = THIS_MODULE,
	.write = standin_revoke_write,
	.llseek = noop_llseek,
};

static ssize_t standin_fail_write(struct file *file, const char __user *ubuf,
				  size_t count, loff_t *ppos)
{
	int err, ret = kstrtoint_from_user(ubuf, count, 10, &err);

	if (ret)
		return ret;
	if (err < 0 || err > 4095)
		return -EINVAL;
	mutex_lock(&standin_lock);
	standin_fail_next = err;
	mutex_unlock(&standin_lock);
	return count;
}

static const struct file_operations standin_fail_fops = {
	.owner = THIS_MODULE,
	.write = standin_fail_write,
	.llseek = noop_llseek,
};

static int standin_stats_show(struct seq_file *m, void *unused)
{
	mutex_lock(&standin_lock);
	seq_printf(m, "gets %ld\nputs %ld\nrevoked %ld\n", stats.gets,
		   stats.puts, stats.revoked);
	seq_printf(m, "put_during_callback %ld\nput_after_callback %ld\n",
		   stats.put_during_callback, stats.put_after_callback);
	seq_printf(m, "violations %ld\nlive %ld\n", stats.violations,
		   stats.live);
	mutex_unlock(&standin_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(standin_stats);

static int __init standin_init(void)
{
	if (strcmp(backing, "private") && strcmp(backing, "process"))
		return -EINVAL;
	standin_dir = debugfs_create_dir("nvp2p_standin", NULL);
	debugfs_create_file("revoke", 0200, standin_dir, NULL,
			    &standin_revoke_fops);
	debugfs_create_file("fail_next_get", 0200, standin_dir, NULL,
			    &standin_fail_fops);
	debugfs_create_file("stats", 0444, standin_dir, NULL,
			    &standin_stats_fops);
	pr_info("nvp2p_standin: %s backing, page table major %u\n", backing,
		table_major);
	return 0;
}

static void __exit standin_exit(void)
{
	struct standin_table *t, *tmp;
	struct standin_chunk *c, *ctmp;

	debugfs_remove_recursive(standin_dir);
	/* The users are unloaded: any live table is a leaked pin. */
	list_for_each_entry_safe(t, tmp, &standin_live, link) {
		standin_violation("page table never returned");
		list_del(&t->link);
		standin_table_free(t);
	}
	list_for_each_entry_safe(t, tmp, &standin_graveyard, link) {
		list_del(&t->link);
		standin_table_free(t);
	}
	list_for_each_entry_safe(c, ctmp, &standin_quarantine, link) {
		list_del(&c->link);
		__free_pages(c->page, get_order(STANDIN_CHUNK));
		kfree(c);
	}
}

module_init(standin_init);
module_exit(standin_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Test stand-in for NVIDIA's p2p kernel API (gdrfab tests only)");
