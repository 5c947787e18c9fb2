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
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int cudaError_t;

enum {
	SUCCESS = 0,
	ERROR_INVALID_VALUE = 1,
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
