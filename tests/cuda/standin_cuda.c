/* SPDX-License-Identifier: BSD-2-Clause */
/* The CUDA stand-in (see standin_cuda.h): a test double, never shipped. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "standin_cuda.h"

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum {
	OK = 0,
	INVALID_VALUE = 1,
	NOT_INITIALIZED = 3,
	NO_DEVICE = 100,
	INVALID_CONTEXT = 201,
	NOT_READY = 600,
	HOST_REGISTERED = 712,
	HOST_NOT_REGISTERED = 713,
	INVALID_HANDLE = 400,
	NOT_SUPPORTED = 801,
	NOT_PERMITTED = 800,
};

#define GPU_PAGE   (64UL * 1024)
#define MAX_ALLOCS 4096
#define MEM_HOST   1
#define MEM_DEVICE 2

struct alloc {
	uintptr_t base;	  /* what the application sees */
	uint8_t *alias;	  /* the same pages, for the stand-in's copies */
	size_t size, cap; /* in use, and mapped (kept for reuse) */
	uint64_t id;	  /* buffer ID: new on every allocation */
	int type;	  /* MEM_HOST or MEM_DEVICE */
	bool managed, live, sync_memops;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct alloc allocs[MAX_ALLOCS];
static uint64_t next_id = 1;
static struct standin_stats stats;
static bool inited;
static int devices = 1;
static __thread int ctx_depth;

static int env_int(const char *name, int def)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : def;
}

/* Forbidden calls (standin_forbid, GDRFAB_STANDIN_FORBID): -1 until the
 * variable is read, then 0 (none), 1 (data movement: copies, events,
 * streams, flushes fail with CUDA_ERROR_NOT_PERMITTED), 2 (every call
 * counted as well; data movement still fails). */
static int forbid_mode = -1;

EXPORT void standin_forbid(int mode)
{
	__atomic_store_n(&forbid_mode, mode, __ATOMIC_SEQ_CST);
}

/* Counts and reports a call made while forbidden; true when it must
 * fail (moves_data: a copy, event, stream or flush call). */
static bool forbidden(const char *fn, bool moves_data)
{
	int mode = __atomic_load_n(&forbid_mode, __ATOMIC_SEQ_CST);

	if (mode < 0) {
		const char *v = getenv("GDRFAB_STANDIN_FORBID");

		mode = v ? atoi(v) : 0;
		__atomic_store_n(&forbid_mode, mode, __ATOMIC_SEQ_CST);
	}
	if (!mode || (mode == 1 && !moves_data))
		return false;
	__atomic_fetch_add(&stats.forbidden_calls, 1, __ATOMIC_SEQ_CST);
	fprintf(stderr,
		"standin libcuda: %s called while CUDA calls are forbidden (GDRFAB_STANDIN_FORBID / standin_forbid)%s\n",
		fn, moves_data ? ": failing it" : "");
	return moves_data;
}

EXPORT void standin_stats(struct standin_stats *out)
{
	pthread_mutex_lock(&lock);
	*out = stats;
	pthread_mutex_unlock(&lock);
}

static struct alloc *find(uintptr_t p)
{
	for (int i = 0; i < MAX_ALLOCS; i++) {
		struct alloc *a = &allocs[i];

		if (a->live && p >= a->base && p < a->base + a->size)
			return a;
	}
	return NULL;
}

/* The stand-in's view of an address: the alias of device memory, the
 * address itself for anything else. */
static uint8_t *cpu_view(uintptr_t p, size_t len)
{
	struct alloc *a = find(p);

	if (!a)
		return (uint8_t *)p;
	if (p + len > a->base + a->size)
		return NULL;
	return a->alias + (p - a->base);
}

EXPORT CUresult cuInit(unsigned flags)
{
	forbidden(__func__, false);
	(void)flags;
	if (env_int("GDRFAB_STANDIN_INIT_FAIL", 0))
		return NO_DEVICE;
	devices = env_int("GDRFAB_STANDIN_DEVICES", 1);
	inited = true;
	return OK;
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
	forbidden(__func__, false);
	*v = 13000;
	return OK;
}

EXPORT CUresult cuDeviceGetCount(int *n)
{
	forbidden(__func__, false);
	if (!inited)
		return NOT_INITIALIZED;
	*n = devices;
	return OK;
}

EXPORT CUresult cuDeviceGet(int *dev, int ordinal)
{
	forbidden(__func__, false);
	if (ordinal < 0 || ordinal >= devices)
		return INVALID_VALUE;
	*dev = ordinal;
	return OK;
}

EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, int dev)
{
	forbidden(__func__, false);
	if (dev < 0 || dev >= devices)
		return INVALID_VALUE;
	switch (attr) {
	case 116: /* GPU_DIRECT_RDMA_SUPPORTED */ *v = 1; break;
	case 117: /* GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS: HOST */
		*v = env_int("GDRFAB_STANDIN_FLUSH", 1) ? 1 : 0;
		break;
	case 118: /* GPU_DIRECT_RDMA_WRITES_ORDERING */
		*v = env_int("GDRFAB_STANDIN_ORDERING", 0);
		break;
	case 124: /* DMA_BUF_SUPPORTED: rxe could not use one anyway */
		*v = 0;
		break;
	default: *v = 0;
	}
	return OK;
}

EXPORT CUresult cuDeviceGetPCIBusId(char *id, int len, int dev)
{
	forbidden(__func__, false);
	snprintf(id, (size_t)len, "0000:%02X:00.0", 0x80 + dev);
	return OK;
}

EXPORT CUresult cuGetErrorString(CUresult err, const char **s)
{
	forbidden(__func__, false);
	*s = err == NOT_SUPPORTED ? "operation not supported (stand-in)"
				  : "stand-in error";
	return OK;
}

EXPORT CUresult cuGetErrorName(CUresult err, const char **s)
{
	forbidden(__func__, false);
	*s = err == OK		    ? "CUDA_SUCCESS"
	     : err == NOT_SUPPORTED ? "CUDA_ERROR_NOT_SUPPORTED"
				    : "CUDA_ERROR_STANDIN";
	return OK;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
	forbidden(__func__, false);
	*ctx = (void *)(uintptr_t)(0x1000 + dev);
	return OK;
}

EXPORT CUresult cuCtxPushCurrent_v2(void *ctx)
{
	forbidden(__func__, false);
	(void)ctx;
	ctx_depth++;
	return OK;
}

EXPORT CUresult cuCtxPopCurrent_v2(void **ctx)
{
	forbidden(__func__, false);
	if (!ctx_depth)
		return INVALID_CONTEXT;
	ctx_depth--;
	if (ctx)
		*ctx = (void *)0x1000;
	return OK;
}

/* GDRFAB_STANDIN_CURRENT_DEV=N: the application made device N's context
 * current before calling into libfabric. */
EXPORT CUresult cuCtxGetCurrent(void **ctx)
{
	forbidden(__func__, false);
	int app = env_int("GDRFAB_STANDIN_CURRENT_DEV", -1);

	*ctx = ctx_depth  ? (void *)0x1000
	       : app >= 0 ? (void *)(uintptr_t)(0x1000 + app)
			  : NULL;
	return OK;
}

EXPORT CUresult cuCtxGetDevice(int *dev)
{
	forbidden(__func__, false);
	int app = env_int("GDRFAB_STANDIN_CURRENT_DEV", -1);

	if (!ctx_depth && app < 0)
		return INVALID_CONTEXT;
	*dev = ctx_depth ? 0 : app;
	return OK;
}

/* A stream: a queue of deferred steps, run in order. */
struct event {
	bool recorded, done;
};

struct step {
	struct step *next;
	struct event *ev; /* an event reaching its place, or a copy: */
	uintptr_t dst, src;
	size_t len;
	bool to_host;
	void *own; /* a pageable source's snapshot, freed when run */
};

struct stream {
	struct stream *next_stream;
	struct step *head, **tail;
};

static struct stream *all_streams;
static struct event sink; /* where destroyed events' steps land */
static unsigned fail_in;  /* the fail_in-th copy from now fails */

EXPORT void standin_fail_copies(unsigned n)
{
	pthread_mutex_lock(&lock);
	fail_in = n;
	pthread_mutex_unlock(&lock);
}

EXPORT CUresult cuStreamCreate(void **s, unsigned flags)
{
	if (forbidden(__func__, true))
		return NOT_PERMITTED;
	struct stream *st = calloc(1, sizeof(*st));

	(void)flags;
	if (!st)
		return 2;
	st->tail = &st->head;
	pthread_mutex_lock(&lock);
	st->next_stream = all_streams;
	all_streams = st;
	pthread_mutex_unlock(&lock);
	*s = st;
	return OK;
}

/* Runs the stream's first step; the lock is held. */
static void run_step(struct stream *st)
{
	struct step *t = st->head;

	if (!t)
		return;
	st->head = t->next;
	if (!st->head)
		st->tail = &st->head;
	if (t->ev) {
		t->ev->done = true;
	} else {
		uint8_t *d = cpu_view(t->dst, t->len);
		uint8_t *s = cpu_view(t->src, t->len);

		/* Checked at enqueue; memory freed since is the
		 * application's error, as on a GPU. */
		if (d && s)
			memmove(d, s, t->len);
	}
	free(t->own);
	free(t);
}

EXPORT CUresult cuStreamSynchronize(void *s)
{
	if (forbidden(__func__, true))
		return NOT_PERMITTED;
	struct stream *st = s;

	pthread_mutex_lock(&lock);
	stats.stream_syncs++;
	while (st && st->head)
		run_step(st);
	pthread_mutex_unlock(&lock);
	return OK;
}

static void push_step(struct stream *st, struct step *t)
{
	t->next = NULL;
	*st->tail = t;
	st->tail = &t->next;
}

EXPORT CUresult cuEventCreate(void **ev, unsigned flags)
{
	if (forbidden(__func__, true))
		return NOT_PERMITTED;
	(void)flags;
	*ev = calloc(1, sizeof(struct event));
	return *ev ? OK : 2;
}

EXPORT CUresult cuEventRecord(void *ev, void *s)
{
	if (forbidden(__func__, true))
		return NOT_PERMITTED;
	struct event *e = ev;
	struct step *t;

	if (!e)
		return INVALID_HANDLE;
	if (!s) {
		/* The legacy stream: the stand-in's copies on it are
		 * synchronous, so an event there is reached at once. */
		pthread_mutex_lock(&lock);
		e->recorded = e->done = true;
		pthread_mutex_unlock(&lock);
		return OK;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return 2;
	t->ev = e;
	pthread_mutex_lock(&lock);
	e->recorded = true;
	e->done = false;
	push_step(s, t);
	pthread_mutex_unlock(&lock);
	return OK;
}

/* The stream where the event waits, or NULL. */
static struct stream *stream_of(struct event *e)
{
	for (struct stream *st = all_streams; st; st = st->next_stream) {
		for (struct step *t = st->head; t; t = t->next) {
			if (t->ev == e)
				return st;
		}
	}
	return NULL;
}

EXPORT CUresult cuEventQuery(void *ev)
{
	if (forbidden(__func__, true))
		return NOT_PERMITTED;
	struct event *e = ev;
	struct stream *st;
	CUresult ret = OK;

	if (!e)
		return INVALID_HANDLE;
	pthread_mutex_lock(&lock);
	/* Never recorded: done, as the driver says. One step of the
	 * stream per query: work completes later, not at enqueue. */
	if (e->recorded && !e->done) {
		st = stream_of(e);
		if (st)
			run_step(st);
		if (!e->done) {
			stats.not_ready++;
			ret = NOT_READY;
		}
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

EXPORT CUresult cuEventDestroy_v2(void *ev)
{
	if (forbidden(__func__, true))
		return NOT_PERMITTED;
	struct event *e = ev;

	if (!e)
		return INVALID_HANDLE;
	pthread_mutex_lock(&lock);
	/* As the driver allows: destroyed while pending, it just no
	 * longer says when. */
	for (struct stream *st = all_streams; st; st = st->next_stream) {
		for (struct step *t = st->head; t; t = t->next) {
			if (t->ev == e)
				t->ev = &sink;
		}
	}
	pthread_mutex_unlock(&lock);
	free(e);
	return OK;
}

/* Device (and managed) memory: a memfd mapped twice, the application's
 * mapping 64 KB-aligned and, for device memory, inaccessible. Freed
 * blocks are kept and handed out again at the same address with a new
 * buffer ID, as the CUDA driver reuses addresses. */
static CUresult alloc_mem(CUdeviceptr *out, size_t size, bool managed)
{
	bool cpu = managed || env_int("GDRFAB_STANDIN_CPU_VISIBLE", 0);
	size_t cap = (size + GPU_PAGE - 1) & ~(GPU_PAGE - 1);
	struct alloc *slot = NULL;
	uint8_t *resv, *app, *alias;
	int fd;

	if (!size)
		return INVALID_VALUE;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < MAX_ALLOCS; i++) {
		struct alloc *a = &allocs[i];

		if (!a->live && a->base && a->cap >= cap &&
		    a->managed == managed) {
			slot = a;
			break;
		}
	}
	if (slot) {
		mprotect((void *)slot->base, slot->cap,
			 cpu ? PROT_READ | PROT_WRITE : PROT_NONE);
		goto done;
	}
	for (int i = 0; i < MAX_ALLOCS && !slot; i++) {
		if (!allocs[i].base)
			slot = &allocs[i];
	}
	fd = slot ? memfd_create("standin-gpu", 0) : -1;
	if (fd < 0 || ftruncate(fd, (off_t)cap)) {
		pthread_mutex_unlock(&lock);
		return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
	}
	resv = mmap(NULL, cap + GPU_PAGE, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	app = (uint8_t *)(((uintptr_t)resv + GPU_PAGE - 1) & ~(GPU_PAGE - 1));
	app = mmap(app, cap, cpu ? PROT_READ | PROT_WRITE : PROT_NONE,
		   MAP_SHARED | MAP_FIXED, fd, 0);
	alias = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	slot->base = (uintptr_t)app;
	slot->alias = alias;
	slot->cap = cap;
	slot->managed = managed;
done:
	slot->size = size;
	slot->id = next_id++;
	slot->type = MEM_DEVICE;
	slot->live = true;
	slot->sync_memops = false;
	memset(slot->alias, 0, slot->cap);
	*out = slot->base;
	pthread_mutex_unlock(&lock);
	return OK;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *out, size_t size)
{
	forbidden(__func__, false);
	return alloc_mem(out, size, false);
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *out, size_t size, unsigned flags)
{
	forbidden(__func__, false);
	(void)flags;
	return alloc_mem(out, size, true);
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	forbidden(__func__, false);
	struct alloc *a;

	pthread_mutex_lock(&lock);
	a = find(p);
	if (!a || a->base != p || a->type != MEM_DEVICE) {
		pthread_mutex_unlock(&lock);
		return INVALID_VALUE;
	}
	a->live = false;
	pthread_mutex_unlock(&lock);
	return OK;
}

/* CUDA-pinned host memory: ordinary memory CUDA knows as host memory. */
static CUresult track_host(void *p, size_t size)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < MAX_ALLOCS; i++) {
		struct alloc *a = &allocs[i];

		if (!a->base) {
			*a = (struct alloc){.base = (uintptr_t)p,
					    .alias = p,
					    .size = size,
					    .cap = size,
					    .id = next_id++,
					    .type = MEM_HOST,
					    .live = true};
			pthread_mutex_unlock(&lock);
			return OK;
		}
	}
	pthread_mutex_unlock(&lock);
	return 2;
}

EXPORT CUresult cuMemAllocHost_v2(void **p, size_t size)
{
	forbidden(__func__, false);
	*p = aligned_alloc(4096, (size + 4095) & ~4095UL);
	return *p ? track_host(*p, size) : 2;
}

/* The slot is cleared, not kept for reuse: its pages were the C heap's. */
EXPORT CUresult cuMemFreeHost(void *p)
{
	forbidden(__func__, false);
	struct alloc *a;

	pthread_mutex_lock(&lock);
	a = find((uintptr_t)p);
	if (!a || a->base != (uintptr_t)p || a->type != MEM_HOST) {
		pthread_mutex_unlock(&lock);
		return INVALID_VALUE;
	}
	*a = (struct alloc){0};
	pthread_mutex_unlock(&lock);
	free(p);
	return OK;
}

EXPORT CUresult cuMemHostRegister_v2(void *p, size_t size, unsigned flags)
{
	forbidden(__func__, false);
	CUresult ret;

	(void)flags;
	if (!p || !size)
		return INVALID_VALUE;
	pthread_mutex_lock(&lock);
	ret = find((uintptr_t)p) ? HOST_REGISTERED : OK;
	pthread_mutex_unlock(&lock);
	if (!ret)
		ret = track_host(p, size);
	if (!ret) {
		pthread_mutex_lock(&lock);
		stats.host_regs++;
		pthread_mutex_unlock(&lock);
	}
	return ret;
}

EXPORT CUresult cuMemHostUnregister(void *p)
{
	forbidden(__func__, false);
	struct alloc *a;
	CUresult ret = OK;

	pthread_mutex_lock(&lock);
	a = find((uintptr_t)p);
	if (!a || a->base != (uintptr_t)p || a->type != MEM_HOST) {
		ret = HOST_NOT_REGISTERED;
	} else {
		memset(a, 0, sizeof(*a));
		stats.host_unregs++;
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

EXPORT CUresult cuPointerGetAttributes(unsigned n, int *attrs, void **data,
				       CUdeviceptr p)
{
	forbidden(__func__, false);
	struct alloc *a;

	pthread_mutex_lock(&lock);
	stats.ptr_queries++;
	a = find(p);
	for (unsigned i = 0; i < n; i++) {
		switch (attrs[i]) {
		case 2: /* MEMORY_TYPE */
			*(unsigned *)data[i] = a ? (unsigned)a->type : 0;
			break;
		case 7: /* BUFFER_ID */
			*(unsigned long long *)data[i] = a ? a->id : 0;
			break;
		case 8: /* IS_MANAGED */
			*(unsigned *)data[i] = a && a->managed;
			break;
		case 9: /* DEVICE_ORDINAL */
			*(int *)data[i] = a ? 0 : -2;
			break;
		case 11: /* RANGE_START_ADDR */
			*(CUdeviceptr *)data[i] = a ? a->base : 0;
			break;
		case 12: /* RANGE_SIZE */
			*(size_t *)data[i] = a ? a->size : 0;
			break;
		default: break;
		}
	}
	pthread_mutex_unlock(&lock);
	return OK;
}

EXPORT CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p)
{
	forbidden(__func__, false);
	struct alloc *a;
	CUresult ret = OK;

	pthread_mutex_lock(&lock);
	a = find(p);
	if (!a)
		ret = INVALID_VALUE;
	else if (attr == 6) /* SYNC_MEMOPS */
		*(unsigned *)data = a->sync_memops;
	else if (attr == 7)
		*(unsigned long long *)data = a->id;
	else
		ret = INVALID_VALUE;
	pthread_mutex_unlock(&lock);
	return ret;
}

EXPORT CUresult cuPointerSetAttribute(const void *value, int attr,
				      CUdeviceptr p)
{
	forbidden(__func__, false);
	struct alloc *a;
	CUresult ret = OK;

	pthread_mutex_lock(&lock);
	a = find(p);
	if (attr != 6 || !a || a->type != MEM_DEVICE) {
		ret = INVALID_VALUE;
	} else {
		a->sync_memops = *(const unsigned *)value != 0;
		stats.sync_memops++;
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

static CUresult copy(uintptr_t dst, uintptr_t src, size_t len, bool to_host)
{
	uint8_t *d, *s;

	pthread_mutex_lock(&lock);
	d = cpu_view(dst, len);
	s = cpu_view(src, len);
	if (to_host)
		stats.copies_to_host++;
	else
		stats.copies_to_dev++;
	pthread_mutex_unlock(&lock);
	if (!d || !s)
		return INVALID_VALUE;
	memcpy(d, s, len);
	return OK;
}

/* Checks the copy as the driver does at enqueue (both ends known to it
 * or host memory, and in range), then queues it on the stream. */
static CUresult copy_async(uintptr_t dst, uintptr_t src, size_t len,
			   bool to_host, struct stream *st)
{
	struct step *t;
	uintptr_t dev = to_host ? src : dst;
	struct alloc *a;

	if (!st)
		return copy(dst, src, len, to_host); /* legacy stream */
	t = calloc(1, sizeof(*t));
	if (!t)
		return 2;
	pthread_mutex_lock(&lock);
	a = find(dev);
	if (fail_in && !--fail_in) {
		stats.failed_copies++;
		pthread_mutex_unlock(&lock);
		free(t);
		return INVALID_VALUE;
	}
	if (!a || a->type != MEM_DEVICE || !cpu_view(dst, len) ||
	    !cpu_view(src, len)) {
		pthread_mutex_unlock(&lock);
		free(t);
		return INVALID_VALUE;
	}
	stats.async_copies++;
	if (to_host)
		stats.copies_to_host++;
	else
		stats.copies_to_dev++;
	*t = (struct step){
		.dst = dst, .src = src, .len = len, .to_host = to_host};
	/* Pageable host memory, as the driver documents it: a copy into it
	 * has ended when the call returns, and one from it has read it. */
	a = find(to_host ? dst : src);
	if (!a || a->type != MEM_HOST) {
		if (!to_host) {
			t->own = malloc(len ? len : 1);
			if (!t->own) {
				pthread_mutex_unlock(&lock);
				free(t);
				return 2;
			}
			memcpy(t->own, (void *)src, len);
			t->src = (uintptr_t)t->own;
		}
		push_step(st, t);
		while (to_host && st->head) {
			bool last = st->head == t;

			run_step(st);
			if (last)
				break;
		}
	} else {
		push_step(st, t);
	}
	pthread_mutex_unlock(&lock);
	return OK;
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t len,
				     void *stream)
{
	if (forbidden(__func__, true))
		return NOT_PERMITTED;
	return copy_async((uintptr_t)dst, src, len, true, stream);
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src,
				     size_t len, void *stream)
{
	if (forbidden(__func__, true))
		return NOT_PERMITTED;
	return copy_async(dst, (uintptr_t)src, len, false, stream);
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t len)
{
	if (forbidden(__func__, true))
		return NOT_PERMITTED;
	return copy((uintptr_t)dst, src, len, true);
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t len)
{
	if (forbidden(__func__, true))
		return NOT_PERMITTED;
	return copy(dst, (uintptr_t)src, len, false);
}

/* Unified addressing: the kind of each side is known from its address. */
EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t len)
{
	if (forbidden(__func__, true))
		return NOT_PERMITTED;
	return copy(dst, src, len, false);
}

EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size,
					CUdeviceptr p)
{
	forbidden(__func__, false);
	struct alloc *a;

	pthread_mutex_lock(&lock);
	a = find(p);
	if (a) {
		if (base)
			*base = a->base;
		if (size)
			*size = a->size;
	}
	pthread_mutex_unlock(&lock);
	return a ? OK : INVALID_VALUE;
}

EXPORT CUresult cuFlushGPUDirectRDMAWrites(int target, int scope)
{
	if (forbidden(__func__, true))
		return NOT_PERMITTED;
	(void)target, (void)scope;
	if (!env_int("GDRFAB_STANDIN_FLUSH", 1))
		return NOT_SUPPORTED;
	pthread_mutex_lock(&lock);
	stats.flushes++;
	pthread_mutex_unlock(&lock);
	return OK;
}

EXPORT CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr p,
					      size_t size, int type,
					      unsigned long long flags)
{
	forbidden(__func__, false);
	(void)handle, (void)p, (void)size, (void)type, (void)flags;
	return NOT_SUPPORTED;
}
