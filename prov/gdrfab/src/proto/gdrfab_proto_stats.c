/* SPDX-License-Identifier: BSD-2-Clause */
/* What the protocol counts, and how it logs a failed work completion. */
#include <stdio.h>

#include "gdrfab.h"
#include "gdrfab_proto_stats.h"
#include "gdrfab_strerror.h"

static const char *nic_name(const struct gdrfab_proto *proto)
{
	return proto->ctx && proto->ctx->device ? proto->ctx->device->name
						: "?";
}

const char *gdrfab_req_op_name(const struct gdrfab_req *req)
{
	switch (req->op) {
	case GDRFAB_OP_SEND:
		if (req->cq_flags & FI_ATOMIC)
			return "atomic (message)";
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

void gdrfab_wc_error_report(struct gdrfab_proto *proto,
			    struct gdrfab_conn *conn, fi_addr_t fi_addr,
			    const char *op, const struct ibv_wc *wc)
{
	const char *nic = nic_name(proto);
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
			nic, proto->env.port_num, op, (long long)fi_addr, peer,
			wc->qp_num);
		return;
	}
	GDRFAB_WARN(
		FI_LOG_EP_DATA,
		"%s:%u: %s with peer fi_addr %lld %s failed: status %d (%s), vendor_err 0x%x, qp 0x%x\n",
		nic, proto->env.port_num, op, (long long)fi_addr, peer,
		(int)wc->status, ibv_wc_status_str(wc->status), wc->vendor_err,
		wc->qp_num);
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
