/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The examples' data buffer: host memory, or with -D cuda GPU memory
 * allocated through the CUDA driver API (loaded with dlopen, as gdrfab
 * itself does, so the examples run on machines without CUDA) and
 * registered as FI_HMEM_CUDA. The CPU never touches GPU memory: fills and
 * checks go through a host copy.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ex_common.h"

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_dev_fn)(int *, int);
typedef int (*cu_ctx_retain_fn)(void **, int);
typedef int (*cu_ctx_set_fn)(void *);
typedef int (*cu_alloc_fn)(unsigned long long *, size_t);
typedef int (*cu_free_fn)(unsigned long long);
typedef int (*cu_htod_fn)(unsigned long long, const void *, size_t);
typedef int (*cu_dtoh_fn)(void *, unsigned long long, size_t);

static struct {
	cu_alloc_fn alloc;
	cu_free_fn free;
	cu_htod_fn htod;
	cu_dtoh_fn dtoh;
} cu;

static int cuda_open(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW);
	cu_init_fn init;
	cu_dev_fn get;
	cu_ctx_retain_fn retain;
	cu_ctx_set_fn set;
	void *ctx;
	int dev;

	if (!lib) {
		fprintf(stderr, "-D cuda: %s\n", dlerror());
		return -1;
	}
	init = (cu_init_fn)dlsym(lib, "cuInit");
	get = (cu_dev_fn)dlsym(lib, "cuDeviceGet");
	retain = (cu_ctx_retain_fn)dlsym(lib, "cuDevicePrimaryCtxRetain");
	set = (cu_ctx_set_fn)dlsym(lib, "cuCtxSetCurrent");
	cu.alloc = (cu_alloc_fn)dlsym(lib, "cuMemAlloc_v2");
	cu.free = (cu_free_fn)dlsym(lib, "cuMemFree_v2");
	cu.htod = (cu_htod_fn)dlsym(lib, "cuMemcpyHtoD_v2");
	cu.dtoh = (cu_dtoh_fn)dlsym(lib, "cuMemcpyDtoH_v2");
	if (!init || !get || !retain || !cu.alloc || !cu.free || !cu.htod ||
	    !cu.dtoh || init(0) || get(&dev, 0) || retain(&ctx, dev) ||
	    (set && set(ctx))) {
		fprintf(stderr, "-D cuda: no usable CUDA device 0\n");
		return -1;
	}
	return 0;
}

int ex_buf_alloc(struct ex_ctx *c, size_t len)
{
	unsigned long long p;

	if (!c->o.cuda) {
		if (posix_memalign((void **)&c->buf, 4096, len ? len : 1))
			return -FI_ENOMEM;
		memset(c->buf, 0, len);
		return 0;
	}
	if (cuda_open() || cu.alloc(&p, len ? len : 1))
		return -FI_ENOMEM;
	c->buf = (uint8_t *)(uintptr_t)p;
	return 0;
}

void ex_buf_free(struct ex_ctx *c)
{
	if (!c->buf)
		return;
	if (c->o.cuda)
		cu.free((uintptr_t)c->buf);
	else
		free(c->buf);
	c->buf = NULL;
}

int ex_buf_reg(struct ex_ctx *c, uint64_t access)
{
	struct iovec iov = {.iov_base = c->buf,
			    .iov_len = c->buf_len ? c->buf_len : 1};
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = access,
		.requested_key = 1,
		.iface = c->o.cuda ? FI_HMEM_CUDA : FI_HMEM_SYSTEM,
	};

	return fi_mr_regattr(c->objs.domain, &attr, 0, &c->mr);
}

void ex_buf_fill(struct ex_ctx *c, size_t off, size_t len, unsigned seed)
{
	uint8_t *tmp;

	if (!c->o.cuda) {
		ex_fill(c->buf + off, len, seed);
		return;
	}
	tmp = malloc(len ? len : 1);
	ex_fill(tmp, len, seed);
	cu.htod((uintptr_t)(c->buf + off), tmp, len);
	free(tmp);
}

bool ex_buf_verify(struct ex_ctx *c, size_t off, size_t len, unsigned seed)
{
	uint8_t *tmp;
	bool ok;

	if (!c->o.cuda)
		return ex_verify(c->buf + off, len, seed);
	tmp = malloc(len ? len : 1);
	cu.dtoh(tmp, (uintptr_t)(c->buf + off), len);
	ok = ex_verify(tmp, len, seed);
	free(tmp);
	return ok;
}

void ex_buf_copy(struct ex_ctx *c, size_t dst, size_t src, size_t len)
{
	uint8_t *tmp;

	if (!c->o.cuda) {
		memcpy(c->buf + dst, c->buf + src, len);
		return;
	}
	tmp = malloc(len ? len : 1);
	cu.dtoh(tmp, (uintptr_t)(c->buf + src), len);
	cu.htod((uintptr_t)(c->buf + dst), tmp, len);
	free(tmp);
}
