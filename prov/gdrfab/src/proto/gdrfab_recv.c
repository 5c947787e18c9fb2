/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The receive side: headers from the wire (validated before anything is
 * believed), matching against posted receives in order (tag, ignore bits,
 * directed source), unexpected messages, FI_PEEK/FI_CLAIM/FI_DISCARD,
 * FI_MULTI_RECV, truncation, and the rendezvous READs and FIN.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_tagged.h>

#include "gdrfab.h"
#include "gdrfab_atomic.h"
#include "gdrfab_conn.h"
#include "gdrfab_conn_rails.h"
#include "gdrfab_gpu.h"
#include "gdrfab_msg.h"
#include "gdrfab_proto.h"
#include "gdrfab_proto_stats.h"
#include "gdrfab_rail_back.h"
#include "gdrfab_req.h"
#include "gdrfab_rma.h"
#include "gdrfab_strerror.h"
#include "gdrfab_stripe.h"
#include "gdrfab_verbs_ops.h"

static void gdrfab_rndv_read_done(struct gdrfab_proto *proto,
				  struct gdrfab_req *rd);

/* Checks a header against the bytes that carried it. 0 or a reason. */
static const char *check_header(const struct gdrfab_pkt_hdr *h, size_t len,
				size_t max_msg)
{
	uint64_t sum = 0;
	const struct gdrfab_rndv_seg *seg = (const void *)(h + 1);

	if (len < sizeof(*h))
		return "shorter than a header";
	if (h->version != GDRFAB_WIRE_VERSION)
		return "unknown wire version";
	if (h->flags &
	    ~(GDRFAB_PKT_TAGGED | GDRFAB_PKT_CQ_DATA | GDRFAB_PKT_EMU |
	      GDRFAB_PKT_DELIVERY_ACK | GDRFAB_PKT_RAIL_KEYS))
		return "unknown flags";
	if ((h->flags & GDRFAB_PKT_RAIL_KEYS) &&
	    (h->type != GDRFAB_PKT_RNDV || (h->flags & GDRFAB_PKT_EMU)))
		return "rail keys on a message that is not a plain rendezvous";
	if ((h->flags & GDRFAB_PKT_DELIVERY_ACK) &&
	    ((h->type != GDRFAB_PKT_EAGER && h->type != GDRFAB_PKT_RNDV &&
	      h->type != GDRFAB_PKT_SEG) ||
	     (h->flags & GDRFAB_PKT_EMU)))
		return "a delivery ACK on a message that is not a plain one";
	if ((h->flags & GDRFAB_PKT_EMU) &&
	    ((h->flags & GDRFAB_PKT_TAGGED) ||
	     (h->flags & GDRFAB_PKT_EMU) == GDRFAB_PKT_EMU ||
	     ((h->flags & GDRFAB_PKT_EMU_READ) &&
	      (h->type != GDRFAB_PKT_RNDV || (h->flags & GDRFAB_PKT_CQ_DATA)))))
		return "bad emulated RMA flags";
	switch (h->type) {
	case GDRFAB_PKT_EAGER:
		if (h->seg_count || h->size != len - sizeof(*h))
			return "eager length does not match the bytes sent";
		return NULL;
	case GDRFAB_PKT_SEG:
		/* Its first bytes (at least one) and more to come; the
		 * pair's limit is checked against the connection's. */
		if (h->seg_count || (h->flags & GDRFAB_PKT_EMU) ||
		    len == sizeof(*h) || h->size <= len - sizeof(*h) ||
		    h->size > max_msg)
			return "bad segmented message header";
		return NULL;
	case GDRFAB_PKT_RNDV:
		if (!h->seg_count || h->seg_count > GDRFAB_MAX_IOV ||
		    len < sizeof(*h) + h->seg_count * sizeof(*seg) ||
		    !gdrfab_stripe_keys_fit(
			    h, len - sizeof(*h) - h->seg_count * sizeof(*seg)))
			return "bad rendezvous segment count";
		for (uint32_t i = 0; i < h->seg_count; i++) {
			if (seg[i].reserved || seg[i].len > max_msg ||
			    seg[i].addr + seg[i].len < seg[i].addr)
				return "bad rendezvous segment";
			sum += seg[i].len;
		}
		if (sum != h->size || h->size > max_msg)
			return "rendezvous segments do not add up";
		return NULL;
	case GDRFAB_PKT_ATOMIC:
	case GDRFAB_PKT_ATOMIC_RESP:
		if (h->flags & ~GDRFAB_PKT_CQ_DATA)
			return "bad atomic flags";
		return gdrfab_atomic_check_header(h, len);
	case GDRFAB_PKT_FIN:
	case GDRFAB_PKT_NOP:
		if (len != sizeof(*h) || h->flags || h->size ||
		    h->data >= FI_ERRNO_MAX)
			return "bad control message";
		return NULL;
	case GDRFAB_PKT_RMA_EVENT:
		if (len != sizeof(*h) || h->flags || !h->size ||
		    h->size > UINT32_MAX ||
		    (h->data != GDRFAB_RMA_EVENT_WRITE &&
		     h->data != GDRFAB_RMA_EVENT_READ))
			return "bad RMA event";
		return NULL;
	case GDRFAB_PKT_RAIL_KEYS_REQ:
	case GDRFAB_PKT_RAIL_KEYS_REP:
		if (h->flags || h->size || h->tag || h->msg_id ||
		    h->seg_count > GDRFAB_CM_RAILS_MAX - 1 ||
		    (h->type == GDRFAB_PKT_RAIL_KEYS_REQ && h->seg_count) ||
		    len != sizeof(*h) + h->seg_count * sizeof(uint32_t))
			return "bad rail keys message";
		return NULL;
	case GDRFAB_PKT_RAILS_RESET: return gdrfab_rail_back_check(h, len);
	default: return "unknown message type";
	}
}

static bool source_matches(struct gdrfab_proto *proto, struct gdrfab_req *req,
			   struct gdrfab_conn *conn)
{
	if (req->addr == FI_ADDR_UNSPEC ||
	    !(proto->env.caps & FI_DIRECTED_RECV))
		return true;
	return gdrfab_conn_fi_addr(conn) == req->addr;
}

static bool matches(struct gdrfab_proto *proto, struct gdrfab_req *req,
		    const struct gdrfab_pkt_hdr *h, struct gdrfab_conn *conn)
{
	if ((h->flags & GDRFAB_PKT_TAGGED) &&
	    ((h->tag ^ req->tag) & ~req->ignore))
		return false;
	return source_matches(proto, req, conn);
}

/* Bytes of a receive still free (multi-receive buffers shrink). */
static size_t capacity(const struct gdrfab_req *req)
{
	return req->len - req->multi_off;
}

/* Copies bytes into the receive's host memory from offset off. GPU
 * memory takes deliver_async's step instead. host: deliver_async found
 * the buffers given without a descriptor to be host memory (CUDA is not
 * asked again). 0 or a negative FI_E*. */
static int scatter(struct gdrfab_proto *proto, struct gdrfab_req *req,
		   size_t off, const uint8_t *src, size_t n, bool host)
{
	return gdrfab_scatter_host(proto, req->iov, req->desc, req->iov_count,
				   off, src, n, host);
}

static uint64_t rx_flags(const struct gdrfab_req *req,
			 const struct gdrfab_pkt_hdr *h)
{
	uint64_t flags = req->cq_flags | (req->op_flags & FI_COMPLETION);

	if (h->flags & GDRFAB_PKT_CQ_DATA)
		flags |= FI_REMOTE_CQ_DATA;
	return flags;
}

static void *buf_at(const struct gdrfab_req *req, size_t off)
{
	return req->iov_count ? (uint8_t *)req->iov[0].iov_base + off : NULL;
}

/* A multi-receive buffer is released once too little of it is left. */
static bool multi_exhausted(struct gdrfab_proto *proto,
			    const struct gdrfab_req *req)
{
	return capacity(req) < GDRFAB_MAX(proto->env.min_multi_recv, (size_t)1);
}

static void finish_recv(struct gdrfab_proto *proto, struct gdrfab_req *req,
			const struct gdrfab_pkt_hdr *h,
			struct gdrfab_conn *conn, size_t off, size_t got,
			bool last)
{
	uint64_t flags = rx_flags(req, h);
	fi_addr_t src = conn ? gdrfab_conn_fi_addr(conn) : FI_ADDR_NOTAVAIL;

	if (last && (req->op_flags & FI_MULTI_RECV))
		flags |= FI_MULTI_RECV;
	if (got < h->size)
		gdrfab_req_report_error(proto, req, last, flags, got,
					h->size - got, buf_at(req, off),
					h->data, h->tag, FI_ETRUNC,
					GDRFAB_PERR_TRUNCATED);
	else
		gdrfab_req_report_rx(proto, req, last, flags, got,
				     buf_at(req, off), h->data, h->tag, src);
}

/* Takes the space for one message from a receive. Returns the offset;
 * *done says whether the receive leaves its posted list. */
static size_t take_space(struct gdrfab_proto *proto, struct gdrfab_req *req,
			 size_t size, size_t *got, bool *done)
{
	size_t off = req->multi_off;

	*got = GDRFAB_MIN(size, capacity(req));
	if (req->op_flags & FI_MULTI_RECV) {
		req->multi_off += *got;
		*done = multi_exhausted(proto, req);
	} else {
		*done = true;
	}
	return off;
}

static void start_rndv_read(struct gdrfab_proto *proto, struct gdrfab_req *recv,
			    const struct gdrfab_pkt_hdr *h,
			    const struct gdrfab_rndv_seg *seg,
			    const uint32_t *rail_keys,
			    struct gdrfab_conn *conn);

/* The FIN the sender of a delivery ACK waits for
 * (GDRFAB_PKT_DELIVERY_ACK), sent once its bytes are in the receive's
 * buffer: 0, FI_ETRUNC when only got of them fit, or err (FI_E*,
 * positive) when the delivery failed. Nothing for other messages. */
static void ack_delivery(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
			 const struct gdrfab_pkt_hdr *h, size_t got, int err)
{
	if (h->flags & GDRFAB_PKT_DELIVERY_ACK)
		gdrfab_send_ctrl(
			proto, conn, GDRFAB_PKT_FIN, h->msg_id,
			(uint64_t)gdrfab_delivery_status(got, h->size, err));
}

/* Eager bytes into GPU memory: an asynchronous step (gdrfab_gpu_rx.c)
 * that completes the receive later (or, for an emulated write into staged
 * GPU memory, sends the initiator's FIN later), so that no copy is waited
 * for here. False when the receive takes no such step (the caller
 * delivers); *host then says whether the buffers were classified here and
 * found host memory, so that the caller's copy asks CUDA no second time. */
static bool deliver_async(struct gdrfab_proto *proto, struct gdrfab_req *req,
			  const struct gdrfab_pkt_hdr *h,
			  struct gdrfab_conn *conn, struct gdrfab_rxbuf *rxbuf,
			  const uint8_t *payload, uint8_t **own, size_t off,
			  size_t got, bool done, bool *host)
{
	struct gdrfab_gpu_rx_args a;
	int err;

	/* The common case, host memory, decided before anything is built
	 * for a step. */
	*host = false;
	if (!got || !conn || (!rxbuf && !own))
		return false;
	if (req->host_descs) {
		*host = true;
		return false;
	}
	if (!gdrfab_gpu_rx_wanted(proto, req->iov, req->desc, req->iov_count)) {
		*host = true;
		return false;
	}
	a = (struct gdrfab_gpu_rx_args){
		.recv = req,
		.conn = conn,
		.rxbuf = rxbuf,
		.src = payload,
		.own = own,
		.off = off,
		.got = got,
		.size = h->size,
		.cq_flags = rx_flags(req, h),
		.tag = h->tag,
		.data = h->data,
		.msg_id = h->msg_id,
		.ack = h->flags & GDRFAB_PKT_DELIVERY_ACK,
		.done = done,
	};
	if (done && (req->op_flags & FI_MULTI_RECV))
		a.cq_flags |= FI_MULTI_RECV;
	/* Off the posted list first: the step may finish (and free the
	 * receive) before it returns. */
	if (done)
		gdrfab_list_remove(&req->entry);
	err = gdrfab_gpu_rx_start(proto, &a);
	if (!err)
		return true;
	GDRFAB_WARN(FI_LOG_EP_DATA,
		    "an eager message of %zu bytes into GPU memory: %s\n", got,
		    fi_strerror(-err));
	if (req->emu_target) {
		gdrfab_emu_target_done(proto, conn, h->msg_id,
				       h->flags & GDRFAB_PKT_CQ_DATA, h->data,
				       got, FI_EIO);
		gdrfab_req_end_silent(proto, req);
	} else {
		ack_delivery(proto, conn, h, got, -err);
		gdrfab_req_report_error(proto, req, done, a.cq_flags, 0,
					h->size, buf_at(req, off), h->data,
					h->tag, -err, 0);
	}
	return true;
}

/* The bytes of a message (got of them, from off) are in the receive's
 * host memory, or err (negative FI_E*) said why not: the sender's
 * delivery ACK, if it asked, and the receive's report. */
static void delivered(struct gdrfab_proto *proto, struct gdrfab_req *req,
		      const struct gdrfab_pkt_hdr *h, struct gdrfab_conn *conn,
		      size_t off, size_t got, bool done, int err)
{
	ack_delivery(proto, conn, h, got, -err);
	if (err)
		gdrfab_req_report_error(proto, req, done, rx_flags(req, h), 0,
					h->size, buf_at(req, off), h->data,
					h->tag, -err, 0);
	else
		finish_recv(proto, req, h, conn, off, got, done);
}

/* Delivers a message into a matched receive. The eager payload is in a
 * receive bounce buffer (rxbuf) or an unexpected message's copy (*own). */
static void deliver(struct gdrfab_proto *proto, struct gdrfab_req *req,
		    const struct gdrfab_pkt_hdr *h,
		    const struct gdrfab_rndv_seg *seg, const uint8_t *payload,
		    struct gdrfab_conn *conn, struct gdrfab_rxbuf *rxbuf,
		    uint8_t **own)
{
	size_t got;
	bool done, host;
	size_t off;
	int err;

	if (h->type == GDRFAB_PKT_RNDV) {
		/* The rail keys, when it has them, follow its segments in the
		 * receive buffer (checked by check_header). */
		start_rndv_read(proto, req, h, seg,
				(h->flags & GDRFAB_PKT_RAIL_KEYS)
					? (const uint32_t *)(seg + h->seg_count)
					: NULL,
				conn);
		return;
	}
	off = take_space(proto, req, h->size, &got, &done);
	if (deliver_async(proto, req, h, conn, rxbuf, payload, own, off, got,
			  done, &host))
		return;
	err = scatter(proto, req, off, payload, got, host);
	if (req->emu_target) {
		gdrfab_emu_target_done(proto, conn, h->msg_id,
				       h->flags & GDRFAB_PKT_CQ_DATA, h->data,
				       got, err ? FI_EIO : 0);
		gdrfab_req_end_silent(proto, req);
		return;
	}
	delivered(proto, req, h, conn, off, got, done, err);
}

/* A rendezvous READ's copies or flush ended: its error, if any, is in the
 * request (stage_err, flush_err), read again by gdrfab_rndv_read_done. */
static void rndv_read_resume(struct gdrfab_proto *proto, struct gdrfab_req *rd,
			     int err, int prov_errno)
{
	(void)err, (void)prov_errno;
	gdrfab_rndv_read_done(proto, rd);
}

/* The rendezvous READ request for one message into a receive; rail_keys
 * the sender's keys of its segments on its rails (GDRFAB_PKT_RAIL_KEYS),
 * or NULL. */
static void start_rndv_read(struct gdrfab_proto *proto, struct gdrfab_req *recv,
			    const struct gdrfab_pkt_hdr *h,
			    const struct gdrfab_rndv_seg *seg,
			    const uint32_t *rail_keys, struct gdrfab_conn *conn)
{
	struct gdrfab_req *rd = gdrfab_req_alloc(proto, true);
	size_t got, off, skip;
	bool done;
	struct iovec iov[GDRFAB_MAX_IOV];
	void *desc[GDRFAB_MAX_IOV];
	size_t n = 0;
	int ret;

	off = take_space(proto, recv, h->size, &got, &done);
	if (done)
		gdrfab_list_remove(&recv->entry);
	if (!rd) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "no request for a rendezvous read\n");
		gdrfab_req_report_error(proto, recv, done, rx_flags(recv, h), 0,
					h->size, NULL, h->data, h->tag,
					FI_ENOMEM, 0);
		return;
	}
	/* The part of the receive's iovec this message lands in. */
	skip = off;
	for (size_t i = 0; i < recv->iov_count && n < GDRFAB_MAX_IOV; i++) {
		size_t l = recv->iov[i].iov_len;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		iov[n].iov_base = (uint8_t *)recv->iov[i].iov_base + skip;
		iov[n].iov_len = l - skip;
		desc[n] = recv->desc[i];
		skip = 0;
		n++;
	}
	rd->op = GDRFAB_OP_RNDV_READ;
	rd->resume = rndv_read_resume;
	rd->parent = done ? recv : NULL;
	rd->context = recv->context;
	rd->op_flags = recv->op_flags;
	rd->cq_flags = rx_flags(recv, h);
	if (done && (recv->op_flags & FI_MULTI_RECV))
		rd->cq_flags |= FI_MULTI_RECV;
	rd->tag = h->tag;
	rd->data = h->data;
	rd->msg_id = h->msg_id;
	rd->ack_delivery = h->flags & GDRFAB_PKT_DELIVERY_ACK;
	if (recv->emu_target)
		gdrfab_emu_target_mark(rd);
	rd->recv_len = got;
	rd->multi_off = off;
	rd->conn = conn;
	conn->refs++;
	/* Into GPU memory the NIC cannot reach: read into host memory and
	 * copy from there when the data is in. */
	if (gdrfab_iov_stages(proto, desc, n)) {
		size_t left = got;

		for (size_t i = 0; i < n; i++) {
			iov[i].iov_len = GDRFAB_MIN(iov[i].iov_len, left);
			left -= iov[i].iov_len;
		}
		ret = gdrfab_stage_setup(proto, rd, iov, desc, n, 0, false);
	} else {
		ret = gdrfab_req_set_local(proto, rd, iov, desc, n,
					   IBV_ACCESS_LOCAL_WRITE);
	}
	/* Read only what fits; the rest is reported truncated. */
	rd->len = got;
	memcpy(rd->rseg, seg, h->seg_count * sizeof(*seg));
	rd->rseg_count = h->seg_count;
	rd->ctrl_len = h->size; /* the message's full size */
	if (ret) {
		gdrfab_req_fail(proto, rd, -ret, 0);
		return;
	}
	if (!got) {
		/* Nothing to read (0 bytes, or no room): still FIN. */
		rd->fully_posted = true;
		gdrfab_rndv_read_done(proto, rd);
		return;
	}
	if (rail_keys && !rd->staged)
		gdrfab_stripe_read_setup(proto, rd, h, rail_keys);
	gdrfab_req_submit(rd);
}

/* What a rendezvous's FIN says: nothing but "read" (0), unless the
 * sender asked for a delivery ACK (FI_DELIVERY_COMPLETE), whose send then
 * fails as the receive does: err (FI_E*, negative here) or FI_ETRUNC. */
static uint64_t rndv_fin_status(const struct gdrfab_req *rd, uint64_t size,
				int err)
{
	return rd->ack_delivery ? (uint64_t)gdrfab_delivery_status(rd->recv_len,
								   size, -err)
				: 0;
}

static void gdrfab_rndv_read_done(struct gdrfab_proto *proto,
				  struct gdrfab_req *rd)
{
	struct gdrfab_pkt_hdr h = {
		.size = rd->ctrl_len,
		.tag = rd->tag,
		.data = rd->data,
		.flags = (rd->cq_flags & FI_REMOTE_CQ_DATA) ? GDRFAB_PKT_CQ_DATA
							    : 0,
	};
	void *buf = rd->iov_count ? rd->iov[0].iov_base : NULL;
	fi_addr_t src;
	int err = 0;

	/* The data must be where the completion says before it is said:
	 * copied out of the staging buffer, or flushed into the GPU
	 * (progress comes back here when the copies or the flush READ
	 * end). */
	if (rd->staged && !gdrfab_stage_drain(proto, rd, rd->recv_len))
		return;
	if (rd->staged) {
		err = -rd->stage.err;
	} else if (!(rd->op_flags & FI_TRANSMIT_COMPLETE)) {
		err = gdrfab_flush_step(proto, rd, rd->iov, rd->desc,
					rd->iov_count, rd->recv_len);
		if (err == -FI_EINPROGRESS)
			return;
	}
	src = gdrfab_conn_fi_addr(rd->conn);
	if (rd->stage.count)
		buf = rd->stage.iov[0].iov_base;
	if (rd->emu_target)
		/* An emulated fi_write: FIN with its status, no receive. */
		gdrfab_emu_target_done(proto, rd->conn, rd->msg_id,
				       rd->cq_flags & FI_REMOTE_CQ_DATA,
				       rd->data, rd->recv_len, err ? -err : 0);
	else
		gdrfab_send_ctrl(proto, rd->conn, GDRFAB_PKT_FIN, rd->msg_id,
				 rndv_fin_status(rd, h.size, err));
	/* Ending it frees the receive it filled (rd->parent) too. */
	if (proto->closing || rd->emu_target) {
		/* No completions while the endpoint closes, nor for the
		 * target of an emulated RMA. */
		gdrfab_req_end_silent(proto, rd);
	} else if (err) {
		gdrfab_req_report_error(proto, rd, true, rd->cq_flags, 0,
					h.size, buf, h.data, h.tag, -err, 0);
	} else if (rd->recv_len < h.size) {
		gdrfab_req_report_error(proto, rd, true, rd->cq_flags,
					rd->recv_len, h.size - rd->recv_len,
					buf, h.data, h.tag, FI_ETRUNC,
					GDRFAB_PERR_TRUNCATED);
	} else {
		gdrfab_req_report_rx(proto, rd, true, rd->cq_flags,
				     rd->recv_len, buf, h.data, h.tag, src);
	}
}

/* The provider's error code of a FIN's status (nonzero). */
static int fin_prov_errno(int status)
{
	switch (status) {
	case FI_EACCES: return IBV_WC_REM_ACCESS_ERR;
	case FI_ETRUNC: return GDRFAB_PERR_TRUNCATED;
	default: return IBV_WC_REM_OP_ERR;
	}
}

static void handle_fin(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
		       const struct gdrfab_pkt_hdr *h)
{
	struct gdrfab_list *it, *tmp;

	gdrfab_list_for_each_safe (&conn->rndv_wait, it, tmp) {
		struct gdrfab_req *req =
			gdrfab_list_entry(it, struct gdrfab_req, entry);

		if (req->msg_id != h->msg_id || !req->fully_posted ||
		    req->atomic)
			continue;
		req->fin_received = true;
		/* An emulated RMA the target refused or could not do, or a
		 * delivery ACK's message the receiver truncated or could
		 * not deliver. */
		if (h->data && !req->error) {
			req->error = (int)h->data;
			req->prov_errno = fin_prov_errno((int)h->data);
		}
		if (!req->wr_pending)
			gdrfab_req_finish(proto, req);
		return;
	}
	/* A send cancelled while it waited for its delivery ACK hears it
	 * later: one of our cookies, no news. */
	if (h->msg_id && h->msg_id <= proto->next_msg_id) {
		GDRFAB_DBG(FI_LOG_EP_DATA,
			   "FIN for message %llu, which ended already\n",
			   (unsigned long long)h->msg_id);
		return;
	}
	GDRFAB_WIRE_WARN(proto, FI_LOG_EP_DATA,
			 "FIN for unknown message %llu dropped",
			 (unsigned long long)h->msg_id);
}

/* Keeps a message no receive was posted for. Eager payloads are copied
 * (the receive buffer goes back to the SRQ); without memory for the copy
 * the message keeps its buffer instead (true: the caller must not
 * repost it). A reassembled one (own: its bytes, of rx_pool) is kept as
 * it is, its bytes taken over (*own NULL). Nothing is dropped.
 *
 * The record and the copy come from the endpoint's rx_pool (issue 34):
 * after a workload's first burst, no malloc or free per message. Why a
 * copy and not the receive buffer itself, held until the message is
 * claimed: the buffers are the SRQ's, shared by every peer, and a burst
 * of unexpected messages (an MPI rank late to its receives) would empty
 * it and leave every sender retrying on RNR; replacing a held buffer
 * would mean registering memory at run time. A copy of at most
 * eager_max bytes (a segmented message's reassembly buffer is taken
 * over, not copied) into a block already in the pool keeps the SRQ full
 * at the price of one memcpy, the copy the message made before. */
static bool add_unexpected(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
			   const struct gdrfab_pkt_hdr *h,
			   const struct gdrfab_rndv_seg *seg,
			   const uint8_t *payload, struct gdrfab_rxbuf *rxbuf,
			   uint8_t **own)
{
	struct gdrfab_unexp *u =
		gdrfab_sizepool_get(&proto->rx_pool, sizeof(*u));
	bool held = false, copy = h->type == GDRFAB_PKT_EAGER && h->size;

	gdrfab_pstat_inc(proto, GDRFAB_STAT_rx_unexpected_msgs);
	if (!u) {
		/* Not even the record: the message cannot wait. */
		GDRFAB_WARN(
			FI_LOG_EP_DATA,
			"out of memory for an unexpected message: dropped\n");
		return false;
	}
	/* Not cleared whole (a block of the pool is not): what every
	 * reader reads is set here or below; seg and rail_keys are read
	 * only for the RNDV that writes them. */
	u->payload = NULL;
	u->held = NULL;
	u->claimed = false;
	if (own) {
		u->payload = *own;
		*own = NULL;
		copy = false;
	} else if (copy && !(u->payload = gdrfab_sizepool_get(&proto->rx_pool,
							      h->size))) {
		if (!rxbuf) {
			gdrfab_sizepool_put(&proto->rx_pool, u);
			GDRFAB_WARN(
				FI_LOG_EP_DATA,
				"out of memory for an unexpected message: dropped\n");
			return false;
		}
		GDRFAB_WIRE_WARN(
			proto, FI_LOG_EP_DATA,
			"out of memory for an unexpected message of %llu bytes: it keeps its receive buffer until matched",
			(unsigned long long)h->size);
		u->held = rxbuf;
		u->payload = (uint8_t *)payload;
		held = true;
		copy = false;
	}
	u->conn = conn;
	conn->refs++;
	u->hdr = *h;
	if (h->type == GDRFAB_PKT_RNDV) {
		memcpy(u->seg, seg, h->seg_count * sizeof(*seg));
		/* As many as the receive buffer may hold (GDRFAB_CTRL_SIZE):
		 * the rails agreed say how many are read. */
		if (h->flags & GDRFAB_PKT_RAIL_KEYS)
			memcpy(u->rail_keys, seg + h->seg_count,
			       h->seg_count * (GDRFAB_CM_RAILS_MAX - 1) *
				       sizeof(uint32_t));
	} else if (copy) {
		memcpy(u->payload, payload, h->size);
	}
	gdrfab_list_push_tail((h->flags & GDRFAB_PKT_TAGGED)
				      ? &proto->unexp_tag
				      : &proto->unexp_msg,
			      &u->entry);
	return held;
}

static void gdrfab_unexp_free(struct gdrfab_unexp *u)
{
	struct gdrfab_proto *proto = u->conn->proto;

	gdrfab_list_remove(&u->entry);
	gdrfab_conn_put(u->conn);
	if (u->held) {
		if (!proto->closing)
			gdrfab_rxbuf_repost(proto, u->held);
	} else {
		gdrfab_sizepool_put(&proto->rx_pool, u->payload);
	}
	gdrfab_sizepool_put(&proto->rx_pool, u);
}

/* true: the message kept its receive buffer (see add_unexpected); a
 * loopback copy out of it says so in proto->rxbuf_held instead. */
static bool handle_message(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
			   const struct gdrfab_pkt_hdr *h,
			   const uint8_t *payload, struct gdrfab_rxbuf *rxbuf,
			   uint8_t **own)
{
	const struct gdrfab_rndv_seg *seg = (const void *)payload;
	struct gdrfab_list *posted = (h->flags & GDRFAB_PKT_TAGGED)
					     ? &proto->posted_tag
					     : &proto->posted_msg;
	struct gdrfab_list *it, *tmp;
	struct gdrfab_req *emu;

	/* RMA to staged GPU memory: not a message, nothing to match. */
	if (h->flags & GDRFAB_PKT_EMU) {
		emu = gdrfab_emu_target_start(proto, conn, h);
		/* The bounce buffer too: the bytes may go into GPU memory
		 * by a step that reads them later (deliver_async). */
		if (emu)
			deliver(proto, emu, h, seg, payload, conn, rxbuf, NULL);
		return false;
	}

	gdrfab_list_for_each_safe (posted, it, tmp) {
		struct gdrfab_req *req =
			gdrfab_list_entry(it, struct gdrfab_req, entry);

		if (matches(proto, req, h, conn)) {
			deliver(proto, req, h, seg, payload, conn, rxbuf, own);
			return false;
		}
	}
	return add_unexpected(proto, conn, h, seg, payload, rxbuf, own);
}

static void drop(struct gdrfab_proto *proto, const struct gdrfab_conn *conn,
		 const char *why, unsigned type, uint32_t bytes)
{
	char peer[128];

	gdrfab_addr_to_str(&conn->peer, peer, sizeof(peer));
	GDRFAB_WIRE_WARN(proto, FI_LOG_EP_DATA,
			 "message from %s dropped: %s (type %u, %u bytes)",
			 peer, why, type, bytes);
}

/* A message for a receive, its payload in rxbuf: the buffer goes back to
 * the SRQ unless the message (or a copy out of it) still reads it. */
static void take_message(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
			 const struct gdrfab_pkt_hdr *h, const uint8_t *payload,
			 struct gdrfab_rxbuf *rxbuf)
{
	gdrfab_pstat_rx_msg(proto, conn, h);
	proto->rxbuf_held = false;
	if (handle_message(proto, conn, h, payload, rxbuf, NULL))
		return; /* reposted once the message is taken */
	if (proto->rxbuf_held) {
		/* A loopback copy reads it: reposted when it ends. */
		proto->rxbuf_held = false;
		return;
	}
	gdrfab_rxbuf_repost_later(proto, rxbuf);
}

/* ---- segmented eager messages (gdrfab_seg.h) ---- */

/* A peer that broke the segmented messages' rule: logged, naming it, and
 * its connection failed (what it sent cannot be put together). */
static void seg_refuse(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
		       const char *why, uint32_t bytes)
{
	char peer[128];

	gdrfab_addr_to_str(&conn->peer, peer, sizeof(peer));
	GDRFAB_WIRE_WARN(
		proto, FI_LOG_EP_DATA,
		"segmented message from %s refused: %s (%u bytes); failing the connection",
		peer, why, bytes);
	gdrfab_conn_fail(conn, FI_EIO, GDRFAB_PERR_PROTOCOL);
}

/* The receive a segmented message's first packet matches, when its bytes
 * may go straight into it: host memory (the copy into GPU memory takes
 * the whole message, gdrfab_gpu_rx.c), not a multi-receive buffer (which
 * later messages take space from, and may release, while this one
 * arrives). *host: its buffers were found host memory. NULL: the
 * message is reassembled and matched when whole (a receive it matches
 * now is still the first it matches then, none being taken meanwhile
 * from this connection). */
static struct gdrfab_req *seg_receive(struct gdrfab_proto *proto,
				      struct gdrfab_conn *conn,
				      const struct gdrfab_pkt_hdr *h,
				      bool *host)
{
	struct gdrfab_list *posted = (h->flags & GDRFAB_PKT_TAGGED)
					     ? &proto->posted_tag
					     : &proto->posted_msg;
	struct gdrfab_list *it, *tmp;

	gdrfab_list_for_each_safe (posted, it, tmp) {
		struct gdrfab_req *req =
			gdrfab_list_entry(it, struct gdrfab_req, entry);

		if (!matches(proto, req, h, conn))
			continue;
		if (req->op_flags & FI_MULTI_RECV)
			return NULL;
		*host = req->host_descs ||
			!gdrfab_gpu_rx_wanted(proto, req->iov, req->desc,
					      req->iov_count);
		return *host ? req : NULL;
	}
	return NULL;
}

/* n bytes of the message filled in place, at pos in it: those that fit
 * in its receive copied there (the first error kept for the end). */
static void seg_fill(struct gdrfab_proto *proto, struct gdrfab_seg_rx *s,
		     size_t pos, const uint8_t *p, size_t n)
{
	int err;

	if (pos >= s->fit)
		return; /* truncated: dropped */
	err = scatter(proto, s->recv, s->off + pos, p,
		      GDRFAB_MIN(n, s->fit - pos), s->host);
	if (err && !s->err)
		s->err = err;
}

/* The first packet of a segmented message: its bytes go into the receive
 * it matches, or into a buffer of its size. Out of line, as seg_next:
 * gdrfab_recv_wc, every message's path, stays as small as it was. */
static __attribute__((noinline)) void seg_first(struct gdrfab_proto *proto,
						struct gdrfab_conn *conn,
						const struct gdrfab_pkt_hdr *h,
						uint32_t bytes)
{
	const uint8_t *p = (const uint8_t *)(h + 1);
	size_t n = bytes - sizeof(*h), off, fit;
	struct gdrfab_req *req;
	const char *why;
	bool host = false, done;

	why = conn->seg_max
		      ? gdrfab_seg_rx_check(h, n, conn->seg_max,
					    proto->eager_max)
		      : "a segmented message to a connection that agreed on none";
	if (!why && (req = seg_receive(proto, conn, h, &host))) {
		off = take_space(proto, req, h->size, &fit, &done);
		gdrfab_list_remove(&req->entry);
		gdrfab_seg_rx_start_in(&conn->seg_rx, h, n, req, off, fit,
				       host);
		seg_fill(proto, &conn->seg_rx, 0, p, n);
		return;
	}
	if (!why)
		why = gdrfab_seg_rx_start(&conn->seg_rx, &proto->rx_pool, h, p,
					  n);
	if (why)
		seg_refuse(proto, conn, why, bytes);
}

/* A message whose last piece came in: matched and delivered (or kept
 * unexpected) as an eager message of its size is, its bytes handed over
 * to the unexpected record or to a copy into GPU memory that takes
 * them. */
static void seg_whole(struct gdrfab_proto *proto, struct gdrfab_conn *conn)
{
	const struct gdrfab_seg_rx s = conn->seg_rx;
	struct gdrfab_pkt_hdr h;
	uint8_t *bytes = gdrfab_seg_rx_take(&conn->seg_rx, &h);

	proto->seg_rx_msgs++;
	gdrfab_pstat_rx_msg(proto, conn, &h);
	if (s.recv) {
		delivered(proto, s.recv, &h, conn, s.off, s.fit, true, s.err);
		return;
	}
	handle_message(proto, conn, &h, bytes, NULL, &bytes);
	gdrfab_sizepool_put(&proto->rx_pool, bytes); /* NULL when taken */
}

/* A work completion on a connection that reassembles a message, or a
 * continuation: the message's next bytes; anything else then breaks the
 * rule (RC order and a sender that posts nothing between the pieces). */
static __attribute__((noinline)) void seg_next(struct gdrfab_proto *proto,
					       struct gdrfab_conn *conn,
					       struct gdrfab_rxbuf *rxbuf,
					       const struct ibv_wc *wc)
{
	const char *why;
	bool whole = false;

	if (wc->opcode != IBV_WC_RECV || !(wc->wc_flags & IBV_WC_WITH_IMM) ||
	    ntohl(wc->imm_data) != GDRFAB_IMM_SEG)
		why = "another message inside a segmented message";
	else
		why = gdrfab_seg_rx_append(&conn->seg_rx, rxbuf->data,
					   wc->byte_len, proto->eager_max,
					   &whole);
	if (!why && conn->seg_rx.recv)
		seg_fill(proto, &conn->seg_rx, conn->seg_rx.got - wc->byte_len,
			 rxbuf->data, wc->byte_len);
	/* Read before it goes back: the NIC may write it at once. */
	gdrfab_rxbuf_repost_later(proto, rxbuf);
	if (why)
		seg_refuse(proto, conn, why, wc->byte_len);
	else if (whole)
		seg_whole(proto, conn);
}

/* A SEND with immediate data: an EAGER message whose header the last
 * full one gives (GDRFAB_IMM_REPEAT), its bytes the payload alone. */
static void recv_repeat(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
			struct gdrfab_rxbuf *rxbuf, const struct ibv_wc *wc)
{
	const struct gdrfab_memo *m = &conn->rx_memo;
	const char *why = NULL;
	struct gdrfab_pkt_hdr h;

	if (ntohl(wc->imm_data) != GDRFAB_IMM_REPEAT)
		why = "unknown immediate data on a message";
	else if (!m->valid)
		why = "a repeated header with no header before it";
	else if (wc->byte_len > proto->eager_max)
		why = "a repeated header's payload exceeds the eager limit";
	if (why) {
		drop(proto, conn, why, GDRFAB_PKT_EAGER, wc->byte_len);
		gdrfab_rxbuf_repost_later(proto, rxbuf);
		return;
	}
	h = (struct gdrfab_pkt_hdr){
		.version = GDRFAB_WIRE_VERSION,
		.type = GDRFAB_PKT_EAGER,
		.flags = m->flags,
		.tag = m->tag,
		.data = m->data,
		.size = wc->byte_len,
	};
	take_message(proto, conn, &h, rxbuf->data, rxbuf);
}

void gdrfab_recv_wc(struct gdrfab_proto *proto, struct gdrfab_rxbuf *rxbuf,
		    const struct ibv_wc *wc)
{
	struct gdrfab_conn *conn;
	const struct gdrfab_pkt_hdr *h = (const void *)rxbuf->data;
	const char *why;

	if (wc->status != IBV_WC_SUCCESS) {
		if (wc->status != IBV_WC_WR_FLUSH_ERR) {
			gdrfab_wc_error_log_rx(proto, wc);
			gdrfab_rxbuf_repost(proto, rxbuf);
		}
		return;
	}
	conn = gdrfab_conn_by_qpn(proto, wc->qp_num);
	if (!conn || conn->state == GDRFAB_CONN_FAILED) {
		gdrfab_rxbuf_repost(proto, rxbuf);
		return;
	}
	gdrfab_conn_rx(conn);
	if (gdrfab_seg_rx_busy(&conn->seg_rx) ||
	    ((wc->wc_flags & IBV_WC_WITH_IMM) &&
	     ntohl(wc->imm_data) == GDRFAB_IMM_SEG)) {
		seg_next(proto, conn, rxbuf, wc);
		return;
	}
	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		/* fi_writedata: the data landed; its CQ data is reported
		 * once what landed in GPU memory is visible (now, or when
		 * its flush READ ends). Nothing is read from the buffer. */
		gdrfab_flush_writedata(proto, conn, wc);
		gdrfab_rxbuf_repost(proto, rxbuf);
		return;
	}
	if (wc->wc_flags & IBV_WC_WITH_IMM) {
		recv_repeat(proto, conn, rxbuf, wc);
		return;
	}
	why = check_header(h, wc->byte_len, proto->env.max_msg_size);
	if (why) {
		drop(proto, conn, why, h->type, wc->byte_len);
		gdrfab_rxbuf_repost_later(proto, rxbuf);
		return;
	}
	gdrfab_memo_note(&conn->rx_memo, h);
	if (h->type == GDRFAB_PKT_FIN) {
		handle_fin(proto, conn, h);
	} else if (h->type == GDRFAB_PKT_RMA_EVENT) {
		gdrfab_report_rma_event(proto, h->data == GDRFAB_RMA_EVENT_READ,
					h->size);
	} else if (h->type == GDRFAB_PKT_ATOMIC) {
		gdrfab_atomic_handle(proto, conn, h);
	} else if (h->type == GDRFAB_PKT_ATOMIC_RESP) {
		gdrfab_atomic_resp(proto, conn, h);
	} else if (h->type == GDRFAB_PKT_SEG) {
		seg_first(proto, conn, h, wc->byte_len);
	} else if (h->type == GDRFAB_PKT_NOP) {
		if (h->msg_id == GDRFAB_NOP_RAILS_UP)
			gdrfab_conn_rails_up(conn);
	} else if (h->type == GDRFAB_PKT_RAIL_KEYS_REQ) {
		gdrfab_stripe_keys_answer(proto, conn, h->data);
	} else if (h->type == GDRFAB_PKT_RAILS_RESET) {
		gdrfab_rail_back_rx(conn, h);
	} else if (h->type == GDRFAB_PKT_RAIL_KEYS_REP) {
		gdrfab_stripe_keys_learn(
			conn, h->data, (const uint32_t *)(h + 1), h->seg_count);
	} else {
		take_message(proto, conn, h, (const uint8_t *)(h + 1), rxbuf);
		return;
	}
	gdrfab_rxbuf_repost_later(proto, rxbuf);
}

/* ---- posting receives ---- */

static struct gdrfab_unexp *find_unexpected(struct gdrfab_proto *proto,
					    struct gdrfab_req *req, bool tagged)
{
	struct gdrfab_list *list =
		tagged ? &proto->unexp_tag : &proto->unexp_msg;
	struct gdrfab_list *it, *tmp;

	gdrfab_list_for_each_safe (list, it, tmp) {
		struct gdrfab_unexp *u =
			gdrfab_list_entry(it, struct gdrfab_unexp, entry);

		if (!u->claimed && matches(proto, req, &u->hdr, u->conn))
			return u;
	}
	return NULL;
}

/* Delivers an unexpected message into a receive, then forgets it. */
static void take_unexpected(struct gdrfab_proto *proto, struct gdrfab_req *req,
			    struct gdrfab_unexp *u)
{
	gdrfab_list_remove(&u->entry);
	gdrfab_list_init(&u->entry);
	if (u->hdr.type == GDRFAB_PKT_RNDV)
		start_rndv_read(proto, req, &u->hdr, u->seg,
				(u->hdr.flags & GDRFAB_PKT_RAIL_KEYS)
					? u->rail_keys
					: NULL,
				u->conn);
	else if (!u->held)
		deliver(proto, req, &u->hdr, NULL, u->payload, u->conn, NULL,
			&u->payload);
	else {
		/* Its payload is still in its receive buffer (FI_RM_ENABLED
		 * under memory pressure): an asynchronous copy out of it
		 * keeps the buffer, reposted when the copy ends. */
		proto->rxbuf_held = false;
		deliver(proto, req, &u->hdr, NULL, u->payload, u->conn, u->held,
			NULL);
		if (proto->rxbuf_held) {
			proto->rxbuf_held = false;
			u->held = NULL;
			u->payload = NULL;
		}
	}
	gdrfab_unexp_free(u);
}

/* The application discarded an unexpected message (FI_DISCARD): its
 * sender, if it waits for a FIN (a rendezvous, a delivery ACK), gets it,
 * since the receiver took the message as it chose to; then it is
 * forgotten. */
static void discard_unexpected(struct gdrfab_proto *proto,
			       struct gdrfab_unexp *u)
{
	if (u->hdr.type == GDRFAB_PKT_RNDV ||
	    (u->hdr.flags & GDRFAB_PKT_DELIVERY_ACK))
		gdrfab_send_ctrl(proto, u->conn, GDRFAB_PKT_FIN, u->hdr.msg_id,
				 0);
	gdrfab_unexp_free(u);
}

static int peek(struct gdrfab_proto *proto, struct gdrfab_req *req,
		uint64_t flags)
{
	struct gdrfab_unexp *u = find_unexpected(proto, req, true);
	uint64_t cq_flags = req->cq_flags | (req->op_flags & FI_COMPLETION);

	if (!u) {
		gdrfab_req_report_error(proto, req, true, cq_flags, 0, 0, NULL,
					0, req->tag, FI_ENOMSG, 0);
		return 0;
	}
	if (u->hdr.flags & GDRFAB_PKT_CQ_DATA)
		cq_flags |= FI_REMOTE_CQ_DATA;
	gdrfab_req_report_rx(proto, req, true, cq_flags, u->hdr.size, NULL,
			     u->hdr.data, u->hdr.tag,
			     gdrfab_conn_fi_addr(u->conn));
	if (flags & FI_CLAIM) {
		u->claimed = true;
		((struct fi_context *)req->context)->internal[0] = u;
	} else if (flags & FI_DISCARD) {
		discard_unexpected(proto, u);
	}
	return 0;
}

static int claim(struct gdrfab_proto *proto, struct gdrfab_req *req,
		 uint64_t flags)
{
	struct fi_context *ctx = req->context;
	struct gdrfab_unexp *u = ctx ? ctx->internal[0] : NULL;
	struct gdrfab_list *it, *tmp;
	bool known = false;

	/* The context must hold a message this endpoint claimed: the
	 * pointer is the application's, so look it up, never trust it. */
	gdrfab_list_for_each_safe (&proto->unexp_tag, it, tmp) {
		if (gdrfab_list_entry(it, struct gdrfab_unexp, entry) == u)
			known = u->claimed;
	}
	if (!known) {
		GDRFAB_WARN(
			FI_LOG_EP_DATA,
			"FI_CLAIM: the context holds no message claimed with FI_PEEK\n");
		gdrfab_req_free(proto, req);
		return -FI_EINVAL;
	}
	ctx->internal[0] = NULL;
	if (flags & FI_DISCARD) {
		gdrfab_req_report_rx(proto, req, true,
				     req->cq_flags |
					     (req->op_flags & FI_COMPLETION),
				     0, NULL, u->hdr.data, u->hdr.tag,
				     gdrfab_conn_fi_addr(u->conn));
		discard_unexpected(proto, u);
		return 0;
	}
	take_unexpected(proto, req, u);
	return 0;
}

int gdrfab_recv_post(struct gdrfab_proto *proto, struct gdrfab_req *req,
		     uint64_t flags)
{
	bool tagged = req->cq_flags & FI_TAGGED;
	struct gdrfab_unexp *u;

	if (tagged && (flags & FI_PEEK))
		return peek(proto, req, flags);
	if (tagged && (flags & FI_CLAIM))
		return claim(proto, req, flags);
	gdrfab_list_push_tail(tagged ? &proto->posted_tag : &proto->posted_msg,
			      &req->entry);
	/* Unexpected messages first, in arrival order; a multi-receive
	 * may take several. */
	while ((u = find_unexpected(proto, req, tagged))) {
		/* Decided before delivering: a receive the message uses up
		 * is released (freed) by the delivery. */
		bool more = (req->op_flags & FI_MULTI_RECV) &&
			    capacity(req) - GDRFAB_MIN(u->hdr.size,
						       capacity(req)) >=
				    GDRFAB_MAX(proto->env.min_multi_recv,
					       (size_t)1);

		take_unexpected(proto, req, u);
		if (!more)
			break;
	}
	return 0;
}

int gdrfab_recv_cancel(struct gdrfab_proto *proto, void *context)
{
	struct gdrfab_list *lists[] = {&proto->posted_tag, &proto->posted_msg};

	for (size_t l = 0; l < 2; l++) {
		struct gdrfab_list *it, *tmp;

		gdrfab_list_for_each_safe (lists[l], it, tmp) {
			struct gdrfab_req *req =
				gdrfab_list_entry(it, struct gdrfab_req, entry);

			if (req->context != context)
				continue;
			gdrfab_list_remove(&req->entry);
			gdrfab_req_report_error(proto, req, !req->wr_pending,
						req->cq_flags, 0, 0, NULL, 0,
						req->tag, FI_ECANCELED,
						GDRFAB_PERR_CANCELED);
			return 0;
		}
	}
	return -FI_ENOENT;
}

void gdrfab_recv_flush_all(struct gdrfab_proto *proto)
{
	struct gdrfab_list *lists[] = {&proto->unexp_tag, &proto->unexp_msg};

	for (size_t l = 0; l < 2; l++) {
		while (!gdrfab_list_empty(lists[l]))
			gdrfab_unexp_free(gdrfab_list_entry(
				lists[l]->next, struct gdrfab_unexp, entry));
	}
}
