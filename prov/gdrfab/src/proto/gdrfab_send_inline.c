/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Small sends that go out at once. An eager message of one host buffer, to
 * a connected peer with nothing queued before it and a send slot free, is
 * posted straight from the caller's arguments: the header is built on the
 * stack and the post copies it and the payload into the work request
 * (inline), or, where the QP takes no inline data that long, both are
 * copied into a transmit bounce buffer as the request path would copy
 * them (gdrfab_msg.c's prepare_eager). A header the peer already holds
 * is not sent again (GDRFAB_IMM_REPEAT): the payload goes alone. Such a send
 * takes no request from the slab (clearing and filling one, then finishing and
 * freeing it, was most of a small message's instructions): its work request
 * carries a small slot, struct gdrfab_itx, and its one end is gdrfab_itx_wc,
 * which reports it as a finished send request reports (a TX report, or the
 * error of its work completion, which fails the connection as any request's
 * does). Everything else takes the request path (gdrfab_msg.c), which
 * sends the same bytes on the wire.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_conn.h"
#include "gdrfab_gpu.h"
#include "gdrfab_lock.h"
#include "gdrfab_msg.h"
#include "gdrfab_proto.h"
#include "gdrfab_proto_stats.h"
#include "gdrfab_req.h"
#include "gdrfab_verbs_ops.h"

int gdrfab_itx_init(struct gdrfab_proto *proto, size_t count)
{
	proto->itx = calloc(count, sizeof(*proto->itx));
	if (!proto->itx)
		return -FI_ENOMEM;
	for (size_t i = 0; i < count; i++) {
		proto->itx[i].wr.kind = GDRFAB_WR_ITX;
		proto->itx[i].next_free =
			i + 1 < count ? &proto->itx[i + 1] : NULL;
	}
	proto->itx_free = proto->itx;
	return 0;
}

/* Whether the connection takes the send now, in its turn. */
static bool conn_ready(const struct gdrfab_proto *proto,
		       const struct gdrfab_conn *conn)
{
	return conn->state == GDRFAB_CONN_CONNECTED &&
	       gdrfab_list_empty(&conn->pending) && conn->sq_avail > 0 &&
	       proto->cq_credits > 0;
}

/* The registration the NIC may read the payload from in place: the
 * caller's descriptor of host memory, on a send (not an inject: the
 * caller owns the buffer until the completion, which comes with the
 * peer's ACK, after the NIC has read it). NULL where the payload must be
 * copied. fi_tsend checked that the descriptor is a live MR of this
 * domain covering the buffer, and gdrfab_itx_send that it is host
 * memory. */
static struct ibv_mr *gather_mr(const struct gdrfab_proto *proto,
				const struct gdrfab_itx_args *a)
{
	const struct gdrfab_mr_desc *d = a->desc ? a->desc[0] : NULL;

	if (!d || (a->flags & FI_INJECT) || proto->max_sge < 2)
		return NULL;
	return d->ibv_mr;
}

/* Takes a transmit bounce buffer for the slot, copies the header (hdr_len
 * bytes) to its start, and points sge at its first len bytes. ENOMEM when
 * none is free. */
static int bounce_header(struct gdrfab_proto *proto, struct gdrfab_itx *itx,
			 const struct gdrfab_pkt_hdr *hdr, size_t hdr_len,
			 size_t len, struct ibv_sge *sge)
{
	itx->txbuf = gdrfab_txbuf_alloc(proto);
	if (!itx->txbuf)
		return ENOMEM;
	memcpy(itx->txbuf->data, hdr, hdr_len);
	*sge = (struct ibv_sge){.addr = (uintptr_t)itx->txbuf->data,
				.length = (uint32_t)len,
				.lkey = proto->tx_mr->lkey};
	return 0;
}

/* Posts the message: inline (the post copies the header from the stack
 * and the payload from the caller's buffer) where the QP takes it; else
 * gathered by the NIC from the caller's registered buffer (gather_mr),
 * the header, if any, from a transmit bounce buffer; else both copied
 * into a transmit bounce buffer. The slot holds its bounce buffer until
 * its completion. A repeat (gdrfab_wire.h, GDRFAB_IMM_REPEAT) carries the
 * payload alone. 0, or an errno from the post (nothing posted). */
static int post(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
		struct gdrfab_itx *itx, const struct gdrfab_pkt_hdr *hdr,
		const struct gdrfab_itx_args *a, bool repeat)
{
	const struct iovec *iov = a->iov;
	size_t hdr_len = repeat ? 0 : sizeof(*hdr);
	size_t wire_len = hdr_len + iov->iov_len;
	struct ibv_sge sge[2] = {
		{.addr = (uintptr_t)hdr, .length = sizeof(*hdr)},
		{.addr = (uintptr_t)iov->iov_base,
		 .length = (uint32_t)iov->iov_len},
	};
	struct ibv_send_wr wr, *bad;
	struct ibv_mr *mr;
	int err;

	/* Only what a SEND reads is set: an initializer would clear all
	 * 120 bytes (the RDMA, atomic and UD unions too) on every send. */
	wr.next = NULL;
	wr.wr_id = (uintptr_t)itx;
	wr.sg_list = repeat ? &sge[1] : sge;
	wr.num_sge = (repeat ? 0 : 1) + (iov->iov_len ? 1 : 0);
	wr.opcode = repeat ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	wr.imm_data = repeat ? htonl(GDRFAB_IMM_REPEAT) : 0;

	itx->txbuf = NULL;
	if (wire_len > conn->max_inline && iov->iov_len &&
	    (mr = gather_mr(proto, a))) {
		/* No copy of the payload; a header goes from a bounce
		 * buffer, since inline data and an lkey's bytes do not mix
		 * in one work request. */
		sge[1].lkey = mr->lkey;
		wr.send_flags = IBV_SEND_SIGNALED;
		if (!repeat &&
		    bounce_header(proto, itx, hdr, hdr_len, hdr_len, &sge[0]))
			return ENOMEM;
	} else if (wire_len > conn->max_inline || wr.num_sge > proto->max_sge) {
		if (bounce_header(proto, itx, hdr, hdr_len, wire_len, &sge[0]))
			return ENOMEM;
		memcpy(itx->txbuf->data + hdr_len, iov->iov_base, iov->iov_len);
		wr.sg_list = sge;
		wr.num_sge = wire_len ? 1 : 0;
		wr.send_flags = IBV_SEND_SIGNALED;
	}
	err = gdrfab_vops->post_send(conn->qp, &wr, &bad);
	if (err && itx->txbuf) {
		gdrfab_txbuf_free(proto, itx->txbuf);
		itx->txbuf = NULL;
	}
	return err;
}

bool gdrfab_itx_send(struct gdrfab_proto *proto,
		     const struct gdrfab_itx_args *a, ssize_t *ret)
{
	size_t len = a->iov->iov_len;
	struct gdrfab_pkt_hdr hdr = {
		.version = GDRFAB_WIRE_VERSION,
		.type = GDRFAB_PKT_EAGER,
		.flags = a->pkt_flags,
		.tag = a->tag,
		.data = a->data,
		.size = len,
	};
	struct gdrfab_conn *conn;
	struct gdrfab_itx *itx;
	bool repeat;

	/* A completion that must mean delivery waits for the receiver's
	 * FIN (GDRFAB_PKT_DELIVERY_ACK), in a request: never here. GPU memory
	 * neither: the CPU reads the buffer under the lock (the caller checked
	 * that a descriptor is a live MR's; without one, CUDA is asked). */
	if ((a->flags & FI_DELIVERY_COMPLETE) || len > proto->eager_max ||
	    !proto->itx_free ||
	    (len && gdrfab_buf_device(proto, a->iov->iov_base,
				      a->desc ? a->desc[0] : NULL) >= 0))
		return false;
	gdrfab_lock_acquire(proto->env.lock);
	itx = proto->itx_free;
	/* A failed post goes the request path, which reports it. */
	if (!itx || gdrfab_conn_for_addr(proto, a->dest, &conn) ||
	    !conn_ready(proto, conn))
		goto not_here;
	repeat = gdrfab_memo_repeats(&conn->tx_memo, &hdr);
	if (post(proto, conn, itx, &hdr, a, repeat))
		goto not_here;
	if (!repeat)
		gdrfab_memo_note(&conn->tx_memo, &hdr);
	proto->itx_free = itx->next_free;
	itx->conn = conn;
	itx->context = a->context;
	itx->cq_flags = a->cq_flags;
	itx->op_flags = a->flags;
	itx->silent = a->silent;
	conn->refs++;
	conn->sq_avail--;
	conn->wr_outstanding++;
	proto->cq_credits--;
	gdrfab_pstat_tx_eager(proto, a->dest, len);
	gdrfab_lock_release(proto->env.lock);
	*ret = 0;
	return true;
not_here:
	gdrfab_lock_release(proto->env.lock);
	return false;
}

void gdrfab_itx_wc(struct gdrfab_proto *proto, struct gdrfab_itx *itx,
		   const struct ibv_wc *wc)
{
	struct gdrfab_conn *conn = itx->conn;
	int err = 0, prov_errno = 0;

	if (wc->status != IBV_WC_SUCCESS)
		gdrfab_conn_wc_error(conn, wc->status, &err, &prov_errno);
	/* A TX report, or the error of the work completion. */
	struct gdrfab_report r = {
		.kind = err ? GDRFAB_REPORT_ERROR : GDRFAB_REPORT_TX,
		.context = itx->context,
		.flags = itx->cq_flags,
		.op_flags = err ? 0 : itx->op_flags,
		.silent = !err && itx->silent,
		.err = err,
		.prov_errno = prov_errno,
	};
	itx->conn = NULL;
	if (itx->txbuf)
		gdrfab_txbuf_free(proto, itx->txbuf);
	itx->next_free = proto->itx_free;
	proto->itx_free = itx;
	gdrfab_wc_error_log(proto, conn, "send (eager)", wc);
	gdrfab_conn_send_wc(conn, wc, err);
	if (!proto->closing)
		proto->ops->report(proto->env.ep, &r);
	/* The connection may be freed with the slot's reference: kick it
	 * first. */
	if (conn->state == GDRFAB_CONN_CONNECTED)
		gdrfab_conn_kick(conn);
	gdrfab_conn_put(conn);
}
