/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The one place a request ends.
 *
 * Life of a request:
 *  1. gdrfab_req_alloc takes it from the registered slab (proto->live).
 *  2. The application's call (or the protocol, for control messages,
 *     rendezvous READs, GPU steps) fills it and submits it: it waits in
 *     its connection's pending list, is posted in pieces (gdrfab_post.c),
 *     may wait in rndv_wait for a FIN, in atomic_hold for its turn, or on
 *     the staging lists for its copies.
 *  3. Whatever learns that it is over (its last work completion, a FIN,
 *     an ATOMIC_RESP, a failed connection, a delivered message, a
 *     cancel) only marks it: gdrfab_req_fail sets the error,
 *     gdrfab_req_report_* records a receive-side report, and
 *     gdrfab_req_finish takes it off its list and queues it on
 *     proto->finished. A request is queued once: a second end (the
 *     failed connection and the flushed work request both ending it) is
 *     ignored, instead of freeing it twice.
 *  4. gdrfab_req_drain, from progress after each event and from the end
 *     of each application call into the protocol (never from inside a
 *     completion path, so no caller holds a request it frees), takes the
 *     queue in order. For a transmit request it runs the last steps
 *     the features that started it added (gdrfab_req_add_step: copy out
 *     of staging, the target's FIN of an emulated RMA, the GPU flush of
 *     a read, an atomic's fetched values, the RMA event owed to the peer
 *     first), any of which may park the request until its own
 *     completion queues it again; then it writes the report (CQ entry,
 *     counter) and frees the request with what it held (registrations,
 *     bounce buffer, staging buffer, connection reference, the receive a
 *     rendezvous READ or GPU step filled).
 *  5. gdrfab_req_free returns it to the slab. Called elsewhere only for a
 *     request that never started, and at close.
 */
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_conn.h"
#include "gdrfab_gpu.h"
#include "gdrfab_hmem.h"
#include "gdrfab_host_cache.h"
#include "gdrfab_proto.h"
#include "gdrfab_req.h"

void gdrfab_req_free(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	for (size_t i = 0; i < GDRFAB_MAX_IOV; i++) {
		if (req->tmp_reg[i])
			gdrfab_reg_put(&proto->env.hmem->cache,
				       req->tmp_reg[i]);
	}
	if (req->txbuf)
		gdrfab_txbuf_free(proto, req->txbuf);
	/* A message-borne atomic that ends unanswered (failed) no longer
	 * holds back the NIC atomics after it. */
	if (req->atomic_counted)
		gdrfab_conn_atomic_answered(req);
	if (req->staged || req->stage.count)
		gdrfab_stage_free(proto, req);
	if (req->op == GDRFAB_OP_GPU_RX)
		gdrfab_loop_req_free(proto, req);
	if (req->conn)
		gdrfab_conn_put(req->conn);
	gdrfab_list_remove(&req->entry);
	gdrfab_list_remove(&req->live);
	gdrfab_list_remove(&req->finish_entry);
	req->finish_queued = false;
	/* Last freed, first taken: a message loop then reuses the one or
	 * two requests still in the cache (and in the TLB), instead of
	 * cycling through all of them and clearing a cold one each time. */
	gdrfab_list_push_head(&proto->free_reqs, &req->entry);
	proto->req_free_cnt++;
}

void gdrfab_req_resume_finish(struct gdrfab_proto *proto,
			      struct gdrfab_req *req, int err, int prov_errno)
{
	(void)err, (void)prov_errno;
	gdrfab_req_finish(proto, req);
}

void gdrfab_req_finish(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	if (req->finish_queued)
		return;
	req->finish_queued = true;
	gdrfab_list_remove(&req->entry);
	gdrfab_list_push_tail(&proto->finished, &req->finish_entry);
	gdrfab_proto_wake(proto);
}

void gdrfab_req_fail(struct gdrfab_proto *proto, struct gdrfab_req *req,
		     int err, int prov_errno)
{
	if (!req->error) {
		req->error = err;
		req->prov_errno = prov_errno;
	}
	req->fully_posted = true;
	if (!req->wr_pending)
		gdrfab_req_finish(proto, req);
}

static void write_report(struct gdrfab_proto *proto,
			 const struct gdrfab_report *r)
{
	if (!proto->closing && r->kind != GDRFAB_REPORT_NONE)
		proto->ops->report(proto->env.ep, r);
}

/* r may already be req->report (gdrfab_req_report_rx writes it there). */
static void report(struct gdrfab_proto *proto, struct gdrfab_req *req,
		   bool last, const struct gdrfab_report *r)
{
	if (!last) {
		write_report(proto, r);
		return;
	}
	if (r != &req->report)
		req->report = *r;
	req->has_report = true;
	gdrfab_req_finish(proto, req);
}

/* The common report, a receive's last, is written where it is kept, not
 * built and copied there. */
void gdrfab_req_report_rx(struct gdrfab_proto *proto, struct gdrfab_req *req,
			  bool last, uint64_t flags, size_t len, void *buf,
			  uint64_t data, uint64_t tag, fi_addr_t src)
{
	struct gdrfab_report now;
	struct gdrfab_report *r = last ? &req->report : &now;

	/* Field by field: a compound literal clears the whole report with
	 * `rep stosq` first, and every field is set here anyway. */
	r->kind = GDRFAB_REPORT_RX;
	r->rx = false;
	r->silent = false;
	r->context = req->context;
	r->flags = flags;
	r->op_flags = 0;
	r->len = len;
	r->olen = 0;
	r->buf = buf;
	r->data = data;
	r->tag = tag;
	r->src = src;
	r->err = 0;
	r->prov_errno = 0;
	report(proto, req, last, r);
}

void gdrfab_req_report_error(struct gdrfab_proto *proto, struct gdrfab_req *req,
			     bool last, uint64_t flags, size_t len, size_t olen,
			     void *buf, uint64_t data, uint64_t tag, int err,
			     int prov_errno)
{
	struct gdrfab_report r = {
		.kind = GDRFAB_REPORT_ERROR,
		.rx = true,
		.context = req->context,
		.flags = flags,
		.len = len,
		.olen = olen,
		.buf = buf,
		.data = data,
		.tag = tag,
		.err = err,
		.prov_errno = prov_errno,
	};

	report(proto, req, last, &r);
}

void gdrfab_req_end_silent(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	struct gdrfab_report r = {.kind = GDRFAB_REPORT_NONE};

	report(proto, req, true, &r);
}

void gdrfab_report_remote_data(struct gdrfab_proto *proto, uint64_t flags,
			       size_t len, uint64_t data,
			       struct gdrfab_conn *conn)
{
	struct gdrfab_report r = {
		.kind = GDRFAB_REPORT_RX,
		.flags = flags,
		.len = len,
		.data = data,
	};

	if (proto->closing)
		return;
	r.src = gdrfab_conn_fi_addr(conn);
	write_report(proto, &r);
}

void gdrfab_report_remote_error(struct gdrfab_proto *proto, uint64_t flags,
				size_t len, uint64_t data, int err)
{
	struct gdrfab_report r = {
		.kind = GDRFAB_REPORT_ERROR,
		.rx = true,
		.flags = flags,
		.len = len,
		.data = data,
		.err = err,
	};

	if (!proto->closing)
		write_report(proto, &r);
}

void gdrfab_report_rma_event(struct gdrfab_proto *proto, bool read, uint64_t n)
{
	if (!proto->closing)
		proto->ops->rma_event(proto->env.ep, read, n);
}

/* The last steps of a transmit-side request (and of a rendezvous READ that
 * failed), those the features that started it added, in the order of
 * their kinds: false when one of them parks it until its own completion
 * ends it again. A step that is done (or failed) is not called again; a
 * parked one is, from the top, when the request comes back. */
static bool last_steps(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	while (req->steps) {
		unsigned kind = (unsigned)__builtin_ctz(req->steps);
		int err = req->step_fn[kind](proto, req);

		if (err == -FI_EINPROGRESS)
			return false;
		req->steps &= (uint8_t) ~(1u << kind);
		if (err && !req->error)
			req->error = -err;
	}
	return true;
}

/* What a transmit-side request reports, from its state. */
static void tx_report(const struct gdrfab_req *req, struct gdrfab_report *r)
{
	memset(r, 0, sizeof(*r));
	if (req->emu_target || req->op == GDRFAB_OP_CTRL) {
		r->kind = GDRFAB_REPORT_NONE;
	} else if (req->error) {
		/* A rendezvous READ carries its receive's context, flags and
		 * tag; a receive failed with its connection (one a message
		 * was filling in pieces) its own. */
		r->kind = GDRFAB_REPORT_ERROR;
		r->rx = req->op == GDRFAB_OP_RNDV_READ ||
			req->op == GDRFAB_OP_RECV;
		r->context = req->context;
		r->flags = req->cq_flags;
		r->tag = req->tag;
		r->err = req->error;
		r->prov_errno = req->prov_errno;
	} else if (req->op != GDRFAB_OP_RNDV_READ) {
		r->kind = GDRFAB_REPORT_TX;
		r->context = req->context;
		r->flags = req->cq_flags;
		r->op_flags = req->op_flags;
		r->silent = req->silent;
	} else {
		r->kind = GDRFAB_REPORT_NONE;
	}
}

static void finish_one(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	struct gdrfab_report r;

	if (req->has_report) {
		write_report(proto, &req->report);
	} else {
		if (!last_steps(proto, req))
			return;
		tx_report(req, &r);
		write_report(proto, &r);
	}
	if (req->parent && gdrfab_req_fills_receive(req)) {
		gdrfab_req_free(proto, req->parent);
	} else if (req->op == GDRFAB_OP_CTRL && req->parent) {
		/* The event is sent (or failed with its connection, which
		 * the RMA's data had reached already): the RMA completes. */
		gdrfab_req_finish(proto, req->parent);
	}
	req->parent = NULL;
	gdrfab_req_free(proto, req);
}

void gdrfab_req_drain_queue(struct gdrfab_proto *proto)
{
	while (!gdrfab_list_empty(&proto->finished)) {
		struct gdrfab_req *req = gdrfab_list_entry(
			proto->finished.next, struct gdrfab_req, finish_entry);

		gdrfab_list_remove(&req->finish_entry);
		req->finish_queued = false;
		finish_one(proto, req);
	}
}
