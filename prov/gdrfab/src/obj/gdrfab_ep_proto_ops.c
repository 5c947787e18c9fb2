/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the endpoint gives its protocol (gdrfab_proto_ops): the protocol's
 * reports written as the application's CQ entries (honouring
 * FI_SELECTIVE_COMPLETION and FI_INJECT) and counters, and the AV, MR and
 * atomics-policy questions it asks, so that it never calls up into the
 * object layer; and its view of the endpoint and domain (struct
 * gdrfab_proto_env), filled when the endpoint is enabled.
 */
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_atomic.h"
#include "gdrfab_hmem_domain.h"
#include "gdrfab_objs.h"
#include "gdrfab_proto.h"
#include "gdrfab_req.h"

static void count(struct gdrfab_cntr *cntr, bool error)
{
	if (!cntr)
		return;
	if (error)
		fi_cntr_adderr(&cntr->fid, 1);
	else
		fi_cntr_add(&cntr->fid, 1);
}

static struct gdrfab_cntr *tx_cntr(struct gdrfab_ep *ep, uint64_t cq_flags)
{
	if (cq_flags & FI_READ)
		return ep->cntrs[GDRFAB_CNTR_READ];
	if (cq_flags & FI_WRITE)
		return ep->cntrs[GDRFAB_CNTR_WRITE];
	return ep->cntrs[GDRFAB_CNTR_SEND];
}

/* Whether an operation asked for (or defaults to) a CQ entry. */
static bool wants_entry(uint64_t bind_flags, uint64_t op_flags)
{
	return !(bind_flags & FI_SELECTIVE_COMPLETION) ||
	       (op_flags & FI_COMPLETION);
}

static void complete_tx(struct gdrfab_ep *ep, const struct gdrfab_report *r)
{
	count(tx_cntr(ep, r->flags), false);
	if (ep->tx_cq && !r->silent &&
	    wants_entry(ep->tx_cq_flags, r->op_flags)) {
		struct fi_cq_tagged_entry e = {
			.op_context = r->context,
			.flags = r->flags & ~(uint64_t)FI_REMOTE_CQ_DATA,
		};

		gdrfab_cq_write(ep->tx_cq, &e, FI_ADDR_NOTAVAIL);
	}
}

static void complete_rx(struct gdrfab_ep *ep, const struct gdrfab_report *r)
{
	struct fi_cq_tagged_entry e = {
		.op_context = r->context,
		.flags = r->flags & ~(uint64_t)FI_COMPLETION,
		.len = r->len,
		.buf = r->buf,
		.data = r->data,
		.tag = r->tag,
	};

	if (!(r->flags & FI_REMOTE_WRITE))
		count(ep->cntrs[GDRFAB_CNTR_RECV], false);
	/* Remote CQ data always makes an entry; receives follow the
	 * selective-completion rules (the flags carry FI_COMPLETION). */
	if (ep->rx_cq && ((r->flags & FI_REMOTE_CQ_DATA) ||
			  wants_entry(ep->rx_cq_flags, r->flags)))
		gdrfab_cq_write(ep->rx_cq, &e, r->src);
}

static void complete_error(struct gdrfab_ep *ep, const struct gdrfab_report *r)
{
	struct gdrfab_cq *cq = r->rx ? ep->rx_cq : ep->tx_cq;
	struct fi_cq_err_entry e;

	count(r->rx ? ep->cntrs[GDRFAB_CNTR_RECV] : tx_cntr(ep, r->flags),
	      true);
	if (!cq)
		return;
	memset(&e, 0, sizeof(e));
	e.op_context = r->context;
	e.flags = r->flags & ~(uint64_t)FI_COMPLETION;
	e.len = r->len;
	e.buf = r->buf;
	e.data = r->data;
	e.tag = r->tag;
	e.olen = r->olen;
	e.err = r->err;
	e.prov_errno = r->prov_errno;
	gdrfab_cq_write_error(cq, &e);
}

static void ep_report(struct gdrfab_ep *ep, const struct gdrfab_report *r)
{
	switch (r->kind) {
	case GDRFAB_REPORT_NONE: break;
	case GDRFAB_REPORT_TX: complete_tx(ep, r); break;
	case GDRFAB_REPORT_RX: complete_rx(ep, r); break;
	case GDRFAB_REPORT_ERROR:
		/* The one place every error completion passes. */
		if (ep->proto)
			gdrfab_stats_count_error(&ep->proto->stats, r->err,
						 r->prov_errno);
		complete_error(ep, r);
		break;
	}
}

static void ep_rma_event(struct gdrfab_ep *ep, bool read, uint64_t n)
{
	struct gdrfab_cntr *cntr = ep->cntrs[read ? GDRFAB_CNTR_REMOTE_READ
						  : GDRFAB_CNTR_REMOTE_WRITE];

	if (cntr)
		fi_cntr_add(&cntr->fid, n);
}

static struct gdrfab_mr_desc *emu_mr_find(struct gdrfab_domain *domain,
					  uint32_t handle, uint64_t addr,
					  uint64_t len, uint64_t access,
					  const char **why)
{
	struct gdrfab_mr *mr =
		gdrfab_emu_mr_find(domain, handle, addr, len, access, why);

	return mr ? &mr->desc : NULL;
}

_Static_assert(GDRFAB_CM_RAILS_MAX == GDRFAB_RAILS_MAX,
	       "the wire lists every rail of the largest set");

void gdrfab_ep_proto_env(struct gdrfab_ep *ep, struct gdrfab_proto_env *env)
{
	struct gdrfab_domain *d = ep->domain;

	*env = (struct gdrfab_proto_env){
		.ep = ep,
		.av = ep->av,
		.domain = d,
		.av_generation = &ep->av->generation,
		.lock = &ep->lock,
		.ctx = d->ctx,
		.pd = d->pd,
		.dev_attr = &d->dev_attr,
		.port_num = d->port_num,
		.gid_index = d->gid_index,
		.port_addr = d->port_addr,
		.max_msg_sz = d->max_msg_sz,
		.active_mtu = d->active_mtu,
		.ah_cache = &d->ah_cache,
		.hmem = &d->hmem,
		.nic_atomic_flag = d->nic_atomic_flag,
		.atomics_nic = &d->atomics_nic,
		.atomics_proto = &d->atomics_proto,
		.atomics_held = &d->atomics_held,
		.port_events = &d->port_events,
		.name = ep->name,
		.ud_qp = ep->ud_qp,
		.ud_cq = ep->ud_cq,
		.ns_port = ep->ns ? ep->ns_service : 0,
		.rma_events = ep->rma_events,
		.caps = ep->info->caps,
		.max_msg_size = ep->info->ep_attr->max_msg_size,
		.tx_size = ep->info->tx_attr->size,
		.rx_size = ep->info->rx_attr->size,
		.flush_by_read = gdrfab_ep_may_flush_by_read(ep),
		.min_multi_recv = ep->min_multi_recv,
		.cuda_api_permitted = ep->cuda_api_permitted,
		.hmem_p2p = ep->hmem_p2p,
		.nrails = d->rails.count,
	};
	for (size_t i = 1; i < d->rails.count; i++) {
		const struct gdrfab_domain_rail *r = &d->rails.rail[i];

		env->more_rails[i - 1] = (struct gdrfab_proto_rail){
			.ctx = r->ctx,
			.pd = r->pd,
			.dev_attr = &r->dev_attr,
			.port_num = r->port_num,
			.gid_index = r->gid_index,
			.port_addr = r->port_addr,
			.active_mtu = r->active_mtu,
		};
	}
}

const struct gdrfab_proto_ops gdrfab_ep_proto_ops = {
	.report = ep_report,
	.rma_event = ep_rma_event,
	.av_find = gdrfab_av_find,
	.av_get_addr = gdrfab_av_get_addr,
	.av_peer = gdrfab_av_peer,
	.av_service_status = gdrfab_av_service_status,
	.av_learn = gdrfab_av_learn,
	.av_progress = gdrfab_av_progress,
	.emu_mr_find = emu_mr_find,
	.mr_check_desc = gdrfab_mr_check_desc,
	.mr_check_descs = gdrfab_mr_check_descs,
	.mr_desc_live = gdrfab_mr_desc_live,
	.mr_keys_access = gdrfab_mr_keys_access,
	.mr_rail_keys = gdrfab_mr_keys_rails,
	.nic_atomic_pair = gdrfab_nic_atomic_pair,
};
