/* SPDX-License-Identifier: BSD-2-Clause */
/* prov_errno texts for fi_cq_strerror and fi_eq_strerror. */
#include <stdio.h>

#include <infiniband/verbs.h>

#include "gdrfab_strerror.h"

static const char *const own_errors[] = {
	[GDRFAB_PERR_PEER_UNREACHABLE - FI_GDRFAB_PROV_ERRNO_BASE] =
		"peer unreachable: no connection could be set up in time",
	[GDRFAB_PERR_PEER_CLOSED - FI_GDRFAB_PROV_ERRNO_BASE] =
		"peer closed or lost its connection during the operation",
	[GDRFAB_PERR_CANCELED - FI_GDRFAB_PROV_ERRNO_BASE] =
		"operation canceled",
	[GDRFAB_PERR_TRUNCATED - FI_GDRFAB_PROV_ERRNO_BASE] =
		"message larger than the posted receive buffer: truncated",
	[GDRFAB_PERR_SETTINGS - FI_GDRFAB_PROV_ERRNO_BASE] =
		"peers' settings differ (FI_GDRFAB_EAGER_MAX): connection refused",
	[GDRFAB_PERR_QP_ERROR - FI_GDRFAB_PROV_ERRNO_BASE] =
		"the connection's queue pair failed (an access refused by a NIC?): reconnecting for later operations",
	[GDRFAB_PERR_LINK_STALLED - FI_GDRFAB_PROV_ERRNO_BASE] =
		"the port went down with the operation in flight and the NIC never completed it: reconnecting for later operations",
	[GDRFAB_PERR_PROTOCOL - FI_GDRFAB_PROV_ERRNO_BASE] =
		"the peer broke the wire protocol (a segmented message out of order or past its size): connection failed",
};

const char *gdrfab_prov_strerror(int prov_errno, char *buf, size_t len)
{
	const char *text;

	if (prov_errno >= FI_GDRFAB_PROV_ERRNO_BASE &&
	    prov_errno < GDRFAB_PERR_END)
		text = own_errors[prov_errno - FI_GDRFAB_PROV_ERRNO_BASE];
	else if (prov_errno >= 0 && prov_errno <= IBV_WC_GENERAL_ERR)
		text = ibv_wc_status_str((enum ibv_wc_status)prov_errno);
	else
		text = "unknown provider error";
	if (!buf || !len)
		return text;
	snprintf(buf, len, "%s", text);
	return buf;
}
