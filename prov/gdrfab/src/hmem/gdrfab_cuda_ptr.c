/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What an address is (one cuPointerGetAttributes call), SYNC_MEMOPS once
 * per allocation, and dma-buf handles for device ranges.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_cuda.h"
#include "gdrfab_cuda_sym.h"
#include "gdrfab_recent.h"

#define GDRFAB_GPU_PAGE (64ULL * 1024)

/* What gdrfab learnt of each allocation it met, by buffer ID: its
 * classification, and whether SYNC_MEMOPS was set (or refused). CUDA never
 * reuses a buffer ID, so an entry stays true while the allocation lives
 * and is never looked up once it is freed (its addresses then carry
 * another ID, or none). An open-addressing table, grown at half load; past
 * IDS_MAX it starts afresh, which costs a second classification and a
 * second, harmless SYNC_MEMOPS on allocations still live, instead of
 * memory without bound. */
#define IDS_MAX (1u << 16)

struct known_alloc {
	uint64_t id; /* 0: empty slot */
	struct gdrfab_cuda_ptr cls;
	bool memops_done;
};

static pthread_mutex_t ids_lock = PTHREAD_MUTEX_INITIALIZER;
static struct known_alloc *ids;
static size_t ids_cap, ids_used;
/* Each thread's recent allocations (the last eight it met), which need
 * no lock: an entry never changes while its ID lives, and a table started
 * afresh bumps the generation. A thread alternating between a few
 * buffers finds each here; the IDs stand apart, in one cache line,
 * because they are what a lookup scans. */
#define RECENT_ALLOCS 8
static _Atomic unsigned ids_generation;
static _Thread_local struct {
	uint64_t id[RECENT_ALLOCS];
	unsigned generation[RECENT_ALLOCS];
	struct gdrfab_cuda_ptr cls[RECENT_ALLOCS];
	struct gdrfab_recent_slots slots;
} recent;

static bool within(const struct gdrfab_cuda_ptr *cls, const void *ptr)
{
	return cls->size && (uintptr_t)ptr >= cls->base &&
	       (uintptr_t)ptr - cls->base < cls->size;
}

/* Remembers cls among the calling thread's recent allocations. */
static void remember(const struct gdrfab_cuda_ptr *cls, unsigned generation)
{
	unsigned i;

	for (i = 0; i < RECENT_ALLOCS; i++)
		if (recent.id[i] == cls->buffer_id)
			break;
	i = gdrfab_recent_take(&recent.slots, i, RECENT_ALLOCS);
	recent.id[i] = cls->buffer_id;
	recent.generation[i] = generation;
	recent.cls[i] = *cls;
}

/* Slot i of the recent allocations holds ptr of allocation id. */
static inline bool recent_holds(const __typeof__(recent) *rc, unsigned i,
				uint64_t id, unsigned gen, const void *ptr)
{
	return rc->id[i] == id && rc->generation[i] == gen &&
	       within(&rc->cls[i], ptr);
}

void gdrfab_cuda_ptr_fini(void)
{
	pthread_mutex_lock(&ids_lock);
	free(ids);
	ids = NULL;
	ids_cap = ids_used = 0;
	atomic_fetch_add(&ids_generation, 1);
	pthread_mutex_unlock(&ids_lock);
}

static size_t slot_of(uint64_t id, size_t cap)
{
	return (size_t)(id * 0x9E3779B97F4A7C15ULL % cap);
}

/* The entry for id, or NULL; ids_lock held. */
static struct known_alloc *ids_find(uint64_t id)
{
	if (!ids_cap)
		return NULL;
	for (size_t i = slot_of(id, ids_cap); ids[i].id;
	     i = (i + 1) % ids_cap) {
		if (ids[i].id == id)
			return &ids[i];
	}
	return NULL;
}

/* The entry for id, made if new (NULL without memory); ids_lock held. */
static struct known_alloc *ids_add(uint64_t id)
{
	struct known_alloc *e = ids_find(id);
	size_t i;

	if (e)
		return e;
	if (ids_used >= IDS_MAX) {
		memset(ids, 0, ids_cap * sizeof(*ids));
		ids_used = 0;
		atomic_fetch_add(&ids_generation, 1);
	}
	if ((ids_used + 1) * 2 > ids_cap) {
		size_t cap = ids_cap ? ids_cap * 2 : 256;
		struct known_alloc *n = calloc(cap, sizeof(*n));

		if (!n)
			return NULL;
		for (size_t j = 0; j < ids_cap; j++) {
			if (!ids[j].id)
				continue;
			for (i = slot_of(ids[j].id, cap); n[i].id;
			     i = (i + 1) % cap)
				;
			n[i] = ids[j];
		}
		free(ids);
		ids = n;
		ids_cap = cap;
	}
	for (i = slot_of(id, ids_cap); ids[i].id; i = (i + 1) % ids_cap)
		;
	ids[i].id = id;
	ids_used++;
	return &ids[i];
}

/* All six attributes: what a first meeting with an allocation needs. */
static int classify_fully(const void *ptr, struct gdrfab_cuda_ptr *out)
{
	int attrs[] = {GDRFAB_CU_PTR_MEMORY_TYPE, GDRFAB_CU_PTR_BUFFER_ID,
		       GDRFAB_CU_PTR_IS_MANAGED,  GDRFAB_CU_PTR_DEVICE_ORD,
		       GDRFAB_CU_PTR_RANGE_START, GDRFAB_CU_PTR_RANGE_SIZE};
	/* 8 bytes each, zeroed: the driver writes 1, 4 or 8 of them. */
	uint64_t val[6] = {0};
	void *data[6] = {&val[0], &val[1], &val[2], &val[3], &val[4], &val[5]};
	gdrfab_cu_result err;

	/* Unlike cuPointerGetAttribute, this call succeeds for addresses
	 * CUDA does not know, with a zero memory type. */
	err = gdrfab_cu.ptr_attrs(6, attrs, data, (gdrfab_cu_ptr)ptr);
	if (err != GDRFAB_CU_SUCCESS) {
		GDRFAB_WARN(FI_LOG_MR, "cuPointerGetAttributes(%p): %s\n", ptr,
			    gdrfab_cu_strerror(err));
		return -FI_EINVAL;
	}
	out->buffer_id = val[1];
	out->device = (int)(uint32_t)val[3];
	out->base = (uintptr_t)val[4];
	out->size = (size_t)val[5];
	if ((uint32_t)val[2])
		out->kind = GDRFAB_MEM_CUDA_MANAGED;
	else if ((uint32_t)val[0] == GDRFAB_CU_MEMTYPE_DEVICE)
		out->kind = GDRFAB_MEM_CUDA_DEVICE;
	else if ((uint32_t)val[0] == GDRFAB_CU_MEMTYPE_HOST)
		out->kind = GDRFAB_MEM_CUDA_HOST;
	else
		out->kind = GDRFAB_MEM_HOST;
	if (out->kind == GDRFAB_MEM_HOST || !out->size) {
		out->base = (uintptr_t)ptr;
		out->size = 0;
	}
	return 0;
}

/* A known allocation that is not among the thread's recent ones (its
 * entry, under the lock), or a first meeting: out of line, so that the
 * thread's recent hits neither save registers for it nor fill
 * classify_fully's arrays (the compiler hoisted their set-up into every
 * call). */
static __attribute__((noinline)) int classify_slow(const void *ptr, uint64_t id,
						   struct gdrfab_cuda_ptr *out)
{
	struct known_alloc *e;
	int ret;

	if (id) {
		pthread_mutex_lock(&ids_lock);
		e = ids_find(id);
		if (e && within(&e->cls, ptr)) {
			*out = e->cls;
			remember(&e->cls, atomic_load(&ids_generation));
			pthread_mutex_unlock(&ids_lock);
			return 0;
		}
		pthread_mutex_unlock(&ids_lock);
	}
	ret = classify_fully(ptr, out);
	if (ret || !out->buffer_id || !out->size)
		return ret;
	pthread_mutex_lock(&ids_lock);
	e = ids_add(out->buffer_id);
	if (e)
		e->cls = *out;
	pthread_mutex_unlock(&ids_lock);
	return 0;
}

int gdrfab_cuda_classify(const void *ptr, struct gdrfab_cuda_ptr *out)
{
	int attr = GDRFAB_CU_PTR_BUFFER_ID;
	uint64_t id = 0;
	void *data = &id;

	if (!gdrfab_cuda_available(NULL))
		return -FI_ENOSYS;
	/* The buffer ID alone says whether this allocation was met before:
	 * one attribute, where a first meeting asks six (a registration
	 * cache hit is mostly this call). */
	if (gdrfab_cu.ptr_attrs(1, &attr, &data, (gdrfab_cu_ptr)ptr) !=
	    GDRFAB_CU_SUCCESS)
		id = 0;
	if (id) {
		/* Reached once: in a shared library each thread-local
		 * access may be a __tls_get_addr call. */
		__typeof__(recent) *rc = &recent;
		unsigned gen = atomic_load_explicit(&ids_generation,
						    memory_order_relaxed);

		unsigned i = rc->slots.last;

		/* The slot found last time first: one buffer used again
		 * and again pays no scan. */
		if (recent_holds(rc, i, id, gen, ptr)) {
			*out = rc->cls[i];
			return 0;
		}
		for (i = 0; i < RECENT_ALLOCS; i++) {
			if (recent_holds(rc, i, id, gen, ptr)) {
				rc->slots.last = i;
				*out = rc->cls[i];
				return 0;
			}
		}
	}
	return classify_slow(ptr, id, out);
}

int gdrfab_cuda_sync_memops(const struct gdrfab_cuda_ptr *p)
{
	static bool refusal_logged;
	unsigned one = 1;
	gdrfab_cu_result err;
	struct known_alloc *e;
	bool first = true;

	if (p->kind != GDRFAB_MEM_CUDA_DEVICE || !p->buffer_id)
		return 0;
	pthread_mutex_lock(&ids_lock);
	e = ids_add(p->buffer_id);
	if (e) {
		first = !e->memops_done;
		e->memops_done = true;
		if (!e->cls.buffer_id)
			e->cls = *p;
	}
	pthread_mutex_unlock(&ids_lock);
	if (!first)
		return 0;
	err = gdrfab_cu.ptr_set_attr(&one, GDRFAB_CU_PTR_SYNC_MEMOPS,
				     (gdrfab_cu_ptr)p->base);
	if (err == GDRFAB_CU_SUCCESS)
		return 0;
	if (err == GDRFAB_CU_NOT_SUPPORTED) {
		/* VMM allocations (cuMemCreate/cuMemMap) refuse it: their
		 * memory operations are not made synchronous, which is the
		 * application's to order (it owns the stream). */
		if (!refusal_logged) {
			refusal_logged = true;
			GDRFAB_INFO(
				FI_LOG_MR,
				"SYNC_MEMOPS not supported for the allocation at 0x%lx (a VMM allocation?): registering it anyway\n",
				(unsigned long)p->base);
		}
		return -FI_EOPNOTSUPP;
	}
	GDRFAB_WARN(FI_LOG_MR, "SYNC_MEMOPS on 0x%lx: %s\n",
		    (unsigned long)p->base, gdrfab_cu_strerror(err));
	return -FI_EIO;
}

int gdrfab_cuda_dmabuf_fd(const void *addr, size_t len, int *fd,
			  uint64_t *offset)
{
	uintptr_t start = (uintptr_t)addr & ~(GDRFAB_GPU_PAGE - 1);
	uintptr_t end = ((uintptr_t)addr + len + GDRFAB_GPU_PAGE - 1) &
			~(GDRFAB_GPU_PAGE - 1);
	gdrfab_cu_result err;
	int handle = -1;

	if (!gdrfab_cuda_available(NULL) || !gdrfab_cu.range_handle)
		return -FI_ENOSYS;
	err = gdrfab_cu.range_handle(&handle, (gdrfab_cu_ptr)start, end - start,
				     GDRFAB_CU_HANDLE_DMABUF_FD, 0);
	if (err != GDRFAB_CU_SUCCESS) {
		GDRFAB_INFO(FI_LOG_MR,
			    "cuMemGetHandleForAddressRange(0x%lx, %zu): %s\n",
			    (unsigned long)start, (size_t)(end - start),
			    gdrfab_cu_strerror(err));
		return err == GDRFAB_CU_NOT_SUPPORTED ? -FI_EOPNOTSUPP
						      : -FI_EINVAL;
	}
	*fd = handle;
	*offset = (uintptr_t)addr - start;
	return 0;
}
