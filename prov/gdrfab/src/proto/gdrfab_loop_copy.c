/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Eager data into GPU memory without a CUDA call, for endpoints that set
 * FI_OPT_CUDA_API_PERMITTED=false (aws-ofi-nccl does, and turns GPUDirect
 * off where a provider refuses). An eager message arrives in a host bounce
 * buffer; when the receive it matches is GPU memory the NIC reaches, its
 * bytes go there by RDMA WRITE over a QP of this endpoint connected to
 * itself, followed by a 1-byte READ of the last byte written (the NIC's
 * PCIe read cannot pass its writes: the data is visible to the GPU when
 * the READ completes, as gdrfab_hmem_flush.c's READ flush relies on). The
 * step is posted and left: progress polls the loopback CQ and completes
 * the receive from the READ's work completion, never waiting.
 *
 * The same CQ serves the flush READs (proto/gdrfab_flush.c): data the
 * NIC wrote into GPU memory (a rendezvous READ, an fi_read, a peer's
 * fi_writedata) is made visible by a 1-byte READ of its last byte over a
 * second QP connected to itself, in the domain's PD (the keys it reads
 * with are the domain's). Both QPs are made when the endpoint is enabled
 * (or when FI_OPT_CUDA_API_PERMITTED=false asks for the copy QP), never
 * on the data path; progress completes the request from the READ's work
 * completion.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_conn.h"
#include "gdrfab_gpu.h"
#include "gdrfab_hmem.h"
#include "gdrfab_proto.h"
#include "gdrfab_req.h"
#include "gdrfab_strerror.h"
#include "gdrfab_verbs_ops.h"

/* Work requests in flight on the loopback QP: a step takes one WRITE per
 * GPU piece of the receive (at most GDRFAB_MAX_IOV) and the READ. */
#define LOOP_SQ	  256
#define LOOP_POLL 16
/* Flush READs in flight: one per request at most; more wait in line. */
#define FLUSH_SQ 128

struct gdrfab_loop {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	/* The receive bounce buffers, registered again in the loopback PD
	 * (local read only: the WRITEs' source). */
	struct ibv_mr *rx_mr;
	/* Where the flush READs land (their byte is never looked at). */
	struct ibv_mr *scratch_mr;
	uint64_t scratch;
	int sq_avail;
	/* Steps that found the send queue full, in arrival order. */
	struct gdrfab_list waiting;
	/* The flush QP (domain PD), where its READs land, its free send
	 * slots and the requests waiting for one (by req->entry: a request
	 * whose flush is pending is on no other list). */
	struct ibv_qp *flush_qp;
	struct ibv_mr *flush_mr;
	uint64_t flush_scratch;
	int flush_avail;
	struct gdrfab_list flush_waiting;
};

/* The engine and its CQ, shared by the copy and the flush QPs. */
static struct gdrfab_loop *loop_get(struct gdrfab_proto *proto)
{
	struct gdrfab_loop *l = proto->loop;

	if (l)
		return l;
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	gdrfab_list_init(&l->waiting);
	gdrfab_list_init(&l->flush_waiting);
	l->sq_avail = LOOP_SQ;
	l->flush_avail = FLUSH_SQ;
	l->cq = gdrfab_vops->create_cq(proto->ctx, LOOP_SQ + FLUSH_SQ, NULL,
				       NULL, 0);
	if (!l->cq) {
		GDRFAB_WARN(FI_LOG_EP_CTRL, "loopback CQ: %s\n",
			    strerror(errno));
		free(l);
		return NULL;
	}
	proto->loop = l;
	return l;
}

int gdrfab_loop_open(struct gdrfab_proto *proto)
{
	const struct gdrfab_proto_env *env = &proto->env;
	struct ibv_pd *pd;
	struct gdrfab_loop *l;

	if (proto->loop && proto->loop->qp)
		return 0;
	pd = gdrfab_hmem_loop_pd(env->hmem);
	l = loop_get(proto);
	if (!pd || !l)
		return -FI_ENOMEM;
	/* Each piece is kept once made: a later attempt makes only what
	 * is missing. */
	if (!l->rx_mr)
		l->rx_mr = gdrfab_vops->reg_mr(
			pd, proto->rx_mem, proto->rxbuf_cnt * proto->rxbuf_size,
			0);
	if (!l->scratch_mr)
		l->scratch_mr =
			gdrfab_vops->reg_mr(pd, &l->scratch, sizeof(l->scratch),
					    IBV_ACCESS_LOCAL_WRITE);
	if (l->rx_mr && l->scratch_mr)
		l->qp = gdrfab_hmem_loop_qp(&env->port_addr, env->port_num,
					    env->gid_index, pd, l->cq, LOOP_SQ,
					    1);
	if (!l->qp) {
		GDRFAB_WARN(
			FI_LOG_EP_CTRL,
			"no loopback QP for eager data into GPU memory without CUDA: %s\n",
			strerror(errno));
		return -FI_ENOMEM;
	}
	return 0;
}

int gdrfab_loop_flush_open(struct gdrfab_proto *proto)
{
	const struct gdrfab_proto_env *env = &proto->env;
	struct gdrfab_loop *l;

	if (proto->loop && proto->loop->flush_qp)
		return 0;
	l = loop_get(proto);
	if (!l)
		return -FI_ENOMEM;
	if (!l->flush_mr)
		l->flush_mr = gdrfab_vops->reg_mr(env->pd, &l->flush_scratch,
						  sizeof(l->flush_scratch),
						  IBV_ACCESS_LOCAL_WRITE);
	if (l->flush_mr)
		l->flush_qp = gdrfab_hmem_loop_qp(&env->port_addr,
						  env->port_num, env->gid_index,
						  env->pd, l->cq, FLUSH_SQ, 1);
	if (!l->flush_qp) {
		GDRFAB_WARN(
			FI_LOG_EP_CTRL,
			"no loopback QP for the flush READ (writes into GPU memory are then reported as failed): %s\n",
			strerror(errno));
		return -FI_ENOMEM;
	}
	return 0;
}

void gdrfab_loop_close(struct gdrfab_proto *proto)
{
	struct gdrfab_loop *l = proto->loop;

	if (!l)
		return;
	/* The QP first: nothing reads bounce memory or payloads after it.
	 * Steps still listed are requests, freed with the others. */
	if (l->qp)
		gdrfab_vops->destroy_qp(l->qp);
	if (l->flush_qp)
		gdrfab_vops->destroy_qp(l->flush_qp);
	if (l->cq)
		gdrfab_vops->destroy_cq(l->cq);
	if (l->rx_mr)
		gdrfab_vops->dereg_mr(l->rx_mr);
	if (l->scratch_mr)
		gdrfab_vops->dereg_mr(l->scratch_mr);
	if (l->flush_mr)
		gdrfab_vops->dereg_mr(l->flush_mr);
	/* Requests left waiting are freed with the endpoint: each entry is
	 * left self-linked, so that removing it again does nothing. */
	while (!gdrfab_list_empty(&l->waiting)) {
		struct gdrfab_list *e = l->waiting.next;

		gdrfab_list_remove(e);
		gdrfab_list_init(e);
	}
	while (!gdrfab_list_empty(&l->flush_waiting)) {
		struct gdrfab_list *e = l->flush_waiting.next;

		gdrfab_list_remove(e);
		gdrfab_list_init(e);
	}
	free(l);
	proto->loop = NULL;
}

bool gdrfab_loop_gpu_desc(struct gdrfab_proto *proto, const void *desc)
{
	const struct gdrfab_mr_desc *mr = desc;

	return mr && proto->ops->mr_desc_live(desc) &&
	       mr->iface == FI_HMEM_CUDA && !mr->staged && mr->ibv_mr;
}

void gdrfab_loop_req_free(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	int err;

	(void)proto;
	if (req->loop_src_mr && (err = gdrfab_vops->dereg_mr(req->loop_src_mr)))
		GDRFAB_WARN(FI_LOG_EP_DATA, "ibv_dereg_mr (loopback): %s\n",
			    strerror(err));
	free(req->loop_payload);
	req->loop_src_mr = NULL;
	req->loop_payload = NULL;
}

/* Posts a step's WRITEs (unsignaled) and its READ (signaled: its
 * completion says all before it are done). False when the send queue
 * has no room yet. */
static bool post(struct gdrfab_proto *proto, struct gdrfab_req *st)
{
	struct gdrfab_loop *l = proto->loop;
	struct ibv_sge sge[GDRFAB_MAX_IOV + 1];
	struct ibv_send_wr wr[GDRFAB_MAX_IOV + 1], *bad;
	size_t n = st->rseg_count;
	const struct gdrfab_rndv_seg *last = &st->rseg[n - 1];
	int err;

	if (l->sq_avail < (int)n + 1)
		return false;
	memset(wr, 0, sizeof(wr));
	for (size_t i = 0; i <= n; i++) {
		bool read = i == n;

		sge[i].addr = read ? (uintptr_t)&l->scratch
				   : (uintptr_t)st->iov[i].iov_base;
		sge[i].length = read ? 1 : (uint32_t)st->iov[i].iov_len;
		sge[i].lkey = read ? l->scratch_mr->lkey : st->lkey[i];
		wr[i].wr_id = (uintptr_t)st;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
		wr[i].send_flags = read ? IBV_SEND_SIGNALED : 0;
		wr[i].wr.rdma.remote_addr =
			read ? last->addr + last->len - 1 : st->rseg[i].addr;
		wr[i].wr.rdma.rkey = read ? last->rkey : st->rseg[i].rkey;
		wr[i].next = read ? NULL : &wr[i + 1];
	}
	err = gdrfab_vops->post_send(l->qp, wr, &bad);
	if (err) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "loopback WRITE into GPU memory: %s\n",
			    strerror(err));
		gdrfab_req_resume(proto, st, FI_EIO, 0);
		return true;
	}
	l->sq_avail -= (int)n + 1;
	st->wr_pending = (int)n + 1;
	return true;
}

/* The pieces of the receive (from off, got bytes) the source's bytes go
 * to: host pieces copied now, GPU pieces listed for the WRITEs. 0 or
 * -FI_E*. */
static int plan(struct gdrfab_req *st, const struct gdrfab_gpu_rx_args *a,
		const uint8_t *src)
{
	struct gdrfab_proto *proto = a->conn->proto;
	const struct gdrfab_req *recv = a->recv;
	size_t skip = a->off, left = a->got, n = 0;

	for (size_t i = 0; i < recv->iov_count && left; i++) {
		size_t len = recv->iov[i].iov_len, take;
		uint8_t *dst;
		struct ibv_mr *lmr;

		if (skip >= len) {
			skip -= len;
			continue;
		}
		take = GDRFAB_MIN(len - skip, left);
		dst = (uint8_t *)recv->iov[i].iov_base + skip;
		if (!gdrfab_loop_gpu_desc(proto, recv->desc[i])) {
			memcpy(dst, src, take);
		} else {
			lmr = gdrfab_hmem_loop_mr(recv->desc[i]);
			if (!lmr)
				return -FI_EIO;
			st->iov[n].iov_base = (void *)src;
			st->iov[n].iov_len = take;
			st->rseg[n].addr = (uintptr_t)dst;
			st->rseg[n].len = take;
			st->rseg[n].rkey = lmr->rkey;
			n++;
		}
		src += take;
		left -= take;
		skip = 0;
	}
	st->rseg_count = n;
	st->iov_count = n;
	return 0;
}

int gdrfab_loop_start(struct gdrfab_proto *proto, struct gdrfab_req *st,
		      const struct gdrfab_gpu_rx_args *a)
{
	struct gdrfab_loop *l = proto->loop;
	uint32_t lkey;
	int ret;

	if (!l || !l->qp)
		return -FI_EOPNOTSUPP;
	ret = plan(st, a, a->src);
	if (!ret && st->rseg_count && !a->rxbuf) {
		/* An unexpected message's copy: registered for this step. */
		st->loop_src_mr = gdrfab_vops->reg_mr(
			proto->env.hmem->loop_pd, (void *)a->src, a->got, 0);
		if (!st->loop_src_mr) {
			GDRFAB_WARN(
				FI_LOG_EP_DATA,
				"registering a %zu-byte unexpected message for its loopback copy: %s\n",
				a->got, strerror(errno));
			ret = -FI_ENOMEM;
		}
	}
	if (ret)
		return ret;
	/* The step owns what it reads from now on. */
	if (a->rxbuf) {
		st->loop_rxbuf = a->rxbuf;
		proto->rxbuf_held = true;
	} else if (st->rseg_count) {
		st->loop_payload = *a->own;
		*a->own = NULL;
	}
	lkey = a->rxbuf		 ? l->rx_mr->lkey
	       : st->loop_src_mr ? st->loop_src_mr->lkey
				 : 0;
	for (size_t i = 0; i < st->rseg_count; i++)
		st->lkey[i] = lkey;
	if (!st->rseg_count) /* every byte went to host memory */
		gdrfab_req_resume(proto, st, 0, 0);
	else if (!gdrfab_list_empty(&l->waiting) || !post(proto, st))
		gdrfab_list_push_tail(&l->waiting, &st->entry);
	return 0;
}

/* Posts a request's flush READ: 1 byte at its flush_addr. 0, -FI_EAGAIN
 * when the send queue has no room yet, or -FI_EIO (logged). */
static int flush_post(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	struct gdrfab_loop *l = proto->loop;
	struct ibv_sge sge = {
		.addr = (uintptr_t)&l->flush_scratch,
		.length = 1,
		.lkey = l->flush_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = (uintptr_t)req,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = {.remote_addr = req->flush_addr,
			    .rkey = req->flush_rkey},
	};
	struct ibv_send_wr *bad;
	int err;

	if (!l->flush_avail)
		return -FI_EAGAIN;
	err = gdrfab_vops->post_send(l->flush_qp, &wr, &bad);
	if (err) {
		GDRFAB_WARN(FI_LOG_EP_DATA, "flush READ: %s\n", strerror(err));
		return -FI_EIO;
	}
	l->flush_avail--;
	return 0;
}

int gdrfab_loop_flush(struct gdrfab_proto *proto, struct gdrfab_req *req,
		      uint64_t addr, uint32_t rkey)
{
	struct gdrfab_loop *l = proto->loop;
	int ret;

	if (!l || !l->flush_qp) {
		GDRFAB_WARN(
			FI_LOG_EP_DATA,
			"no flush QP on this endpoint (see the warning at fi_enable): the data written into GPU memory is reported as failed\n");
		return -FI_EIO;
	}
	req->flush_addr = addr;
	req->flush_rkey = rkey;
	/* In order: a READ never overtakes one waiting before it. */
	ret = gdrfab_list_empty(&l->flush_waiting) ? flush_post(proto, req)
						   : -FI_EAGAIN;
	if (ret == -FI_EAGAIN)
		gdrfab_list_push_tail(&l->flush_waiting, &req->entry);
	else if (ret)
		return ret;
	req->flush_state = GDRFAB_FLUSH_STEP_POSTED;
	return 0;
}

/* A work completion of the flush QP. */
static void flush_wc(struct gdrfab_proto *proto, struct gdrfab_req *req,
		     const struct ibv_wc *wc)
{
	proto->loop->flush_avail++;
	if (wc->status != IBV_WC_SUCCESS)
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "flush READ of GPU memory at %#llx: %s\n",
			    (unsigned long long)req->flush_addr,
			    ibv_wc_status_str(wc->status));
	gdrfab_flush_done(
		proto, req,
		wc->status == IBV_WC_SUCCESS ? 0 : gdrfab_wc_to_fi(wc->status),
		wc->status == IBV_WC_SUCCESS ? 0 : wc->status);
}

void gdrfab_loop_progress(struct gdrfab_proto *proto)
{
	struct gdrfab_loop *l = proto->loop;
	struct ibv_wc wc[LOOP_POLL];
	int n;

	if (!l)
		return;
	n = gdrfab_vops->poll_cq(l->cq, LOOP_POLL, wc);
	for (int i = 0; i < n; i++) {
		struct gdrfab_req *st = (void *)(uintptr_t)wc[i].wr_id;

		if (l->flush_qp && wc[i].qp_num == l->flush_qp->qp_num) {
			flush_wc(proto, st, &wc[i]);
			continue;
		}
		l->sq_avail += st->wr_pending;
		st->wr_pending = 0;
		if (wc[i].status != IBV_WC_SUCCESS)
			GDRFAB_WARN(FI_LOG_EP_DATA,
				    "loopback copy into GPU memory: %s\n",
				    ibv_wc_status_str(wc[i].status));
		gdrfab_req_resume(proto, st,
				  wc[i].status == IBV_WC_SUCCESS
					  ? 0
					  : gdrfab_wc_to_fi(wc[i].status),
				  wc[i].status);
	}
	while (!gdrfab_list_empty(&l->waiting)) {
		struct gdrfab_req *st = gdrfab_list_entry(
			l->waiting.next, struct gdrfab_req, entry);

		gdrfab_list_remove(&st->entry);
		if (!post(proto, st)) {
			gdrfab_list_push_head(&l->waiting, &st->entry);
			break;
		}
	}
	while (!gdrfab_list_empty(&l->flush_waiting)) {
		struct gdrfab_req *req = gdrfab_list_entry(
			l->flush_waiting.next, struct gdrfab_req, entry);

		int ret;

		gdrfab_list_remove(&req->entry);
		ret = flush_post(proto, req);
		if (ret == -FI_EAGAIN) {
			gdrfab_list_push_head(&l->flush_waiting, &req->entry);
			break;
		}
		if (ret)
			gdrfab_flush_done(proto, req, -ret, 0);
	}
}
