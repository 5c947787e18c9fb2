/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Eager data into GPU memory without a CUDA call, for endpoints that set
 * FI_OPT_CUDA_API_PERMITTED=false (aws-ofi-nccl does, and turns GPUDirect
 * off where a provider refuses): the protocol's side of the loopback
 * engine (hmem/gdrfab_stage.h). An eager message arrives in a host bounce
 * buffer; when the receive it matches is GPU memory the NIC reaches, a
 * step (a GPU_RX request) hands its pieces to the engine, which RDMA-writes
 * them there and reads the last byte back. The step is posted and left:
 * progress asks the engine which jobs ended and goes on with their
 * requests, the copies' steps (gdrfab_req_resume) and the flush READs
 * that gdrfab_flush.c posted on the engine's flush QP (gdrfab_flush_done).
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
#include "gdrfab_stage.h"
#include "gdrfab_strerror.h"
#include "gdrfab_verbs_ops.h"

static struct gdrfab_loop_port loop_port(const struct gdrfab_proto_env *env)
{
	return (struct gdrfab_loop_port){
		.addr = &env->port_addr,
		.num = env->port_num,
		.gid_index = env->gid_index,
	};
}

int gdrfab_loop_open(struct gdrfab_proto *proto)
{
	struct gdrfab_loop_port port = loop_port(&proto->env);

	/* An open engine is polled by every progress call: none quick. */
	gdrfab_proto_wake(proto);
	return gdrfab_loop_engine_open_copy(
		&proto->loop, proto->ctx, &port,
		gdrfab_hmem_loop_pd(proto->env.hmem), proto->rx_mem,
		proto->rxbuf_cnt * proto->rxbuf_size);
}

int gdrfab_loop_flush_open(struct gdrfab_proto *proto)
{
	struct gdrfab_loop_port port = loop_port(&proto->env);

	gdrfab_proto_wake(proto);
	return gdrfab_loop_engine_open_flush(&proto->loop, proto->ctx, &port,
					     proto->env.pd);
}

void gdrfab_loop_close(struct gdrfab_proto *proto)
{
	/* Steps still queued are requests, freed with the others. */
	gdrfab_loop_engine_close(&proto->loop);
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

	gdrfab_loop_job_cancel(&req->loop_job);
	if (req->loop_src_mr && (err = gdrfab_vops->dereg_mr(req->loop_src_mr)))
		GDRFAB_WARN(FI_LOG_EP_DATA, "ibv_dereg_mr (loopback): %s\n",
			    strerror(err));
	gdrfab_sizepool_put(&proto->rx_pool, req->loop_payload);
	req->loop_src_mr = NULL;
	req->loop_payload = NULL;
}

/* The pieces of the receive (from off, got bytes) the source's bytes go
 * to: host pieces copied now, GPU pieces listed for the engine's WRITEs.
 * 0 or -FI_E*. */
static int plan(struct gdrfab_loop_job *job, const struct gdrfab_gpu_rx_args *a,
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
			job->piece[n].src = src;
			job->piece[n].len = (uint32_t)take;
			job->piece[n].dst = (uintptr_t)dst;
			job->piece[n].rkey = lmr->rkey;
			n++;
		}
		src += take;
		left -= take;
		skip = 0;
	}
	job->count = n;
	return 0;
}

/* Goes on with the requests whose jobs ended: a copy's step resumes, a
 * flush READ's request learns its result. */
static void jobs_done(struct gdrfab_proto *proto)
{
	struct gdrfab_loop_job *job;

	while ((job = gdrfab_loop_engine_next_done(proto->loop))) {
		struct gdrfab_req *req =
			gdrfab_container_of(job, struct gdrfab_req, loop_job);
		bool ok = !job->err && job->status == IBV_WC_SUCCESS;
		int err = job->err ? job->err
			  : ok	   ? 0
				   : gdrfab_wc_to_fi(job->status);
		int prov_errno = job->err ? 0 : (int)job->status;

		if (job->flush)
			gdrfab_flush_done(proto, req, err, prov_errno);
		else
			gdrfab_req_resume(proto, req, err, prov_errno);
	}
}

int gdrfab_loop_start(struct gdrfab_proto *proto, struct gdrfab_req *st,
		      const struct gdrfab_gpu_rx_args *a)
{
	struct gdrfab_loop *l = proto->loop;
	struct gdrfab_loop_job *job = &st->loop_job;
	uint32_t lkey;
	int ret;

	if (!gdrfab_loop_engine_can_copy(l))
		return -FI_EOPNOTSUPP;
	ret = plan(job, a, a->src);
	if (!ret && job->count && !a->rxbuf) {
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
	} else if (job->count) {
		st->loop_payload = *a->own;
		*a->own = NULL;
	}
	lkey = a->rxbuf		 ? gdrfab_loop_engine_rx_lkey(l)
	       : st->loop_src_mr ? st->loop_src_mr->lkey
				 : 0;
	for (size_t i = 0; i < job->count; i++)
		job->piece[i].lkey = lkey;
	if (!job->count) { /* every byte went to host memory */
		gdrfab_req_resume(proto, st, 0, 0);
		return 0;
	}
	gdrfab_loop_engine_copy(l, job);
	jobs_done(proto); /* a post that failed ends the step now */
	return 0;
}

void gdrfab_loop_progress(struct gdrfab_proto *proto)
{
	if (!proto->loop)
		return;
	gdrfab_loop_engine_poll(proto->loop);
	jobs_done(proto);
	/* What waited for room goes after the requests above went on, as
	 * before the engine moved to hmem (they may queue more, behind). */
	gdrfab_loop_engine_post_waiting(proto->loop);
	jobs_done(proto);
}
