/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gdrfab: what applications may compile against. The provider's name, the
 * size of its endpoint names, and the provider-specific error values that
 * fi_cq_err_entry.prov_errno carries besides verbs work-completion statuses.
 */
#ifndef FI_EXT_GDRFAB_H
#define FI_EXT_GDRFAB_H

#include <stdint.h>

#define FI_GDRFAB_PROV_NAME "gdrfab"

/* Endpoint names (fi_getname, fi_info->src_addr) are opaque binary blobs of
 * this many bytes, addr_format FI_FORMAT_UNSPEC; fi_av_straddr prints them
 * as "gdrfab://GID/lid=L/qpn=Q/id=I/port=P". */
#define FI_GDRFAB_ADDR_LEN 32

/* prov_errno values at or above this base are gdrfab's own; below it they
 * are enum ibv_wc_status values reported by the NIC. */
#define FI_GDRFAB_PROV_ERRNO_BASE 0x1000

#endif /* FI_EXT_GDRFAB_H */
