/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Eager messages into GPU memory as an asynchronous step of the receive.
 * The bytes arrived in host memory (a receive bounce buffer, or an
 * unexpected message's copy); the receive's buffers are GPU memory (with
 * a descriptor, or, with CUDA permitted, without one: CUDA says what the
 * pointer is), or an emulated write's target in staged GPU memory. A
 * synchronous copy there would wait for CUDA under the endpoint's lock;
 * instead a step (a request of op GDRFAB_OP_GPU_RX) starts the move and
 * returns, and progress completes the receive when the move's own
 * completion arrives:
 * - CUDA permitted: the bytes are copied into one of the staging
 *   pipeline's pinned buffers (the bounce buffer goes back to the SRQ at
 *   once) and drained into the GPU by its asynchronous copies, whose
 *   events progress polls (hmem/gdrfab_stage_pipe.c; small pieces go through
 *   gdrfab.ko's CPU mapping where it is loaded, as before);
 * - CUDA not permitted (FI_OPT_CUDA_API_PERMITTED=false): an RDMA WRITE
 *   over the endpoint's loopback QP (gdrfab_req_loop.c, over hmem's
 *   loopback engine).
 */
#include <arpa/inet.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_conn.h"
#include "gdrfab_gpu.h"
#include "gdrfab_hmem.h"
#include "gdrfab_proto.h"
#include "gdrfab_proto_stats.h"
#include "gdrfab_req.h"
#include "gdrfab_rma.h"
#include "gdrfab_strerror.h"

/* A step's bytes are there (err 0) or not (FI_E*): completes it (the
 * step's resume function). */
static void gdrfab_gpu_rx_done(struct gdrfab_proto *proto,
			       struct gdrfab_req *st, int err, int prov_errno);

static bool cuda_gpu_desc(struct gdrfab_proto *proto, const void *desc)
{
	const struct gdrfab_mr_desc *mr = desc;

	return mr && proto->ops->mr_desc_live(desc) &&
	       mr->iface == FI_HMEM_CUDA;
}

bool gdrfab_gpu_rx_wanted(struct gdrfab_proto *proto, const struct iovec *iov,
			  void **desc, size_t count)
{
	bool cuda = proto->env.cuda_api_permitted;

	for (size_t i = 0; i < count; i++) {
		void *d = desc ? desc[i] : NULL;

		if (!cuda) {
			/* Without CUDA a buffer given without a descriptor
			 * is host memory (FI_MR_HMEM: GPU memory comes with
			 * one), and GPU memory the loopback QP cannot write
			 * (staged) is refused by the host copy. */
			if (gdrfab_loop_gpu_desc(proto, d))
				return true;
		} else if (d ? cuda_gpu_desc(proto, d)
			     : iov[i].iov_len && gdrfab_buf_device(
							 proto, iov[i].iov_base,
							 NULL) >= 0) {
			/* The pipeline classifies each piece itself: a
			 * buffer without a descriptor needs no MR there. */
			return true;
		}
	}
	return false;
}

/* A new step for the receive, with its completion's fields. */
static struct gdrfab_req *gdrfab_gpu_rx_step(struct gdrfab_proto *proto,
					     const struct gdrfab_gpu_rx_args *a)
{
	/* From the control reserve too: a message that arrived must be
	 * delivered, as a rendezvous READ is. */
	struct gdrfab_req *st = gdrfab_req_alloc(proto, true);

	if (!st)
		return NULL;
	st->op = GDRFAB_OP_GPU_RX;
	st->resume = gdrfab_gpu_rx_done;
	st->context = a->recv->context;
	st->cq_flags = a->cq_flags;
	st->tag = a->tag;
	st->data = a->data;
	st->recv_len = a->got;
	st->ctrl_len = a->size;
	/* An emulated write's target: FIN to the initiator, no report. */
	if (a->recv->emu_target)
		gdrfab_emu_target_mark(st);
	st->msg_id = a->msg_id;
	st->ack_delivery = a->ack;
	st->loop_buf = a->recv->iov_count
			       ? (uint8_t *)a->recv->iov[0].iov_base + a->off
			       : NULL;
	return st;
}

/* The CUDA engine: the receive's part from off (got bytes) as the
 * pipeline's application buffers, the bytes in its staging buffer, then
 * drained. */
static int cuda_start(struct gdrfab_proto *proto, struct gdrfab_req *st,
		      const struct gdrfab_gpu_rx_args *a)
{
	const struct gdrfab_req *recv = a->recv;
	struct iovec iov[GDRFAB_MAX_IOV];
	void *desc[GDRFAB_MAX_IOV];
	size_t skip = a->off, left = a->got, n = 0;
	int ret;

	for (size_t i = 0; i < recv->iov_count && left; i++) {
		size_t len = recv->iov[i].iov_len;

		if (skip >= len) {
			skip -= len;
			continue;
		}
		iov[n].iov_base = (uint8_t *)recv->iov[i].iov_base + skip;
		iov[n].iov_len = GDRFAB_MIN(len - skip, left);
		desc[n] = recv->desc[i];
		left -= iov[n].iov_len;
		skip = 0;
		n++;
	}
	ret = gdrfab_stage_setup(proto, st, iov, desc, n, 0, false);
	if (ret)
		return ret;
	memcpy(st->stage.host, a->src, a->got);
	st->fully_posted = true; /* nothing for the NIC: drained when done */
	if (gdrfab_stage_drain(proto, st, a->got))
		gdrfab_gpu_rx_done(proto, st, st->stage.err, 0);
	return 0;
}

int gdrfab_gpu_rx_start(struct gdrfab_proto *proto,
			const struct gdrfab_gpu_rx_args *a)
{
	struct gdrfab_req *st = gdrfab_gpu_rx_step(proto, a);
	int ret;

	if (!st)
		return -FI_EAGAIN;
	/* Owned by the step from here: the receive (freed when done) and
	 * a reference to the connection (the completion's source). */
	st->parent = a->done ? a->recv : NULL;
	st->conn = a->conn;
	a->conn->refs++;
	ret = proto->env.cuda_api_permitted ? cuda_start(proto, st, a)
					    : gdrfab_loop_start(proto, st, a);
	gdrfab_pstat_copied(proto, !ret, a->got);
	if (ret) {
		st->parent = NULL;
		gdrfab_req_free(proto, st);
	}
	return ret;
}

static void gdrfab_gpu_rx_done(struct gdrfab_proto *proto,
			       struct gdrfab_req *st, int err, int prov_errno)
{
	if (st->loop_rxbuf)
		gdrfab_rxbuf_repost(proto, st->loop_rxbuf);
	st->loop_rxbuf = NULL;
	/* The bytes are in GPU memory (or failed to get there): a sender
	 * that asked for a delivery ACK hears it now, never earlier. */
	if (st->ack_delivery)
		gdrfab_send_ctrl(proto, st->conn, GDRFAB_PKT_FIN, st->msg_id,
				 (uint64_t)gdrfab_delivery_status(
					 st->recv_len, st->ctrl_len, err));
	/* Ending the step frees the receive it filled (st->parent) too. */
	if (st->emu_target) {
		gdrfab_emu_target_done(proto, st->conn, st->msg_id,
				       st->cq_flags & FI_REMOTE_CQ_DATA,
				       st->data, st->recv_len,
				       err ? FI_EIO : 0);
		gdrfab_req_end_silent(proto, st);
	} else if (proto->closing) {
		/* No completions while the endpoint closes. */
		gdrfab_req_end_silent(proto, st);
	} else if (err) {
		gdrfab_req_report_error(proto, st, true, st->cq_flags, 0,
					st->ctrl_len, st->loop_buf, st->data,
					st->tag, err, prov_errno);
	} else if (st->recv_len < st->ctrl_len) {
		gdrfab_req_report_error(
			proto, st, true, st->cq_flags, st->recv_len,
			st->ctrl_len - st->recv_len, st->loop_buf, st->data,
			st->tag, FI_ETRUNC, GDRFAB_PERR_TRUNCATED);
	} else {
		gdrfab_req_report_rx(proto, st, true, st->cq_flags,
				     st->recv_len, st->loop_buf, st->data,
				     st->tag, gdrfab_conn_fi_addr(st->conn));
	}
}

void gdrfab_flush_writedata(struct gdrfab_proto *proto,
			    struct gdrfab_conn *conn, const struct ibv_wc *wc)
{
	uint64_t flags = FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA;
	uint64_t data = ntohl(wc->imm_data);
	struct gdrfab_hmem_rw_target t;
	struct gdrfab_req *st;
	int ret = 0;

	if (proto->closing)
		return;
	if (gdrfab_hmem_remote_write_target(
		    proto->env.hmem, proto->env.cuda_api_permitted, &t)) {
		/* A step carries the completion until the READ ends: a
		 * GPU_RX request, finished by gdrfab_gpu_rx_done. From the
		 * control reserve, as other steps of data that arrived. */
		st = gdrfab_req_alloc(proto, true);
		if (!st) {
			GDRFAB_WARN(
				FI_LOG_EP_DATA,
				"no request left to flush an fi_writedata into GPU memory: reported as failed\n");
			ret = -FI_EAGAIN;
			goto complete;
		}
		st->op = GDRFAB_OP_GPU_RX;
		st->resume = gdrfab_gpu_rx_done;
		st->cq_flags = flags;
		st->data = data;
		st->recv_len = st->ctrl_len = wc->byte_len;
		st->conn = conn;
		conn->refs++;
		ret = gdrfab_flush_start(proto, st, t.device, (uintptr_t)t.addr,
					 t.rkey);
		if (ret == -FI_EINPROGRESS)
			return;
		gdrfab_req_free(proto, st);
	}
complete:
	if (ret)
		gdrfab_report_remote_error(proto, flags, wc->byte_len, data,
					   -ret);
	else
		gdrfab_report_remote_data(proto, flags, wc->byte_len, data,
					  conn);
}
