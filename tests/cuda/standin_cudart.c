/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CUDA runtime stand-in: a libcudart.so for the CUDA stand-in's
 * libcuda.so.1 (standin_cuda.h), a test double, never shipped. It answers
 * what a program that reaches the driver through the runtime asks (as
 * aws-ofi-nccl built with --enable-cudart-dynamic does in its
 * nccl_ofi_cuda.cpp: nccl_net_ofi_cuda_init): the runtime's version, and
 * the driver's functions by name through cudaGetDriverEntryPoint[ByVersion],
 * which it looks up in the stand-in libcuda.so.1 (the "_v2" name first, as
 * the driver's entry point table gives the newest ABI of a function). The
 * real runtime initialises the driver on first use; so does this one.
 *
 * It also allocates, copies and sets memory through the stand-in driver, as
 * libfabric's fabtests do for -D cuda (common/hmem_cuda.c: cudaMalloc,
 * cudaMallocHost, cudaFree, cudaFreeHost, cudaMemset, cudaMemcpy and the
 * error names): so the memory they register is the stand-in's "device"
 * memory, which the CPU cannot touch at the application's address, and
 * gdrfab sees through the driver API what the program made through the
 * runtime.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int cudaError_t;

enum {
	SUCCESS = 0,
	ERROR_INVALID_VALUE = 1,
	ERROR_MEMORY_ALLOCATION = 2,
	ERROR_NO_DEVICE = 100,
	ERROR_UNKNOWN = 999,
};
/* enum cudaDriverEntryPointQueryResult */
enum { ENTRY_SUCCESS = 0, ENTRY_NOT_FOUND = 1 };

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void *libcuda;
static int init_result = ERROR_NO_DEVICE;

static void load(void)
{
	int (*cu_init)(unsigned);

	libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!libcuda) {
		fprintf(stderr, "cudart stand-in: %s\n", dlerror());
		return;
	}
	*(void **)&cu_init = dlsym(libcuda, "cuInit");
	init_result = cu_init && cu_init(0) == 0 ? SUCCESS : ERROR_NO_DEVICE;
}

static int ready(void)
{
	pthread_once(&once, load);
	return init_result;
}

EXPORT cudaError_t cudaRuntimeGetVersion(int *version)
{
	if (!version)
		return ERROR_INVALID_VALUE;
	*version = 13000;
	return SUCCESS;
}

EXPORT cudaError_t cudaDriverGetVersion(int *version)
{
	int (*f)(int *);

	if (!version)
		return ERROR_INVALID_VALUE;
	if (ready() != SUCCESS)
		return init_result;
	*(void **)&f = dlsym(libcuda, "cuDriverGetVersion");
	return f && f(version) == 0 ? SUCCESS : ERROR_UNKNOWN;
}

EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol,
						    void **fn,
						    unsigned int version,
						    unsigned long long flags,
						    int *status)
{
	char v2[128];

	(void)version, (void)flags;
	if (!symbol || !fn)
		return ERROR_INVALID_VALUE;
	*fn = NULL;
	if (ready() != SUCCESS)
		return init_result;
	if (snprintf(v2, sizeof(v2), "%s_v2", symbol) < (int)sizeof(v2))
		*fn = dlsym(libcuda, v2);
	if (!*fn)
		*fn = dlsym(libcuda, symbol);
	if (status)
		*status = *fn ? ENTRY_SUCCESS : ENTRY_NOT_FOUND;
	return SUCCESS;
}

EXPORT cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **fn,
					   unsigned long long flags,
					   int *status)
{
	return cudaGetDriverEntryPointByVersion(symbol, fn, 13000, flags,
						status);
}

/* The stand-in driver's function name, or NULL before init or if absent. */
static void *driver(const char *name)
{
	return ready() == SUCCESS ? dlsym(libcuda, name) : NULL;
}

/* The driver stand-in's codes 1 and 2 mean the same in the runtime. */
static cudaError_t from_driver(int r)
{
	return r == 0 || r == 1 || r == 2 ? r : ERROR_UNKNOWN;
}

EXPORT cudaError_t cudaMalloc(void **p, size_t size)
{
	int (*f)(unsigned long long *, size_t);
	unsigned long long d = 0;
	int r;

	*(void **)&f = driver("cuMemAlloc_v2");
	if (!f || !p)
		return f ? ERROR_INVALID_VALUE : init_result;
	r = f(&d, size);
	*p = (void *)(uintptr_t)d;
	return from_driver(r);
}

EXPORT cudaError_t cudaFree(void *p)
{
	int (*f)(unsigned long long);

	*(void **)&f = driver("cuMemFree_v2");
	if (!p)
		return SUCCESS;
	return f ? from_driver(f((uintptr_t)p)) : init_result;
}

EXPORT cudaError_t cudaMallocHost(void **p, size_t size)
{
	int (*f)(void **, size_t);

	*(void **)&f = driver("cuMemAllocHost_v2");
	return f ? from_driver(f(p, size)) : init_result;
}

EXPORT cudaError_t cudaFreeHost(void *p)
{
	int (*f)(void *);

	*(void **)&f = driver("cuMemFreeHost");
	if (!p)
		return SUCCESS;
	return f ? from_driver(f(p)) : init_result;
}

/* Unified addressing: the driver tells each side's kind from its address,
 * whatever cudaMemcpyKind says. */
EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, int kind)
{
	int (*f)(unsigned long long, unsigned long long, size_t);

	(void)kind;
	*(void **)&f = driver("cuMemcpy");
	return f ? from_driver(f((uintptr_t)dst, (uintptr_t)src, n))
		 : init_result;
}

/* The stand-in has no engine to set memory: a host pattern copied in. */
EXPORT cudaError_t cudaMemset(void *p, int value, size_t n)
{
	void *tmp = malloc(n ? n : 1);
	cudaError_t r;

	if (!tmp)
		return ERROR_MEMORY_ALLOCATION;
	memset(tmp, value, n);
	r = cudaMemcpy(p, tmp, n, 4 /* cudaMemcpyDefault */);
	free(tmp);
	return r;
}

EXPORT const char *cudaGetErrorName(cudaError_t e)
{
	return e == SUCCESS		      ? "cudaSuccess"
	       : e == ERROR_INVALID_VALUE     ? "cudaErrorInvalidValue"
	       : e == ERROR_MEMORY_ALLOCATION ? "cudaErrorMemoryAllocation"
	       : e == ERROR_NO_DEVICE	      ? "cudaErrorNoDevice"
					      : "cudaErrorUnknown";
}

EXPORT const char *cudaGetErrorString(cudaError_t e)
{
	return e == SUCCESS ? "no error (stand-in)" : cudaGetErrorName(e);
}
