/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gdrfab's CUDA layer against a real GPU (run on the lent GPU machine; it
 * has no RDMA NIC, so registrations themselves are tested over rxe with
 * the stand-in). Checks every allocation kind's classification, what
 * SYNC_MEMOPS does for each, buffer IDs across free and reallocation,
 * dma-buf export of aligned and unaligned ranges, the flush decision from
 * the device's attributes, and staged copies byte for byte; then times
 * classification, cache hits and misses and staged copies against the
 * bare CUDA calls. Exit 77 (skipped) without a GPU.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gdrfab.h"
#include "gdrfab_cuda.h"
#include "gdrfab_hmem.h"
#include "gdrfab_mr_cache.h"
#include "gdrfab_params.h"
#include "gdrfab_stage.h"
#include "gdrfab_topo.h"

static int failures, checks;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		checks++;                                                      \
		if (cond) {                                                    \
			printf("PASS ");                                       \
		} else {                                                       \
			printf("FAIL ");                                       \
			failures++;                                            \
		}                                                              \
		printf(__VA_ARGS__);                                           \
		printf("\n");                                                  \
	} while (0)

/* The driver API, resolved like the provider does (never linked). */
#define CU(name) static __typeof__(&name) p_##name
CU(cuCtxSetCurrent);
CU(cuDevicePrimaryCtxRetain);
CU(cuMemAlloc_v2);
CU(cuMemFree_v2);
CU(cuMemAllocHost_v2);
CU(cuMemFreeHost);
CU(cuMemHostRegister_v2);
CU(cuMemHostUnregister);
CU(cuMemAllocManaged);
CU(cuPointerGetAttribute);
CU(cuPointerGetAttributes);
CU(cuPointerSetAttribute);
CU(cuMemcpyDtoH_v2);
CU(cuMemcpyHtoD_v2);
CU(cuMemGetAllocationGranularity);
CU(cuMemCreate);
CU(cuMemAddressReserve);
CU(cuMemMap);
CU(cuMemSetAccess);
CU(cuMemUnmap);
CU(cuMemRelease);
CU(cuMemAddressFree);
CU(cuStreamCreate);
CU(cuStreamSynchronize);
CU(cuMemcpyDtoHAsync_v2);
CU(cuMemcpyHtoDAsync_v2);
CU(cuEventCreate);
CU(cuEventRecord);
CU(cuEventQuery);
CU(cuEventDestroy_v2);

static void load_api(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW);
#define R(name) p_##name = (__typeof__(p_##name))dlsym(lib, #name)
	R(cuCtxSetCurrent);
	R(cuDevicePrimaryCtxRetain);
	R(cuMemAlloc_v2);
	R(cuMemFree_v2);
	R(cuMemAllocHost_v2);
	R(cuMemFreeHost);
	R(cuMemHostRegister_v2);
	R(cuMemHostUnregister);
	R(cuMemAllocManaged);
	R(cuPointerGetAttribute);
	R(cuPointerGetAttributes);
	R(cuPointerSetAttribute);
	R(cuMemcpyDtoH_v2);
	R(cuMemcpyHtoD_v2);
	R(cuMemGetAllocationGranularity);
	R(cuMemCreate);
	R(cuMemAddressReserve);
	R(cuMemMap);
	R(cuMemSetAccess);
	R(cuMemUnmap);
	R(cuMemRelease);
	R(cuMemAddressFree);
	R(cuStreamCreate);
	R(cuStreamSynchronize);
	R(cuMemcpyDtoHAsync_v2);
	R(cuMemcpyHtoDAsync_v2);
	R(cuEventCreate);
	R(cuEventRecord);
	R(cuEventQuery);
	R(cuEventDestroy_v2);
#undef R
}

static const char *kind_name(enum gdrfab_mem_kind k)
{
	static const char *n[] = {"host", "cuda-host", "device", "managed"};

	return n[k];
}

static unsigned sync_memops_of(CUdeviceptr p)
{
	unsigned v = 0;

	p_cuPointerGetAttribute(&v, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p);
	return v;
}

static void test_kinds(void)
{
	struct gdrfab_cuda_ptr c;
	CUdeviceptr dev, managed;
	void *pinned, *hostreg = aligned_alloc(4096, 1 << 20);
	char stack;

	p_cuMemAlloc_v2(&dev, 4 << 20);
	CHECK(!gdrfab_cuda_classify((void *)dev, &c) &&
		      c.kind == GDRFAB_MEM_CUDA_DEVICE && c.buffer_id &&
		      c.base == dev && c.size == 4 << 20 && c.device == 0,
	      "cuMemAlloc: %s, buffer id %llu, range 0x%lx+%zu",
	      kind_name(c.kind), (unsigned long long)c.buffer_id,
	      (unsigned long)c.base, c.size);
	CHECK(!gdrfab_cuda_classify((void *)(dev + 12345), &c) && c.base == dev,
	      "an interior pointer names its allocation");
	CHECK(sync_memops_of(dev) == 0, "SYNC_MEMOPS unset before");
	CHECK(gdrfab_cuda_sync_memops(&c) == 0 && sync_memops_of(dev) == 1,
	      "SYNC_MEMOPS set on cuMemAlloc memory, read back as 1");
	CHECK(gdrfab_cuda_sync_memops(&c) == 0,
	      "the same allocation again: no second call needed");

	p_cuMemAllocHost_v2(&pinned, 1 << 20);
	CHECK(!gdrfab_cuda_classify(pinned, &c) &&
		      c.kind == GDRFAB_MEM_CUDA_HOST,
	      "cuMemAllocHost: %s", kind_name(c.kind));
	p_cuMemHostRegister_v2(hostreg, 1 << 20, 0);
	CHECK(!gdrfab_cuda_classify(hostreg, &c) &&
		      c.kind == GDRFAB_MEM_CUDA_HOST,
	      "cuMemHostRegister: %s", kind_name(c.kind));
	CHECK(!gdrfab_cuda_classify(&stack, &c) && c.kind == GDRFAB_MEM_HOST,
	      "pageable host memory: %s", kind_name(c.kind));
	p_cuMemAllocManaged(&managed, 1 << 20, CU_MEM_ATTACH_GLOBAL);
	CHECK(!gdrfab_cuda_classify((void *)managed, &c) &&
		      c.kind == GDRFAB_MEM_CUDA_MANAGED,
	      "cuMemAllocManaged: %s (refused for GPUDirect)",
	      kind_name(c.kind));
	{
		unsigned one = 1;
		CUresult r = p_cuPointerSetAttribute(
			&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, managed);

		printf("INFO SYNC_MEMOPS on managed memory: CUDA result %d\n",
		       r);
	}
	p_cuMemHostUnregister(hostreg);
	p_cuMemFreeHost(pinned);
	p_cuMemFree_v2(managed);

	/* Freed, then reallocated: the buffer ID tells them apart. */
	{
		uint64_t old_id;

		gdrfab_cuda_classify((void *)dev, &c);
		old_id = c.buffer_id;
		p_cuMemFree_v2(dev);
		CHECK(!gdrfab_cuda_classify((void *)dev, &c) &&
			      c.kind == GDRFAB_MEM_HOST,
		      "a freed device pointer is no longer device memory");
		CUdeviceptr again;
		p_cuMemAlloc_v2(&again, 4 << 20);
		gdrfab_cuda_classify((void *)again, &c);
		CHECK(c.buffer_id != old_id,
		      "reallocation (%s address): buffer id %llu -> %llu",
		      again == dev ? "same" : "another",
		      (unsigned long long)old_id,
		      (unsigned long long)c.buffer_id);
		p_cuMemFree_v2(again);
	}
	free(hostreg);
}

/* A VMM allocation (cuMemCreate + cuMemMap) of one granule. */
static void test_vmm(void)
{
	CUmemAllocationProp prop = {
		.type = CU_MEM_ALLOCATION_TYPE_PINNED,
		.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
		.requestedHandleTypes =
			CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
	};
	CUmemAccessDesc access = {
		.location = prop.location,
		.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
	};
	CUmemGenericAllocationHandle h;
	struct gdrfab_cuda_ptr c;
	size_t gran = 0;
	CUdeviceptr va;
	uint64_t off;
	int fd, ret;

	prop.allocFlags.gpuDirectRDMACapable = 1;
	if (p_cuMemGetAllocationGranularity(&gran, &prop,
					    CU_MEM_ALLOC_GRANULARITY_MINIMUM) ||
	    p_cuMemCreate(&h, gran, &prop, 0) ||
	    p_cuMemAddressReserve(&va, gran, 0, 0, 0) ||
	    p_cuMemMap(va, gran, 0, h, 0) ||
	    p_cuMemSetAccess(va, gran, &access, 1)) {
		CHECK(0, "VMM allocation of %zu bytes", gran);
		return;
	}
	CHECK(!gdrfab_cuda_classify((void *)va, &c) &&
		      c.kind == GDRFAB_MEM_CUDA_DEVICE,
	      "VMM (cuMemCreate/cuMemMap): %s, buffer id %llu",
	      kind_name(c.kind), (unsigned long long)c.buffer_id);
	ret = gdrfab_cuda_sync_memops(&c);
	CHECK(ret == 0 || ret == -FI_EOPNOTSUPP,
	      "VMM: SYNC_MEMOPS %s (registration goes on)",
	      ret ? "refused: not supported" : "accepted");
	ret = gdrfab_cuda_dmabuf_fd((void *)(va + 4096), 8192, &fd, &off);
	CHECK(!ret && fd >= 0 && off == 4096, "VMM: dma-buf fd %d, offset %llu",
	      fd, (unsigned long long)off);
	if (!ret)
		close(fd);
	p_cuMemUnmap(va, gran);
	p_cuMemRelease(h);
	p_cuMemAddressFree(va, gran);
}

static void test_dmabuf_and_flush(void)
{
	const struct gdrfab_cuda_dev *d = gdrfab_cuda_device(0);
	CUdeviceptr dev;
	uint64_t off;
	int fd, ret;

	printf("INFO device 0 %s: GPUDirect %d, dma-buf %d, flush %d, writes ordering %d\n",
	       d->bus_id, d->gdr_supported, d->dmabuf_supported,
	       d->flush_supported, d->writes_ordering);
	p_cuMemAlloc_v2(&dev, 2 << 20);
	ret = gdrfab_cuda_dmabuf_fd((void *)dev, 1 << 20, &fd, &off);
	CHECK(!ret && fd >= 0 && off == 0, "dma-buf of an aligned range");
	if (!ret)
		close(fd);
	ret = gdrfab_cuda_dmabuf_fd((void *)(dev + 100), 1000, &fd, &off);
	CHECK(!ret && fd >= 0 && off == 100,
	      "dma-buf of an unaligned range: widened to 64 KB, offset %llu",
	      (unsigned long long)off);
	if (!ret)
		close(fd);
	p_cuMemFree_v2(dev);
	CHECK(gdrfab_hmem_flush_method(0, true) ==
		      (d->writes_ordering >= GDRFAB_CUDA_ORDERING_OWNER
			       ? GDRFAB_FLUSH_NONE
		       : d->flush_supported ? GDRFAB_FLUSH_CUDA
					    : GDRFAB_FLUSH_READ),
	      "flush method from the device's attributes: %d",
	      (int)gdrfab_hmem_flush_method(0, true));
	ret = gdrfab_cuda_flush(0);
	CHECK(d->flush_supported ? ret == 0 : ret != 0,
	      "cuFlushGPUDirectRDMAWrites: %d", ret);
}

static void test_staged_copies(void)
{
	size_t sizes[] = {1, 4095, 1 << 20, 64 << 20};

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		uint8_t *a = malloc(n), *b = malloc(n);
		CUdeviceptr dev;
		bool same;

		for (size_t j = 0; j < n; j++)
			a[j] = (uint8_t)(j * 7 + i);
		memset(b, 0, n);
		p_cuMemAlloc_v2(&dev, n);
		same = !gdrfab_cuda_copy_to_device((void *)dev, a, n, 0) &&
		       !gdrfab_cuda_copy_to_host(b, (void *)dev, n, 0) &&
		       !memcmp(a, b, n);
		CHECK(same, "staged copy of %zu bytes, there and back", n);
		p_cuMemFree_v2(dev);
		free(a);
		free(b);
	}
}

/* What the CUDA stand-in (tests/cuda/) assumes of asynchronous copies,
 * events and host registration, checked against the real driver. */
static void test_async_semantics(void)
{
	size_t n = 64 << 20;
	CUstream st;
	CUevent ev, never;
	CUdeviceptr dev, gone;
	uint8_t *pinned, *back;
	CUresult r, q;
	int polls = 0;
	void *host = aligned_alloc(4096, 1 << 20);
	struct gdrfab_cuda_ptr cp;

	p_cuStreamCreate(&st, CU_STREAM_NON_BLOCKING);
	p_cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
	p_cuEventCreate(&never, CU_EVENT_DISABLE_TIMING);
	p_cuMemAlloc_v2(&dev, n);
	p_cuMemAllocHost_v2((void **)&pinned, n);
	/* Pinned: a copy into pageable memory is done when it returns (the
	 * driver stages it; checked below), as gdrfab's bounce buffers are
	 * not. */
	p_cuMemAllocHost_v2((void **)&back, n);
	for (size_t j = 0; j < n; j++)
		pinned[j] = (uint8_t)(j * 13 + 1);
	CHECK(p_cuEventQuery(never) == CUDA_SUCCESS,
	      "cuEventQuery of an event never recorded: CUDA_SUCCESS");
	/* 64 MiB each way takes milliseconds: the first query must find
	 * the copies still running, then they end, in stream order. */
	p_cuMemcpyHtoDAsync_v2(dev, pinned, n, st);
	r = p_cuMemcpyDtoHAsync_v2(back, dev, n, st);
	p_cuEventRecord(ev, st);
	q = p_cuEventQuery(ev);
	CHECK(r == CUDA_SUCCESS && q == CUDA_ERROR_NOT_READY,
	      "async copies return before they run: cuEventQuery says NOT_READY (%d)",
	      (int)q);
	while ((q = p_cuEventQuery(ev)) == CUDA_ERROR_NOT_READY)
		polls++;
	CHECK(q == CUDA_SUCCESS && !memcmp(back, pinned, n),
	      "the event completes after both copies, in stream order (%d polls), bytes there",
	      polls);
	/* Into pageable memory the same copy has ended when it returns:
	 * the stand-in defers it anyway, which only delays what gdrfab
	 * would see at once. */
	{
		uint8_t *pageable = malloc(n);
		CUevent done;

		p_cuEventCreate(&done, CU_EVENT_DISABLE_TIMING);
		p_cuMemcpyDtoHAsync_v2(pageable, dev, n, st);
		p_cuEventRecord(done, st);
		q = p_cuEventQuery(done);
		p_cuEventDestroy_v2(done);
		CHECK(q == CUDA_SUCCESS && !memcmp(pageable, pinned, n),
		      "async D->H into pageable memory is done when it returns (%d)",
		      (int)q);
		free(pageable);
	}
	/* Destroying a recorded, pending event is allowed. */
	p_cuMemcpyDtoHAsync_v2(back, dev, n, st);
	p_cuEventRecord(ev, st);
	CHECK(p_cuEventDestroy_v2(ev) == CUDA_SUCCESS,
	      "cuEventDestroy of a pending event succeeds");
	p_cuStreamSynchronize(st);
	/* A copy from freed memory is refused at enqueue, and the context
	 * goes on working (the stand-in's injected failures). */
	p_cuMemAlloc_v2(&gone, 1 << 20);
	p_cuMemFree_v2(gone);
	r = p_cuMemcpyDtoHAsync_v2(back, gone, 1 << 20, st);
	CHECK(r != CUDA_SUCCESS,
	      "cuMemcpyDtoHAsync from freed memory fails at enqueue (%d)",
	      (int)r);
	r = p_cuMemcpyDtoHAsync_v2(back, dev, 1 << 20, st);
	CHECK(r == CUDA_SUCCESS && p_cuStreamSynchronize(st) == CUDA_SUCCESS,
	      "the next copy works");
	/* Host registration: pinned memory is CUDA host memory, a second
	 * registration and an unknown unregistration are refused. */
	r = p_cuMemHostRegister_v2(host, 1 << 20, CU_MEMHOSTREGISTER_PORTABLE);
	CHECK(r == CUDA_SUCCESS && !gdrfab_cuda_classify(host, &cp) &&
		      cp.kind == GDRFAB_MEM_CUDA_HOST,
	      "cuMemHostRegister'd memory is CUDA host memory (%d)", (int)r);
	r = p_cuMemHostRegister_v2(host, 1 << 20, CU_MEMHOSTREGISTER_PORTABLE);
	CHECK(r == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
	      "registering it again: HOST_MEMORY_ALREADY_REGISTERED (%d)",
	      (int)r);
	CHECK(p_cuMemHostUnregister(host) == CUDA_SUCCESS, "unregistered");
	r = p_cuMemHostUnregister(host);
	CHECK(r == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
	      "unregistering it again: HOST_MEMORY_NOT_REGISTERED (%d)",
	      (int)r);
	/* gdrfab's own: started, not ready at once, then done. */
	{
		struct gdrfab_cuda_op op;
		int ret = gdrfab_cuda_copy_start(back, (void *)dev, n, 0, true,
						 &op);
		int first = gdrfab_cuda_copy_test(&op);

		polls = 0;
		while (gdrfab_cuda_copy_test(&op) == -FI_EAGAIN)
			polls++;
		CHECK(!ret && first == -FI_EAGAIN && !op.event &&
			      !memcmp(back, pinned, n),
		      "gdrfab_cuda_copy_start returns at once, copy_test polls it done (%d polls)",
		      polls);
	}
	p_cuEventDestroy_v2(never);
	p_cuMemFreeHost(pinned);
	p_cuMemFree_v2(dev);
	p_cuMemFreeHost(back);
	free(host);
}

static int fake_reg(void *ctx, struct gdrfab_reg *r)
{
	(void)ctx, (void)r;
	return 0;
}

static void fake_dereg(void *ctx, struct gdrfab_reg *r)
{
	(void)ctx, (void)r;
}

static struct gdrfab_reg_backend fake = {.reg = fake_reg, .dereg = fake_dereg};

static void test_cache_buffer_ids(void)
{
	struct gdrfab_mr_cache cache;
	struct gdrfab_cuda_ptr c;
	struct gdrfab_reg *a, *b;
	CUdeviceptr dev, again;

	gdrfab_mr_cache_init(&cache, &fake, true, 1ULL << 34, 64);
	p_cuMemAlloc_v2(&dev, 1 << 20);
	gdrfab_cuda_classify((void *)dev, &c);
	gdrfab_reg_get(&cache, (void *)dev, 4096, 1, &c, &a);
	gdrfab_reg_put(&cache, a);
	p_cuMemFree_v2(dev);
	p_cuMemAlloc_v2(&again, 1 << 20);
	gdrfab_cuda_classify((void *)again, &c);
	gdrfab_reg_get(&cache, (void *)again, 4096, 1, &c, &b);
	CHECK(again != dev || cache.stale == 1,
	      "real reallocation at %s address: stale entries %llu",
	      again == dev ? "the same" : "another",
	      (unsigned long long)cache.stale);
	gdrfab_reg_put(&cache, b);
	p_cuMemFree_v2(again);
	gdrfab_mr_cache_fini(&cache);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Costs on the data path's critical path, each against the bare CUDA
 * call it is built on, measured in the same run. */
/* The live topology holds the current context's GPU under the PCI id CUDA
 * gives, and the class toward a NIC is reported as unknown where the
 * topology is flat (the lent machines are VMs). */
static void test_topology(void)
{
	const struct gdrfab_topo *t = gdrfab_topo_get();
	const struct gdrfab_cuda_dev *d = gdrfab_cuda_device(0);
	int g;

	CHECK(t != NULL, "the live topology loads");
	if (!t || !d)
		return;
	g = gdrfab_topo_find_gpu(t, d->bus_id);
	CHECK(g >= 0, "CUDA device 0 (%s) is in the live topology as %s",
	      d->bus_id, g >= 0 ? t->gpu[g].name : "nothing");
	printf("INFO topology: %zu GPU(s), %zu RDMA NIC(s), %s\n", t->ngpu,
	       t->nnic,
	       t->flat ? "flat (classes carry no information)"
		       : "with PCIe switches");
	for (size_t n = 0; n < t->nnic && g >= 0; n++)
		printf("INFO %s to %s: %s\n", t->gpu[g].name, t->nic[n].name,
		       gdrfab_path_name(gdrfab_topo_path(t, (size_t)g, n)));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static void bench(void)
{
	/* Interleaved rounds, medians: the four costs see the same clock
	 * and the same neighbours. */
	enum { ROUNDS = 21, N = 20000 };
	struct gdrfab_mr_cache cache, nocache;
	struct gdrfab_cuda_ptr c;
	struct gdrfab_reg *r;
	CUdeviceptr dev;
	double t0, bare, bare1, cls, hit, turn2, turn8, miss;
	double v_bare[ROUNDS], v_bare1[ROUNDS], v_cls[ROUNDS], v_hit[ROUNDS],
		v_turn[2][ROUNDS], v_turn_bare[2][ROUNDS],
		v_turn_cls[2][ROUNDS], v_miss[ROUNDS], v_getput[ROUNDS],
		v_call_getput[ROUNDS];
	CUdeviceptr turn[8];
	CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
				       CU_POINTER_ATTRIBUTE_BUFFER_ID};
	unsigned type;
	unsigned long long id;
	void *data[] = {&type, &id};

	p_cuMemAlloc_v2(&dev, 64 << 20);
	for (int i = 0; i < 8; i++)
		p_cuMemAlloc_v2(&turn[i], 1 << 20);
	gdrfab_mr_cache_init(&cache, &fake, true, 1ULL << 34, 1024);
	gdrfab_mr_cache_init(&nocache, &fake, false, 1ULL << 34, 1024);
	for (int k = 0; k < ROUNDS; k++) {
		t0 = now_us();
		for (int i = 0; i < N; i++)
			p_cuPointerGetAttributes(2, attrs, data, dev + 4096);
		v_bare[k] = (now_us() - t0) / N;
		/* The one attribute a hit asks (gdrfab_cuda_classify reads
		 * the kind from its table by buffer ID): printed beside the
		 * goal's baseline, so that neither flatters. */
		t0 = now_us();
		for (int i = 0; i < N; i++)
			p_cuPointerGetAttributes(1, &attrs[1], &data[1],
						 dev + 4096);
		v_bare1[k] = (now_us() - t0) / N;
		t0 = now_us();
		for (int i = 0; i < N; i++)
			gdrfab_cuda_classify((void *)(dev + 4096), &c);
		v_cls[k] = (now_us() - t0) / N;
		t0 = now_us();
		for (int i = 0; i < N; i++) {
			gdrfab_cuda_classify((void *)(dev + 4096), &c);
			gdrfab_reg_get(&cache, (void *)(dev + 4096), 4096, 1,
				       &c, &r);
			gdrfab_reg_put(&cache, r);
		}
		v_hit[k] = (now_us() - t0) / N;
		/* Where the hit's time above the driver call goes: its get
		 * and put alone, back to back (caches warm), and after a
		 * bare buffer-ID query each time (what the driver call
		 * leaves of the caches), the classification done once. */
		gdrfab_cuda_classify((void *)(dev + 4096), &c);
		t0 = now_us();
		for (int i = 0; i < N; i++) {
			gdrfab_reg_get(&cache, (void *)(dev + 4096), 4096, 1,
				       &c, &r);
			gdrfab_reg_put(&cache, r);
		}
		v_getput[k] = (now_us() - t0) / N;
		t0 = now_us();
		for (int i = 0; i < N; i++) {
			p_cuPointerGetAttributes(1, &attrs[1], &data[1],
						 dev + 4096);
			gdrfab_reg_get(&cache, (void *)(dev + 4096), 4096, 1,
				       &c, &r);
			gdrfab_reg_put(&cache, r);
		}
		v_call_getput[k] = (now_us() - t0) / N;
		/* Two, then eight allocations in turn (a halo exchange's
		 * or a double buffer's pattern): each among the thread's
		 * recent hits. */
		for (int t = 0; t < 2; t++) {
			int n = t ? 8 : 2;

			t0 = now_us();
			for (int i = 0; i < N; i++) {
				CUdeviceptr p = turn[i % n] + 4096;

				gdrfab_cuda_classify((void *)p, &c);
				gdrfab_reg_get(&cache, (void *)p, 4096, 1, &c,
					       &r);
				gdrfab_reg_put(&cache, r);
			}
			v_turn[t][k] = (now_us() - t0) / N;
			/* Their baselines: the bare call, and the
			 * classification alone, over the same rotation. */
			t0 = now_us();
			for (int i = 0; i < N; i++)
				p_cuPointerGetAttributes(2, attrs, data,
							 turn[i % n] + 4096);
			v_turn_bare[t][k] = (now_us() - t0) / N;
			t0 = now_us();
			for (int i = 0; i < N; i++)
				gdrfab_cuda_classify(
					(void *)(turn[i % n] + 4096), &c);
			v_turn_cls[t][k] = (now_us() - t0) / N;
		}
		t0 = now_us();
		for (int i = 0; i < N; i++) {
			gdrfab_cuda_classify((void *)(dev + 4096), &c);
			gdrfab_reg_get(&nocache, (void *)(dev + 4096), 4096, 1,
				       &c, &r);
			gdrfab_reg_put(&nocache, r);
		}
		v_miss[k] = (now_us() - t0) / N;
	}
	gdrfab_mr_cache_fini(&cache);
	gdrfab_mr_cache_fini(&nocache);
	for (int i = 0; i < 8; i++)
		p_cuMemFree_v2(turn[i]);
	bare = median(v_bare, ROUNDS);
	bare1 = median(v_bare1, ROUNDS);
	cls = median(v_cls, ROUNDS);
	hit = median(v_hit, ROUNDS);
	turn2 = median(v_turn[0], ROUNDS);
	turn8 = median(v_turn[1], ROUNDS);
	miss = median(v_miss, ROUNDS);
	printf("BENCH medians of %d interleaved rounds of %d calls\n", ROUNDS,
	       N);
	printf("BENCH bare cuPointerGetAttributes (2 attrs): %.3f us\n", bare);
	printf("BENCH gdrfab classification of a known allocation (buffer ID, then its entry): %.3f us (%.2fx)\n",
	       cls, cls / bare);
	printf("BENCH cache hit with buffer-ID check (the thread's last hit, no lock): %.3f us (%.2fx; goal <= 1.5x)\n",
	       hit, hit / bare);
	printf("BENCH the same hit against a bare 1-attr call (buffer ID only, %.3f us): %.2fx\n",
	       bare1, hit / bare1);
	printf("BENCH the hit's get and put alone: %.1f ns back to back, %.1f ns after each bare 1-attr call (that call and them: %.3f us)\n",
	       median(v_getput, ROUNDS) * 1e3,
	       (median(v_call_getput, ROUNDS) - bare1) * 1e3,
	       median(v_call_getput, ROUNDS));
	for (int t = 0; t < 2; t++) {
		double tb = median(v_turn_bare[t], ROUNDS),
		       tc = median(v_turn_cls[t], ROUNDS),
		       th = t ? turn8 : turn2;

		printf("BENCH %d allocations in turn: bare cuPointerGetAttributes %.3f us, classification %.3f us (%.2fx), cache hit (the thread's recent hits, no lock) %.3f us (%.2fx; goal <= 1.2x)\n",
		       t ? 8 : 2, tb, tc, tc / tb, th, th / tb);
	}
	printf("BENCH cache miss, registration stubbed (no NIC here): %.3f us (%.2fx)\n",
	       miss, miss / bare);
	{
		int fd;
		uint64_t off;

		t0 = now_us();
		for (int i = 0; i < 1000; i++) {
			if (!gdrfab_cuda_dmabuf_fd((void *)dev, 1 << 20, &fd,
						   &off))
				close(fd);
		}
		printf("BENCH dma-buf export of 1 MiB (a miss's CUDA part): %.3f us (%.0fx)\n",
		       (now_us() - t0) / 1000, (now_us() - t0) / 1000 / bare);
	}
	for (size_t n = 4096; n <= (64 << 20); n *= 64) {
		uint8_t *h = malloc(n);
		int reps = n >= (1 << 20) ? 20 : 2000;
		double tc, ts;

		memset(h, 1, n);
		t0 = now_us();
		for (int i = 0; i < reps; i++)
			p_cuMemcpyDtoH_v2(h, dev, n);
		tc = (now_us() - t0) / reps;
		t0 = now_us();
		for (int i = 0; i < reps; i++)
			gdrfab_cuda_copy_to_host(h, (void *)dev, n, 0);
		ts = (now_us() - t0) / reps;
		printf("BENCH staged copy D->H %zu B: %.1f MB/s, cuMemcpyDtoH %.1f MB/s, ratio %.2f\n",
		       n, n / ts, n / tc, tc / ts);
		free(h);
	}
	p_cuMemFree_v2(dev);
}

/* One staged transfer of n bytes as the provider's pipeline drives it:
 * pieces of FI_GDRFAB_STAGE_CHUNK growing to four of them
 * (gdrfab_stage_piece_grid) through a bounce buffer pinned with
 * gdrfab_cuda_host_register, GDRFAB_STAGE_OPS of them in flight on
 * gdrfab's stream, completed by polling their events. */
#define STAGE_OPS 16 /* GDRFAB_STAGE_OPS */

static int staged_transfer(uint8_t *bounce, CUdeviceptr dev, size_t n,
			   bool to_host)
{
	struct iovec iov = {.iov_base = (void *)dev, .iov_len = n};
	struct gdrfab_cuda_op op[STAGE_OPS];
	size_t idx = 0, ioff = 0, issued = 0, len;
	unsigned head = 0, tail = 0;
	int err = 0;

	while (!err && (issued < n || tail != head)) {
		while (head - tail < STAGE_OPS &&
		       (len = gdrfab_stage_next_piece(
				&iov, 1, &idx, &ioff, issued, n,
				gdrfab_stage_piece_grid(
					issued, gdrfab_params.stage_chunk)))) {
			uint8_t *app = (uint8_t *)dev + issued;

			err = gdrfab_cuda_copy_start(
				to_host ? (void *)(bounce + issued) : app,
				to_host ? app : bounce + issued, len, 0,
				to_host, &op[head % STAGE_OPS]);
			if (err)
				break;
			head++;
			issued += len;
		}
		while (tail != head) {
			int r = gdrfab_cuda_copy_test(&op[tail % STAGE_OPS]);

			if (r == -FI_EAGAIN)
				break;
			err = err ? err : r;
			tail++;
		}
	}
	return err;
}

/* MB/s of reps single copies of n bytes between dev and host on st,
 * each waited for with cuStreamSynchronize. */
static double one_copy_rate(uint8_t *host, CUdeviceptr dev, size_t n, int reps,
			    bool to_host, CUstream st)
{
	double t0 = now_us();

	for (int i = 0; i < reps; i++) {
		if (to_host)
			p_cuMemcpyDtoHAsync_v2(host, dev, n, st);
		else
			p_cuMemcpyHtoDAsync_v2(dev, host, n, st);
		p_cuStreamSynchronize(st);
	}
	return n * reps / (now_us() - t0);
}

/* Staged D->H and H->D throughput against one pinned cuMemcpy*Async into
 * cuMemAllocHost memory on a non-blocking stream of its own (the kind
 * gdrfab uses), waited for with cuStreamSynchronize: the copy engine's
 * limit for one message. Interleaved rounds, medians. */
static void bench_staged(void)
{
	enum { ROUNDS = 7 };
	size_t max = 64 << 20;
	CUdeviceptr dev;
	CUstream st;
	uint8_t *pinned, *bounce = aligned_alloc(4096, max);
	bool ok = true;

	p_cuMemAlloc_v2(&dev, max);
	p_cuMemAllocHost_v2((void **)&pinned, max);
	p_cuStreamCreate(&st, CU_STREAM_NON_BLOCKING);
	CHECK(!gdrfab_cuda_host_register(bounce, max),
	      "bounce buffer pinned with cuMemHostRegister");
	memset(bounce, 3, max);
	memset(pinned, 3, max);
	printf("BENCH staged copies (pipeline: %zu KiB pieces, %d in flight, events polled) vs pinned cuMemcpy*Async + cuStreamSynchronize, medians of %d interleaved rounds; goal >= 0.80x at >= 1 MiB\n",
	       gdrfab_params.stage_chunk >> 10, STAGE_OPS, ROUNDS);
	printf("BENCH %10s %12s %12s %6s %12s %12s %6s\n", "bytes",
	       "D->H staged", "pinned", "ratio", "H->D staged", "pinned",
	       "ratio");
	for (size_t n = 64 << 10; n <= max; n *= 4) {
		int reps = n >= (16 << 20) ? 10 : n >= (1 << 20) ? 50 : 500;
		double v[6][ROUNDS], m[6];

		for (int k = 0; k < ROUNDS; k++) {
			for (int dir = 0; dir < 2; dir++) {
				bool to_host = dir == 0;
				double t0 = now_us();

				for (int i = 0; i < reps; i++)
					ok &= !staged_transfer(bounce, dev, n,
							       to_host);
				v[dir * 2][k] = n * reps / (now_us() - t0);
				v[dir * 2 + 1][k] = one_copy_rate(
					pinned, dev, n, reps, to_host, st);
				/* One copy into the bounce buffer itself:
				 * what the kind of host memory costs, apart
				 * from the pieces. */
				v[4 + dir][k] = one_copy_rate(
					bounce, dev, n, reps, to_host, st);
			}
		}
		for (int j = 0; j < 6; j++)
			m[j] = median(v[j], ROUNDS);
		printf("BENCH %10zu %9.1f MB/s %7.1f MB/s %5.2fx %7.1f MB/s %7.1f MB/s %5.2fx\n",
		       n, m[0], m[1], m[0] / m[1], m[2], m[3], m[2] / m[3]);
		printf("BENCH %10s one copy into the registered bounce buffer: D->H %.1f MB/s (%.2fx pinned), H->D %.1f MB/s (%.2fx)\n",
		       "", m[4], m[4] / m[1], m[5], m[5] / m[3]);
	}
	CHECK(ok, "every staged copy in the benchmark succeeded");
	gdrfab_cuda_host_unregister(bounce);
	free(bounce);
	p_cuMemFreeHost(pinned);
	p_cuMemFree_v2(dev);
}

int main(void)
{
	const char *why;
	CUcontext ctx;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!gdrfab_cuda_available(&why)) {
		printf("SKIP: GPU tests: %s\n", why);
		return 77;
	}
	load_api();
	p_cuDevicePrimaryCtxRetain(&ctx, 0);
	p_cuCtxSetCurrent(ctx);
	CHECK(gdrfab_cuda_current_device() == 0,
	      "the current context's device is found");
	test_kinds();
	test_vmm();
	test_dmabuf_and_flush();
	test_staged_copies();
	test_async_semantics();
	test_cache_buffer_ids();
	test_topology();
	bench();
	bench_staged();
	/* The pieces' own cost: the same with 4 MiB chunks (growing to 16). */
	{
		size_t chunk = gdrfab_params.stage_chunk;

		gdrfab_params.stage_chunk = 4 << 20;
		bench_staged();
		gdrfab_params.stage_chunk = chunk;
	}
	printf("gpu: %d passed, %d failed\n", checks - failures, failures);
	return failures ? 1 : 0;
}
