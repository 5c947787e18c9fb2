/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A request's staged GPU memory: the protocol's side of the staging
 * pipeline (hmem/gdrfab_stage.h). The request's local side is pointed at
 * its stage job's host buffer; the pipeline copies, and this file reacts
 * to what it reports after each progress pass. An RMA write posts each
 * piece as soon as its copy is done, so its copies overlap its transfer; a
 * send waits in order on its connection until its data is in host memory,
 * while later staged sends' copies run under its transfer; a receive or
 * read copies out when the NIC is done.
 */
#include <stdatomic.h>

#include "gdrfab.h"
#include "gdrfab_gpu.h"
#include "gdrfab_hmem.h"
#include "gdrfab_proto.h"
#include "gdrfab_proto_stats.h"
#include "gdrfab_req.h"
#include "gdrfab_stage.h"

/* Whether the pipeline may ask CUDA about a buffer without a descriptor
 * and pin its buffers. */
static bool stage_cuda(const struct gdrfab_proto *proto)
{
	return proto->env.cuda_api_permitted &&
	       atomic_load(&proto->env.hmem->cuda_used);
}

int gdrfab_stage_setup(struct gdrfab_proto *proto, struct gdrfab_req *req,
		       const struct iovec *iov, void **desc, size_t count,
		       int access, bool fill)
{
	size_t len = gdrfab_iov_len(iov, count);
	int ret =
		proto->ops->mr_check_descs(proto->env.domain, iov, desc, count);

	if (ret)
		return ret;
	gdrfab_pstat_staged(proto, desc, count, len);
	/* Staging GPU memory copies it with CUDA: not on an endpoint that
	 * may not call CUDA (an FI_INJECT rendezvous or RMA from GPU memory
	 * is the only way here; the option is refused where every GPU
	 * transfer would stage). */
	if (!proto->env.cuda_api_permitted &&
	    gdrfab_iov_has_gpu(proto, desc, count)) {
		GDRFAB_WARN(
			FI_LOG_EP_DATA,
			"staging %zu bytes of GPU memory (FI_INJECT) needs CUDA copies, and FI_OPT_CUDA_API_PERMITTED is false on this endpoint\n",
			len);
		return -FI_EOPNOTSUPP;
	}
	req->staged = true;
	/* The job copies the application's iovec first: it may be the
	 * request's own (an atomic's result buffers), rewritten below. */
	ret = gdrfab_stage_job_open(&proto->stage_pool, &req->stage, iov, desc,
				    count, len, access, stage_cuda(proto));
	/* Each call into the pool below may start copies that progress
	 * polls (gdrfab_stage_pool_busy): its quick path must not skip
	 * them. */
	gdrfab_proto_wake(proto);
	req->iov_count = 1;
	req->iov[0].iov_base = req->stage.host;
	req->iov[0].iov_len = len;
	req->desc[0] = NULL;
	req->len = len;
	if (ret || !len)
		return ret;
	req->lkey[0] = req->stage.mr->lkey;
	if (access & IBV_ACCESS_REMOTE_READ) {
		req->rseg[0].addr = (uintptr_t)req->stage.host;
		req->rseg[0].len = len;
		req->rseg[0].rkey = req->stage.mr->rkey;
		req->rseg_count = 1;
	}
	if (!fill)
		return 0;
	if (!gdrfab_stage_job_fill(&proto->stage_pool, &req->stage,
				   stage_cuda(proto))) {
		gdrfab_proto_wake(proto);
		return 0;
	}
	/* Done at once (host memory, gdrfab.ko) or refused. */
	return req->stage.err ? -req->stage.err : 0;
}

void gdrfab_stage_landed(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	size_t len = req->op == GDRFAB_OP_RNDV_READ ? req->recv_len : req->len;

	if (req->stage_wr_tail == req->stage_wr_head)
		return;
	req->stage_landed +=
		req->stage_wr_len[req->stage_wr_tail++ % GDRFAB_STAGE_OPS];
	if (req->error)
		return;
	gdrfab_stage_job_landed(&proto->stage_pool, &req->stage,
				GDRFAB_MIN(len, req->len), req->stage_landed,
				stage_cuda(proto));
	gdrfab_proto_wake(proto);
}

bool gdrfab_stage_drain(struct gdrfab_proto *proto, struct gdrfab_req *req,
			size_t len)
{
	gdrfab_proto_wake(proto);
	return gdrfab_stage_job_drain(&proto->stage_pool, &req->stage,
				      GDRFAB_MIN(len, req->len),
				      stage_cuda(proto));
}

/* A request whose copies ended: on with what it waited for. */
static void stage_ended(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	if (gdrfab_stage_job_settle(&req->stage) == GDRFAB_STAGE_DRAINING) {
		/* A copy failed while the NIC still reads: the last work
		 * completion finishes it. */
		if (req->wr_pending || !req->fully_posted)
			return;
		gdrfab_req_resume(proto, req, req->stage.err, 0);
		return;
	}
	/* Filled (or failed: the post fails it, in its turn on the
	 * connection, so that it finishes in one place). */
	if (req->conn)
		proto->stage_can_post(req->conn);
}

void gdrfab_stage_progress(struct gdrfab_proto *proto)
{
	struct gdrfab_stage_job *job;

	gdrfab_stage_pool_progress(&proto->stage_pool, !proto->closing,
				   stage_cuda(proto));
	/* Acting may finish and free any request (which closes its job,
	 * taking it off the pool's lists): one at a time. */
	while ((job = gdrfab_stage_pool_next(&proto->stage_pool))) {
		struct gdrfab_req *req =
			gdrfab_container_of(job, struct gdrfab_req, stage);

		if (!gdrfab_stage_job_copying(job))
			stage_ended(proto, req);
		else if (req->op == GDRFAB_OP_WRITE)
			/* More of the write can go. */
			proto->stage_can_post(req->conn);
	}
}

void gdrfab_stage_free(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	gdrfab_stage_job_close(&proto->stage_pool, &req->stage,
			       !proto->closing);
	/* A buffer whose copy still runs waits in the pool for progress. */
	gdrfab_proto_wake(proto);
	req->staged = false;
}

int gdrfab_stage_out_step(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	/* fi_read into staged GPU memory: copied out of the staging buffer
	 * first; progress comes back here when the copies end. */
	if (!gdrfab_req_reads_local(req) || !req->staged || req->error ||
	    proto->closing || req->emu_target)
		return 0;
	if (!gdrfab_stage_drain(proto, req, req->len))
		return -FI_EINPROGRESS;
	return req->stage.err ? -req->stage.err : 0;
}
