/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copies into and out of GPU memory for the protocol, behind one header:
 * staging through host memory (the copies between an application's
 * buffers and a host buffer pinned for CUDA and registered with the NIC,
 * for GPU memory the NIC cannot reach), and the loopback engine (copies
 * and flush READs by the NIC, below).
 *
 * A stage job (struct gdrfab_stage_job, embedded in whatever moves the
 * bytes: the protocol's request) holds one transfer's host buffer, the
 * application's buffers and the cursor of its copies. Its buffer comes
 * from an endpoint's pool (struct gdrfab_stage_pool), which keeps the
 * buffers between transfers and the copies in flight: a job closed before
 * its copies end leaves its buffer to the pool, which collects it once
 * they are done, so nothing waits for a copy. Copies are cut into pieces
 * of FI_GDRFAB_STAGE_CHUNK bytes (gdrfab_stage_next_piece), issued on
 * gdrfab's own CUDA streams, GDRFAB_STAGE_OPS at once per job, and
 * completed through their events, which gdrfab_stage_pool_progress polls.
 *
 * The owner of a job learns what happened by asking: after a progress
 * pass, gdrfab_stage_pool_next hands back each job that moved (more bytes
 * copied, or no copy left to run), in order. Nothing here calls back.
 *
 * cuda, where asked for: whether CUDA may be called for buffers given
 * without a descriptor and for pinning (the endpoint permits CUDA calls
 * and the domain has seen CUDA memory); without it such a buffer is host
 * memory.
 */
#ifndef GDRFAB_STAGE_H
#define GDRFAB_STAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <infiniband/verbs.h>

#include "gdrfab_addr.h"
#include "gdrfab_list.h"

/* Copies of one staged transfer in flight at once. */
#define GDRFAB_STAGE_OPS 16
/* Application buffers a job copies from or into, at most. */
#define GDRFAB_STAGE_MAX_IOV 4

struct gdrfab_stage_buf; /* a pooled host buffer (gdrfab_stage_pipe.c) */

struct gdrfab_stage_pool {
	struct ibv_pd *pd; /* where its buffers are registered */
	/* Buffers kept for reuse (cached bytes of them), and those whose
	 * job closed before their copies ended (kept until they do). */
	struct gdrfab_stage_buf *free, *zombies;
	size_t cached;
	/* Jobs with copies to run, and those that moved in this progress
	 * pass, for gdrfab_stage_pool_next. */
	struct gdrfab_list active, moved;
};

enum gdrfab_stage_state {
	GDRFAB_STAGE_IDLE,     /* nothing in flight (or nothing staged) */
	GDRFAB_STAGE_FILLING,  /* device -> staging buffer */
	GDRFAB_STAGE_DRAINING, /* staging buffer -> device */
	GDRFAB_STAGE_DRAINED,  /* done: the data is in the application's */
};

struct gdrfab_stage_job {
	/* The host buffer and its registration (lkey; when a peer accesses
	 * it, rmr, the job's own registration, whose key dies with it). */
	struct gdrfab_stage_buf *buf;
	uint8_t *host;
	struct ibv_mr *mr, *rmr;
	/* The application's buffers. */
	struct iovec iov[GDRFAB_STAGE_MAX_IOV];
	void *desc[GDRFAB_STAGE_MAX_IOV];
	size_t count;
	/* Bytes to copy, copies issued, done (a prefix: a stream runs them
	 * in order) and ready to copy (all of them when filling; what the
	 * NIC wrote when draining); the iov cursor of the next copy. */
	uint8_t state; /* enum gdrfab_stage_state */
	bool active, moved;
	int err; /* FI_E* (positive) once a copy failed */
	size_t len, issued, done, ready;
	size_t idx, ioff;
	struct gdrfab_list active_entry; /* pool->active */
	struct gdrfab_list moved_entry;	 /* pool->moved */
};

/* The GPU device of a buffer: from its descriptor, or for one given
 * without, CUDA's answer (when cuda); -1 for host memory. */
int gdrfab_stage_buf_device(const void *buf, const void *desc, bool cuda);

void gdrfab_stage_pool_init(struct gdrfab_stage_pool *pool, struct ibv_pd *pd);
/* Frees the buffers (endpoint close: waits for the copies of those whose
 * job closed before them). */
void gdrfab_stage_pool_fini(struct gdrfab_stage_pool *pool);
/* Whether progress has anything to poll. */
static inline bool gdrfab_stage_pool_busy(const struct gdrfab_stage_pool *pool)
{
	return pool->zombies || !gdrfab_list_empty(&pool->active);
}
/* Polls every copy in flight (never waiting) and issues more: jobs that
 * moved are then handed out by gdrfab_stage_pool_next. keep: buffers
 * whose copies ended go back to the cache (false: freed, the endpoint
 * closes). */
void gdrfab_stage_pool_progress(struct gdrfab_stage_pool *pool, bool keep,
				bool cuda);
/* The next job that moved in the last progress pass, taken off that list,
 * or NULL. Still copying (gdrfab_stage_job_copying): more bytes are done;
 * else its copies ended (gdrfab_stage_job_settle). */
struct gdrfab_stage_job *gdrfab_stage_pool_next(struct gdrfab_stage_pool *pool);

/* Points the job at a host buffer of len bytes for these count (at most
 * GDRFAB_STAGE_MAX_IOV) application buffers; access with a remote bit
 * also registers it for the peer. 0 or -FI_E* (logged; close the job
 * either way). */
int gdrfab_stage_job_open(struct gdrfab_stage_pool *pool,
			  struct gdrfab_stage_job *job, const struct iovec *iov,
			  void **desc, size_t count, size_t len, int access,
			  bool cuda);
/* Starts copying the application's buffers into the host buffer: true
 * when none is left to run (done, or failed: job->err), false while
 * copies run (the pool hands the job out when they end). */
bool gdrfab_stage_job_fill(struct gdrfab_stage_pool *pool,
			   struct gdrfab_stage_job *job, bool cuda);
/* Starts copying the first len bytes of the host buffer into the
 * application's: true when they are there (or failed: job->err), false
 * while copies run, after which the job settles as DRAINED. */
bool gdrfab_stage_job_drain(struct gdrfab_stage_pool *pool,
			    struct gdrfab_stage_job *job, size_t len,
			    bool cuda);
/* The NIC wrote the first landed of len bytes into the host buffer:
 * those start copying into the application's buffers. */
void gdrfab_stage_job_landed(struct gdrfab_stage_pool *pool,
			     struct gdrfab_stage_job *job, size_t len,
			     size_t landed, bool cuda);
/* Whether copies of the job are still to run. */
static inline bool gdrfab_stage_job_copying(const struct gdrfab_stage_job *job)
{
	return job->active;
}
/* Whether the bytes are not all in host memory yet (so not all may go to
 * the NIC). */
static inline bool gdrfab_stage_job_filling(const struct gdrfab_stage_job *job)
{
	return job->state == GDRFAB_STAGE_FILLING && !job->err;
}
/* A job whose copies ended: its state moves on (filled: IDLE; drained:
 * DRAINED) and the one it ended is returned. */
enum gdrfab_stage_state gdrfab_stage_job_settle(struct gdrfab_stage_job *job);
/* Ends the job: its buffer back to the pool (kept there until its copies
 * end), its own registration released. keep as for progress. */
void gdrfab_stage_job_close(struct gdrfab_stage_pool *pool,
			    struct gdrfab_stage_job *job, bool keep);

/* ---- the loopback engine (gdrfab_loop_copy.c) ----
 * Bytes moved into GPU memory the NIC reaches without a CUDA call: RDMA
 * WRITEs over a QP of the endpoint connected to itself, in the loopback
 * PD, then a 1-byte READ of the last byte written; and the flush READ of
 * GPU memory the NIC wrote (1 byte, over a second such QP in the domain's
 * PD). A job (struct gdrfab_loop_job, embedded in its owner's request) is
 * posted, or queued in order until its QP has room; gdrfab_loop_engine_poll
 * and gdrfab_loop_engine_post_waiting end jobs, which the owner then takes
 * with gdrfab_loop_engine_next_done. */
struct gdrfab_loop; /* an endpoint's engine: its CQ, QPs and queues */

struct gdrfab_loop_port {
	const struct gdrfab_addr *addr; /* the port's name */
	uint8_t num;
	int gid_index;
};

/* A piece of a copy: len bytes from src (lkey) to dst (rkey, in the
 * loopback PD). */
struct gdrfab_loop_piece {
	const void *src;
	uint32_t len, lkey;
	uint64_t dst;
	uint32_t rkey;
};

struct gdrfab_loop_job {
	struct gdrfab_list entry; /* a queue or the done list */
	bool flush;		  /* a flush READ, else a copy */
	size_t count;
	struct gdrfab_loop_piece piece[GDRFAB_STAGE_MAX_IOV];
	int wr_posted; /* the copy's work requests on the QP */
	uint64_t flush_addr;
	uint32_t flush_rkey;
	/* Once done: err (FI_E*, positive) when it could not be posted,
	 * else status, its work completion's. */
	int err;
	enum ibv_wc_status status;
};

/* Makes the copy QP (idempotent; the receive bounce buffers rx_mem are
 * registered in loop_pd as the WRITEs' source). 0 or -FI_E* (logged). */
int gdrfab_loop_engine_open_copy(struct gdrfab_loop **lp,
				 struct ibv_context *ctx,
				 const struct gdrfab_loop_port *port,
				 struct ibv_pd *loop_pd, void *rx_mem,
				 size_t rx_len);
/* Makes the flush QP in pd (idempotent). 0 or -FI_E* (logged). */
int gdrfab_loop_engine_open_flush(struct gdrfab_loop **lp,
				  struct ibv_context *ctx,
				  const struct gdrfab_loop_port *port,
				  struct ibv_pd *pd);
/* Frees the engine; its jobs are left to their owners, unlinked. */
void gdrfab_loop_engine_close(struct gdrfab_loop **lp);
bool gdrfab_loop_engine_can_copy(const struct gdrfab_loop *l);
/* The lkey of the receive bounce buffers in the loopback PD. */
uint32_t gdrfab_loop_engine_rx_lkey(const struct gdrfab_loop *l);
/* Posts the copy of the job's count (>= 1) pieces, or queues it; a post
 * that fails ends the job at once (err FI_EIO, logged). */
void gdrfab_loop_engine_copy(struct gdrfab_loop *l,
			     struct gdrfab_loop_job *job);
/* Posts the job's flush READ of 1 byte at addr (rkey in the domain's PD),
 * or queues it: 0, or -FI_EIO (logged; nothing posted, the job not
 * listed). */
int gdrfab_loop_engine_flush(struct gdrfab_loop *l, struct gdrfab_loop_job *job,
			     uint64_t addr, uint32_t rkey);
/* Ends the jobs whose work completions arrived (never waiting). */
void gdrfab_loop_engine_poll(struct gdrfab_loop *l);
/* Posts queued jobs as far as the QPs have room; a flush READ that fails
 * to post ends its job (err FI_EIO). */
void gdrfab_loop_engine_post_waiting(struct gdrfab_loop *l);
/* The next job that ended, in order, or NULL. */
struct gdrfab_loop_job *gdrfab_loop_engine_next_done(struct gdrfab_loop *l);
/* Takes a job its owner frees off whatever list still holds it. */
void gdrfab_loop_job_cancel(struct gdrfab_loop_job *job);

/* The next copy of a staged transfer whose host buffer holds the iovec's
 * bytes back to back: it starts at host offset off, which is byte *ioff
 * of iov[*idx], and ends at the next multiple of chunk, at the end of
 * that iovec entry, or at limit, whichever comes first. Advances *idx and
 * *ioff past it (skipping empty entries) and returns its length: 0 when
 * off has reached limit or the iovec's end. Pure arithmetic
 * (gdrfab_stage_sched.c), checked by unit tests without CUDA or a NIC. */
size_t gdrfab_stage_next_piece(const struct iovec *iov, size_t count,
			       size_t *idx, size_t *ioff, size_t off,
			       size_t limit, size_t chunk);

/* The grid a transfer's piece starting at host offset off is cut on: one
 * chunk for its first two chunks, so that its first bytes move (and reach
 * the wire) soon, then doubling up to GDRFAB_STAGE_GROW chunks once as
 * many bytes went before. A copy costs the engine a few microseconds of
 * its own: on an H200, 1 MiB pieces moved 0.88-0.94x of one copy's
 * throughput at 4 MiB and more, 4 MiB pieces 0.97-1.00x. Every grid
 * divides the offsets it starts at, so pieces still end on the chunk
 * grid. Pure arithmetic, like gdrfab_stage_next_piece. */
#define GDRFAB_STAGE_GROW 4
size_t gdrfab_stage_piece_grid(size_t off, size_t chunk);

#endif /* GDRFAB_STAGE_H */
