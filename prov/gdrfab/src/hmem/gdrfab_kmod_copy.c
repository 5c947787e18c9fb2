/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gdrfab.ko as a copy engine for small messages (the role gdrcopy plays
 * for libfabric's efa provider).
 *
 * Pins are windows of GPU_WINDOW bytes around the copied range, clipped to
 * the allocation, kept in a small LRU table and found by buffer ID and
 * containment. The buffer ID is read with every copy (one
 * cuPointerGetAttributes), so a buffer freed and reallocated at the same
 * address is never served by the old mapping: the driver revoked that pin
 * when the memory was freed, and touching its mapping would raise SIGBUS.
 *
 * Locking. One mutex, table_lock, covers the window table (the pointers,
 * their count, the LRU clock) and each window's reference count; it is a
 * leaf (nothing else is taken under it) and is held for table lookups and
 * edits only: never across a pin, an mmap, an unpin or a copy, which may
 * sleep in the kernel or take long. A copy holds a reference to its
 * window instead, so copies through different windows (or the same one)
 * run in parallel on every thread; a window dropped from the table while
 * copies use it is unmapped and unpinned by the last of them. open_lock
 * covers opening the device, once per load (a leaf, never under
 * table_lock).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gdrfab.h"
#include "gdrfab/gdrfab_ioctl.h"
#include "gdrfab_cuda.h"
#include "gdrfab_kmod.h"
#include "gdrfab_params.h"

#define GPU_WINDOW  (2ULL << 20)
#define MAX_WINDOWS 64

struct window {
	uint64_t buffer_id;
	uintptr_t va; /* pinned_addr */
	size_t len;
	uint8_t *map;
	uint64_t handle;
	uint64_t last_use;
	int refs; /* the table's (while listed) and each copy's */
};

static struct {
	pthread_mutex_t open_lock;
	bool tried; /* written under open_lock, read without */
	int fd;	    /* -1: absent (or not opened yet) */
	pthread_mutex_t table_lock;
	struct window *win[MAX_WINDOWS];
	size_t nwin;
	uint64_t clock;
} kmod = {.open_lock = PTHREAD_MUTEX_INITIALIZER,
	  .fd = -1,
	  .table_lock = PTHREAD_MUTEX_INITIALIZER};

/* Under open_lock. */
static void kmod_open_once(void)
{
	struct gdrfab_ioc_version v;
	int fd;

	fd = open(GDRFAB_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		GDRFAB_INFO(
			FI_LOG_MR,
			"%s: %s (gdrfab.ko not loaded?): small GPU copies use CUDA\n",
			GDRFAB_DEVICE_PATH, strerror(errno));
		return;
	}
	if (ioctl(fd, GDRFAB_IOC_VERSION, &v) ||
	    GDRFAB_ABI_VERSION_MAJOR(v.abi_version) != GDRFAB_ABI_MAJOR) {
		GDRFAB_WARN(
			FI_LOG_MR,
			"%s speaks ABI %#x, gdrfab needs major %d: small GPU copies use CUDA\n",
			GDRFAB_DEVICE_PATH, v.abi_version, GDRFAB_ABI_MAJOR);
		close(fd);
		return;
	}
	GDRFAB_INFO(
		FI_LOG_MR,
		"%s (ABI %d.%d): GPU copies up to %zu bytes go through its CPU mapping\n",
		GDRFAB_DEVICE_PATH, GDRFAB_ABI_VERSION_MAJOR(v.abi_version),
		v.abi_version & 0xffff, gdrfab_params.kmod_copy_max);
	__atomic_store_n(&kmod.fd, fd, __ATOMIC_RELEASE);
}

static bool kmod_open(void)
{
	if (!__atomic_load_n(&kmod.tried, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&kmod.open_lock);
		if (!kmod.tried)
			kmod_open_once();
		__atomic_store_n(&kmod.tried, true, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&kmod.open_lock);
	}
	return __atomic_load_n(&kmod.fd, __ATOMIC_ACQUIRE) >= 0;
}

/* Unmaps, unpins and frees a window nothing refers to any more. Never
 * under table_lock: the unpin is a system call. */
static void window_free(struct window *w)
{
	struct gdrfab_ioc_unpin u = {.handle = w->handle};

	munmap(w->map, w->len);
	if (ioctl(kmod.fd, GDRFAB_IOC_UNPIN, &u))
		GDRFAB_WARN(FI_LOG_MR, "unpinning %#lx+%zu: %s\n",
			    (unsigned long)w->va, w->len, strerror(errno));
	free(w);
}

/* Under table_lock: takes window i out of the table, dropping the
 * table's reference; returns it when that was the last (the caller frees
 * it after unlocking), else NULL (its last copy frees it). */
static struct window *window_unlist(size_t i)
{
	struct window *w = kmod.win[i];

	kmod.win[i] = kmod.win[--kmod.nwin];
	return --w->refs ? NULL : w;
}

static void window_put(struct window *w)
{
	bool last;

	pthread_mutex_lock(&kmod.table_lock);
	last = !--w->refs;
	pthread_mutex_unlock(&kmod.table_lock);
	if (last)
		window_free(w);
}

/* Pins and maps the window around [addr, addr + len) (no lock held: the
 * pin may sleep in the kernel); NULL (logged) on failure. */
static struct window *window_make(const struct gdrfab_cuda_ptr *p,
				  uintptr_t addr, size_t len)
{
	uintptr_t lo = addr & ~(uintptr_t)(GPU_WINDOW - 1);
	uintptr_t hi = (addr + len + GPU_WINDOW - 1) & ~(GPU_WINDOW - 1);
	struct gdrfab_ioc_pin pin = {0};
	struct window *w = malloc(sizeof(*w));
	void *map;

	if (!w)
		return NULL;
	/* Stay inside the allocation: the driver pins one allocation. */
	if (lo < p->base)
		lo = p->base;
	if (hi > p->base + p->size)
		hi = p->base + p->size;
	pin.addr = lo;
	pin.length = hi - lo;
	if (ioctl(kmod.fd, GDRFAB_IOC_PIN, &pin)) {
		GDRFAB_INFO(
			FI_LOG_MR,
			"gdrfab.ko cannot pin %#lx+%zu: %s; copying with CUDA\n",
			(unsigned long)lo, (size_t)(hi - lo), strerror(errno));
		free(w);
		return NULL;
	}
	map = mmap(NULL, pin.pinned_length, PROT_READ | PROT_WRITE, MAP_SHARED,
		   kmod.fd, (off_t)pin.mmap_offset);
	if (map == MAP_FAILED) {
		struct gdrfab_ioc_unpin u = {.handle = pin.handle};

		GDRFAB_INFO(FI_LOG_MR, "mapping GPU memory %#lx: %s\n",
			    (unsigned long)lo, strerror(errno));
		ioctl(kmod.fd, GDRFAB_IOC_UNPIN, &u);
		free(w);
		return NULL;
	}
	*w = (struct window){.buffer_id = p->buffer_id,
			     .va = pin.pinned_addr,
			     .len = pin.pinned_length,
			     .map = map,
			     .handle = pin.handle,
			     .refs = 1};
	return w;
}

/* Under table_lock: the listed window holding [addr, addr + len) of
 * allocation p, with a reference for the caller, or NULL. Windows left by
 * an earlier allocation at the same place are unlisted; those nothing
 * uses any more go to *stale (at most one per call is kept: the others
 * wait for the next call). */
static struct window *window_find(const struct gdrfab_cuda_ptr *p,
				  uintptr_t addr, size_t len,
				  struct window **stale)
{
	for (size_t i = 0; i < kmod.nwin;) {
		struct window *w = kmod.win[i];
		bool overlaps = addr < w->va + w->len && w->va < addr + len;

		if (w->buffer_id == p->buffer_id && addr >= w->va &&
		    addr + len <= w->va + w->len) {
			w->refs++;
			w->last_use = ++kmod.clock;
			return w;
		}
		if (!*stale && overlaps && w->buffer_id != p->buffer_id &&
		    w->va >= p->base && w->va < p->base + p->size) {
			*stale = window_unlist(i);
			continue;
		}
		i++;
	}
	return NULL;
}

/* Under table_lock: lists a new window (its reference becomes the
 * table's; one more for the caller), unlisting the least recently used
 * one when the table is full (returned when nothing uses it). */
static struct window *window_list(struct window *w)
{
	struct window *evicted = NULL;

	if (kmod.nwin == MAX_WINDOWS) {
		size_t lru = 0;

		for (size_t i = 1; i < kmod.nwin; i++)
			if (kmod.win[i]->last_use < kmod.win[lru]->last_use)
				lru = i;
		evicted = window_unlist(lru);
	}
	w->refs++;
	w->last_use = ++kmod.clock;
	kmod.win[kmod.nwin++] = w;
	return evicted;
}

/* A window with a reference for the caller, or NULL. */
static struct window *window_get(const struct gdrfab_cuda_ptr *p,
				 uintptr_t addr, size_t len)
{
	struct window *w, *made, *stale = NULL, *evicted = NULL;

	pthread_mutex_lock(&kmod.table_lock);
	w = window_find(p, addr, len, &stale);
	pthread_mutex_unlock(&kmod.table_lock);
	if (stale)
		window_free(stale);
	if (w)
		return w;
	made = window_make(p, addr, len);
	if (!made)
		return NULL;
	pthread_mutex_lock(&kmod.table_lock);
	stale = NULL;
	/* Another thread may have listed one meanwhile: use it. */
	w = window_find(p, addr, len, &stale);
	if (!w) {
		evicted = window_list(made);
		w = made;
		made = NULL;
	}
	pthread_mutex_unlock(&kmod.table_lock);
	if (stale)
		window_free(stale);
	if (evicted)
		window_free(evicted);
	if (made)
		window_free(made);
	return w;
}

bool gdrfab_kmod_copy(void *gpu, void *host, size_t len, bool to_device)
{
	struct gdrfab_cuda_ptr p;
	struct window *w;
	uintptr_t addr = (uintptr_t)gpu;
	uint8_t *m;

	if (!len || len > gdrfab_params.kmod_copy_max)
		return false;
	if (!kmod_open())
		return false;
	if (gdrfab_cuda_classify(gpu, &p) || p.kind != GDRFAB_MEM_CUDA_DEVICE ||
	    addr + len > p.base + p.size)
		return false;
	w = window_get(&p, addr, len);
	if (!w)
		return false;
	/* No lock: the reference keeps the mapping. */
	m = w->map + (addr - w->va);
	if (to_device) {
		memcpy(m, host, len);
		/* Drain the write-combining buffers: the bytes must reach the
		 * GPU before the completion that announces them. */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_sfence();
#endif
	} else {
		memcpy(host, m, len);
	}
	window_put(w);
	return true;
}

void gdrfab_kmod_fini(void)
{
	/* At unload: no copy runs any more. */
	for (;;) {
		struct window *w = NULL;
		bool empty;

		pthread_mutex_lock(&kmod.table_lock);
		empty = !kmod.nwin;
		if (!empty)
			w = window_unlist(kmod.nwin - 1);
		pthread_mutex_unlock(&kmod.table_lock);
		if (empty)
			break;
		if (w)
			window_free(w);
	}
	pthread_mutex_lock(&kmod.open_lock);
	if (kmod.fd >= 0)
		close(kmod.fd);
	kmod.fd = -1;
	kmod.tried = false;
	pthread_mutex_unlock(&kmod.open_lock);
}
