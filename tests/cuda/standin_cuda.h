/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CUDA stand-in: a libcuda.so.1 for machines without a GPU (CI and the
 * soft-RoCE VM). It answers the driver API calls gdrfab makes, and those a
 * test needs to make "device" memory: memory the CPU cannot touch through
 * the address the application sees (it is mapped PROT_NONE there), so a
 * provider that memcpy's from or into it crashes instead of passing. The
 * stand-in reaches it through a second mapping of the same pages.
 *
 * Set in the environment before cuInit:
 *   GDRFAB_STANDIN_DEVICES   device count (default 1; 0: no device)
 *   GDRFAB_STANDIN_INIT_FAIL cuInit fails (CUDA_ERROR_NO_DEVICE)
 *   GDRFAB_STANDIN_ORDERING  GPU_DIRECT_RDMA_WRITES_ORDERING (default 0)
 *   GDRFAB_STANDIN_FLUSH     cuFlushGPUDirectRDMAWrites supported (1)
 *   GDRFAB_STANDIN_CPU_VISIBLE  device memory readable by the CPU (and so
 *                            registrable by rxe, standing in for peermem)
 *   GDRFAB_STANDIN_FORBID    1: copies, events, streams and GPUDirect
 *                            flushes fail (CUDA_ERROR_NOT_PERMITTED) with
 *                            a line on stderr, counted in forbidden_calls;
 *                            2: every other call is counted (and served)
 *                            too. standin_forbid(mode) sets it at run time,
 *                            so a test forbids only while the provider
 *                            moves data.
 *
 * Asynchronous copies are deferred as the driver defers them: each stream
 * is a queue that runs in order, one step (a copy, or an event reaching
 * its place) at each cuEventQuery of an event on it, all of it at
 * cuStreamSynchronize; cuEventQuery answers CUDA_ERROR_NOT_READY until the
 * copies recorded before the event ran. A copy enqueued with bad
 * arguments fails at once, as the driver's does; standin_fail_copies(n)
 * makes the n-th asynchronous copy from now fail so (CUDA_ERROR_INVALID_
 * VALUE), as if its memory had been freed.
 * Everything it stands in for is also checked on a real GPU (tests/gpu/).
 */
#ifndef STANDIN_CUDA_H
#define STANDIN_CUDA_H

#include <stdint.h>

struct standin_stats {
	uint64_t sync_memops;	  /* cuPointerSetAttribute(SYNC_MEMOPS) calls */
	uint64_t flushes;	  /* cuFlushGPUDirectRDMAWrites calls */
	uint64_t copies_to_host;  /* device -> host copies */
	uint64_t copies_to_dev;	  /* host -> device copies */
	uint64_t ptr_queries;	  /* cuPointerGetAttributes calls */
	uint64_t async_copies;	  /* cuMemcpy*Async enqueued */
	uint64_t not_ready;	  /* cuEventQuery answered NOT_READY */
	uint64_t stream_syncs;	  /* cuStreamSynchronize calls */
	uint64_t host_regs;	  /* cuMemHostRegister calls that pinned */
	uint64_t host_unregs;	  /* cuMemHostUnregister calls that unpinned */
	uint64_t failed_copies;	  /* copies refused (injected) */
	uint64_t forbidden_calls; /* calls made while forbidden */
};

/* Resolved with dlsym by tests: 0 allows every call, 1 forbids data
 * movement, 2 counts every call as well (GDRFAB_STANDIN_FORBID). */
typedef void (*standin_forbid_fn)(int mode);

/* Resolved with dlsym by tests: the n-th asynchronous copy from now (1:
 * the next) fails at enqueue; 0 cancels. */
typedef void (*standin_fail_copies_fn)(unsigned n);

/* Resolved with dlsym by tests: a snapshot of the counters. */
typedef void (*standin_stats_fn)(struct standin_stats *out);

#endif /* STANDIN_CUDA_H */
