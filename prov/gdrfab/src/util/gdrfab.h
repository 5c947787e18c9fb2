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
/* The libfabric APIs gdrfab answers for: from the headers it was built with
 * up to the newest it has been checked against (libfabric 2.6: the fields
 * and structs that grew since are read by the caller's version, never
 * past what the build's headers know). */
#define GDRFAB_API_MIN FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)
#define GDRFAB_API_MAX FI_VERSION(2, 6)
/* The API of the libfabric core that loaded gdrfab, within those bounds
 * (set by fi_prov_ini): libfabric skips a provider whose fi_version is
 * older than the version an application asks for. */
extern uint32_t gdrfab_api_version;
uint32_t gdrfab_api_for_core(uint32_t core);

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
