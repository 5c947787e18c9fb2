/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The loops mr_hit_bench times: the registration cache's GPU hit
 * (gdrfab_reg_get + gdrfab_reg_put of the thread's last hit), a hit found
 * under the lock, a miss, and the floor a hit's reference cannot go
 * below (one locked compare-exchange and one locked fetch-sub on a word of
 * its own). No CUDA: the caller's classification is a fixed struct, and a
 * backend that registers nothing stands in for the NIC.
 *
 * Where a libcuda.so.1 loads (the CUDA stand-in of tests/cuda, here), the
 * classification is timed too, alone and in front of a hit: its own
 * instructions are what callgrind counts outside the driver's function.
 *
 * Built twice: into mr_hit_bench itself, and into libmrhit.so, whose
 * thread-local variables are reached as a dlopen'ed provider reaches
 * them (the linker relaxes them in an executable).
 */
#include <dlfcn.h>
#include <stdatomic.h>

#include "gdrfab.h"
#include "gdrfab_cuda.h"
#include "gdrfab_mr_cache.h"
#include "mr_hit_loop.h"

static int fake_reg(void *ctx, struct gdrfab_reg *r)
{
	(void)ctx, (void)r;
	return 0;
}

static void fake_dereg(void *ctx, struct gdrfab_reg *r)
{
	(void)ctx, (void)r;
}

static struct gdrfab_mr_cache cache, nocache;
static const struct gdrfab_cuda_ptr mem = {
	.kind = GDRFAB_MEM_CUDA_DEVICE,
	.buffer_id = 7,
	.base = 0x7f0000000000,
	.size = 64 << 20,
};
#define ADDR ((void *)(0x7f0000000000 + 4096))

int mrhit_setup(void)
{
	struct gdrfab_reg_backend be = {.reg = fake_reg, .dereg = fake_dereg};
	struct gdrfab_reg *r;

	gdrfab_mr_cache_init(&cache, &be, true, 1ULL << 40, 1024);
	gdrfab_mr_cache_init(&nocache, &be, false, 1ULL << 40, 1024);
	if (gdrfab_reg_get(&cache, ADDR, 4096, 1, &mem, &r))
		return -1;
	gdrfab_reg_put(&cache, r);
	return 0;
}

void mrhit_teardown(void)
{
	gdrfab_mr_cache_fini(&cache);
	gdrfab_mr_cache_fini(&nocache);
}

uint64_t mrhit_fast_hits(void)
{
	return atomic_load(&cache.fast_hits);
}

int mrhit_hit(long n)
{
	struct gdrfab_reg *r;
	int bad = 0;

	for (long i = 0; i < n; i++) {
		bad |= gdrfab_reg_get(&cache, ADDR, 4096, 1, &mem, &r);
		gdrfab_reg_put(&cache, r);
	}
	return bad;
}

int mrhit_locked_hit(long n)
{
	struct gdrfab_reg *r;
	int bad = 0;

	for (long i = 0; i < n; i++) {
		char *a = (char *)ADDR + (i & 1) * (1 << 20);

		bad |= gdrfab_reg_get(&cache, a, 4096, 1, &mem, &r);
		gdrfab_reg_put(&cache, r);
	}
	return bad;
}

int mrhit_miss(long n)
{
	struct gdrfab_reg *r;
	int bad = 0;

	for (long i = 0; i < n; i++) {
		bad |= gdrfab_reg_get(&nocache, ADDR, 4096, 1, &mem, &r);
		gdrfab_reg_put(&nocache, r);
	}
	return bad;
}

int mrhit_floor(long n)
{
	static _Atomic unsigned refs = 1;

	for (long i = 0; i < n; i++) {
		unsigned v = atomic_load(&refs);

		while (!atomic_compare_exchange_weak(&refs, &v, v + 1))
			;
		atomic_fetch_sub(&refs, 1);
	}
	return 0;
}

static void *dev;

int mrhit_cuda_setup(void)
{
	int (*alloc)(unsigned long long *, size_t);
	unsigned long long p = 0;
	void *lib;

	if (!gdrfab_cuda_available(NULL))
		return -1;
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	alloc = lib ? (int (*)(unsigned long long *, size_t))dlsym(
			      lib, "cuMemAlloc_v2")
		    : NULL;
	if (!alloc || alloc(&p, 1 << 20) || !p)
		return -1;
	dev = (void *)(uintptr_t)(p + 4096);
	return mrhit_classify_hit(1);
}

int mrhit_classify(long n)
{
	struct gdrfab_cuda_ptr c;
	int bad = 0;

	for (long i = 0; i < n; i++)
		bad |= gdrfab_cuda_classify(dev, &c);
	return bad;
}

int mrhit_classify_hit(long n)
{
	struct gdrfab_cuda_ptr c;
	struct gdrfab_reg *r;
	int bad = 0;

	for (long i = 0; i < n; i++) {
		bad |= gdrfab_cuda_classify(dev, &c);
		bad |= c.kind != GDRFAB_MEM_CUDA_DEVICE;
		bad |= gdrfab_reg_get(&cache, dev, 4096, 1, &c, &r);
		gdrfab_reg_put(&cache, r);
	}
	return bad;
}
