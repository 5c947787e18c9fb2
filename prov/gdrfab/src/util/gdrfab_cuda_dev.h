/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CUDA driver, loaded with dlopen("libcuda.so.1") on first need: the
 * table of its devices and the kinds of memory it tells apart. It sits
 * below both hmem/ (GPU memory) and topo/ (which NIC is near the process's
 * GPU), which use it and not each other. Safe to call without CUDA: no
 * device is then available.
 */
#ifndef GDRFAB_CUDA_DEV_H
#define GDRFAB_CUDA_DEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What one cuPointerGetAttributes call says about an address. */
enum gdrfab_mem_kind {
	GDRFAB_MEM_HOST,	 /* pageable host memory, unknown to CUDA */
	GDRFAB_MEM_CUDA_HOST,	 /* cuMemAllocHost / cuMemHostRegister */
	GDRFAB_MEM_CUDA_DEVICE,	 /* device memory (cuMemAlloc, VMM, pools) */
	GDRFAB_MEM_CUDA_MANAGED, /* cuMemAllocManaged: no GPUDirect RDMA */
};

struct gdrfab_cuda_ptr {
	enum gdrfab_mem_kind kind;
	uint64_t buffer_id; /* changes when the address is reallocated */
	int device;	    /* ordinal (device and managed memory) */
	uintptr_t base;	    /* the allocation holding the address */
	size_t size;
};

/* Device properties that decide registration and flushing. */
struct gdrfab_cuda_dev {
	char bus_id[32]; /* "0000:17:00.0", lower case */
	bool gdr_supported;
	bool dmabuf_supported;
	bool flush_supported; /* cuFlushGPUDirectRDMAWrites works */
	int writes_ordering;  /* CU_GPU_DIRECT_RDMA_WRITES_ORDERING_* */
};

#define GDRFAB_CUDA_ORDERING_OWNER 100

/* Loads libcuda and runs cuInit once per process; true when at least one
 * device is usable. The first failure is logged (FI_INFO) with its cause;
 * why (may be NULL) receives it too. */
bool gdrfab_cuda_available(const char **why);
int gdrfab_cuda_device_count(void);
const struct gdrfab_cuda_dev *gdrfab_cuda_device(int ordinal);
/* The device of the calling thread's current CUDA context, or -1. */
int gdrfab_cuda_current_device(void);

#endif /* GDRFAB_CUDA_DEV_H */
