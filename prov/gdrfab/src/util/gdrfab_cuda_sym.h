/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CUDA driver API as gdrfab calls it through dlsym: the types and
 * constants are written here from the driver API's documented values, so
 * gdrfab builds without cuda.h. Private to src/hmem/.
 */
#ifndef GDRFAB_CUDA_SYM_H
#define GDRFAB_CUDA_SYM_H

#include <stddef.h>
#include <stdint.h>

typedef int gdrfab_cu_result; /* CUresult: 0 is CUDA_SUCCESS */
typedef int gdrfab_cu_device;
typedef void *gdrfab_cu_ctx;
typedef void *gdrfab_cu_stream;
typedef void *gdrfab_cu_event;
typedef unsigned long long gdrfab_cu_ptr; /* CUdeviceptr */

#define GDRFAB_CU_SUCCESS	    0
#define GDRFAB_CU_NOT_SUPPORTED	    801
#define GDRFAB_CU_NOT_READY	    600
#define GDRFAB_CU_HOST_REG_DONE	    712 /* HOST_MEMORY_ALREADY_REGISTERED */
#define GDRFAB_CU_EVENT_NO_TIMING   0x2
#define GDRFAB_CU_HOST_REG_PORTABLE 0x1
#define GDRFAB_CU_NO_DEVICE	    100
#define GDRFAB_CU_STREAM_NON_BLOCK  0x1
#define GDRFAB_CU_MEMTYPE_HOST	    1
#define GDRFAB_CU_MEMTYPE_DEVICE    2
#define GDRFAB_CU_MEMTYPE_UNIFIED   4
#define GDRFAB_CU_PTR_MEMORY_TYPE   2
#define GDRFAB_CU_PTR_SYNC_MEMOPS   6
#define GDRFAB_CU_PTR_BUFFER_ID	    7
#define GDRFAB_CU_PTR_IS_MANAGED    8
#define GDRFAB_CU_PTR_DEVICE_ORD    9
#define GDRFAB_CU_PTR_RANGE_START   11
#define GDRFAB_CU_PTR_RANGE_SIZE    12
#define GDRFAB_CU_DEV_GDR_SUPPORTED 116
#define GDRFAB_CU_DEV_FLUSH_OPTIONS 117
#define GDRFAB_CU_DEV_WRITES_ORDER  118
#define GDRFAB_CU_DEV_DMABUF	    124
#define GDRFAB_CU_FLUSH_OPTION_HOST 0x1
#define GDRFAB_CU_FLUSH_TARGET_CTX  0
#define GDRFAB_CU_FLUSH_TO_OWNER    100
#define GDRFAB_CU_HANDLE_DMABUF_FD  1

struct gdrfab_cuda_sym {
	gdrfab_cu_result (*init)(unsigned flags);
	gdrfab_cu_result (*driver_version)(int *version);
	gdrfab_cu_result (*device_count)(int *count);
	gdrfab_cu_result (*device_get)(gdrfab_cu_device *dev, int ordinal);
	gdrfab_cu_result (*device_attr)(int *value, int attr,
					gdrfab_cu_device dev);
	gdrfab_cu_result (*device_bus_id)(char *id, int len,
					  gdrfab_cu_device dev);
	gdrfab_cu_result (*error_string)(gdrfab_cu_result err,
					 const char **str);
	gdrfab_cu_result (*ptr_attrs)(unsigned count, int *attrs, void **data,
				      gdrfab_cu_ptr ptr);
	gdrfab_cu_result (*ptr_set_attr)(const void *value, int attr,
					 gdrfab_cu_ptr ptr);
	gdrfab_cu_result (*primary_ctx_retain)(gdrfab_cu_ctx *ctx,
					       gdrfab_cu_device dev);
	gdrfab_cu_result (*ctx_push)(gdrfab_cu_ctx ctx);
	gdrfab_cu_result (*ctx_pop)(gdrfab_cu_ctx *ctx);
	gdrfab_cu_result (*ctx_get_current)(gdrfab_cu_ctx *ctx);
	gdrfab_cu_result (*ctx_get_device)(gdrfab_cu_device *dev);
	gdrfab_cu_result (*stream_create)(gdrfab_cu_stream *s, unsigned flags);
	gdrfab_cu_result (*copy_dtoh_async)(void *dst, gdrfab_cu_ptr src,
					    size_t len, gdrfab_cu_stream s);
	gdrfab_cu_result (*copy_htod_async)(gdrfab_cu_ptr dst, const void *src,
					    size_t len, gdrfab_cu_stream s);
	gdrfab_cu_result (*event_create)(gdrfab_cu_event *ev, unsigned flags);
	gdrfab_cu_result (*event_record)(gdrfab_cu_event ev,
					 gdrfab_cu_stream s);
	gdrfab_cu_result (*event_query)(gdrfab_cu_event ev);
	gdrfab_cu_result (*event_destroy)(gdrfab_cu_event ev);
	gdrfab_cu_result (*host_register)(void *p, size_t len, unsigned flags);
	gdrfab_cu_result (*host_unregister)(void *p);
	gdrfab_cu_result (*range_handle)(void *handle, gdrfab_cu_ptr ptr,
					 size_t size, int type,
					 unsigned long long flags);
	gdrfab_cu_result (*flush_gdr_writes)(int target, int scope);
};

/* The loaded table; valid once gdrfab_cuda_available() returned true. */
extern struct gdrfab_cuda_sym gdrfab_cu;

/* "CUDA_ERROR_... (801: operation not supported)" style text. */
const char *gdrfab_cu_strerror(gdrfab_cu_result err);

#endif /* GDRFAB_CUDA_SYM_H */
