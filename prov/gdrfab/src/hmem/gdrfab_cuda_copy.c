/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Host<->device copies and GPUDirect flushes, in each device's primary
 * context on a stream of gdrfab's own (never the application's default
 * stream, which would serialise with its kernels).
 */
#include <pthread.h>

#include "gdrfab.h"
#include "gdrfab_cuda.h"
#include "gdrfab_cuda_sym.h"
#include "gdrfab_kmod.h"

#define GDRFAB_CUDA_MAX_STREAMS 64

struct dev_stream {
	pthread_mutex_t lock; /* one copy at a time per stream */
	gdrfab_cu_ctx ctx;
	gdrfab_cu_stream stream;
	bool ready;
};

static struct dev_stream streams[GDRFAB_CUDA_MAX_STREAMS];
static pthread_once_t streams_once = PTHREAD_ONCE_INIT;

static void init_locks(void)
{
	for (int i = 0; i < GDRFAB_CUDA_MAX_STREAMS; i++)
		pthread_mutex_init(&streams[i].lock, NULL);
}

/* Locks the device's stream, made on first use, with its context pushed;
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
	if (!s->ready) {
		err = gdrfab_cu.stream_create(&s->stream,
					      GDRFAB_CU_STREAM_NON_BLOCK);
		if (err) {
			gdrfab_cu_ctx c;

			gdrfab_cu.ctx_pop(&c);
			goto fail;
		}
		s->ready = true;
	}
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

static int copy(void *dst, const void *src, size_t len, int device,
		bool to_host)
{
	struct dev_stream *s;
	gdrfab_cu_result err;

	if (!len)
		return 0;
	s = stream_enter(device);
	if (!s)
		return -FI_EIO;
	if (to_host)
		err = gdrfab_cu.copy_dtoh_async(dst, (gdrfab_cu_ptr)src, len,
						s->stream);
	else
		err = gdrfab_cu.copy_htod_async((gdrfab_cu_ptr)dst, src, len,
						s->stream);
	if (!err)
		err = gdrfab_cu.stream_sync(s->stream);
	stream_leave(s);
	if (err) {
		GDRFAB_WARN(FI_LOG_EP_DATA, "copying %zu bytes %p -> %p: %s\n",
			    len, src, dst, gdrfab_cu_strerror(err));
		return -FI_EIO;
	}
	return 0;
}

/* Small copies go through gdrfab.ko's CPU mapping when it is there. */
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

	if (!gdrfab_cuda_available(NULL) || !gdrfab_cu.flush_gdr_writes)
		return -FI_ENOSYS;
	s = stream_enter(device);
	if (!s)
		return -FI_EIO;
	err = gdrfab_cu.flush_gdr_writes(GDRFAB_CU_FLUSH_TARGET_CTX,
					 GDRFAB_CU_FLUSH_TO_OWNER);
	stream_leave(s);
	if (err) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "cuFlushGPUDirectRDMAWrites (device %d): %s\n",
			    device, gdrfab_cu_strerror(err));
		return -FI_EIO;
	}
	return 0;
}
