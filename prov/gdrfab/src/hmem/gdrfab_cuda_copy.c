/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Host<->device copies and GPUDirect flushes, in each device's primary
 * context on a stream of gdrfab's own (never the application's default
 * stream, which would serialise with its kernels).
 */
#include <pthread.h>
#include <sched.h>

#include "gdrfab.h"
#include "gdrfab_cuda.h"
#include "gdrfab_cuda_sym.h"
#include "gdrfab_kmod.h"
#include "gdrfab_params.h"

#define GDRFAB_CUDA_MAX_STREAMS 64
#define EVENT_POOL		64 /* idle events kept per device */

/* A device's primary context and gdrfab's two non-blocking streams on it,
 * one per direction (a GPU has a copy engine for each, so staged sends
 * and receives overlap), and idle events for asynchronous copies. The
 * lock covers making the context and streams, the idle events and
 * enqueueing (cuMemcpy*Async into pinned memory, cuEventRecord): nothing
 * waits for a copy or a flush under it. A leaf: taken under the
 * endpoint's lock, it takes none itself. */
struct dev_stream {
	pthread_mutex_t lock;
	gdrfab_cu_ctx ctx;
	gdrfab_cu_stream stream[2]; /* [1]: device to host */
	bool ready;
	int idle_cnt;
	gdrfab_cu_event idle[EVENT_POOL];
};

static struct dev_stream streams[GDRFAB_CUDA_MAX_STREAMS];
static pthread_once_t streams_once = PTHREAD_ONCE_INIT;

static bool streams_made; /* a copy or flush ran: CUDA is loaded */

static void init_locks(void)
{
	streams_made = true;
	for (int i = 0; i < GDRFAB_CUDA_MAX_STREAMS; i++)
		pthread_mutex_init(&streams[i].lock, NULL);
}

/* Locks the device's streams, made on first use, with its context pushed;
 * NULL (logged) when CUDA refuses. */
static struct dev_stream *stream_enter(int device)
{
	struct dev_stream *s;
	gdrfab_cu_result err;

	if (!gdrfab_cuda_available(NULL) || device < 0 ||
	    device >= GDRFAB_CUDA_MAX_STREAMS)
		return NULL;
	pthread_once(&streams_once, init_locks);
	s = &streams[device];
	pthread_mutex_lock(&s->lock);
	if (!s->ctx) {
		gdrfab_cu_device dev;

		err = gdrfab_cu.device_get(&dev, device);
		if (!err)
			err = gdrfab_cu.primary_ctx_retain(&s->ctx, dev);
		if (err) {
			s->ctx = NULL;
			goto fail;
		}
	}
	err = gdrfab_cu.ctx_push(s->ctx);
	if (err)
		goto fail;
	for (int i = 0; !s->ready && i < 2; i++) {
		if (s->stream[i])
			continue;
		err = gdrfab_cu.stream_create(&s->stream[i],
					      GDRFAB_CU_STREAM_NON_BLOCK);
		if (err) {
			gdrfab_cu_ctx c;

			s->stream[i] = NULL;
			gdrfab_cu.ctx_pop(&c);
			goto fail;
		}
	}
	s->ready = true;
	return s;
fail:
	GDRFAB_WARN(FI_LOG_CORE, "CUDA device %d: no context or stream: %s\n",
		    device, gdrfab_cu_strerror(err));
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static void stream_leave(struct dev_stream *s)
{
	gdrfab_cu_ctx c;

	gdrfab_cu.ctx_pop(&c);
	pthread_mutex_unlock(&s->lock);
}

static gdrfab_cu_result enqueue(struct dev_stream *s, void *dst,
				const void *src, size_t len, bool to_host)
{
	if (to_host)
		return gdrfab_cu.copy_dtoh_async(dst, (gdrfab_cu_ptr)src, len,
						 s->stream[1]);
	return gdrfab_cu.copy_htod_async((gdrfab_cu_ptr)dst, src, len,
					 s->stream[0]);
}

int gdrfab_cuda_copy_start(void *dst, const void *src, size_t len, int device,
			   bool to_host, struct gdrfab_cuda_op *op)
{
	struct dev_stream *s;
	gdrfab_cu_result err = GDRFAB_CU_SUCCESS;
	gdrfab_cu_event ev = NULL;

	op->event = NULL;
	op->device = device;
	if (!len)
		return 0;
	if (len <= gdrfab_params.kmod_copy_max &&
	    gdrfab_kmod_copy(to_host ? (void *)src : dst,
			     to_host ? dst : (void *)src, len, !to_host))
		return 0; /* done, through the CPU mapping */
	s = stream_enter(device);
	if (!s)
		return -FI_EIO;
	if (s->idle_cnt)
		ev = s->idle[--s->idle_cnt];
	else
		err = gdrfab_cu.event_create(&ev, GDRFAB_CU_EVENT_NO_TIMING);
	if (ev)
		err = enqueue(s, dst, src, len, to_host);
	if (!err)
		err = gdrfab_cu.event_record(ev, s->stream[to_host]);
	if (err && ev) {
		if (s->idle_cnt < EVENT_POOL)
			s->idle[s->idle_cnt++] = ev;
		else
			gdrfab_cu.event_destroy(ev);
	}
	stream_leave(s);
	if (err) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "starting a copy of %zu bytes %p -> %p: %s\n", len,
			    src, dst, gdrfab_cu_strerror(err));
		return -FI_EIO;
	}
	op->event = ev;
	return 0;
}

/* Gives a finished copy's event back to its device. */
static void event_put(struct gdrfab_cuda_op *op)
{
	struct dev_stream *s = &streams[op->device];

	pthread_mutex_lock(&s->lock);
	if (s->idle_cnt < EVENT_POOL) {
		s->idle[s->idle_cnt++] = op->event;
		op->event = NULL;
	}
	pthread_mutex_unlock(&s->lock);
	if (op->event)
		gdrfab_cu.event_destroy(op->event);
	op->event = NULL;
}

int gdrfab_cuda_copy_test(struct gdrfab_cuda_op *op)
{
	gdrfab_cu_result err;

	if (!op->event)
		return 0;
	err = gdrfab_cu.event_query(op->event);
	if (err == GDRFAB_CU_NOT_READY)
		return -FI_EAGAIN;
	if (err) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "an asynchronous copy on device %d failed: %s\n",
			    op->device, gdrfab_cu_strerror(err));
		/* A failed event is not reused: its state is CUDA's. */
		gdrfab_cu.event_destroy(op->event);
		op->event = NULL;
		return -FI_EIO;
	}
	event_put(op);
	return 0;
}

void gdrfab_cuda_copy_fini(void)
{
	/* Never loads CUDA at unload for a process that did not use it. */
	if (!streams_made)
		return;
	for (int i = 0; i < GDRFAB_CUDA_MAX_STREAMS; i++) {
		struct dev_stream *s = &streams[i];

		pthread_mutex_lock(&s->lock);
		while (s->idle_cnt)
			gdrfab_cu.event_destroy(s->idle[--s->idle_cnt]);
		pthread_mutex_unlock(&s->lock);
	}
}

void gdrfab_cuda_copy_wait(struct gdrfab_cuda_op *op)
{
	/* Only when memory a copy may still touch is about to be freed (an
	 * endpoint closing with copies in flight): never on the data path. */
	while (gdrfab_cuda_copy_test(op) == -FI_EAGAIN)
		sched_yield();
}

static int copy(void *dst, const void *src, size_t len, int device,
		bool to_host)
{
	struct gdrfab_cuda_op op;
	int ret = gdrfab_cuda_copy_start(dst, src, len, device, to_host, &op);

	if (!ret)
		gdrfab_cuda_copy_wait(&op);
	return ret;
}

int gdrfab_cuda_host_register(void *p, size_t len)
{
	struct dev_stream *s = stream_enter(0);
	gdrfab_cu_result err;

	if (!s)
		return -FI_ENOSYS;
	/* Portable: pinned for every context, whichever GPU copies. */
	err = gdrfab_cu.host_register(p, len, GDRFAB_CU_HOST_REG_PORTABLE);
	stream_leave(s);
	if (err) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "pinning a %zu-byte staging buffer for CUDA: %s\n",
			    len, gdrfab_cu_strerror(err));
		return -FI_EIO;
	}
	return 0;
}

void gdrfab_cuda_host_unregister(void *p)
{
	gdrfab_cu_result err = gdrfab_cu.host_unregister(p);

	if (err)
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "unpinning a staging buffer at %p: %s\n", p,
			    gdrfab_cu_strerror(err));
}

/* Small copies go through gdrfab.ko's CPU mapping when it is there; the
 * others wait for their event (eager payloads and injects, a few KiB). */
int gdrfab_cuda_copy_to_host(void *dst, const void *src, size_t len, int device)
{
	if (gdrfab_kmod_copy((void *)src, dst, len, false))
		return 0;
	return copy(dst, src, len, device, true);
}

int gdrfab_cuda_copy_to_device(void *dst, const void *src, size_t len,
			       int device)
{
	if (gdrfab_kmod_copy(dst, (void *)src, len, true))
		return 0;
	return copy(dst, src, len, device, false);
}

int gdrfab_cuda_flush(int device)
{
	struct dev_stream *s;
	gdrfab_cu_result err;

	gdrfab_cu_ctx c;

	if (!gdrfab_cuda_available(NULL) || !gdrfab_cu.flush_gdr_writes)
		return -FI_ENOSYS;
	/* The device's context, made under its lock; the flush itself
	 * (synchronous by CUDA's API) runs with no lock held: a context,
	 * once retained, is kept until unload. */
	s = stream_enter(device);
	if (!s)
		return -FI_EIO;
	stream_leave(s);
	err = gdrfab_cu.ctx_push(s->ctx);
	if (!err) {
		err = gdrfab_cu.flush_gdr_writes(GDRFAB_CU_FLUSH_TARGET_CTX,
						 GDRFAB_CU_FLUSH_TO_OWNER);
		gdrfab_cu.ctx_pop(&c);
	}
	if (err) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "cuFlushGPUDirectRDMAWrites (device %d): %s\n",
			    device, gdrfab_cu_strerror(err));
		return -FI_EIO;
	}
	return 0;
}
