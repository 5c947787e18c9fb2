/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Requests and their work requests: allocation from the registered slab,
 * memory keys, posting in pieces as send-queue slots and CQ room allow,
 * and what their work completions mean.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_conn.h"
#include "gdrfab_conn_rails.h"
#include "gdrfab_gpu.h"
#include "gdrfab_hmem.h"
#include "gdrfab_host_cache.h"
#include "gdrfab_params.h"
#include "gdrfab_proto.h"
#include "gdrfab_proto_stats.h"
#include "gdrfab_req.h"
#include "gdrfab_rma.h"
#include "gdrfab_strerror.h"
#include "gdrfab_stripe.h"
#include "gdrfab_verbs_ops.h"

struct gdrfab_req *gdrfab_req_alloc(struct gdrfab_proto *proto, bool ctrl)
{
	struct gdrfab_req *req;

	if (gdrfab_list_empty(&proto->free_reqs) ||
	    (!ctrl && proto->req_free_cnt <= GDRFAB_CTRL_RESERVE))
		return NULL;
	req = gdrfab_list_entry(proto->free_reqs.next, struct gdrfab_req,
				entry);
	gdrfab_list_remove(&req->entry);
	proto->req_free_cnt--;
	/* The size comes from proto, not from offsetof: a constant one
	 * makes GCC expand `rep stosq` (one instruction per 8 bytes, about
	 * 3x the time of libc's vector memset for these 976 bytes). */
	memset(req, 0, proto->req_clear_len);
	req->wr.kind = GDRFAB_WR_REQ;
	req->resume = gdrfab_req_resume_finish;
	req->addr = FI_ADDR_UNSPEC;
	gdrfab_list_init(&req->entry);
	gdrfab_list_init(&req->finish_entry);
	gdrfab_list_push_tail(&proto->live, &req->live);
	return req;
}

int gdrfab_req_to_peer(struct gdrfab_proto *proto, fi_addr_t peer,
		       struct gdrfab_req **out)
{
	struct gdrfab_conn *conn;
	struct gdrfab_req *req;
	int ret = gdrfab_conn_for_addr(proto, peer, &conn);

	if (ret)
		return ret;
	req = gdrfab_req_alloc(proto, false);
	if (!req)
		return -FI_EAGAIN;
	req->conn = conn;
	conn->refs++;
	*out = req;
	return 0;
}

struct gdrfab_txbuf *gdrfab_txbuf_alloc(struct gdrfab_proto *proto)
{
	struct gdrfab_txbuf *tb = proto->tx_free;

	if (tb)
		proto->tx_free = tb->next_free;
	return tb;
}

void gdrfab_txbuf_free(struct gdrfab_proto *proto, struct gdrfab_txbuf *tb)
{
	tb->next_free = proto->tx_free;
	proto->tx_free = tb;
}

int gdrfab_req_set_local(struct gdrfab_proto *proto, struct gdrfab_req *req,
			 const struct iovec *iov, void **desc, size_t count,
			 int access)
{
	bool remote = access & IBV_ACCESS_REMOTE_READ;
	int ret =
		proto->ops->mr_check_descs(proto->env.domain, iov, desc, count);

	if (ret)
		return ret;
	req->iov_count = count;
	for (size_t i = 0; i < count; i++) {
		struct gdrfab_mr_desc *mr = desc ? desc[i] : NULL;
		struct ibv_mr *ibv_mr = NULL;

		req->iov[i] = iov[i];
		req->desc[i] = mr;
		if (!iov[i].iov_len)
			continue;
		if (mr)
			ibv_mr = remote ? mr->rndv_mr : mr->ibv_mr;
		gdrfab_pstat_local(proto, mr, iov[i].iov_len);
		if (!ibv_mr) {
			/* No usable registration from the application: the
			 * host cache's, or one for this operation only. */
			ret = gdrfab_host_reg_get(
				&proto->env.hmem->cache, iov[i].iov_base,
				iov[i].iov_len, access, &req->tmp_reg[i]);
			if (ret) {
				GDRFAB_WARN(
					FI_LOG_EP_DATA,
					"registering %zu bytes at %p for an operation without a usable descriptor: %s\n",
					iov[i].iov_len, iov[i].iov_base,
					fi_strerror(-ret));
				return ret;
			}
			ibv_mr = req->tmp_reg[i]->mr;
		}
		req->lkey[i] = ibv_mr->lkey;
		if (remote) {
			req->rseg[i].addr = (uintptr_t)iov[i].iov_base;
			req->rseg[i].len = iov[i].iov_len;
			req->rseg[i].rkey = ibv_mr->rkey;
		}
	}
	if (remote)
		req->rseg_count = count;
	req->len = gdrfab_iov_len(iov, count);
	return 0;
}

/* The next RDMA READ/WRITE piece: one remote segment range, local SGEs
 * up to max_sge, at most max_wr_len bytes; with the keys of rail (0, or
 * a striped request's rail). */
static uint32_t next_chunk(struct gdrfab_proto *proto, struct gdrfab_req *req,
			   size_t rail, struct ibv_sge *sge, int *nsge,
			   uint64_t *raddr, uint32_t *rkey, uint64_t cap)
{
	const struct gdrfab_rndv_seg *rs = &req->rseg[req->riov];
	uint64_t want = GDRFAB_MIN(
		GDRFAB_MIN(rs->len - req->roff, (uint64_t)proto->max_wr_len),
		cap);
	uint32_t len = 0;

	*raddr = rs->addr + req->roff;
	*rkey = rail ? req->rail_rkey[req->riov][rail - 1] : rs->rkey;
	*nsge = 0;
	while (len < want && *nsge < proto->max_sge &&
	       req->liov < req->iov_count) {
		size_t avail = req->iov[req->liov].iov_len - req->loff;
		uint32_t take =
			(uint32_t)GDRFAB_MIN((uint64_t)avail, want - len);

		if (!avail) {
			req->liov++;
			req->loff = 0;
			continue;
		}
		sge[*nsge].addr =
			(uintptr_t)req->iov[req->liov].iov_base + req->loff;
		sge[*nsge].length = take;
		sge[*nsge].lkey = rail ? req->rail_lkey[req->liov][rail - 1]
				       : req->lkey[req->liov];
		(*nsge)++;
		len += take;
		req->loff += take;
		if (req->loff == req->iov[req->liov].iov_len) {
			req->liov++;
			req->loff = 0;
		}
	}
	req->roff += len;
	if (req->roff == rs->len) {
		req->riov++;
		req->roff = 0;
	}
	return len;
}

static int post_wr(struct gdrfab_req *req, struct ibv_send_wr *wr)
{
	struct gdrfab_conn *conn = req->conn;
	struct ibv_send_wr *bad;
	int err;

	wr->wr_id = (uintptr_t)req;
	wr->send_flags |= IBV_SEND_SIGNALED;
	err = gdrfab_vops->post_send(conn->qp, wr, &bad);
	if (err) {
		GDRFAB_WARN(FI_LOG_EP_DATA, "ibv_post_send: %s\n",
			    strerror(err));
		return err;
	}
	conn->sq_avail--;
	conn->wr_outstanding++;
	conn->proto->cq_credits--;
	req->wr_pending++;
	return 0;
}

static bool can_post(struct gdrfab_req *req)
{
	return req->conn->sq_avail > 0 && req->conn->proto->cq_credits > 0;
}

/* A striped request's piece on rail r > 0: that rail's QP, send slots
 * and CQ room (gdrfab_stripe.h). */
static bool rail_can_post(struct gdrfab_req *req, size_t r)
{
	return req->conn->rails->sq_avail[r - 1] > 0 &&
	       req->conn->proto->rail_cq_credits[r - 1] > 0;
}

static int post_wr_rail(struct gdrfab_req *req, size_t r,
			struct ibv_send_wr *wr)
{
	struct gdrfab_conn *conn = req->conn;
	struct ibv_send_wr *bad;
	int err;

	wr->wr_id = (uintptr_t)req;
	wr->send_flags |= IBV_SEND_SIGNALED;
	err = gdrfab_vops->post_send(conn->rails->qp[r - 1], wr, &bad);
	if (err) {
		GDRFAB_WARN(FI_LOG_EP_DATA, "ibv_post_send on rail %zu: %s\n",
			    r, strerror(err));
		return err;
	}
	conn->rails->sq_avail[r - 1]--;
	conn->wr_outstanding++;
	conn->proto->rail_cq_credits[r - 1]--;
	req->wr_pending++;
	req->rail_wr_pending++;
	return 0;
}

/* SEND (eager or rendezvous header) and control messages: one WR, inline
 * when the connection's QP can carry it. */
static bool post_send(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	struct ibv_sge sge[1 + GDRFAB_MAX_IOV];
	struct ibv_send_wr wr = {
		.sg_list = sge, .num_sge = 1, .opcode = IBV_WR_SEND};
	const struct gdrfab_pkt_hdr *hdr;
	uint32_t total;
	bool repeat;

	if (req->stage.err) {
		/* Its data never reached host memory: fail it here, in its
		 * turn, so that it finishes in one place. */
		req->error = req->stage.err;
		req->fully_posted = true;
		return true;
	}
	if (gdrfab_stage_blocks(req) || !can_post(req))
		return false;
	if (req->txbuf) {
		sge[0].addr = (uintptr_t)req->txbuf->data;
		sge[0].length =
			(uint32_t)(sizeof(struct gdrfab_pkt_hdr) + req->len);
		sge[0].lkey = proto->tx_mr->lkey;
	} else {
		sge[0].addr = (uintptr_t)req->ctrl;
		sge[0].length = (uint32_t)req->ctrl_len;
		sge[0].lkey = proto->req_mr->lkey;
	}
	hdr = (const void *)(uintptr_t)sge[0].addr;
	repeat = gdrfab_memo_repeats(&req->conn->tx_memo, hdr);
	/* The payload straight from the application's buffers: copied by
	 * the post itself (inline, no registration needed), or gathered by
	 * the NIC from their registrations (GPU memory, never read by the
	 * CPU). */
	for (size_t i = 0;
	     (req->inline_data || req->gather) && i < req->iov_count; i++) {
		if (!req->iov[i].iov_len)
			continue;
		sge[wr.num_sge].addr = (uintptr_t)req->iov[i].iov_base;
		sge[wr.num_sge].length = (uint32_t)req->iov[i].iov_len;
		sge[wr.num_sge].lkey = req->gather ? req->lkey[i] : 0;
		wr.num_sge++;
	}
	if (repeat) {
		/* The header alone is the first SGE, or the start of the
		 * bounce buffer's one. */
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.imm_data = htonl(GDRFAB_IMM_REPEAT);
		if (req->txbuf) {
			sge[0].addr += sizeof(*hdr);
			sge[0].length -= sizeof(*hdr);
			wr.num_sge = sge[0].length ? 1 : 0;
		} else {
			wr.sg_list = &sge[1];
			wr.num_sge--;
		}
	}
	total = 0;
	for (int i = 0; i < wr.num_sge; i++)
		total += wr.sg_list[i].length;
	if (total <= req->conn->max_inline && !req->gather)
		wr.send_flags = IBV_SEND_INLINE;
	if (post_wr(req, &wr)) {
		req->error = FI_EIO;
		return true;
	}
	/* A full header: the peer will hold it, or forget its last, as the
	 * rule says. */
	if (!repeat)
		gdrfab_memo_note(&req->conn->tx_memo, hdr);
	req->fully_posted = true;
	return true;
}

/* The SGEs of a segmented message's next piece of n bytes, after the
 * nsge already in sge, from the request's place in its buffers (liov,
 * loff), which moves past them. */
static void seg_gather(struct gdrfab_req *req, size_t n, struct ibv_sge *sge,
		       int *nsge)
{
	while (n && req->liov < req->iov_count) {
		size_t avail = req->iov[req->liov].iov_len - req->loff;
		size_t take = GDRFAB_MIN(avail, n);

		if (take) {
			sge[*nsge].addr =
				(uintptr_t)req->iov[req->liov].iov_base +
				req->loff;
			sge[*nsge].length = (uint32_t)take;
			sge[*nsge].lkey = req->lkey[req->liov];
			(*nsge)++;
			n -= take;
			req->loff += take;
		}
		if (req->loff == req->iov[req->liov].iov_len) {
			req->liov++;
			req->loff = 0;
		}
	}
}

/* A segmented eager message (gdrfab_seg.h): its first packet (the header
 * from ctrl and the first eager_max bytes), then its continuations (SEND
 * with immediate GDRFAB_IMM_SEG, the next eager_max bytes alone), each
 * gathered by the NIC from the application's buffers, as far as send
 * slots and CQ room allow. Until the last is posted the request stays
 * first in conn->pending, and gdrfab_conn_kick posts nothing behind it,
 * so the peer receives the pieces back to back, as its reassembly
 * requires. The request settles once all their completions are in. */
static bool post_seg(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	while (!req->fully_posted) {
		struct ibv_sge sge[1 + GDRFAB_MAX_IOV];
		struct ibv_send_wr wr = {.sg_list = sge, .opcode = IBV_WR_SEND};
		size_t piece =
			GDRFAB_MIN(req->len - req->posted, proto->eager_max);

		if (!can_post(req))
			return false;
		if (!req->posted) {
			sge[0].addr = (uintptr_t)req->ctrl;
			sge[0].length = (uint32_t)req->ctrl_len;
			sge[0].lkey = proto->req_mr->lkey;
			wr.num_sge = 1;
		} else {
			wr.opcode = IBV_WR_SEND_WITH_IMM;
			wr.imm_data = htonl(GDRFAB_IMM_SEG);
		}
		seg_gather(req, piece, sge, &wr.num_sge);
		if (post_wr(req, &wr)) {
			/* The peer, holding part of it, fails the connection
			 * at the next message (gdrfab_seg.h). */
			req->error = FI_EIO;
			req->fully_posted = true;
			return true;
		}
		req->posted += piece;
		req->fully_posted = req->posted >= req->len;
	}
	return true;
}

/* RDMA READ or WRITE pieces until done or out of slots. */
static bool post_rdma(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	bool is_read = req->op != GDRFAB_OP_WRITE;

	if (req->stage.err && !is_read) {
		/* A staged write whose copy failed: nothing more goes. */
		if (!req->error)
			req->error = req->stage.err;
		req->fully_posted = true;
		return true;
	}
	while (!req->fully_posted) {
		struct ibv_sge sge[GDRFAB_MAX_IOV];
		struct ibv_send_wr wr = {.sg_list = sge};
		uint64_t cap = UINT64_MAX;
		size_t rail = 0;
		uint32_t len;
		int err;

		/* A staged write goes piece by piece as its copies end; a
		 * staged read in pieces of the copy chunk, a few at a time,
		 * each copied on into the GPU when it lands. */
		if (gdrfab_stage_blocks(req)) {
			if (req->posted >= req->stage.done)
				return false;
			cap = req->stage.done - req->posted;
		}
		if (is_read && req->staged) {
			if (req->stage_wr_head - req->stage_wr_tail >=
			    GDRFAB_STAGE_OPS)
				return false;
			cap = gdrfab_params.stage_chunk -
			      req->posted % gdrfab_params.stage_chunk;
		}
		if (req->rail_lost) {
			/* What did not land goes again on rail 0
			 * (gdrfab_stripe.h). */
			req->fully_posted = true;
			break;
		}
		if (req->striped) {
			uint64_t left;

			rail = gdrfab_stripe_rail(req, &left);
			cap = GDRFAB_MIN(cap, left);
			/* Its rails were taken out under it (they may be
			 * reset, where a work request would never complete):
			 * again on rail 0 from here, as if it had failed. */
			if (rail &&
			    !gdrfab_conn_rail_usable(req->conn->rails, rail)) {
				req->rail_lost = true;
				continue;
			}
			/* A striped fi_writedata's last work request, rail
			 * 0's, carries the CQ data: only once every other
			 * rail's pieces completed (nothing orders writes
			 * across QPs). Its piece ends the buffer
			 * (stripe_last0); a request whose remainder may
			 * still take more than one work request is held no
			 * earlier than needed: its others go first. */
			if (req->stripe_last0 && !rail &&
			    req->rail_wr_pending &&
			    req->len - req->posted <= proto->max_wr_len)
				return false;
		}
		if (rail ? !rail_can_post(req, rail) : !can_post(req))
			return false;
		len = next_chunk(proto, req, rail, sge, &wr.num_sge,
				 &wr.wr.rdma.remote_addr, &wr.wr.rdma.rkey,
				 cap);
		if (req->striped)
			gdrfab_pstat_rail_piece(proto, rail, len);
		req->posted += len;
		req->fully_posted = req->posted >= req->len;
		wr.opcode = is_read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
		if (!is_read && req->fully_posted &&
		    (req->cq_flags & FI_REMOTE_CQ_DATA)) {
			wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
			wr.imm_data = htonl((uint32_t)req->data);
		}
		err = rail ? post_wr_rail(req, rail, &wr) : post_wr(req, &wr);
		if (err && rail && req->conn->state == GDRFAB_CONN_CONNECTED) {
			gdrfab_stripe_rail_lost(req, rail);
		} else if (err) {
			req->error = FI_EIO;
			req->fully_posted = true;
		} else if (is_read && req->staged) {
			req->stage_wr_len[req->stage_wr_head++ %
					  GDRFAB_STAGE_OPS] = len;
		}
	}
	return true;
}

/* An atomic the NIC executes: one work request, whose fetched value
 * lands in the request's control area (registered for local writes). */
static bool post_nic_atomic(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	struct ibv_sge sge = {.addr = (uintptr_t)req->ctrl,
			      .length = sizeof(uint64_t),
			      .lkey = proto->req_mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1};

	if (!can_post(req))
		return false;
	wr.wr.atomic.remote_addr = req->rseg[0].addr;
	wr.wr.atomic.rkey = req->rseg[0].rkey;
	if (req->nic_cswap) {
		wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.compare_add = req->nic_compare;
		wr.wr.atomic.swap = req->nic_operand;
	} else {
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.compare_add = req->nic_operand;
	}
	if (post_wr(req, &wr))
		req->error = FI_EIO;
	req->fully_posted = true;
	return true;
}

/* Posts as much of the request as slots and buffers allow; false when it
 * must wait. */
static bool gdrfab_req_post(struct gdrfab_req *req)
{
	struct gdrfab_proto *proto = req->conn->proto;

	switch (req->op) {
	case GDRFAB_OP_SEND:
		return req->seg ? post_seg(proto, req) : post_send(proto, req);
	case GDRFAB_OP_CTRL: return post_send(proto, req);
	case GDRFAB_OP_WRITE:
	case GDRFAB_OP_READ:
	case GDRFAB_OP_RNDV_READ: return post_rdma(proto, req);
	case GDRFAB_OP_NIC_ATOMIC: return post_nic_atomic(proto, req);
	default: return true;
	}
}

/* Called when the request's last work completion is in. */
static void req_settle(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	if (req->wr_pending || (!req->fully_posted && !req->error))
		return;
	if (req->rail_lost && gdrfab_stripe_retry(req)) {
		gdrfab_req_submit(req);
		return;
	}
	if (gdrfab_req_waits_fin(req) && !req->fin_received) {
		/* In conn->rndv_wait until the FIN, which may be a while (an
		 * unexpected message's receive is not posted yet): the
		 * bounce buffer of a message the peer holds goes back now. */
		if (req->txbuf && req->txbuf_msg_only) {
			gdrfab_txbuf_free(proto, req->txbuf);
			req->txbuf = NULL;
		}
		return;
	}
	if (req->op == GDRFAB_OP_RNDV_READ && !req->error) {
		gdrfab_req_resume(proto, req, 0, 0);
		return;
	}
	gdrfab_req_finish(proto, req);
}

void gdrfab_conn_send_wc(struct gdrfab_conn *conn, const struct ibv_wc *wc,
			 int err)
{
	struct gdrfab_proto *proto = conn->proto;

	conn->sq_avail++;
	conn->wr_outstanding--;
	proto->cq_credits++;
	if (wc->status == IBV_WC_SUCCESS) /* acked: alive, and moving */
		conn->last_rx_ms = conn->tx_done_ms = proto->now_ms;
	else if (wc->status != IBV_WC_WR_FLUSH_ERR)
		gdrfab_conn_fail(conn, err, wc->status);
	else if (conn->state != GDRFAB_CONN_FAILED)
		/* Flushed though we never failed the connection: the QP went
		 * to error on its own (say, as the responder of an access its
		 * NIC refused). */
		gdrfab_conn_fail(conn, FI_EIO, GDRFAB_PERR_QP_ERROR);
}

void gdrfab_conn_wc_error(const struct gdrfab_conn *conn,
			  enum ibv_wc_status status, int *err, int *prov_errno)
{
	if (status == IBV_WC_WR_FLUSH_ERR && conn->fail_err) {
		*err = conn->fail_err;
		*prov_errno = conn->fail_prov_errno;
		return;
	}
	*err = gdrfab_wc_to_fi(status);
	*prov_errno = (int)status;
}

/* Logs why the NIC failed a NIC atomic (gdrfab_atomic_nic.c). */
static void nic_atomic_failed(struct gdrfab_req *req, const struct ibv_wc *wc)
{
	char peer[128];

	if (wc->status == IBV_WC_WR_FLUSH_ERR)
		return; /* the connection failed for another reason */
	gdrfab_addr_to_str(&req->conn->peer, peer, sizeof(peer));
	GDRFAB_WARN(
		FI_LOG_EP_DATA,
		"NIC atomic %s at 0x%llx key 0x%x on %s failed: %s (the target's NIC refused the key or range)\n",
		req->nic_cswap ? "CMP_SWP" : "FETCH_ADD",
		(unsigned long long)req->rseg[0].addr, req->rseg[0].rkey, peer,
		ibv_wc_status_str(wc->status));
}

void gdrfab_req_send_wc(struct gdrfab_proto *proto, struct gdrfab_req *req,
			const struct ibv_wc *wc)
{
	struct gdrfab_conn *conn = req->conn;

	if (wc->status != IBV_WC_SUCCESS) {
		if (!req->error)
			gdrfab_conn_wc_error(conn, wc->status, &req->error,
					     &req->prov_errno);
		gdrfab_wc_error_log(proto, conn, gdrfab_req_op_name(req), wc);
		if (req->op == GDRFAB_OP_NIC_ATOMIC)
			nic_atomic_failed(req, wc);
	}
	/* Failing the connection fails the requests queued on it, this one
	 * among them when it waits in rndv_wait or pending: while this work
	 * request still counts, it is failed there but finished (and freed)
	 * only below, once. */
	gdrfab_conn_send_wc(conn, wc, req->error);
	if (wc->status == IBV_WC_SUCCESS && gdrfab_req_staged_read(req))
		gdrfab_stage_landed(proto, req);
	req->wr_pending--;
	/* The connection may be freed with the request: kick it first. */
	if (conn->state == GDRFAB_CONN_CONNECTED)
		gdrfab_conn_kick(conn);
	req_settle(proto, req);
}

void gdrfab_req_rail_wc(struct gdrfab_proto *proto, size_t rail,
			struct gdrfab_req *req, const struct ibv_wc *wc)
{
	struct gdrfab_conn *conn = req->conn;

	conn->rails->sq_avail[rail - 1]++;
	proto->rail_cq_credits[rail - 1]++;
	conn->wr_outstanding--;
	req->rail_wr_pending--;
	if (wc->status == IBV_WC_SUCCESS) {
		conn->last_rx_ms = conn->tx_done_ms = proto->now_ms;
	} else if (conn->state == GDRFAB_CONN_CONNECTED) {
		/* The rail failed, not the pair: the request goes again on
		 * rail 0 (gdrfab_stripe.h). */
		gdrfab_wc_error_log_rail(proto, rail, conn,
					 gdrfab_req_op_name(req), wc);
		gdrfab_stripe_rail_lost(req, rail);
	} else {
		/* Flushed: the connection failed, and said why. */
		if (!req->error)
			gdrfab_conn_wc_error(conn, wc->status, &req->error,
					     &req->prov_errno);
		gdrfab_wc_error_log_rail(proto, rail, conn,
					 gdrfab_req_op_name(req), wc);
	}
	req->wr_pending--;
	if (conn->state == GDRFAB_CONN_CONNECTED)
		gdrfab_conn_kick(conn);
	req_settle(proto, req);
}

void gdrfab_req_submit(struct gdrfab_req *req)
{
	struct gdrfab_conn *conn = req->conn;

	if (conn->state == GDRFAB_CONN_FAILED) {
		gdrfab_req_fail(conn->proto, req, FI_EHOSTUNREACH,
				GDRFAB_PERR_PEER_UNREACHABLE);
		return;
	}
	gdrfab_list_push_tail(&conn->pending, &req->entry);
	gdrfab_conn_kick(conn);
}

/* Posts pending requests in order (FI_ORDER_SAS) while slots last. */
void gdrfab_conn_kick(struct gdrfab_conn *conn)
{
	struct gdrfab_list *it, *tmp;

	if (conn->state != GDRFAB_CONN_CONNECTED)
		return;
	gdrfab_list_for_each_safe (&conn->pending, it, tmp) {
		struct gdrfab_req *req =
			gdrfab_list_entry(it, struct gdrfab_req, entry);

		if (!gdrfab_req_post(req))
			return;
		/* A rail failed under it, and nothing of it is in flight:
		 * what did not land goes again on rail 0, from its place in
		 * the queue. */
		if (req->rail_lost && !req->wr_pending &&
		    gdrfab_stripe_retry(req) && !gdrfab_req_post(req))
			return;
		gdrfab_list_remove(&req->entry);
		if (req->error && !req->wr_pending) {
			gdrfab_req_finish(conn->proto, req);
		} else if (gdrfab_req_waits_fin(req)) {
			/* Until the receiver's FIN says it read the data. */
			gdrfab_list_push_tail(&conn->rndv_wait, &req->entry);
		}
	}
}

/* A control request (from the reserve) on the connection, its header
 * zeroed but for the version and type: the caller fills the rest and
 * submits it. NULL when the reserve is empty. */
static struct gdrfab_req *gdrfab_ctrl_req(struct gdrfab_proto *proto,
					  struct gdrfab_conn *conn,
					  uint8_t type,
					  struct gdrfab_pkt_hdr **hdr)
{
	struct gdrfab_req *req = gdrfab_req_alloc(proto, true);

	if (!req)
		return NULL;
	*hdr = (void *)req->ctrl;
	memset(*hdr, 0, sizeof(**hdr));
	(*hdr)->version = GDRFAB_WIRE_VERSION;
	(*hdr)->type = type;
	req->op = GDRFAB_OP_CTRL;
	req->ctrl_len = sizeof(**hdr);
	req->conn = conn;
	conn->refs++;
	return req;
}

void gdrfab_send_ctrl(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
		      uint8_t type, uint64_t msg_id, uint64_t data)
{
	struct gdrfab_pkt_hdr *hdr;
	struct gdrfab_req *req = gdrfab_ctrl_req(proto, conn, type, &hdr);

	if (!req) {
		GDRFAB_WARN(
			FI_LOG_EP_DATA,
			"no request left for a control message: the peer will time out\n");
		return;
	}
	hdr->msg_id = msg_id;
	hdr->data = data;
	gdrfab_req_submit(req);
}

bool gdrfab_send_ctrl_ext(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
			  uint8_t type, uint64_t data, uint32_t seg_count,
			  const void *extra, size_t extra_len)
{
	struct gdrfab_pkt_hdr *hdr;
	struct gdrfab_req *req;

	if (sizeof(*hdr) + extra_len > GDRFAB_CTRL_SIZE)
		return false;
	req = gdrfab_ctrl_req(proto, conn, type, &hdr);
	if (!req)
		return false;
	hdr->data = data;
	hdr->seg_count = seg_count;
	if (extra_len)
		memcpy(hdr + 1, extra, extra_len);
	req->ctrl_len += extra_len;
	gdrfab_req_submit(req);
	return true;
}

void gdrfab_send_rma_events(struct gdrfab_proto *proto,
			    struct gdrfab_conn *conn)
{
	for (int i = 0; i < 2; i++) {
		struct gdrfab_pkt_hdr *hdr;
		struct gdrfab_req *req;

		if (!conn->rma_events_owed[i] ||
		    conn->state != GDRFAB_CONN_CONNECTED)
			continue;
		req = gdrfab_ctrl_req(proto, conn, GDRFAB_PKT_RMA_EVENT, &hdr);
		if (!req)
			return; /* the timers try again */
		hdr->data = i ? GDRFAB_RMA_EVENT_READ : GDRFAB_RMA_EVENT_WRITE;
		hdr->size = conn->rma_events_owed[i];
		conn->rma_events_owed[i] = 0;
		gdrfab_req_submit(req);
	}
}

/* An RMA or atomic to a peer that counts what reaches it (FI_RMA_EVENT)
 * tells it with a GDRFAB_PKT_RMA_EVENT before its own completion: the
 * application may exit once it sees the completion, and an event still
 * waiting to be sent would die with its QP. The RMA completes when the
 * event's send does (the peer's receive queue holds it then). Without a
 * free control request the event is owed to the connection and its timers
 * send it; the RMA completes at once. A last step (GDRFAB_STEP_RMA_EVENT):
 * -FI_EINPROGRESS while the RMA waits for its event's send, else 0. */
int gdrfab_rma_event_step(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	struct gdrfab_conn *conn = req->conn;
	bool read = req->cq_flags & FI_READ;
	struct gdrfab_pkt_hdr *hdr;
	struct gdrfab_req *ev;

	if (req->event_sent || req->error || proto->closing ||
	    req->emu_target || req->op == GDRFAB_OP_CTRL ||
	    req->op == GDRFAB_OP_RNDV_READ ||
	    !(req->cq_flags & (FI_RMA | FI_ATOMIC)) || !conn ||
	    !conn->peer_rma_events || conn->state != GDRFAB_CONN_CONNECTED)
		return 0;
	req->event_sent = true;
	ev = gdrfab_ctrl_req(proto, conn, GDRFAB_PKT_RMA_EVENT, &hdr);
	if (!ev) {
		conn->rma_events_owed[read]++;
		return 0;
	}
	hdr->data = read ? GDRFAB_RMA_EVENT_READ : GDRFAB_RMA_EVENT_WRITE;
	hdr->size = 1;
	ev->parent = req;
	gdrfab_req_submit(ev);
	return -FI_EINPROGRESS;
}
