/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The loopback engine (gdrfab_stage.h): bytes moved into GPU memory by the
 * NIC instead of a CUDA call, over queue pairs of an endpoint connected to
 * itself. The copy QP, in the loopback PD (no peer's QP can use the keys
 * made for it), RDMA-WRITEs a job's pieces and then READs back 1 byte of
 * the last one: the NIC's PCIe read cannot pass its writes, so the data is
 * visible to the GPU when the READ completes (as gdrfab_hmem_flush.c's
 * READ flush relies on). The flush QP, in the domain's PD, READs 1 byte of
 * GPU memory the NIC wrote for a peer (a rendezvous READ, an fi_read, a
 * peer's fi_writedata) for the same reason. Both QPs share one CQ and are
 * made when the endpoint is enabled, never on the data path. Jobs are
 * posted and left; progress polls the CQ (gdrfab_loop_engine_poll) and
 * the owner takes the jobs that ended (gdrfab_loop_engine_next_done):
 * nothing waits, and nothing here calls back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "gdrfab.h"
#include "gdrfab_hmem.h"
#include "gdrfab_stage.h"
#include "gdrfab_verbs_ops.h"

/* Work requests in flight on the copy QP: a job takes one WRITE per GPU
 * piece (at most GDRFAB_STAGE_MAX_IOV) and the READ. */
#define LOOP_SQ	  256
#define LOOP_POLL 16
/* Flush READs in flight: one per job at most; more wait in line. */
#define FLUSH_SQ 128

struct gdrfab_loop {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	/* The receive bounce buffers, registered again in the loopback PD
	 * (local read only: the WRITEs' source). */
	struct ibv_mr *rx_mr;
	/* Where the copies' READs land (their byte is never looked at). */
	struct ibv_mr *scratch_mr;
	uint64_t scratch;
	int sq_avail;
	/* Copy jobs that found the send queue full, in arrival order. */
	struct gdrfab_list waiting;
	/* The flush QP (domain PD), where its READs land, its free send
	 * slots and the jobs waiting for one. */
	struct ibv_qp *flush_qp;
	struct ibv_mr *flush_mr;
	uint64_t flush_scratch;
	int flush_avail;
	struct gdrfab_list flush_waiting;
	/* Jobs that ended, for gdrfab_loop_engine_next_done. */
	struct gdrfab_list done;
};

/* The engine and its CQ, shared by the copy and the flush QPs. */
static struct gdrfab_loop *engine_get(struct gdrfab_loop **lp,
				      struct ibv_context *ctx)
{
	struct gdrfab_loop *l = *lp;

	if (l)
		return l;
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	gdrfab_list_init(&l->waiting);
	gdrfab_list_init(&l->flush_waiting);
	gdrfab_list_init(&l->done);
	l->sq_avail = LOOP_SQ;
	l->flush_avail = FLUSH_SQ;
	l->cq = gdrfab_vops->create_cq(ctx, LOOP_SQ + FLUSH_SQ, NULL, NULL, 0);
	if (!l->cq) {
		GDRFAB_WARN(FI_LOG_EP_CTRL, "loopback CQ: %s\n",
			    strerror(errno));
		free(l);
		return NULL;
	}
	*lp = l;
	return l;
}

/* Registers a scratch word for the READs' byte, unless made already. */
static bool scratch_reg(struct ibv_mr **mr, struct ibv_pd *pd, uint64_t *word)
{
	if (!*mr)
		*mr = gdrfab_vops->reg_mr(pd, word, sizeof(*word),
					  IBV_ACCESS_LOCAL_WRITE);
	return *mr != NULL;
}

/* Makes one of the engine's QPs in pd, with the scratch word its READs
 * land in, once what it needs is there (ready) and unless made already.
 * Each piece is kept once made: a later attempt makes only what is
 * missing. 0 or -FI_ENOMEM (logged, with what the QP is for). */
static int qp_make(struct gdrfab_loop *l, struct ibv_qp **qp, bool ready,
		   struct ibv_mr **scratch_mr, uint64_t *scratch,
		   const struct gdrfab_loop_port *port, struct ibv_pd *pd,
		   int sq_depth, const char *what)
{
	if (!*qp && ready && scratch_reg(scratch_mr, pd, scratch))
		*qp = gdrfab_hmem_loop_qp(port->addr, port->num,
					  port->gid_index, pd, l->cq, sq_depth,
					  1);
	if (*qp)
		return 0;
	GDRFAB_WARN(FI_LOG_EP_CTRL, "no loopback QP for %s: %s\n", what,
		    strerror(errno));
	return -FI_ENOMEM;
}

int gdrfab_loop_engine_open_copy(struct gdrfab_loop **lp,
				 struct ibv_context *ctx,
				 const struct gdrfab_loop_port *port,
				 struct ibv_pd *loop_pd, void *rx_mem,
				 size_t rx_len)
{
	struct gdrfab_loop *l;

	if (*lp && (*lp)->qp)
		return 0;
	l = engine_get(lp, ctx);
	if (!loop_pd || !l)
		return -FI_ENOMEM;
	if (!l->rx_mr)
		l->rx_mr = gdrfab_vops->reg_mr(loop_pd, rx_mem, rx_len, 0);
	return qp_make(l, &l->qp, l->rx_mr != NULL, &l->scratch_mr, &l->scratch,
		       port, loop_pd, LOOP_SQ,
		       "eager data into GPU memory without CUDA");
}

int gdrfab_loop_engine_open_flush(struct gdrfab_loop **lp,
				  struct ibv_context *ctx,
				  const struct gdrfab_loop_port *port,
				  struct ibv_pd *pd)
{
	struct gdrfab_loop *l;

	if (*lp && (*lp)->flush_qp)
		return 0;
	l = engine_get(lp, ctx);
	if (!l)
		return -FI_ENOMEM;
	return qp_make(
		l, &l->flush_qp, true, &l->flush_mr, &l->flush_scratch, port,
		pd, FLUSH_SQ,
		"the flush READ (writes into GPU memory are then reported as failed)");
}

/* Leaves every job of a list self-linked, so that removing it again (its
 * owner freeing it) does nothing. */
static void list_abandon(struct gdrfab_list *head)
{
	while (!gdrfab_list_empty(head)) {
		struct gdrfab_list *e = head->next;

		gdrfab_list_remove(e);
		gdrfab_list_init(e);
	}
}

void gdrfab_loop_engine_close(struct gdrfab_loop **lp)
{
	struct gdrfab_loop *l = *lp;

	if (!l)
		return;
	/* The QPs first: nothing reads bounce memory or payloads after. */
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
	/* Jobs left are their owners' to free. */
	list_abandon(&l->waiting);
	list_abandon(&l->flush_waiting);
	list_abandon(&l->done);
	free(l);
	*lp = NULL;
}

bool gdrfab_loop_engine_can_copy(const struct gdrfab_loop *l)
{
	return l && l->qp;
}

uint32_t gdrfab_loop_engine_rx_lkey(const struct gdrfab_loop *l)
{
	return l->rx_mr->lkey;
}

/* A job ended: err (FI_E*, positive) for a local failure, else the
 * work completion's status. */
static void job_done(struct gdrfab_loop *l, struct gdrfab_loop_job *job,
		     int err, enum ibv_wc_status status)
{
	job->err = err;
	job->status = status;
	gdrfab_list_push_tail(&l->done, &job->entry);
}

/* Posts a job's WRITEs (unsignaled) and its READ (signaled: its
 * completion says all before it are done). False when the send queue
 * has no room yet. */
static bool copy_post(struct gdrfab_loop *l, struct gdrfab_loop_job *job)
{
	struct ibv_sge sge[GDRFAB_STAGE_MAX_IOV + 1];
	struct ibv_send_wr wr[GDRFAB_STAGE_MAX_IOV + 1], *bad;
	size_t n = job->count;
	const struct gdrfab_loop_piece *last = &job->piece[n - 1];
	int err;

	if (l->sq_avail < (int)n + 1)
		return false;
	memset(wr, 0, sizeof(wr));
	for (size_t i = 0; i <= n; i++) {
		bool read = i == n;
		const struct gdrfab_loop_piece *p =
			read ? last : &job->piece[i];

		sge[i].addr = read ? (uintptr_t)&l->scratch : (uintptr_t)p->src;
		sge[i].length = read ? 1 : p->len;
		sge[i].lkey = read ? l->scratch_mr->lkey : p->lkey;
		wr[i].wr_id = (uintptr_t)job;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
		wr[i].send_flags = read ? IBV_SEND_SIGNALED : 0;
		wr[i].wr.rdma.remote_addr = read ? p->dst + p->len - 1 : p->dst;
		wr[i].wr.rdma.rkey = p->rkey;
		wr[i].next = read ? NULL : &wr[i + 1];
	}
	err = gdrfab_vops->post_send(l->qp, wr, &bad);
	if (err) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "loopback WRITE into GPU memory: %s\n",
			    strerror(err));
		job_done(l, job, FI_EIO, IBV_WC_SUCCESS);
		return true;
	}
	l->sq_avail -= (int)n + 1;
	job->wr_posted = (int)n + 1;
	return true;
}

void gdrfab_loop_engine_copy(struct gdrfab_loop *l, struct gdrfab_loop_job *job)
{
	job->flush = false;
	if (!gdrfab_list_empty(&l->waiting) || !copy_post(l, job))
		gdrfab_list_push_tail(&l->waiting, &job->entry);
}

/* Posts a job's flush READ: 1 byte at its addr. 0, -FI_EAGAIN when the
 * send queue has no room yet, or -FI_EIO (logged). */
static int flush_post(struct gdrfab_loop *l, struct gdrfab_loop_job *job)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)&l->flush_scratch,
		.length = 1,
		.lkey = l->flush_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = (uintptr_t)job,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = {.remote_addr = job->flush_addr,
			    .rkey = job->flush_rkey},
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

int gdrfab_loop_engine_flush(struct gdrfab_loop *l, struct gdrfab_loop_job *job,
			     uint64_t addr, uint32_t rkey)
{
	int ret;

	if (!l || !l->flush_qp) {
		GDRFAB_WARN(
			FI_LOG_EP_DATA,
			"no flush QP on this endpoint (see the warning at fi_enable): the data written into GPU memory is reported as failed\n");
		return -FI_EIO;
	}
	job->flush = true;
	job->flush_addr = addr;
	job->flush_rkey = rkey;
	/* In order: a READ never overtakes one waiting before it. */
	ret = gdrfab_list_empty(&l->flush_waiting) ? flush_post(l, job)
						   : -FI_EAGAIN;
	if (ret == -FI_EAGAIN) {
		gdrfab_list_push_tail(&l->flush_waiting, &job->entry);
		return 0;
	}
	return ret;
}

void gdrfab_loop_engine_poll(struct gdrfab_loop *l)
{
	struct ibv_wc wc[LOOP_POLL];
	int n = gdrfab_vops->poll_cq(l->cq, LOOP_POLL, wc);

	for (int i = 0; i < n; i++) {
		struct gdrfab_loop_job *job = (void *)(uintptr_t)wc[i].wr_id;

		if (l->flush_qp && wc[i].qp_num == l->flush_qp->qp_num) {
			l->flush_avail++;
			if (wc[i].status != IBV_WC_SUCCESS)
				GDRFAB_WARN(
					FI_LOG_EP_DATA,
					"flush READ of GPU memory at %#llx: %s\n",
					(unsigned long long)job->flush_addr,
					ibv_wc_status_str(wc[i].status));
		} else {
			l->sq_avail += job->wr_posted;
			job->wr_posted = 0;
			if (wc[i].status != IBV_WC_SUCCESS)
				GDRFAB_WARN(
					FI_LOG_EP_DATA,
					"loopback copy into GPU memory: %s\n",
					ibv_wc_status_str(wc[i].status));
		}
		job_done(l, job, 0, wc[i].status);
	}
}

void gdrfab_loop_engine_post_waiting(struct gdrfab_loop *l)
{
	while (!gdrfab_list_empty(&l->waiting)) {
		struct gdrfab_loop_job *job = gdrfab_list_entry(
			l->waiting.next, struct gdrfab_loop_job, entry);

		gdrfab_list_remove(&job->entry);
		if (!copy_post(l, job)) {
			gdrfab_list_push_head(&l->waiting, &job->entry);
			break;
		}
	}
	while (!gdrfab_list_empty(&l->flush_waiting)) {
		struct gdrfab_loop_job *job = gdrfab_list_entry(
			l->flush_waiting.next, struct gdrfab_loop_job, entry);
		int ret;

		gdrfab_list_remove(&job->entry);
		ret = flush_post(l, job);
		if (ret == -FI_EAGAIN) {
			gdrfab_list_push_head(&l->flush_waiting, &job->entry);
			break;
		}
		if (ret)
			job_done(l, job, -ret, IBV_WC_SUCCESS);
	}
}

struct gdrfab_loop_job *gdrfab_loop_engine_next_done(struct gdrfab_loop *l)
{
	struct gdrfab_loop_job *job;

	if (gdrfab_list_empty(&l->done))
		return NULL;
	job = gdrfab_list_entry(l->done.next, struct gdrfab_loop_job, entry);
	gdrfab_list_remove(&job->entry);
	return job;
}

void gdrfab_loop_job_cancel(struct gdrfab_loop_job *job)
{
	if (job->entry.next) /* ever listed (removing self-links it) */
		gdrfab_list_remove(&job->entry);
}
