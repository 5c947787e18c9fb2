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
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_objs.h"
#include "gdrfab_proto.h"
#include "gdrfab_strerror.h"
#include "gdrfab_verbs_ops.h"

/* Work requests in flight on the loopback QP: a step takes one WRITE per
 * GPU piece of the receive (at most GDRFAB_MAX_IOV) and the READ. */
#define LOOP_SQ	  256
#define LOOP_POLL 16

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
};

int gdrfab_loop_open(struct gdrfab_proto *proto)
{
	struct gdrfab_domain *domain = proto->ep->domain;
	struct ibv_pd *pd;
	struct gdrfab_loop *l;

	if (proto->loop)
		return 0;
	pd = gdrfab_hmem_loop_pd(domain);
	l = calloc(1, sizeof(*l));
	if (!pd || !l) {
		free(l);
		return -FI_ENOMEM;
	}
	gdrfab_list_init(&l->waiting);
	l->sq_avail = LOOP_SQ;
	l->cq = gdrfab_vops->create_cq(proto->ctx, LOOP_SQ, NULL, NULL, 0);
	l->rx_mr = gdrfab_vops->reg_mr(pd, proto->rx_mem,
				       proto->rxbuf_cnt * proto->rxbuf_size, 0);
	l->scratch_mr = gdrfab_vops->reg_mr(pd, &l->scratch, sizeof(l->scratch),
					    IBV_ACCESS_LOCAL_WRITE);
	if (l->cq && l->rx_mr && l->scratch_mr)
		l->qp = gdrfab_hmem_loop_qp(domain, pd, l->cq, LOOP_SQ, 1);
	proto->loop = l;
	if (!l->qp) {
		GDRFAB_WARN(FI_LOG_EP_CTRL,
			    "no loopback QP for eager data into GPU memory "
			    "without CUDA: %s\n",
			    strerror(errno));
		gdrfab_loop_close(proto);
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
	if (l->cq)
		gdrfab_vops->destroy_cq(l->cq);
	if (l->rx_mr)
		gdrfab_vops->dereg_mr(l->rx_mr);
	if (l->scratch_mr)
		gdrfab_vops->dereg_mr(l->scratch_mr);
	while (!gdrfab_list_empty(&l->waiting)) {
		struct gdrfab_list *e = l->waiting.next;

		gdrfab_list_remove(e);
		gdrfab_list_init(e);
	}
	free(l);
	proto->loop = NULL;
}

bool gdrfab_loop_gpu_desc(const void *desc)
{
	const struct gdrfab_mr *mr = desc;

	return mr && gdrfab_mr_desc_live(desc) && mr->iface == FI_HMEM_CUDA &&
	       !mr->staged && mr->ibv_mr;
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
		gdrfab_gpu_rx_done(proto, st, FI_EIO, 0);
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
		if (!gdrfab_loop_gpu_desc(recv->desc[i])) {
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

	if (!l)
		return -FI_EOPNOTSUPP;
	ret = plan(st, a, a->src);
	if (!ret && st->rseg_count && !a->rxbuf) {
		/* An unexpected message's copy: registered for this step. */
		st->loop_src_mr =
			gdrfab_vops->reg_mr(proto->ep->domain->hmem.loop_pd,
					    (void *)a->src, a->got, 0);
		if (!st->loop_src_mr) {
			GDRFAB_WARN(FI_LOG_EP_DATA,
				    "registering a %zu-byte unexpected "
				    "message for its loopback copy: %s\n",
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
		gdrfab_gpu_rx_done(proto, st, 0, 0);
	else if (!gdrfab_list_empty(&l->waiting) || !post(proto, st))
		gdrfab_list_push_tail(&l->waiting, &st->entry);
	return 0;
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

		l->sq_avail += st->wr_pending;
		st->wr_pending = 0;
		if (wc[i].status != IBV_WC_SUCCESS)
			GDRFAB_WARN(FI_LOG_EP_DATA,
				    "loopback copy into GPU memory: %s\n",
				    ibv_wc_status_str(wc[i].status));
		gdrfab_gpu_rx_done(proto, st,
				   wc[i].status == IBV_WC_SUCCESS
					   ? 0
					   : gdrfab_wc_to_fi(wc[i].status),
				   wc[i].status);
	}
	while (!gdrfab_list_empty(&l->waiting)) {
		struct gdrfab_req *st = gdrfab_list_entry(
			l->waiting.next, struct gdrfab_req, entry);

		gdrfab_list_remove(&st->entry);
		gdrfab_list_init(&st->entry);
		if (!post(proto, st)) {
			gdrfab_list_push_head(&l->waiting, &st->entry);
			break;
		}
	}
}
