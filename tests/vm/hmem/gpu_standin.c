/* SPDX-License-Identifier: BSD-2-Clause */
/* The CUDA stand-in as the integration tests use it. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdlib.h>

#include "dp_helpers.h"
#include "gpu_standin.h"

typedef int (*cu_fn)();

static void *lib;

static void *sym(const char *name)
{
	void *f = dlsym(lib, name);

	cr_assert_not_null(f, "stand-in lacks %s", name);
	return f;
}

void gpu_open(void)
{
	int (*init)(unsigned);

	lib = dlopen("libcuda.so.1", RTLD_NOW);
	if (!lib || !dlsym(lib, "standin_stats"))
		cr_skip_test(
			"the CUDA stand-in is not on LD_LIBRARY_PATH (tests/cuda/.libs)");
	init = sym("cuInit");
	cr_assert_eq(init(0), 0, "stand-in cuInit");
}

void *gpu_alloc(size_t len)
{
	int (*f)(unsigned long long *, size_t) = sym("cuMemAlloc_v2");
	unsigned long long p = 0;

	cr_assert_eq(f(&p, len), 0, "cuMemAlloc(%zu)", len);
	return (void *)(uintptr_t)p;
}

void *gpu_alloc_managed(size_t len)
{
	int (*f)(unsigned long long *, size_t, unsigned) =
		sym("cuMemAllocManaged");
	unsigned long long p = 0;

	cr_assert_eq(f(&p, len, 1), 0);
	return (void *)(uintptr_t)p;
}

void *gpu_alloc_host(size_t len)
{
	int (*f)(void **, size_t) = sym("cuMemAllocHost_v2");
	void *p = NULL;

	cr_assert_eq(f(&p, len), 0);
	return p;
}

void gpu_free(void *p)
{
	int (*f)(unsigned long long) = sym("cuMemFree_v2");

	cr_assert_eq(f((uintptr_t)p), 0);
}

void gpu_fill(void *dev, size_t len, unsigned seed)
{
	int (*f)(unsigned long long, const void *, size_t) =
		sym("cuMemcpyHtoD_v2");
	void *host = dp_alloc(len);

	dp_fill(host, len, seed);
	cr_assert_eq(f((uintptr_t)dev, host, len), 0);
	free(host);
}

bool gpu_check(const void *dev, size_t len, unsigned seed)
{
	int (*f)(void *, unsigned long long, size_t) = sym("cuMemcpyDtoH_v2");
	void *host = dp_alloc(len);
	bool ok;

	cr_assert_eq(f(host, (uintptr_t)dev, len), 0);
	ok = dp_check(host, len, seed);
	free(host);
	return ok;
}

struct standin_stats gpu_stats(void)
{
	void (*f)(struct standin_stats *) = sym("standin_stats");
	struct standin_stats s;

	f(&s);
	return s;
}

unsigned gpu_sync_memops_of(void *dev)
{
	int (*f)(void *, int, unsigned long long) =
		sym("cuPointerGetAttribute");
	unsigned v = 0;

	cr_assert_eq(f(&v, 6, (uintptr_t)dev), 0);
	return v;
}

void gpu_forbid(int mode)
{
	standin_forbid_fn f = (standin_forbid_fn)sym("standin_forbid");

	f(mode);
}

void gpu_fail_copies(unsigned n)
{
	standin_fail_copies_fn f =
		(standin_fail_copies_fn)sym("standin_fail_copies");

	f(n);
}

void gpu_read(void *host, const void *dev, size_t len)
{
	int (*f)(void *, unsigned long long, size_t) = sym("cuMemcpyDtoH_v2");

	cr_assert_eq(f(host, (uintptr_t)dev, len), 0, "cuMemcpyDtoH");
}

struct fid_mr *gpu_reg(struct dp_ep *e, void *buf, size_t len, uint64_t access)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct fi_mr_attr attr = {.mr_iov = &iov,
				  .iov_count = 1,
				  .access = access,
				  .iface = FI_HMEM_CUDA};
	struct fid_mr *mr = NULL;
	int ret = fi_mr_regattr(e->d.domain, &attr, 0, &mr);

	cr_assert_eq(ret, 0, "FI_HMEM_CUDA registration: %s",
		     fi_strerror(-ret));
	return mr;
}
