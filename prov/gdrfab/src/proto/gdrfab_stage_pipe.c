/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The staged path's pipeline: GPU memory the NIC cannot reach moves
 * through host buffers pinned for CUDA and registered with the NIC, kept
 * per endpoint for reuse. Copies are cut into pieces of
 * FI_GDRFAB_STAGE_CHUNK bytes, enqueued asynchronously on gdrfab's own
 * streams (GDRFAB_STAGE_OPS at once per transfer) and completed through
 * their CUDA events, which progress polls: nothing waits for a copy. An
 * RMA write posts each piece as soon as its copy is done, so its copies
 * overlap its transfer; a send waits in order on its connection until
 * its data is in host memory, while later staged sends' copies run under
 * its transfer; a receive or read copies out when the NIC is done.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_hmem.h"
#include "gdrfab_params.h"
#include "gdrfab_proto.h"
#include "gdrfab_proto_stats.h"
#include "gdrfab_req.h"
#include "gdrfab_stage.h"
#include "gdrfab_stage_sched.h"
#include "gdrfab_verbs_ops.h"

/* Staging bytes an endpoint keeps between transfers. */
#define STAGE_CACHE_BYTES (256UL << 20)

static size_t buf_class(size_t len)
{
	size_t cap = gdrfab_params.stage_chunk;

	while (cap < len)
		cap <<= 1;
	return cap;
}

static void buf_destroy(struct gdrfab_stage_buf *b)
{
	if (b->mr)
		gdrfab_vops->dereg_mr(b->mr);
	if (b->pinned)
		gdrfab_cuda_host_unregister(b->mem);
	free(b->mem);
	free(b);
}

/* Pins a buffer for CUDA once CUDA memory is in use (a buffer made for
 * host data first is pinned when GPU data first goes through it). */
static void buf_pin(struct gdrfab_proto *proto, struct gdrfab_stage_buf *b)
{
	if (b->pinned || !atomic_load(&proto->env.hmem->cuda_used) ||
	    !proto->env.cuda_api_permitted)
		return;
	b->pinned = !gdrfab_cuda_host_register(b->mem, b->cap);
}

static struct gdrfab_stage_buf *buf_get(struct gdrfab_proto *proto, size_t len)
{
	size_t cap = buf_class(len);
	struct gdrfab_stage_buf **pp, *b;

	for (pp = &proto->stage_free; *pp; pp = &(*pp)->next) {
		if ((*pp)->cap == cap) {
			b = *pp;
			*pp = b->next;
			proto->stage_cached -= b->cap;
			b->next = NULL;
			buf_pin(proto, b);
			return b;
		}
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->cap = cap;
	if (posix_memalign((void **)&b->mem, 4096, cap)) {
		free(b);
		return NULL;
	}
	b->mr = gdrfab_vops->reg_mr(proto->pd, b->mem, cap,
				    IBV_ACCESS_LOCAL_WRITE);
	if (!b->mr) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "registering a %zu-byte staging buffer: %s\n", cap,
			    strerror(errno));
		free(b->mem);
		free(b);
		return NULL;
	}
	buf_pin(proto, b);
	return b;
}

/* Back to the endpoint's cache, or freed beyond its size. */
static void buf_put(struct gdrfab_proto *proto, struct gdrfab_stage_buf *b)
{
	b->head = b->tail = 0;
	if (proto->closing ||
	    proto->stage_cached + b->cap > STAGE_CACHE_BYTES) {
		buf_destroy(b);
		return;
	}
	b->next = proto->stage_free;
	proto->stage_free = b;
	proto->stage_cached += b->cap;
}

/* Collects the copies done, in order: false once one failed. */
static bool buf_poll(struct gdrfab_stage_buf *b, size_t *done)
{
	bool ok = true;

	while (b->tail != b->head) {
		unsigned i = b->tail % GDRFAB_STAGE_OPS;
		int ret = gdrfab_cuda_copy_test(&b->op[i]);

		if (ret == -FI_EAGAIN)
			break;
		if (ret)
			ok = false;
		if (done)
			*done += b->op_len[i];
		b->tail++;
	}
	return ok;
}

/* The GPU device of an application buffer, or -1 for host memory. */
static int iov_device(struct gdrfab_proto *proto, struct gdrfab_req *req,
		      size_t i)
{
	struct gdrfab_cuda_ptr p;
	void *desc = req->gpu_desc[i];

	if (desc)
		return gdrfab_mr_device(desc);
	/* Without CUDA calls, no descriptor means host memory. */
	if (!proto->env.cuda_api_permitted ||
	    !atomic_load(&proto->env.hmem->cuda_used) ||
	    gdrfab_cuda_classify(req->gpu_iov[i].iov_base, &p) ||
	    p.kind != GDRFAB_MEM_CUDA_DEVICE)
		return -1;
	return p.device;
}

/* Issues copies of ready bytes while the ring has room. */
static void pump(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	struct gdrfab_stage_buf *b = req->stage_buf;
	bool to_host = req->stage_state == GDRFAB_STAGE_FILLING;

	while (!req->stage_err && b->head - b->tail < GDRFAB_STAGE_OPS) {
		size_t i, ioff;
		size_t n = gdrfab_stage_next_piece(
			req->gpu_iov, req->gpu_iov_count, &req->stage_idx,
			&req->stage_ioff, req->stage_issued, req->stage_ready,
			gdrfab_params.stage_chunk);
		unsigned slot = b->head % GDRFAB_STAGE_OPS;
		uint8_t *host = b->mem + req->stage_issued;
		uint8_t *app;
		int dev;

		if (!n)
			break;
		/* next_piece skipped empty entries: the piece is in the
		 * entry it now points at. */
		i = req->stage_idx;
		ioff = req->stage_ioff - n;
		app = (uint8_t *)req->gpu_iov[i].iov_base + ioff;
		dev = iov_device(proto, req, i);
		b->op[slot].event = NULL;
		b->op_len[slot] = n;
		if (dev < 0) {
			/* Host memory among GPU buffers (or an inject). */
			memcpy(to_host ? host : app, to_host ? app : host, n);
		} else if (gdrfab_cuda_copy_start(to_host ? (void *)host : app,
						  to_host ? app : host, n, dev,
						  to_host, &b->op[slot])) {
			req->stage_err = FI_EIO;
			break;
		}
		b->head++;
		req->stage_issued += n;
	}
}

/* Polls the request's copies and issues more: true when none is left
 * to run (all done, or failed and the rest drained). */
static bool advance(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	struct gdrfab_stage_buf *b = req->stage_buf;

	if (!buf_poll(b, &req->stage_done) && !req->stage_err)
		req->stage_err = FI_EIO;
	pump(proto, req);
	if (req->stage_err)
		return b->tail == b->head;
	return req->stage_done == req->stage_len;
}

static void list_add(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	if (!req->stage_listed) {
		gdrfab_list_push_tail(&proto->staging, &req->stage_entry);
		req->stage_listed = true;
	}
}

static void list_del(struct gdrfab_req *req)
{
	if (req->stage_listed) {
		gdrfab_list_remove(&req->stage_entry);
		req->stage_listed = false;
	}
}

/* To be acted on once this progress pass has polled every copy. */
static void kick_add(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	if (!req->stage_kick) {
		gdrfab_list_push_tail(&proto->stage_kicked,
				      &req->stage_kick_entry);
		req->stage_kick = true;
	}
}

static void kick_del(struct gdrfab_req *req)
{
	if (req->stage_kick) {
		gdrfab_list_remove(&req->stage_kick_entry);
		req->stage_kick = false;
	}
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
	/* The application's buffers, to copy back into at the end. */
	req->staged = true;
	req->gpu_iov_count = count;
	for (size_t i = 0; i < count; i++) {
		req->gpu_iov[i] = iov[i];
		req->gpu_desc[i] = desc ? desc[i] : NULL;
	}
	req->iov_count = 1;
	req->iov[0].iov_base = NULL;
	req->iov[0].iov_len = len;
	req->desc[0] = NULL;
	req->len = len;
	req->stage_len = len;
	if (!len)
		return 0;
	req->stage_buf = buf_get(proto, len);
	if (!req->stage_buf)
		return -FI_ENOMEM;
	req->stage = req->stage_buf->mem;
	req->iov[0].iov_base = req->stage;
	req->stage_mr = req->stage_buf->mr;
	if (access & (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE)) {
		/* The peer's key is this request's alone: a peer that kept
		 * it cannot reach the buffer once it serves another. */
		req->stage_rmr =
			gdrfab_vops->reg_mr(proto->pd, req->stage, len,
					    access | IBV_ACCESS_LOCAL_WRITE);
		if (!req->stage_rmr) {
			GDRFAB_WARN(
				FI_LOG_EP_DATA,
				"registering a %zu-byte staging buffer for the peer: %s\n",
				len, strerror(errno));
			return gdrfab_errno_to_fi(errno);
		}
		req->stage_mr = req->stage_rmr;
	}
	req->lkey[0] = req->stage_mr->lkey;
	if (access & IBV_ACCESS_REMOTE_READ) {
		req->rseg[0].addr = (uintptr_t)req->stage;
		req->rseg[0].len = len;
		req->rseg[0].rkey = req->stage_mr->rkey;
		req->rseg_count = 1;
	}
	if (!fill)
		return 0;
	req->stage_state = GDRFAB_STAGE_FILLING;
	req->stage_ready = len;
	if (advance(proto, req)) {
		/* Done at once (host memory, gdrfab.ko) or refused. */
		req->stage_state = GDRFAB_STAGE_IDLE;
		return req->stage_err ? -req->stage_err : 0;
	}
	list_add(proto, req);
	return 0;
}

/* Starts (or goes on) copying the staging buffer into the GPU, up to
 * ready of len bytes. */
static void drain_start(struct gdrfab_req *req, size_t len)
{
	if (req->stage_state != GDRFAB_STAGE_DRAINING) {
		req->stage_state = GDRFAB_STAGE_DRAINING;
		req->stage_issued = req->stage_done = 0;
		req->stage_idx = req->stage_ioff = 0;
	}
	req->stage_len = GDRFAB_MIN(len, req->len);
}

void gdrfab_stage_landed(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	size_t len = req->op == GDRFAB_OP_RNDV_READ ? req->recv_len : req->len;

	if (req->stage_wr_tail == req->stage_wr_head)
		return;
	req->stage_landed +=
		req->stage_wr_len[req->stage_wr_tail++ % GDRFAB_STAGE_OPS];
	if (req->error || req->stage_state == GDRFAB_STAGE_DRAINED ||
	    !req->stage_buf) /* a read of 0 bytes */
		return;
	drain_start(req, len);
	req->stage_ready = GDRFAB_MIN(req->stage_landed, req->stage_len);
	pump(proto, req);
	list_add(proto, req);
}

bool gdrfab_stage_drain(struct gdrfab_proto *proto, struct gdrfab_req *req,
			size_t len)
{
	if (req->stage_state == GDRFAB_STAGE_DRAINED)
		return true;
	drain_start(req, len);
	req->stage_ready = req->stage_len;
	if (!req->stage_len || advance(proto, req)) {
		req->stage_state = GDRFAB_STAGE_DRAINED;
		return true;
	}
	list_add(proto, req);
	return false;
}

/* A request whose copies ended: on with what it waited for. */
static void stage_ended(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	if (req->stage_state == GDRFAB_STAGE_DRAINING) {
		req->stage_state = GDRFAB_STAGE_DRAINED;
		/* A copy failed while the NIC still reads: the last work
		 * completion finishes it. */
		if (req->wr_pending || !req->fully_posted)
			return;
		gdrfab_req_resume(proto, req, req->stage_err, 0);
		return;
	}
	/* Filled (or failed: the post fails it, in its turn on the
	 * connection, so that it finishes in one place). */
	req->stage_state = GDRFAB_STAGE_IDLE;
	if (req->conn)
		proto->stage_can_post(req->conn);
}

void gdrfab_stage_progress(struct gdrfab_proto *proto)
{
	struct gdrfab_stage_buf **pp = &proto->stage_zombies;
	struct gdrfab_list *it, *tmp;

	while (*pp) {
		struct gdrfab_stage_buf *b = *pp;

		buf_poll(b, NULL);
		if (b->tail == b->head) {
			*pp = b->next;
			buf_put(proto, b);
		} else {
			pp = &b->next;
		}
	}
	if (gdrfab_list_empty(&proto->staging))
		return;
	gdrfab_list_for_each_safe (&proto->staging, it, tmp) {
		struct gdrfab_req *req =
			gdrfab_list_entry(it, struct gdrfab_req, stage_entry);
		size_t before = req->stage_done;

		if (advance(proto, req)) {
			list_del(req);
			kick_add(proto, req);
		} else if (req->stage_done != before &&
			   req->op == GDRFAB_OP_WRITE) {
			kick_add(proto, req); /* more of the write can go */
		}
	}
	/* Acting may finish and free any request (which leaves the list):
	 * one at a time, from the head. */
	while (!gdrfab_list_empty(&proto->stage_kicked)) {
		struct gdrfab_req *req =
			gdrfab_list_entry(proto->stage_kicked.next,
					  struct gdrfab_req, stage_kick_entry);

		kick_del(req);
		if (req->stage_listed) /* still copying: post what is done */
			proto->stage_can_post(req->conn);
		else
			stage_ended(proto, req);
	}
}

void gdrfab_stage_free(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	struct gdrfab_stage_buf *b = req->stage_buf;

	list_del(req);
	kick_del(req);
	if (req->stage_rmr)
		gdrfab_vops->dereg_mr(req->stage_rmr);
	if (b) {
		buf_poll(b, NULL);
		if (b->tail != b->head) {
			/* Copies still run into or out of it. */
			b->next = proto->stage_zombies;
			proto->stage_zombies = b;
		} else {
			buf_put(proto, b);
		}
	}
	req->stage_buf = NULL;
	req->stage_rmr = NULL;
	req->stage_mr = NULL;
	req->stage = NULL;
	req->staged = false;
	req->stage_state = GDRFAB_STAGE_IDLE;
	req->gpu_iov_count = 0;
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
	return req->stage_err ? -req->stage_err : 0;
}

void gdrfab_stage_pool_fini(struct gdrfab_proto *proto)
{
	while (proto->stage_zombies) {
		struct gdrfab_stage_buf *b = proto->stage_zombies;

		proto->stage_zombies = b->next;
		for (; b->tail != b->head; b->tail++)
			gdrfab_cuda_copy_wait(
				&b->op[b->tail % GDRFAB_STAGE_OPS]);
		buf_destroy(b);
	}
	while (proto->stage_free) {
		struct gdrfab_stage_buf *b = proto->stage_free;

		proto->stage_free = b->next;
		buf_destroy(b);
	}
	proto->stage_cached = 0;
}
