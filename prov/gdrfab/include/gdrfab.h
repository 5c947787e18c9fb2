/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gdrfab core: the provider object, logging, and small helpers every layer
 * uses. Object layouts live in gdrfab_objs.h.
 */
#ifndef GDRFAB_H
#define GDRFAB_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include <rdma/fi_ext_gdrfab.h>

#define GDRFAB_PROV_VERSION FI_VERSION(0, 1)
/* The libfabric API this provider implements: the headers it was built with. */
#define GDRFAB_FI_VERSION FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)

extern struct fi_provider gdrfab_prov;

#define GDRFAB_WARN(subsys, ...) FI_WARN(&gdrfab_prov, subsys, __VA_ARGS__)
#define GDRFAB_INFO(subsys, ...) FI_INFO(&gdrfab_prov, subsys, __VA_ARGS__)
#define GDRFAB_DBG(subsys, ...)	 FI_DBG(&gdrfab_prov, subsys, __VA_ARGS__)

#define gdrfab_container_of(ptr, type, field)                                  \
	((type *)((char *)(ptr)-offsetof(type, field)))

#define GDRFAB_MIN(a, b) ((a) < (b) ? (a) : (b))
#define GDRFAB_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Maps an errno value (as rdma-core returns it) to a negative FI_E* code. */
int gdrfab_errno_to_fi(int err);

#endif /* GDRFAB_H */
