/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RMA (the object layer's fi_ops_rma, obj/gdrfab_rma_api.c, calls here):
 * RDMA READ and WRITE on the peer's connection, split into
 * pieces the port accepts; fi_writedata's 4 bytes of CQ data travel as the
 * last WRITE's immediate data. The target NIC enforces the MR's access: a
 * forbidden access comes back as an error completion.
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_rma.h>

#include "gdrfab.h"
#include "gdrfab_gpu.h"
#include "gdrfab_hmem.h"
#include "gdrfab_lock.h"
#include "gdrfab_msg.h"
#include "gdrfab_proto.h"
#include "gdrfab_proto_stats.h"
#include "gdrfab_req.h"
#include "gdrfab_rma.h"
#include "gdrfab_stripe.h"

static int copy_to_txbuf(struct gdrfab_proto *proto, struct gdrfab_req *req,
			 const struct iovec *iov, size_t count)
{
	struct iovec copy;
	uint8_t *p;

	req->txbuf = gdrfab_txbuf_alloc(proto);
	if (!req->txbuf)
		return -FI_EAGAIN;
	/* Host memory only: gdrfab_proto_rma copied GPU bytes out before its
	 * lock. */
	p = req->txbuf->data;
	for (size_t i = 0; i < count; i++) {
		if (iov[i].iov_len)
			memcpy(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	copy.iov_base = req->txbuf->data;
	copy.iov_len = (size_t)(p - req->txbuf->data);
	req->iov[0] = copy;
	req->iov_count = 1;
	req->lkey[0] = proto->tx_mr->lkey;
	req->len = copy.iov_len;
	return 0;
}

/* An RMA to staged GPU memory at the target (GDRFAB_EMU_KEY), whose data
 * path serves it (gdrfab_rma_emu.c): a write goes as an EMU_WRITE
 * message, a read as an EMU_READ the target answers with an RDMA WRITE
 * into our staging buffer and a FIN. */
int gdrfab_emu_prepare(struct gdrfab_proto *proto, struct gdrfab_req *req,
		       const struct iovec *iov, void **desc, size_t count,
		       uint64_t raddr, uint64_t key)
{
	uint64_t handle = (uint32_t)key;
	int ret;

	req->tag = raddr;
	if (req->op == GDRFAB_OP_WRITE) {
		req->op = GDRFAB_OP_SEND;
		req->data = handle << 32 | (uint32_t)req->data;
		return gdrfab_msg_prepare(
			proto, req, iov, desc, count,
			GDRFAB_PKT_EMU_WRITE |
				((req->cq_flags & FI_REMOTE_CQ_DATA)
					 ? GDRFAB_PKT_CQ_DATA
					 : 0));
	}
	/* fi_read: the target writes into a host buffer of ours, copied
	 * into the application's buffer (host or GPU) at the FIN. */
	ret = gdrfab_stage_setup(proto, req, iov, desc, count,
				 IBV_ACCESS_REMOTE_WRITE, false);
	if (ret)
		return ret;
	req->rseg[0].addr = (uintptr_t)req->stage.host;
	req->rseg[0].len = req->len;
	req->rseg[0].rkey = req->stage.mr ? req->stage.mr->rkey : 0;
	req->rseg[0].reserved = 0;
	req->rseg_count = 1;
	req->data = handle << 32;
	gdrfab_rndv_header(proto, req, GDRFAB_PKT_EMU_READ);
	req->op = GDRFAB_OP_SEND; /* done at the target's FIN */
	req->emu_read = true;
	gdrfab_req_add_step(req, GDRFAB_STEP_STAGE_OUT, gdrfab_stage_out_step);
	return 0;
}

ssize_t gdrfab_proto_rma(struct gdrfab_proto *proto, enum gdrfab_op op,
			 const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t peer_addr, uint64_t raddr, uint64_t key,
			 uint64_t data, uint64_t flags, void *context,
			 bool silent)
{
	struct gdrfab_req *req;
	size_t len;
	bool emu, inject, copy_in;
	struct gdrfab_inject_copy copy = {.bounce = NULL};
	int ret =
		gdrfab_check_iov(proto, iov, count,
				 op == GDRFAB_OP_READ ? "fi_read" : "fi_write");

	if (ret)
		return ret;
	/* FI_INJECT, from fi_inject_write or in fi_writemsg's flags: the
	 * caller may reuse the buffer once the call returns. */
	inject = op == GDRFAB_OP_WRITE && (flags & FI_INJECT);
	len = gdrfab_iov_len(iov, count);
	if (inject && len > proto->inject_max)
		return -FI_EMSGSIZE;
	if (len && raddr + (len - 1) < raddr) {
		GDRFAB_WARN(
			FI_LOG_EP_DATA,
			"RMA of %zu bytes at 0x%llx wraps around the address space\n",
			len, (unsigned long long)raddr);
		return -FI_EINVAL;
	}
	emu = (key & ~(uint64_t)UINT32_MAX) == GDRFAB_EMU_KEY;
	if (key > UINT32_MAX && !emu && !gdrfab_key_is_rail(key)) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "RMA key 0x%llx is not a gdrfab key (4 bytes)\n",
			    (unsigned long long)key);
		return -FI_EINVAL;
	}
	ret = proto->ops->mr_check_descs(proto->env.domain, iov, desc, count);
	if (ret)
		return ret;
	/* GPU bytes that would be copied with CUDA are copied now, before
	 * the lock, synchronously: an inject's (the API wants the buffer
	 * reusable on return), and an emulated write's that goes as an eager
	 * message the NIC does not gather (gdrfab_send_copies). The copy is
	 * then sent as an inject's is. */
	copy_in = op == GDRFAB_OP_WRITE &&
		  (emu ? gdrfab_send_copies(proto, desc, count, len, flags)
		       : inject);
	ret = gdrfab_tx_begin(proto, copy_in, &iov, &desc, &count, &flags,
			      &copy, len, peer_addr, &req);
	if (ret)
		return ret;
	req->op = op;
	req->context = context;
	req->cq_flags = FI_RMA | (op == GDRFAB_OP_READ ? FI_READ : FI_WRITE);
	if (flags & FI_REMOTE_CQ_DATA)
		req->cq_flags |= FI_REMOTE_CQ_DATA;
	req->op_flags = flags;
	req->silent = silent;
	req->data = data;
	gdrfab_req_add_step(req, GDRFAB_STEP_RMA_EVENT, gdrfab_rma_event_step);
	if (emu) {
		/* Staged GPU memory at the target: its data path does it. */
		ret = gdrfab_emu_prepare(proto, req, iov, desc, count, raddr,
					 key);
		if (!ret)
			gdrfab_req_submit(req);
		else
			gdrfab_req_free(proto, req);
		goto out;
	}
	if (inject)
		ret = copy_to_txbuf(proto, req, iov, count);
	else if (gdrfab_iov_stages(proto, desc, count))
		/* GPU memory the NIC cannot reach: a host buffer filled
		 * before a write, copied out after a read. */
		ret = gdrfab_stage_setup(proto, req, iov, desc, count, 0,
					 op == GDRFAB_OP_WRITE);
	else
		ret = gdrfab_req_set_local(
			proto, req, iov, desc, count,
			op == GDRFAB_OP_READ ? IBV_ACCESS_LOCAL_WRITE : 0);
	if (ret) {
		gdrfab_req_free(proto, req);
		goto out;
	}
	req->rseg[0].addr = raddr;
	req->rseg[0].len = len;
	req->rseg[0].rkey = (uint32_t)key;
	req->rseg_count = 1;
	/* A rail-set domain's key (never on a NIC alone): striped when
	 * large enough and the pair's rails are up. The keys left here are
	 * rkeys or rail keys (emulated ones went above): its tag bit says
	 * which, one bit test and one predictable branch. */
	if (key & GDRFAB_RAIL_KEY)
		gdrfab_stripe_rma_setup(proto, req, key);
	if (op == GDRFAB_OP_READ) {
		/* The bytes out of staging, or made visible in GPU memory,
		 * before the completion says they are there. */
		gdrfab_req_add_step(req, GDRFAB_STEP_STAGE_OUT,
				    gdrfab_stage_out_step);
		gdrfab_req_add_step(req, GDRFAB_STEP_FLUSH,
				    gdrfab_flush_read_step);
	}
	gdrfab_req_submit(req);
out:
	gdrfab_pstat_rma(proto, ret, op, emu, len);
	gdrfab_req_drain(proto);
	gdrfab_lock_release(proto->env.lock);
	gdrfab_copy_in_done(proto, &copy);
	return ret;
}
