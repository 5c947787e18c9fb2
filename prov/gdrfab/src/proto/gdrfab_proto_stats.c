/* SPDX-License-Identifier: BSD-2-Clause */
/* What the protocol counts, and how it logs a failed work completion. */
#include <stdio.h>

#include "gdrfab.h"
#include "gdrfab_proto_stats.h"
#include "gdrfab_strerror.h"

/* The public struct has a row for each rail a pair may agree on. */
_Static_assert(
	FI_GDRFAB_STATS_RAILS == GDRFAB_CM_RAILS_MAX,
	"struct fi_gdrfab_stats's rail rows are not GDRFAB_CM_RAILS_MAX");

static const char *ctx_name(const struct ibv_context *ctx)
{
	return ctx && ctx->device ? ctx->device->name : "?";
}

static const char *nic_name(const struct gdrfab_proto *proto)
{
	return ctx_name(proto->ctx);
}

/* Rail's NIC: rail 0 the endpoint's own device. */
static const char *rail_nic_name(const struct gdrfab_proto *proto, size_t rail)
{
	if (!rail || rail >= proto->env.nrails)
		return nic_name(proto);
	return ctx_name(proto->env.more_rails[rail - 1].ctx);
}

static unsigned rail_port(const struct gdrfab_proto *proto, size_t rail)
{
	if (!rail || rail >= proto->env.nrails)
		return proto->env.port_num;
	return proto->env.more_rails[rail - 1].port_num;
}

void gdrfab_pstat_rails_init(struct gdrfab_proto *proto)
{
	const char *names[GDRFAB_CM_RAILS_MAX];
	size_t n = GDRFAB_MIN(proto->env.nrails, (size_t)GDRFAB_CM_RAILS_MAX);

	for (size_t i = 0; i < n; i++)
		names[i] = rail_nic_name(proto, i);
	gdrfab_stats_rails_init(&proto->stats, n, names);
}

const char *gdrfab_req_op_name(const struct gdrfab_req *req)
{
	switch (req->op) {
	case GDRFAB_OP_SEND:
		if (req->cq_flags & FI_ATOMIC)
			return "atomic (message)";
		if (req->seg)
			return req->delivery_ack
				       ? "send (segmented, delivery ACK)"
				       : "send (segmented)";
		if (req->delivery_ack)
			return "send (eager, delivery ACK)";
		return req->rndv ? "send (rendezvous)" : "send (eager)";
	case GDRFAB_OP_WRITE: return "RDMA write";
	case GDRFAB_OP_READ: return "RDMA read";
	case GDRFAB_OP_RNDV_READ: return "RDMA read (rendezvous pull)";
	case GDRFAB_OP_CTRL: return "control message";
	case GDRFAB_OP_RECV: return "receive";
	case GDRFAB_OP_GPU_RX: return "copy into GPU memory";
	case GDRFAB_OP_NIC_ATOMIC: return "atomic (NIC)";
	}
	return "operation";
}

void gdrfab_wc_error_report(struct gdrfab_proto *proto, size_t rail,
			    struct gdrfab_conn *conn, fi_addr_t fi_addr,
			    const char *op, const struct ibv_wc *wc)
{
	const char *nic = rail_nic_name(proto, rail);
	unsigned port = rail_port(proto, rail);
	char peer[128] = "unknown peer";

	if (wc->status == IBV_WC_SUCCESS)
		return;
	if (conn) {
		gdrfab_addr_to_str(&conn->peer, peer, sizeof(peer));
		gdrfab_stat_peer_error(&proto->stats, fi_addr);
	}
	/* A flushed work request is the echo of the failure that moved its
	 * QP to error, logged where it happened: one line per flushed
	 * operation would bury it. */
	if (wc->status == IBV_WC_WR_FLUSH_ERR) {
		GDRFAB_INFO(
			FI_LOG_EP_DATA,
			"%s:%u: %s with peer fi_addr %lld %s flushed (qp 0x%x): its connection failed\n",
			nic, port, op, (long long)fi_addr, peer, wc->qp_num);
		return;
	}
	gdrfab_stat_rail_error(&proto->stats, rail);
	GDRFAB_WARN(
		FI_LOG_EP_DATA,
		"%s:%u: %s with peer fi_addr %lld %s failed: status %d (%s), vendor_err 0x%x, qp 0x%x\n",
		nic, port, op, (long long)fi_addr, peer, (int)wc->status,
		ibv_wc_status_str(wc->status), wc->vendor_err, wc->qp_num);
}

void gdrfab_conn_fail_log(struct gdrfab_conn *conn, fi_addr_t fi_addr, int err,
			  int prov_errno)
{
	struct gdrfab_proto *proto = conn->proto;
	char peer[128];

	gdrfab_addr_to_str(&conn->peer, peer, sizeof(peer));
	GDRFAB_WARN(
		FI_LOG_EP_DATA,
		"%s:%u: connection to peer fi_addr %lld %s failed: %s (%s); the operations queued on it fail with it\n",
		nic_name(proto), proto->env.port_num, (long long)fi_addr, peer,
		fi_strerror(err), gdrfab_prov_strerror(prov_errno, NULL, 0));
}
