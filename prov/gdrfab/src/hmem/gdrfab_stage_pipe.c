/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The staged path's pipeline (gdrfab_stage.h): GPU memory the NIC cannot
 * reach moves through host buffers pinned for CUDA and registered with the
 * NIC, kept per endpoint for reuse. Copies are cut into pieces of
 * FI_GDRFAB_STAGE_CHUNK bytes, growing to four chunks once a transfer is
 * under way (gdrfab_stage_piece_grid), enqueued asynchronously on gdrfab's own
 * streams (GDRFAB_STAGE_OPS at once per job) and completed through their
 * CUDA events, which progress polls: nothing waits for a copy. What a job's
 * bytes are for (a send, a write posted piece by piece as its copies end,
 * a receive or read copied out when the NIC is done) is its owner's
 * business: the pool only says which jobs moved.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "gdrfab.h"
#include "gdrfab_cuda.h"
#include "gdrfab_mr_desc.h"
#include "gdrfab_params.h"
#include "gdrfab_stage.h"
#include "gdrfab_verbs_ops.h"

/* Staging bytes an endpoint keeps between transfers. */
#define STAGE_CACHE_BYTES (256UL << 20)

/* A host buffer for staged GPU transfers: pinned for CUDA and registered
 * with the NIC (local access only: a peer's access goes through a
 * registration of the job's own), kept by the pool for reuse. The copies
 * into or out of it in flight live here, not in the job, so that a job
 * closed before its copies end leaves them to progress (pool->zombies)
 * instead of waiting. */
struct gdrfab_stage_buf {
	struct gdrfab_stage_buf *next; /* pool->free or pool->zombies */
	uint8_t *mem;
	size_t cap;
	struct ibv_mr *mr;
	bool pinned;
	struct gdrfab_cuda_op op[GDRFAB_STAGE_OPS];
	size_t op_len[GDRFAB_STAGE_OPS];
	unsigned head, tail; /* ops issued, ops done */
};

void gdrfab_stage_pool_init(struct gdrfab_stage_pool *pool, struct ibv_pd *pd)
{
	memset(pool, 0, sizeof(*pool));
	pool->pd = pd;
	gdrfab_list_init(&pool->active);
	gdrfab_list_init(&pool->moved);
}

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
static void buf_pin(struct gdrfab_stage_buf *b, bool cuda)
{
	if (b->pinned || !cuda)
		return;
	b->pinned = !gdrfab_cuda_host_register(b->mem, b->cap);
}

static struct gdrfab_stage_buf *buf_get(struct gdrfab_stage_pool *pool,
					size_t len, bool cuda)
{
	size_t cap = buf_class(len);
	struct gdrfab_stage_buf **pp, *b;

	for (pp = &pool->free; *pp; pp = &(*pp)->next) {
		if ((*pp)->cap == cap) {
			b = *pp;
			*pp = b->next;
			pool->cached -= b->cap;
			b->next = NULL;
			buf_pin(b, cuda);
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
	b->mr = gdrfab_vops->reg_mr(pool->pd, b->mem, cap,
				    IBV_ACCESS_LOCAL_WRITE);
	if (!b->mr) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "registering a %zu-byte staging buffer: %s\n", cap,
			    strerror(errno));
		free(b->mem);
		free(b);
		return NULL;
	}
	buf_pin(b, cuda);
	return b;
}

/* Back to the pool's cache, or freed beyond its size. */
static void buf_put(struct gdrfab_stage_pool *pool, struct gdrfab_stage_buf *b,
		    bool keep)
{
	b->head = b->tail = 0;
	if (!keep || pool->cached + b->cap > STAGE_CACHE_BYTES) {
		buf_destroy(b);
		return;
	}
	b->next = pool->free;
	pool->free = b;
	pool->cached += b->cap;
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

int gdrfab_stage_buf_device(const void *buf, const void *desc, bool cuda)
{
	struct gdrfab_cuda_ptr p;

	if (desc)
		return gdrfab_mr_device(desc);
	/* Without CUDA calls, no descriptor means host memory (FI_MR_HMEM:
	 * GPU memory comes with its descriptor). */
	if (!cuda || gdrfab_cuda_classify(buf, &p) ||
	    p.kind != GDRFAB_MEM_CUDA_DEVICE)
		return -1;
	return p.device;
}

/* Issues copies of ready bytes while the ring has room. */
static void pump(struct gdrfab_stage_job *job, bool cuda)
{
	struct gdrfab_stage_buf *b = job->buf;
	bool to_host = job->state == GDRFAB_STAGE_FILLING;

	while (!job->err && b->head - b->tail < GDRFAB_STAGE_OPS) {
		size_t i, ioff;
		size_t n = gdrfab_stage_next_piece(
			job->iov, job->count, &job->idx, &job->ioff,
			job->issued, job->ready,
			gdrfab_stage_piece_grid(job->issued,
						gdrfab_params.stage_chunk));
		unsigned slot = b->head % GDRFAB_STAGE_OPS;
		uint8_t *host = b->mem + job->issued;
		uint8_t *app;
		int dev;

		if (!n)
			break;
		/* next_piece skipped empty entries: the piece is in the
		 * entry it now points at. */
		i = job->idx;
		ioff = job->ioff - n;
		app = (uint8_t *)job->iov[i].iov_base + ioff;
		dev = gdrfab_stage_buf_device(job->iov[i].iov_base,
					      job->desc[i], cuda);
		b->op[slot].event = NULL;
		b->op_len[slot] = n;
		if (dev < 0) {
			/* Host memory among GPU buffers (or an inject). */
			memcpy(to_host ? host : app, to_host ? app : host, n);
		} else if (gdrfab_cuda_copy_start(to_host ? (void *)host : app,
						  to_host ? app : host, n, dev,
						  to_host, &b->op[slot])) {
			job->err = FI_EIO;
			break;
		}
		b->head++;
		job->issued += n;
	}
}

/* Polls the job's copies and issues more: true when none is left to run
 * (all done, or failed and the rest drained). */
static bool advance(struct gdrfab_stage_job *job, bool cuda)
{
	struct gdrfab_stage_buf *b = job->buf;

	if (!buf_poll(b, &job->done) && !job->err)
		job->err = FI_EIO;
	pump(job, cuda);
	if (job->err)
		return b->tail == b->head;
	return job->done == job->len;
}

/* A job's membership of one of the pool's lists, flagged in the job so
 * that adding twice or removing what is not there does nothing. */
static void list_in(struct gdrfab_list *head, struct gdrfab_list *e, bool *on)
{
	if (!*on) {
		gdrfab_list_push_tail(head, e);
		*on = true;
	}
}

static void list_out(struct gdrfab_list *e, bool *on)
{
	if (*on) {
		gdrfab_list_remove(e);
		*on = false;
	}
}

/* Copies to run: polled by progress. */
static void active_add(struct gdrfab_stage_pool *pool,
		       struct gdrfab_stage_job *job)
{
	list_in(&pool->active, &job->active_entry, &job->active);
}

/* To be handed out once this progress pass has polled every copy. */
static void moved_add(struct gdrfab_stage_pool *pool,
		      struct gdrfab_stage_job *job)
{
	list_in(&pool->moved, &job->moved_entry, &job->moved);
}

int gdrfab_stage_job_open(struct gdrfab_stage_pool *pool,
			  struct gdrfab_stage_job *job, const struct iovec *iov,
			  void **desc, size_t count, size_t len, int access,
			  bool cuda)
{
	if (count > GDRFAB_STAGE_MAX_IOV)
		return -FI_EINVAL;
	/* The application's buffers, to copy back into at the end. */
	job->count = count;
	for (size_t i = 0; i < count; i++) {
		job->iov[i] = iov[i];
		job->desc[i] = desc ? desc[i] : NULL;
	}
	job->len = len;
	if (!len)
		return 0;
	job->buf = buf_get(pool, len, cuda);
	if (!job->buf)
		return -FI_ENOMEM;
	job->host = job->buf->mem;
	job->mr = job->buf->mr;
	if (access & (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE)) {
		/* The peer's key is this job's alone: a peer that kept it
		 * cannot reach the buffer once it serves another. */
		job->rmr = gdrfab_vops->reg_mr(pool->pd, job->host, len,
					       access | IBV_ACCESS_LOCAL_WRITE);
		if (!job->rmr) {
			GDRFAB_WARN(
				FI_LOG_EP_DATA,
				"registering a %zu-byte staging buffer for the peer: %s\n",
				len, strerror(errno));
			return gdrfab_errno_to_fi(errno);
		}
		job->mr = job->rmr;
	}
	return 0;
}

bool gdrfab_stage_job_fill(struct gdrfab_stage_pool *pool,
			   struct gdrfab_stage_job *job, bool cuda)
{
	job->state = GDRFAB_STAGE_FILLING;
	job->ready = job->len;
	if (advance(job, cuda)) {
		/* Done at once (host memory, gdrfab.ko) or refused. */
		job->state = GDRFAB_STAGE_IDLE;
		return true;
	}
	active_add(pool, job);
	return false;
}

/* Starts (or goes on) copying the host buffer into the application's, up
 * to ready of len bytes. */
static void drain_start(struct gdrfab_stage_job *job, size_t len)
{
	if (job->state != GDRFAB_STAGE_DRAINING) {
		job->state = GDRFAB_STAGE_DRAINING;
		job->issued = job->done = 0;
		job->idx = job->ioff = 0;
	}
	job->len = len;
}

void gdrfab_stage_job_landed(struct gdrfab_stage_pool *pool,
			     struct gdrfab_stage_job *job, size_t len,
			     size_t landed, bool cuda)
{
	if (job->state == GDRFAB_STAGE_DRAINED ||
	    !job->buf) /* a read of 0 bytes */
		return;
	drain_start(job, len);
	job->ready = landed < job->len ? landed : job->len;
	pump(job, cuda);
	active_add(pool, job);
}

bool gdrfab_stage_job_drain(struct gdrfab_stage_pool *pool,
			    struct gdrfab_stage_job *job, size_t len, bool cuda)
{
	if (job->state == GDRFAB_STAGE_DRAINED)
		return true;
	drain_start(job, len);
	job->ready = job->len;
	if (!job->len || advance(job, cuda)) {
		job->state = GDRFAB_STAGE_DRAINED;
		return true;
	}
	active_add(pool, job);
	return false;
}

enum gdrfab_stage_state gdrfab_stage_job_settle(struct gdrfab_stage_job *job)
{
	enum gdrfab_stage_state was = job->state;

	job->state = was == GDRFAB_STAGE_DRAINING ? GDRFAB_STAGE_DRAINED
						  : GDRFAB_STAGE_IDLE;
	return was;
}

void gdrfab_stage_pool_progress(struct gdrfab_stage_pool *pool, bool keep,
				bool cuda)
{
	struct gdrfab_stage_buf **pp = &pool->zombies;
	struct gdrfab_list *it, *tmp;

	while (*pp) {
		struct gdrfab_stage_buf *b = *pp;

		buf_poll(b, NULL);
		if (b->tail == b->head) {
			*pp = b->next;
			buf_put(pool, b, keep);
		} else {
			pp = &b->next;
		}
	}
	gdrfab_list_for_each_safe (&pool->active, it, tmp) {
		struct gdrfab_stage_job *job = gdrfab_list_entry(
			it, struct gdrfab_stage_job, active_entry);
		size_t before = job->done;

		if (advance(job, cuda)) {
			list_out(&job->active_entry, &job->active);
			moved_add(pool, job);
		} else if (job->done != before) {
			moved_add(pool, job);
		}
	}
}

struct gdrfab_stage_job *gdrfab_stage_pool_next(struct gdrfab_stage_pool *pool)
{
	struct gdrfab_stage_job *job;

	if (gdrfab_list_empty(&pool->moved))
		return NULL;
	job = gdrfab_list_entry(pool->moved.next, struct gdrfab_stage_job,
				moved_entry);
	list_out(&job->moved_entry, &job->moved);
	return job;
}

void gdrfab_stage_job_close(struct gdrfab_stage_pool *pool,
			    struct gdrfab_stage_job *job, bool keep)
{
	struct gdrfab_stage_buf *b = job->buf;

	list_out(&job->active_entry, &job->active);
	list_out(&job->moved_entry, &job->moved);
	if (job->rmr)
		gdrfab_vops->dereg_mr(job->rmr);
	if (b) {
		buf_poll(b, NULL);
		if (b->tail != b->head) {
			/* Copies still run into or out of it. */
			b->next = pool->zombies;
			pool->zombies = b;
		} else {
			buf_put(pool, b, keep);
		}
	}
	job->buf = NULL;
	job->rmr = NULL;
	job->mr = NULL;
	job->host = NULL;
	job->state = GDRFAB_STAGE_IDLE;
	job->count = 0;
}

void gdrfab_stage_pool_fini(struct gdrfab_stage_pool *pool)
{
	while (pool->zombies) {
		struct gdrfab_stage_buf *b = pool->zombies;

		pool->zombies = b->next;
		for (; b->tail != b->head; b->tail++)
			gdrfab_cuda_copy_wait(
				&b->op[b->tail % GDRFAB_STAGE_OPS]);
		buf_destroy(b);
	}
	while (pool->free) {
		struct gdrfab_stage_buf *b = pool->free;

		pool->free = b->next;
		buf_destroy(b);
	}
	pool->cached = 0;
}
