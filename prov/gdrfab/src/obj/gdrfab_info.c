/* SPDX-License-Identifier: BSD-2-Clause */
/* The fi_info gdrfab advertises for one port, before hints narrow it. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_addr.h"
#include "gdrfab_hmem.h"
#include "gdrfab_hmem_reg.h"
#include "gdrfab_info.h"
#include "gdrfab_params.h"

/* Queue depths: the parameter, capped by the device. */
static size_t queue_size(size_t wanted, int device_max)
{
	return device_max > 0 ? GDRFAB_MIN(wanted, (size_t)device_max) : wanted;
}

static void fill_tx_rx(struct fi_info *info,
		       const struct gdrfab_port_desc *port)
{
	size_t iov = (size_t)GDRFAB_MAX(
		1, GDRFAB_MIN(port->max_sge, GDRFAB_IOV_LIMIT));

	/* One RC QP per peer delivers sends in order. */
	info->tx_attr->caps = GDRFAB_TX_CAPS;
	info->tx_attr->msg_order = FI_ORDER_SAS | GDRFAB_ATOMIC_ORDER;
	info->tx_attr->comp_order = FI_ORDER_NONE;
	info->tx_attr->inject_size = gdrfab_params.eager_max;
	info->tx_attr->size =
		queue_size(gdrfab_params.tx_size, port->max_qp_wr);
	info->tx_attr->iov_limit = iov;
	info->tx_attr->rma_iov_limit = 1;
	info->rx_attr->caps = GDRFAB_RX_CAPS;
	info->rx_attr->msg_order = FI_ORDER_SAS | GDRFAB_ATOMIC_ORDER;
	info->rx_attr->comp_order = FI_ORDER_NONE;
	info->rx_attr->size =
		queue_size(gdrfab_params.rx_size, port->max_qp_wr);
	info->rx_attr->iov_limit = iov;
}

static void fill_domain(struct fi_info *info,
			const struct gdrfab_port_desc *port)
{
	struct fi_domain_attr *d = info->domain_attr;

	d->threading = FI_THREAD_SAFE;
	d->control_progress = FI_PROGRESS_MANUAL;
	d->data_progress = FI_PROGRESS_MANUAL;
	d->resource_mgmt = FI_RM_ENABLED;
	d->av_type = FI_AV_UNSPEC;
	d->mr_mode = GDRFAB_MR_MODE;
	d->mr_key_size = GDRFAB_MR_KEY_SIZE;
	d->cq_data_size = GDRFAB_CQ_DATA_SIZE;
	d->cq_cnt = (size_t)GDRFAB_MAX(port->max_cq, 1);
	d->ep_cnt = (size_t)GDRFAB_MAX(port->max_qp, 1);
	d->tx_ctx_cnt = d->ep_cnt;
	d->rx_ctx_cnt = d->ep_cnt;
	d->max_ep_tx_ctx = 1;
	d->max_ep_rx_ctx = 1;
	d->max_ep_stx_ctx = 0;
	d->max_ep_srx_ctx = 0;
	d->cntr_cnt = d->cq_cnt;
	d->mr_iov_limit = 1;
	d->caps = GDRFAB_DOMAIN_CAPS;
	d->mode = 0;
	d->max_err_data = 0;
	d->mr_cnt = (size_t)GDRFAB_MAX(port->max_mr, 1);
	d->tclass = FI_TC_UNSPEC;
}

static int fill_src_addr(struct fi_info *info,
			 const struct gdrfab_port_desc *port)
{
	struct gdrfab_addr *addr = calloc(1, sizeof(*addr));

	if (!addr)
		return -FI_ENOMEM;
	addr->version = GDRFAB_ADDR_VERSION;
	addr->port_num = port->port_num;
	addr->lid_be = htons(port->lid);
	memcpy(addr->gid, port->gid.raw, sizeof(addr->gid));
	info->src_addr = addr;
	info->src_addrlen = sizeof(*addr);
	return 0;
}

struct fi_info *gdrfab_info_for_port(const struct gdrfab_port_desc *port)
{
	struct fi_info *info = fi_allocinfo();

	if (!info)
		return NULL;
	info->caps = GDRFAB_CAPS;
	info->mode = 0;
	info->addr_format = FI_FORMAT_UNSPEC;
	info->ep_attr->type = FI_EP_RDM;
	info->ep_attr->protocol = FI_PROTO_UNSPEC;
	info->ep_attr->protocol_version = 1;
	info->ep_attr->max_msg_size = GDRFAB_MIN(
		GDRFAB_MAX_MSG_SIZE,
		port->max_mr_size ? port->max_mr_size : GDRFAB_MAX_MSG_SIZE);
	/* All 64 tag bits match (ignore bits apply to any of them). Consumers
	 * read the format's highest set bit as the tag width: Open MPI's mtl
	 * takes a CID bit per leading zero ("Not enough bits for CID" with
	 * 0), aws-ofi-nccl wants bit 32 or above. FI_TAG_GENERIC's value says
	 * all 64, as verbs;ofi_rxm does. */
	info->ep_attr->mem_tag_format = GDRFAB_TAG_FORMAT;
	/* Atomics keep their order up to the largest one (FI_ORDER_ATOMIC_*
	 * in msg_order; RMA claims no order). */
	info->ep_attr->max_order_raw_size = gdrfab_params.eager_max;
	info->ep_attr->max_order_war_size = gdrfab_params.eager_max;
	info->ep_attr->max_order_waw_size = gdrfab_params.eager_max;
	info->ep_attr->tx_ctx_cnt = 1;
	info->ep_attr->rx_ctx_cnt = 1;
	fill_tx_rx(info, port);
	fill_domain(info, port);
	/* GPU memory only where it can really be moved: CUDA works here and
	 * the staged path, or a P2P path, is available. */
	if (gdrfab_hmem_offered(NULL)) {
		info->caps |= FI_HMEM;
		info->tx_attr->caps |= FI_HMEM;
		info->rx_attr->caps |= FI_HMEM;
		info->domain_attr->mr_mode |= FI_MR_HMEM;
	}
	info->domain_attr->name = strdup(port->dev_name);
	info->fabric_attr->name = strdup(port->fabric_name);
	/* prov_name stays NULL: libfabric fills it in (and would append ours
	 * to it as if gdrfab were a layered provider otherwise). */
	info->fabric_attr->prov_version = GDRFAB_PROV_VERSION;
	info->fabric_attr->api_version = gdrfab_api_version;
	info->nic = gdrfab_nic_create(port);
	if (!info->domain_attr->name || !info->fabric_attr->name ||
	    !info->nic || fill_src_addr(info, port)) {
		fi_freeinfo(info);
		return NULL;
	}
	return info;
}
