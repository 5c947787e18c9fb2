/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the protocol counts (proto->stats, gdrfab_stats.h) at the places
 * where it decides a path, and the one log line of a failed work
 * completion. Each counting place calls one of these in one line: the
 * decisions stay readable where they are made, and what is counted, and
 * how, lives here. Everything runs under the endpoint's lock, as the
 * protocol does, so a count is a plain increment.
 */
#ifndef GDRFAB_PROTO_STATS_H
#define GDRFAB_PROTO_STATS_H

#include <stdbool.h>
#include <stddef.h>

#include "gdrfab_conn.h"
#include "gdrfab_gpu.h"
#include "gdrfab_mr_desc.h"
#include "gdrfab_proto.h"
#include "gdrfab_req.h"
#include "gdrfab_stats.h"

static inline void gdrfab_pstat_inc(struct gdrfab_proto *proto,
				    enum gdrfab_stat id)
{
	gdrfab_stat_inc(&proto->stats, id);
}

static inline void gdrfab_pstat_inc_if(struct gdrfab_proto *proto, bool cond,
				       enum gdrfab_stat id)
{
	if (cond)
		gdrfab_stat_inc(&proto->stats, id);
}

/* A message prepared to go (gdrfab_msg_prepare, its result ret): counted
 * as eager or rendezvous, and for its peer. An emulated write that goes
 * as a message is counted as RMA by its caller. */
static inline void gdrfab_pstat_msg_prepared(struct gdrfab_proto *proto,
					     const struct gdrfab_req *req,
					     size_t len, uint16_t pkt_flags,
					     int ret)
{
	if (ret || (pkt_flags & GDRFAB_PKT_EMU_WRITE))
		return;
	gdrfab_stat_op(&proto->stats,
		       req->rndv ? GDRFAB_STAT_tx_rndv_msgs
				 : GDRFAB_STAT_tx_eager_msgs,
		       len);
	gdrfab_stat_peer_tx(&proto->stats, req->addr, len);
}

/* An eager send posted at once (gdrfab_send_inline.c). */
static inline void gdrfab_pstat_tx_eager(struct gdrfab_proto *proto,
					 fi_addr_t dest, size_t len)
{
	gdrfab_stat_op(&proto->stats, GDRFAB_STAT_tx_eager_msgs, len);
	gdrfab_stat_peer_tx(&proto->stats, dest, len);
}

/* A message arrived from conn (before matching): an emulated RMA's is
 * the target's side of RMA, not a message. Inline, and the peer's
 * fi_addr read from the connection while the AV's generation still
 * holds: on every message, a call and the lookup's frame would cost
 * more than the counting. */
static inline void gdrfab_pstat_rx_msg(struct gdrfab_proto *proto,
				       struct gdrfab_conn *conn,
				       const struct gdrfab_pkt_hdr *h)
{
	fi_addr_t src;

	if (h->flags & GDRFAB_PKT_EMU)
		return;
	gdrfab_stat_op(&proto->stats,
		       h->type == GDRFAB_PKT_RNDV ? GDRFAB_STAT_rx_rndv_msgs
						  : GDRFAB_STAT_rx_eager_msgs,
		       h->size);
	src = conn->av_generation == *proto->env.av_generation
		      ? conn->fi_addr
		      : gdrfab_conn_fi_addr(conn);
	gdrfab_stat_peer_rx(&proto->stats, src, h->size);
}

/* An fi_write or fi_read posted (ret 0): by the NIC or, emu, served by
 * the target's data path. */
static inline void gdrfab_pstat_rma(struct gdrfab_proto *proto, int ret,
				    enum gdrfab_op op, bool emu, size_t len)
{
	if (ret)
		return;
	gdrfab_stat_op(&proto->stats,
		       op == GDRFAB_OP_READ ? GDRFAB_STAT_rma_read_ops
					    : GDRFAB_STAT_rma_write_ops,
		       len);
	if (emu)
		gdrfab_stat_inc(&proto->stats, GDRFAB_STAT_rma_emulated_ops);
}

/* A local buffer the NIC reads or writes itself: GPU memory so is
 * GPUDirect RDMA. */
static inline void gdrfab_pstat_local(struct gdrfab_proto *proto,
				      const struct gdrfab_mr_desc *mr,
				      size_t len)
{
	if (mr && mr->iface == FI_HMEM_CUDA)
		gdrfab_stat_op(&proto->stats, GDRFAB_STAT_gpu_direct_ops, len);
}

/* A request's buffers go through a host staging buffer (GPU memory the
 * NIC does not reach; an inject's host bytes are not GPU traffic). */
static inline void gdrfab_pstat_staged(struct gdrfab_proto *proto, void **desc,
				       size_t count, size_t len)
{
	if (gdrfab_iov_has_gpu(proto, desc, count))
		gdrfab_stat_op(&proto->stats, GDRFAB_STAT_gpu_staged_ops, len);
}

/* GPU bytes copied by the CPU or CUDA between a bounce buffer and the
 * GPU: copied (a send's, before the lock: bounce set) or moved into a
 * receive's GPU buffers. */
static inline void gdrfab_pstat_copied(struct gdrfab_proto *proto, bool copied,
				       size_t len)
{
	if (copied)
		gdrfab_stat_op(&proto->stats, GDRFAB_STAT_gpu_copied_ops, len);
}

/* The endpoint's rails named for its per-rail counters (none for one
 * NIC), when it is made. */
void gdrfab_pstat_rails_init(struct gdrfab_proto *proto);

/* A piece of len bytes of a striped read posted on rail (0 included,
 * so that the rails' bytes add up to the striped messages'). */
static inline void gdrfab_pstat_rail_piece(struct gdrfab_proto *proto,
					   size_t rail, size_t len)
{
	gdrfab_stat_rail_piece(&proto->stats, rail, len);
}

/* A connection took rail back after a failure, and the rail's NIC's
 * name for the line that says so. */
static inline void gdrfab_pstat_rail_back(struct gdrfab_proto *proto,
					  size_t rail)
{
	gdrfab_stat_rail_back(&proto->stats, rail);
}
static inline const char *
gdrfab_pstat_rail_name(const struct gdrfab_proto *proto, size_t rail)
{
	return rail < proto->stats.nrails ? proto->stats.rail_name[rail] : "?";
}

/* A connection request or reply sent again (unanswered). */
static inline void gdrfab_pstat_resend(struct gdrfab_proto *proto)
{
	gdrfab_stat_inc(&proto->stats, GDRFAB_STAT_conn_resends);
}

/* A connection failed with err (FI_E*, positive): counted, and for its
 * peer, unless the endpoint is closing it. */
static inline void gdrfab_pstat_conn_failed(struct gdrfab_conn *conn, int err)
{
	struct gdrfab_proto *proto = conn->proto;

	if (proto->closing || err == FI_ECANCELED)
		return;
	gdrfab_stat_inc(&proto->stats, GDRFAB_STAT_conn_failed);
	gdrfab_stat_peer_error(&proto->stats, gdrfab_conn_fi_addr(conn));
}

/* A failed work completion on rail (0: the endpoint's own QPs) of an
 * operation of op's kind on conn (NULL when its QP is no longer known):
 * logged as NCCL logs one, naming the rail's NIC, the peer (fi_addr and
 * address), the operation, the verbs status and vendor_err, and counted
 * for the peer and, but for a flush, for the rail. Nothing for a
 * success; a flushed work request (its connection failed first, and said
 * so) is logged at FI_LOG_INFO. The connection's fi_addr is looked up by
 * the inline callers, so that this file calls nothing of the connections
 * (which call it): it stays out of the core's circle. */
void gdrfab_wc_error_report(struct gdrfab_proto *proto, size_t rail,
			    struct gdrfab_conn *conn, fi_addr_t fi_addr,
			    const char *op, const struct ibv_wc *wc);
static inline void gdrfab_wc_error_log_rail(struct gdrfab_proto *proto,
					    size_t rail,
					    struct gdrfab_conn *conn,
					    const char *op,
					    const struct ibv_wc *wc)
{
	if (wc->status != IBV_WC_SUCCESS)
		gdrfab_wc_error_report(proto, rail, conn,
				       conn ? gdrfab_conn_fi_addr(conn)
					    : FI_ADDR_NOTAVAIL,
				       op, wc);
}
/* The same on rail 0, which carries all but striped pieces. */
static inline void gdrfab_wc_error_log(struct gdrfab_proto *proto,
				       struct gdrfab_conn *conn, const char *op,
				       const struct ibv_wc *wc)
{
	gdrfab_wc_error_log_rail(proto, 0, conn, op, wc);
}
/* The line of a connection (its fi_addr) that failed with err (FI_E*,
 * positive) and prov_errno: the NIC, the peer, why; its operations fail
 * with it. */
void gdrfab_conn_fail_log(struct gdrfab_conn *conn, fi_addr_t fi_addr, int err,
			  int prov_errno);
/* The same for a receive (its connection found by its QP number). */
static inline void gdrfab_wc_error_log_rx(struct gdrfab_proto *proto,
					  const struct ibv_wc *wc)
{
	gdrfab_wc_error_log(proto, gdrfab_conn_by_qpn(proto, wc->qp_num),
			    "receive", wc);
}
/* What a request is, for that line. */
const char *gdrfab_req_op_name(const struct gdrfab_req *req);

#endif /* GDRFAB_PROTO_STATS_H */
