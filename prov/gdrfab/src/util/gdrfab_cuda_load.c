/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Loading libcuda at run time: dlopen once, resolve the driver API entry
 * points gdrfab uses, cuInit, and read each device's GPUDirect properties.
 * A machine without CUDA is not an error: gdrfab then serves host memory
 * and says why once.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_cuda_dev.h"
#include "gdrfab_cuda_sym.h"

#define GDRFAB_CUDA_MAX_DEVICES 64

struct gdrfab_cuda_sym gdrfab_cu;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static bool cuda_ok;
/* Set (release) once the load succeeded: every classification asks, and
 * a load of this costs less than pthread_once's call through the PLT. */
static _Atomic bool cuda_ready;
static char why_not[256];
static int dev_count;
static struct gdrfab_cuda_dev devs[GDRFAB_CUDA_MAX_DEVICES];

const char *gdrfab_cu_strerror(gdrfab_cu_result err)
{
	static __thread char buf[128];
	const char *s = NULL;

	if (gdrfab_cu.error_string)
		gdrfab_cu.error_string(err, &s);
	snprintf(buf, sizeof(buf), "CUDA error %d%s%s", err, s ? ": " : "",
		 s ? s : "");
	return buf;
}

/* Resolves one entry point; the versioned names are the ones cuda.h maps
 * the plain names to. */
static bool resolve(void *lib, void **slot, const char *name)
{
	*slot = dlsym(lib, name);
	if (!*slot)
		snprintf(why_not, sizeof(why_not),
			 "libcuda.so.1 lacks %s (driver too old?)", name);
	return *slot != NULL;
}

static bool resolve_all(void *lib)
{
	struct {
		void **slot;
		const char *name;
	} syms[] = {
		{(void **)&gdrfab_cu.init, "cuInit"},
		{(void **)&gdrfab_cu.driver_version, "cuDriverGetVersion"},
		{(void **)&gdrfab_cu.device_count, "cuDeviceGetCount"},
		{(void **)&gdrfab_cu.device_get, "cuDeviceGet"},
		{(void **)&gdrfab_cu.device_attr, "cuDeviceGetAttribute"},
		{(void **)&gdrfab_cu.device_bus_id, "cuDeviceGetPCIBusId"},
		{(void **)&gdrfab_cu.error_string, "cuGetErrorString"},
		{(void **)&gdrfab_cu.ptr_attrs, "cuPointerGetAttributes"},
		{(void **)&gdrfab_cu.ptr_set_attr, "cuPointerSetAttribute"},
		{(void **)&gdrfab_cu.primary_ctx_retain,
		 "cuDevicePrimaryCtxRetain"},
		{(void **)&gdrfab_cu.ctx_push, "cuCtxPushCurrent_v2"},
		{(void **)&gdrfab_cu.ctx_pop, "cuCtxPopCurrent_v2"},
		{(void **)&gdrfab_cu.ctx_get_current, "cuCtxGetCurrent"},
		{(void **)&gdrfab_cu.ctx_get_device, "cuCtxGetDevice"},
		{(void **)&gdrfab_cu.stream_create, "cuStreamCreate"},
		{(void **)&gdrfab_cu.copy_dtoh_async, "cuMemcpyDtoHAsync_v2"},
		{(void **)&gdrfab_cu.copy_htod_async, "cuMemcpyHtoDAsync_v2"},
		{(void **)&gdrfab_cu.event_create, "cuEventCreate"},
		{(void **)&gdrfab_cu.event_record, "cuEventRecord"},
		{(void **)&gdrfab_cu.event_query, "cuEventQuery"},
		{(void **)&gdrfab_cu.event_destroy, "cuEventDestroy_v2"},
		{(void **)&gdrfab_cu.host_register, "cuMemHostRegister_v2"},
		{(void **)&gdrfab_cu.host_unregister, "cuMemHostUnregister"},
	};

	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		if (!resolve(lib, syms[i].slot, syms[i].name))
			return false;
	}
	/* Newer entry points: their absence only turns a feature off. */
	gdrfab_cu.range_handle = dlsym(lib, "cuMemGetHandleForAddressRange");
	gdrfab_cu.flush_gdr_writes = dlsym(lib, "cuFlushGPUDirectRDMAWrites");
	return true;
}

static int attr_or_zero(int attr, gdrfab_cu_device dev)
{
	int v = 0;

	if (gdrfab_cu.device_attr(&v, attr, dev) != GDRFAB_CU_SUCCESS)
		return 0;
	return v;
}

static void read_device(int ordinal)
{
	struct gdrfab_cuda_dev *d = &devs[ordinal];
	gdrfab_cu_device dev;
	int flush_opts;

	if (gdrfab_cu.device_get(&dev, ordinal) != GDRFAB_CU_SUCCESS)
		return;
	if (gdrfab_cu.device_bus_id(d->bus_id, sizeof(d->bus_id), dev) ==
	    GDRFAB_CU_SUCCESS) {
		for (char *c = d->bus_id; *c; c++)
			*c = (char)(*c >= 'A' && *c <= 'F' ? *c + 32 : *c);
	}
	d->gdr_supported = attr_or_zero(GDRFAB_CU_DEV_GDR_SUPPORTED, dev);
	d->dmabuf_supported = attr_or_zero(GDRFAB_CU_DEV_DMABUF, dev) &&
			      gdrfab_cu.range_handle;
	flush_opts = attr_or_zero(GDRFAB_CU_DEV_FLUSH_OPTIONS, dev);
	d->flush_supported = (flush_opts & GDRFAB_CU_FLUSH_OPTION_HOST) &&
			     gdrfab_cu.flush_gdr_writes;
	d->writes_ordering = attr_or_zero(GDRFAB_CU_DEV_WRITES_ORDER, dev);
	GDRFAB_INFO(
		FI_LOG_CORE,
		"CUDA device %d (%s): GPUDirect RDMA %s, dma-buf %s, writes ordering %d, flush %s\n",
		ordinal, d->bus_id, d->gdr_supported ? "yes" : "no",
		d->dmabuf_supported ? "yes" : "no", d->writes_ordering,
		d->flush_supported ? "yes" : "no");
}

static void load(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	gdrfab_cu_result err;
	int version = 0;

	if (!lib) {
		snprintf(why_not, sizeof(why_not),
			 "libcuda.so.1 not loadable (%s)", dlerror());
		goto out;
	}
	if (!resolve_all(lib))
		goto out;
	err = gdrfab_cu.init(0);
	if (err != GDRFAB_CU_SUCCESS) {
		snprintf(why_not, sizeof(why_not), "cuInit failed: %s",
			 gdrfab_cu_strerror(err));
		goto out;
	}
	if (gdrfab_cu.device_count(&dev_count) != GDRFAB_CU_SUCCESS ||
	    dev_count <= 0) {
		snprintf(why_not, sizeof(why_not), "no CUDA device");
		dev_count = 0;
		goto out;
	}
	if (dev_count > GDRFAB_CUDA_MAX_DEVICES)
		dev_count = GDRFAB_CUDA_MAX_DEVICES;
	gdrfab_cu.driver_version(&version);
	GDRFAB_INFO(FI_LOG_CORE, "CUDA driver %d.%d, %d device(s)\n",
		    version / 1000, version % 1000 / 10, dev_count);
	for (int i = 0; i < dev_count; i++)
		read_device(i);
	cuda_ok = true;
	atomic_store_explicit(&cuda_ready, true, memory_order_release);
	return;
out:
	/* Why is logged once, here: every later caller gets the text. */
	GDRFAB_INFO(FI_LOG_CORE,
		    "no CUDA: %s; GPU memory (FI_HMEM) is not offered\n",
		    why_not);
	if (lib)
		dlclose(lib);
	memset(&gdrfab_cu, 0, sizeof(gdrfab_cu));
}

bool gdrfab_cuda_available(const char **why)
{
	if (!why && atomic_load_explicit(&cuda_ready, memory_order_acquire))
		return true;
	pthread_once(&load_once, load);
	if (why)
		*why = cuda_ok ? NULL : why_not;
	return cuda_ok;
}

int gdrfab_cuda_device_count(void)
{
	return gdrfab_cuda_available(NULL) ? dev_count : 0;
}

const struct gdrfab_cuda_dev *gdrfab_cuda_device(int ordinal)
{
	if (ordinal < 0 || ordinal >= gdrfab_cuda_device_count())
		return NULL;
	return &devs[ordinal];
}

int gdrfab_cuda_current_device(void)
{
	gdrfab_cu_ctx ctx = NULL;
	gdrfab_cu_device dev;

	if (!gdrfab_cuda_available(NULL) ||
	    gdrfab_cu.ctx_get_current(&ctx) != GDRFAB_CU_SUCCESS || !ctx ||
	    gdrfab_cu.ctx_get_device(&dev) != GDRFAB_CU_SUCCESS)
		return -1;
	return dev;
}
