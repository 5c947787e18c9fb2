/* SPDX-License-Identifier: BSD-2-Clause */
/* What the MR cache's tests give it as a GPU allocation, without a GPU. */
#ifndef GPU_PTR_FIXTURE_H
#define GPU_PTR_FIXTURE_H

#include <stdint.h>

#include "gdrfab_mr_cache.h"

/* A "GPU allocation" of size bytes at base, with a buffer ID. */
static inline struct gdrfab_cuda_ptr gpu(uintptr_t base, size_t size,
					 uint64_t id)
{
	return (struct gdrfab_cuda_ptr){.kind = GDRFAB_MEM_CUDA_DEVICE,
					.buffer_id = id,
					.base = base,
					.size = size};
}

#endif
