/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Readable text for prov_errno: verbs work-completion statuses below
 * FI_GDRFAB_PROV_ERRNO_BASE, gdrfab's own conditions above it.
 */
#ifndef GDRFAB_STRERROR_H
#define GDRFAB_STRERROR_H

#include <stddef.h>

#include <rdma/fi_ext_gdrfab.h>

enum gdrfab_prov_errno {
	GDRFAB_PERR_PEER_UNREACHABLE = FI_GDRFAB_PROV_ERRNO_BASE,
	GDRFAB_PERR_PEER_CLOSED,
	GDRFAB_PERR_CANCELED,
	GDRFAB_PERR_TRUNCATED,
	GDRFAB_PERR_SETTINGS,
	GDRFAB_PERR_QP_ERROR,
	GDRFAB_PERR_LINK_STALLED,
	GDRFAB_PERR_PROTOCOL,
	GDRFAB_PERR_END
};

/* Copies the text into buf (if any) and returns buf, or a static string
 * when buf is NULL. */
const char *gdrfab_prov_strerror(int prov_errno, char *buf, size_t len);

#endif /* GDRFAB_STRERROR_H */
