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
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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
};

static struct {
	pthread_mutex_t lock;
	int fd; /* -1: not opened yet or absent (then tried is set) */
	bool tried;
	struct window win[MAX_WINDOWS];
	size_t nwin;
	uint64_t clock;
} kmod = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

/* Under kmod.lock. */
static bool kmod_open(void)
{
	struct gdrfab_ioc_version v;
	int fd;

	if (kmod.tried)
		return kmod.fd >= 0;
	kmod.tried = true;
	fd = open(GDRFAB_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		GDRFAB_INFO(FI_LOG_MR,
			    "%s: %s (gdrfab.ko not loaded?): small GPU copies "
			    "use CUDA\n",
			    GDRFAB_DEVICE_PATH, strerror(errno));
		return false;
	}
	if (ioctl(fd, GDRFAB_IOC_VERSION, &v) ||
	    GDRFAB_ABI_VERSION_MAJOR(v.abi_version) != GDRFAB_ABI_MAJOR) {
		GDRFAB_WARN(FI_LOG_MR,
			    "%s speaks ABI %#x, gdrfab needs major %d: small "
			    "GPU copies use CUDA\n",
			    GDRFAB_DEVICE_PATH, v.abi_version,
			    GDRFAB_ABI_MAJOR);
		close(fd);
		return false;
	}
	GDRFAB_INFO(FI_LOG_MR,
		    "%s (ABI %d.%d): GPU copies up to %zu bytes go through "
		    "its CPU mapping\n",
		    GDRFAB_DEVICE_PATH, GDRFAB_ABI_VERSION_MAJOR(v.abi_version),
		    v.abi_version & 0xffff, gdrfab_params.kmod_copy_max);
	kmod.fd = fd;
	return true;
}

/* Under kmod.lock. */
static void window_drop(size_t i)
{
	struct window *w = &kmod.win[i];
	struct gdrfab_ioc_unpin u = {.handle = w->handle};

	munmap(w->map, w->len);
	if (ioctl(kmod.fd, GDRFAB_IOC_UNPIN, &u))
		GDRFAB_WARN(FI_LOG_MR, "unpinning %#lx+%zu: %s\n",
			    (unsigned long)w->va, w->len, strerror(errno));
	kmod.win[i] = kmod.win[--kmod.nwin];
}

/* Under kmod.lock: pins and maps the window around [addr, addr + len). */
static struct window *window_new(const struct gdrfab_cuda_ptr *p,
				 uintptr_t addr, size_t len)
{
	uintptr_t lo = addr & ~(uintptr_t)(GPU_WINDOW - 1);
	uintptr_t hi = (addr + len + GPU_WINDOW - 1) & ~(GPU_WINDOW - 1);
	struct gdrfab_ioc_pin pin = {0};
	struct window *w;
	void *map;

	/* Stay inside the allocation: the driver pins one allocation. */
	if (lo < p->base)
		lo = p->base;
	if (hi > p->base + p->size)
		hi = p->base + p->size;
	pin.addr = lo;
	pin.length = hi - lo;
	if (ioctl(kmod.fd, GDRFAB_IOC_PIN, &pin)) {
		GDRFAB_INFO(FI_LOG_MR,
			    "gdrfab.ko cannot pin %#lx+%zu: %s; copying with "
			    "CUDA\n",
			    (unsigned long)lo, (size_t)(hi - lo),
			    strerror(errno));
		return NULL;
	}
	map = mmap(NULL, pin.pinned_length, PROT_READ | PROT_WRITE, MAP_SHARED,
		   kmod.fd, (off_t)pin.mmap_offset);
	if (map == MAP_FAILED) {
		struct gdrfab_ioc_unpin u = {.handle = pin.handle};

		GDRFAB_INFO(FI_LOG_MR, "mapping GPU memory %#lx: %s\n",
			    (unsigned long)lo, strerror(errno));
		ioctl(kmod.fd, GDRFAB_IOC_UNPIN, &u);
		return NULL;
	}
	if (kmod.nwin == MAX_WINDOWS) {
		size_t lru = 0;

		for (size_t i = 1; i < kmod.nwin; i++)
			if (kmod.win[i].last_use < kmod.win[lru].last_use)
				lru = i;
		window_drop(lru);
	}
	w = &kmod.win[kmod.nwin++];
	*w = (struct window){.buffer_id = p->buffer_id,
			     .va = pin.pinned_addr,
			     .len = pin.pinned_length,
			     .map = map,
			     .handle = pin.handle};
	return w;
}

/* Under kmod.lock: the window holding [addr, addr + len) of allocation p,
 * dropping windows left by an earlier allocation at the same place. */
static struct window *window_find(const struct gdrfab_cuda_ptr *p,
				  uintptr_t addr, size_t len)
{
	for (size_t i = 0; i < kmod.nwin;) {
		struct window *w = &kmod.win[i];
		bool overlaps = addr < w->va + w->len && w->va < addr + len;

		if (w->buffer_id == p->buffer_id && addr >= w->va &&
		    addr + len <= w->va + w->len)
			return w;
		if (overlaps && w->buffer_id != p->buffer_id &&
		    w->va >= p->base && w->va < p->base + p->size) {
			window_drop(i);
			continue;
		}
		i++;
	}
	return window_new(p, addr, len);
}

bool gdrfab_kmod_copy(void *gpu, void *host, size_t len, bool to_device)
{
	struct gdrfab_cuda_ptr p;
	struct window *w;
	uintptr_t addr = (uintptr_t)gpu;
	bool done = false;

	if (!len || len > gdrfab_params.kmod_copy_max)
		return false;
	if (kmod.tried && kmod.fd < 0)
		return false;
	if (gdrfab_cuda_classify(gpu, &p) || p.kind != GDRFAB_MEM_CUDA_DEVICE ||
	    addr + len > p.base + p.size)
		return false;

	pthread_mutex_lock(&kmod.lock);
	if (kmod_open()) {
		w = window_find(&p, addr, len);
		if (w) {
			uint8_t *m = w->map + (addr - w->va);

			w->last_use = ++kmod.clock;
			if (to_device) {
				memcpy(m, host, len);
				/* Drain the write-combining buffers: the
				 * bytes must reach the GPU before the
				 * completion that announces them. */
				__atomic_thread_fence(__ATOMIC_SEQ_CST);
#if defined(__x86_64__) || defined(__i386__)
				__builtin_ia32_sfence();
#endif
			} else {
				memcpy(host, m, len);
			}
			done = true;
		}
	}
	pthread_mutex_unlock(&kmod.lock);
	return done;
}

void gdrfab_kmod_fini(void)
{
	pthread_mutex_lock(&kmod.lock);
	while (kmod.nwin)
		window_drop(kmod.nwin - 1);
	if (kmod.fd >= 0)
		close(kmod.fd);
	kmod.fd = -1;
	kmod.tried = false;
	pthread_mutex_unlock(&kmod.lock);
}
