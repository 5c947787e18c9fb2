/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CUDA through the driver API, loaded with dlopen("libcuda.so.1") on first
 * need: gdrfab never links libcuda, so it loads and serves host memory on
 * machines without CUDA. Every function here is safe to call when CUDA is
 * absent; they then fail with -FI_ENOSYS.
 *
 * No function here may be called with a lock held that the registration
 * cache or the data path also takes around CUDA calls (the cache makes
 * none under its lock).
 */
#ifndef GDRFAB_CUDA_H
#define GDRFAB_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gdrfab_cuda_dev.h"

/* Classifies ptr with one cuPointerGetAttributes call. 0, or -FI_ENOSYS
 * without CUDA, -FI_EINVAL when CUDA refuses the query. */
int gdrfab_cuda_classify(const void *ptr, struct gdrfab_cuda_ptr *out);
/* Frees the set of buffer IDs that had SYNC_MEMOPS set (provider unload). */
void gdrfab_cuda_ptr_fini(void);

/* Sets CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on the allocation of a device
 * pointer once (its buffer ID says whether it is the same allocation).
 * 0 when set now or before; -FI_EOPNOTSUPP when CUDA refuses it for this
 * kind of allocation (VMM): registration goes on, logged once. */
int gdrfab_cuda_sync_memops(const struct gdrfab_cuda_ptr *p);

/* Copies between host and device memory on gdrfab's own stream of the
 * device, and waits for the copy: on return the bytes are where they go.
 * 0 or -FI_EIO (logged). */
int gdrfab_cuda_copy_to_host(void *dst, const void *src, size_t len,
			     int device);
int gdrfab_cuda_copy_to_device(void *dst, const void *src, size_t len,
			       int device);

/* An asynchronous copy: its CUDA event on gdrfab's stream of the device
 * for that direction (NULL once done, or when it was done at once). */
struct gdrfab_cuda_op {
	void *event;
	int device;
};

/* Enqueues a copy of len bytes (dst host memory when to_host) and records
 * an event after it; returns at once. Copies up to FI_GDRFAB_KMOD_COPY_MAX
 * go through gdrfab.ko's mapping where it is there, done on return. 0 or
 * -FI_EIO (logged) when CUDA refuses it. */
int gdrfab_cuda_copy_start(void *dst, const void *src, size_t len, int device,
			   bool to_host, struct gdrfab_cuda_op *op);
/* Whether the copy is done (cuEventQuery, never waiting): 0 done,
 * -FI_EAGAIN not yet, -FI_EIO failed (logged). */
int gdrfab_cuda_copy_test(struct gdrfab_cuda_op *op);
/* Waits for a copy (only before freeing memory it may touch). */
void gdrfab_cuda_copy_wait(struct gdrfab_cuda_op *op);
/* Destroys the idle events kept per device (provider unload). */
void gdrfab_cuda_copy_fini(void);
/* Pins host memory for CUDA (cuMemHostRegister, portable), so that copies
 * into and out of it run at the copy engine's speed and asynchronously. */
int gdrfab_cuda_host_register(void *p, size_t len);
void gdrfab_cuda_host_unregister(void *p);

/* A dma-buf fd for [addr, addr+len) of device memory: the range is widened
 * to whole 64 KB pages and *offset is addr's place in it. */
int gdrfab_cuda_dmabuf_fd(const void *addr, size_t len, int *fd,
			  uint64_t *offset);

/* cuFlushGPUDirectRDMAWrites to the owner, in the device's primary
 * context. */
int gdrfab_cuda_flush(int device);

/* Whether a peer-memory client (nvidia-peermem or nv_peer_mem) is loaded,
 * and what showed it (for the log). */
bool gdrfab_peermem_loaded(const char **evidence);

#endif /* GDRFAB_CUDA_H */
