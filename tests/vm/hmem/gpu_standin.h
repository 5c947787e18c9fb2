/* SPDX-License-Identifier: BSD-2-Clause */
/* "GPU" buffers from the CUDA stand-in (tests/cuda/), reached the way an
 * application reaches libcuda: through the driver API, loaded here with
 * dlopen so that the same test binary runs with or without it. */
#ifndef GPU_STANDIN_H
#define GPU_STANDIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../cuda/standin_cuda.h"

/* Loads the stand-in (after the test set its GDRFAB_STANDIN_* variables)
 * and runs cuInit; skips the test when it is not on LD_LIBRARY_PATH. */
void gpu_open(void);
void *gpu_alloc(size_t len);
void *gpu_alloc_managed(size_t len);
void *gpu_alloc_host(size_t len);
void gpu_free(void *p);
/* Fills device memory with dp_fill's pattern, or checks it. */
void gpu_fill(void *dev, size_t len, unsigned seed);
bool gpu_check(const void *dev, size_t len, unsigned seed);
struct standin_stats gpu_stats(void);
/* Copies device memory out (cuMemcpyDtoH). */
void gpu_read(void *host, const void *dev, size_t len);
unsigned gpu_sync_memops_of(void *dev);
/* Forbids CUDA calls from now (standin_forbid: 0 none, 1 data movement
 * fails, 2 every call counted too), for the provider's data path only:
 * the test's own gpu_* calls come before or after. */
void gpu_forbid(int mode);
/* The n-th asynchronous copy from now fails at enqueue (0: none). */
void gpu_fail_copies(unsigned n);

struct dp_ep;
struct fid_mr;
/* Registers [buf, buf + len) of GPU memory as FI_HMEM_CUDA in e's domain
 * with this access; the test fails if it is refused. */
struct fid_mr *gpu_reg(struct dp_ep *e, void *buf, size_t len, uint64_t access);

#endif /* GPU_STANDIN_H */
