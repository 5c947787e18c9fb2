/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A request and its end: what a work request id points at, the request
 * (common part, then a part per role), what the code asks of one, how
 * one is made, posted (gdrfab_post.c) and finished (gdrfab_finish.c, which
 * tells the life of a request), and the receive buffers going back to the
 * SRQ (gdrfab_rxbuf.c). A feature that starts a request adds its last
 * steps (gdrfab_req_add_step) and, for its asynchronous steps, its
 * continuation (req->resume); the core names no feature.
 */
#ifndef GDRFAB_REQ_H
#define GDRFAB_REQ_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <infiniband/verbs.h>
#include <rdma/fabric.h>

#include "gdrfab_list.h"
#include "gdrfab_proto.h"
#include "gdrfab_stage.h"
#include "gdrfab_wire.h"

struct gdrfab_conn;
struct gdrfab_reg;

/* ---- what a work request id points at ---- */
enum gdrfab_wr_kind {
	GDRFAB_WR_REQ = 1, /* a gdrfab_req: send, RMA, READ or FIN */
	GDRFAB_WR_RXBUF,   /* a receive bounce buffer (SRQ) */
	GDRFAB_WR_ITX,	   /* an eager send posted at once (gdrfab_itx) */
};

struct gdrfab_wr_ctx {
	uint8_t kind;
};

/* A receive bounce buffer posted to the endpoint's SRQ. */
struct gdrfab_rxbuf {
	struct gdrfab_wr_ctx wr;
	uint8_t *data;
	struct gdrfab_rxbuf *next_repost; /* in proto->repost_head */
};

/* A transmit bounce buffer: header and eager payload, registered. */
struct gdrfab_txbuf {
	struct gdrfab_txbuf *next_free;
	uint8_t *data;
};

enum gdrfab_op {
	GDRFAB_OP_SEND,	     /* fi_send/fi_tsend family */
	GDRFAB_OP_WRITE,     /* fi_write family */
	GDRFAB_OP_READ,	     /* fi_read family */
	GDRFAB_OP_RNDV_READ, /* receiver pulling a rendezvous message */
	GDRFAB_OP_CTRL,	     /* FIN or NOP: a header from the ctrl area */
	GDRFAB_OP_RECV,	     /* a posted receive (not on a QP) */
	GDRFAB_OP_GPU_RX,    /* an eager message's bytes moving into GPU
			      * memory, asynchronously (gdrfab_gpu_rx.c) */
	/* An atomic the NIC executes: its result lands in ctrl. */
	GDRFAB_OP_NIC_ATOMIC,
};

/* Room in every request for a header and rendezvous segments, inside the
 * registered request slab, so control messages need no bounce buffer. */
#define GDRFAB_CTRL_SIZE                                                       \
	(sizeof(struct gdrfab_pkt_hdr) +                                       \
	 GDRFAB_IOV_LIMIT * sizeof(struct gdrfab_rndv_seg) +                   \
	 GDRFAB_IOV_LIMIT * (GDRFAB_CM_RAILS_MAX - 1) * sizeof(uint32_t))

#define GDRFAB_MAX_IOV GDRFAB_IOV_LIMIT

/* A staged request's buffers are its stage job's. */
_Static_assert(GDRFAB_MAX_IOV <= GDRFAB_STAGE_MAX_IOV,
	       "a request's iovec fits its stage job");

/* What an ended request (or a peer's RMA aimed at this endpoint) tells
 * the application: one CQ entry and counter update, written only when the
 * request's finishing runs (gdrfab_finish.c). */
enum gdrfab_report_kind {
	GDRFAB_REPORT_NONE,  /* nothing: control, an emulated RMA's target */
	GDRFAB_REPORT_TX,    /* success of a send, RMA or atomic */
	GDRFAB_REPORT_RX,    /* success of a receive, remote CQ data */
	GDRFAB_REPORT_ERROR, /* failure of either side (rx says which) */
};

struct gdrfab_report {
	enum gdrfab_report_kind kind;
	bool rx;     /* ERROR: the receive side's CQ and counter */
	bool silent; /* TX: fi_inject*: the counter only */
	void *context;
	uint64_t flags;	   /* the CQ entry's flags */
	uint64_t op_flags; /* TX: the application's (FI_COMPLETION) */
	size_t len, olen;
	void *buf;
	uint64_t data, tag;
	fi_addr_t src;
	int err, prov_errno; /* ERROR: FI_E* (positive), provider's */
};

/* The last steps a transmit-side request may take before its report, in
 * the order they run (gdrfab_finish.c runs those its request holds, and
 * names none). The feature that starts a request adds its step
 * (gdrfab_req_add_step); a request without one (an eager send) takes
 * none, at the cost of one test. */
enum gdrfab_req_step {
	GDRFAB_STEP_STAGE_OUT,	   /* an fi_read's bytes out of staging */
	GDRFAB_STEP_EMU_TARGET,	   /* the target's FIN of an emulated RMA */
	GDRFAB_STEP_FLUSH,	   /* an fi_read into GPU memory, visible */
	GDRFAB_STEP_ATOMIC_RESULT, /* an atomic's fetched values */
	GDRFAB_STEP_RMA_EVENT,	   /* the RMA event owed to the peer first */
	GDRFAB_STEP_COUNT,
};

struct gdrfab_proto;
struct gdrfab_req;
/* A last step: 0 (done, or nothing to do for this request),
 * -FI_EINPROGRESS (it parks the request: whatever it waits for finishes
 * the request again, and the step is called again), or -FI_E* (the
 * request's error; the later steps still run and see it). */
typedef int (*gdrfab_req_step_fn)(struct gdrfab_proto *proto,
				  struct gdrfab_req *req);

/* One operation of the protocol: the application's send, receive, RMA or
 * atomic, or one of the protocol's own (control message, rendezvous READ,
 * GPU step). The common part first, then a part per role; the roles'
 * fields keep their names (anonymous members), and where roles exclude
 * each other they share room (a union). The small predicates after it
 * name the tests the code makes on them. gdrfab_finish.c tells the life
 * of a request. */
struct gdrfab_req {
	/* ---- common: every request ---- */
	struct gdrfab_wr_ctx wr;
	enum gdrfab_op op;
	/* What goes on when an asynchronous step of its own ends (copies,
	 * a flush READ, its rendezvous READ's data): set by the unit that
	 * made the request (a GPU step, a rendezvous READ), else
	 * gdrfab_req_resume_finish (set at allocation). */
	void (*resume)(struct gdrfab_proto *proto, struct gdrfab_req *req,
		       int err, int prov_errno);
	struct gdrfab_conn *conn;
	void *context;
	uint64_t cq_flags; /* FI_SEND|FI_TAGGED, FI_RECV|FI_MSG, ... */
	uint64_t op_flags; /* the application's flags (FI_COMPLETION...) */
	fi_addr_t addr;	   /* peer (send/RMA) or source filter (recv) */
	struct iovec iov[GDRFAB_MAX_IOV];
	void *desc[GDRFAB_MAX_IOV];
	uint32_t lkey[GDRFAB_MAX_IOV];
	/* Host memory without a usable descriptor: from the host cache
	 * (or registered for this op only), released when the op ends. */
	struct gdrfab_reg *tmp_reg[GDRFAB_MAX_IOV];
	size_t iov_count;
	size_t len;
	uint64_t tag, ignore, data;
	/* RMA target, or rendezvous source segments (RNDV_READ). */
	struct gdrfab_rndv_seg rseg[GDRFAB_MAX_IOV];
	size_t rseg_count;
	/* Posting progress: bytes posted so far, cursors into iov/rseg. */
	size_t posted, liov, loff, riov, roff;
	bool fully_posted;
	int wr_pending;
	int error; /* FI_E* (positive) once failed */
	int prov_errno;
	struct gdrfab_txbuf *txbuf;
	bool silent;	 /* fi_inject*: no CQ entry */
	uint64_t msg_id; /* RNDV/FIN cookie */
	size_t ctrl_len; /* bytes of ctrl to send (CTRL, RNDV) */
	/* RNDV_READ, GPU_RX: the receive it fills (freed with it); CTRL:
	 * the RMA whose event (GDRFAB_PKT_RMA_EVENT) it carries, completed
	 * when it is sent. */
	struct gdrfab_req *parent;
	struct gdrfab_list entry; /* pending, rndv_wait, posted lists */
	struct gdrfab_list live;  /* proto->live: freed at close */
	/* Ended, waiting in proto->finished for gdrfab_req_drain; with
	 * has_report, what it reports was decided where it ended (receive
	 * side), else its finishing works it out (transmit side). */
	bool finish_queued, has_report;
	struct gdrfab_report report;
	struct gdrfab_list finish_entry;

	/* ---- eager and rendezvous messages (SEND) ---- */
	struct {
		bool rndv; /* waits for a FIN (rendezvous, emulated RMA) */
		bool inline_data; /* header + iov sent inline, no copy */
		/* The header from ctrl, the payload gathered by the NIC
		 * from the application's registered (GPU) buffers, lkeys
		 * in lkey[]. */
		bool gather;
		bool fin_received;
		/* txbuf holds the message alone (an eager send's copy):
		 * free once the peer acked it, not kept until the FIN of a
		 * delivery ACK or an emulated write (gdrfab_post.c). */
		bool txbuf_msg_only;
		/* Its header asked for a delivery ACK
		 * (GDRFAB_PKT_DELIVERY_ACK): fi_cancel may end it while it
		 * waits for the FIN (gdrfab_send_cancel). */
		bool delivery_ack;
		/* A segmented eager message (gdrfab_seg.h): its header from
		 * ctrl, then its pieces gathered by the NIC from the
		 * application's registered buffers (lkey[]); posted counts
		 * the bytes sent, liov and loff its place in iov. */
		bool seg;
	};

	/* ---- receive side (RECV, RNDV_READ, GPU_RX) ---- */
	struct {
		size_t multi_off; /* multi-receive: bytes consumed */
		size_t recv_len;  /* RNDV_READ, GPU_RX: bytes that fit */
		/* RECV: every buffer came with a descriptor of host memory
		 * (classified when posted; the copy still checks each). */
		bool host_descs;
		/* GPU_RX, RNDV_READ: its message's sender asked for a
		 * delivery ACK (GDRFAB_PKT_DELIVERY_ACK): the FIN of msg_id
		 * once the bytes are in says whether they all are. */
		bool ack_delivery;
	};

	/* ---- RMA: emulated (GDRFAB_PKT_EMU) and its events ---- */
	struct {
		/* The initiator's fi_read, which copies out of its staging
		 * buffer at the FIN; the target's own request, answered
		 * with a FIN instead of a completion. */
		bool emu_read;
		bool emu_target;
		bool event_sent; /* its peer's RMA event is on the wire */
	};

	/* ---- atomics ---- */
	struct {
		/* Waits for its ATOMIC_RESP, whose fetched values go to iov
		 * (result buffers, desc their descriptors). */
		bool atomic;
		/* A message-borne atomic counted in
		 * conn->proto_atomics_out. */
		bool atomic_counted;
	};

	/* ---- roles that exclude each other ---- */
	union {
		/* NIC_ATOMIC: FETCH_ADD's addend or CMP_SWP's swap value,
		 * and CMP_SWP's compare value (the target is rseg[0]). */
		struct {
			uint64_t nic_operand, nic_compare;
			bool nic_cswap; /* CMP_SWP, else FETCH_ADD */
		};
		/* GPU_RX by the loopback QP: the eager bytes' source, a
		 * receive bounce buffer held until the copy ends or an
		 * unexpected message's payload (registered in the loopback
		 * PD for it), and the receive's buffer the completion
		 * reports. */
		struct {
			struct gdrfab_rxbuf *loop_rxbuf;
			uint8_t *loop_payload;
			struct ibv_mr *loop_src_mr;
			void *loop_buf;
		};
	};

	/* ---- the flush step (gdrfab_flush.c) ----
	 * A 1-byte READ on the endpoint's flush QP, posted before the
	 * completion that reports data the NIC wrote into GPU memory;
	 * flush_err (FI_E*, positive) once it ended (GDRFAB_FLUSH_STEP_*).
	 * loop_job: the loopback engine's job (hmem/gdrfab_stage.h) of that
	 * READ, or of a GPU_RX step's copy (gdrfab_req_loop.c). */
	struct {
		uint8_t flush_state;
		int flush_err;
		struct gdrfab_loop_job loop_job;
	};

	/* ---- GPU memory staged through host memory ---- */
	struct {
		/* staged: the local side is the stage job's host buffer,
		 * copied from or into the application's buffers by the
		 * pipeline (hmem/gdrfab_stage.h, gdrfab_req_stage.c). */
		bool staged;
		/* Its RDMA goes on the rails (gdrfab_stripe.h), in one
		 * piece per rail or whole on the rail of its turn
		 * (stripe_turn): the keys below are set. */
		bool striped;
		/* A striped fi_writedata: rail 0 takes the last piece,
		 * whose last work request (with the CQ data) waits for
		 * every other rail's (rail_wr_pending, those in flight). */
		bool stripe_last0;
		uint32_t rail_wr_pending;
		/* A piece of it failed on a rail beyond 0 while its
		 * connection stood: what of it did not land goes again, on
		 * rail 0 or the rails left, once nothing of it is in flight
		 * (gdrfab_stripe.h);
		 * rail_bad has a bit per rail whose work requests failed
		 * (set only once striped). */
		bool rail_lost;
		uint8_t rail_bad;
		/* GDRFAB_STRIPE_ALL: in one piece per rail; else whole on
		 * this rail, its turn (set only once striped). */
		uint8_t stripe_turn;
		/* The rails it goes on, a bit per rail (0's included): the
		 * pair's, but for those out when it was set up. */
		uint8_t stripe_mask;
		/* Where its pieces start: 0, or the first byte that may not
		 * have landed when it is cut anew over the rails left after
		 * one failed (gdrfab_stripe_retry). */
		uint64_t stripe_base;
		struct gdrfab_stage_job stage;
		/* A staged RDMA READ's work requests in flight (they end
		 * in order): each piece copies into the GPU as soon as its
		 * bytes landed. */
		uint32_t stage_wr_len[GDRFAB_STAGE_OPS];
		unsigned stage_wr_head, stage_wr_tail;
		size_t stage_landed;
	};

	/* The last steps it holds: a bit per enum gdrfab_req_step, and
	 * (not cleared at allocation: read only where its bit is set) the
	 * function of each. */
	uint8_t steps;
	gdrfab_req_step_fn step_fn[GDRFAB_STEP_COUNT];

	/* Striped (not cleared at allocation: read only when striped): the
	 * rails it goes on beyond rail 0, each local iovec's lkey and each
	 * remote segment's rkey on rail r at [i][r - 1]. */
	size_t stripe_more;
	uint32_t rail_lkey[GDRFAB_MAX_IOV][GDRFAB_CM_RAILS_MAX - 1];
	uint32_t rail_rkey[GDRFAB_MAX_IOV][GDRFAB_CM_RAILS_MAX - 1];

	/* Last (not cleared at allocation): the header and rendezvous
	 * segments of control messages, in the registered slab. */
	_Alignas(8) uint8_t ctrl[GDRFAB_CTRL_SIZE];
};

/* An asynchronous step of req ended (err 0, or FI_E* and prov_errno): on
 * with the request. Lower units (staging, the loopback copies, the
 * flush) end their steps here without knowing who started them. */
static inline void gdrfab_req_resume(struct gdrfab_proto *proto,
				     struct gdrfab_req *req, int err,
				     int prov_errno)
{
	req->resume(proto, req, err, prov_errno);
}

/* Adds a last step to a request (a feature, as it starts one). */
static inline void gdrfab_req_add_step(struct gdrfab_req *req,
				       enum gdrfab_req_step kind,
				       gdrfab_req_step_fn fn)
{
	req->step_fn[kind] = fn;
	req->steps |= (uint8_t)(1u << kind);
}

/* ---- what the code asks of a request ---- */
/* An fi_read (native or emulated) whose data lands in local buffers. */
static inline bool gdrfab_req_reads_local(const struct gdrfab_req *req)
{
	return req->op == GDRFAB_OP_READ || req->emu_read;
}

/* An RDMA READ of ours (fi_read or a rendezvous pull) into staging. */
static inline bool gdrfab_req_staged_read(const struct gdrfab_req *req)
{
	return req->staged &&
	       (req->op == GDRFAB_OP_READ || req->op == GDRFAB_OP_RNDV_READ);
}

/* A send that, posted without error, waits for its receiver's FIN. */
static inline bool gdrfab_req_waits_fin(const struct gdrfab_req *req)
{
	return req->op == GDRFAB_OP_SEND && req->rndv && !req->error;
}

/* A step of the protocol that fills a receive (req->parent when it is
 * the last one for it). */
static inline bool gdrfab_req_fills_receive(const struct gdrfab_req *req)
{
	return req->op == GDRFAB_OP_RNDV_READ || req->op == GDRFAB_OP_GPU_RX;
}

/* ---- requests and posting (gdrfab_post.c) ---- */
/* Posts what is pending on a connection, as far as slots allow. */
void gdrfab_conn_kick(struct gdrfab_conn *conn);
/* Sends a control message of type on a connection (from the control
 * reserve), data and seg_count in its header, extra_len bytes of extra
 * after it; false when no control request is left (or they do not fit). */
bool gdrfab_send_ctrl_ext(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
			  uint8_t type, uint64_t data, uint32_t seg_count,
			  const void *extra, size_t extra_len);
/* Tells the peer of the RMA to it that completed (rma_events_owed), as
 * far as control requests last; the rest waits for the timers. */
void gdrfab_send_rma_events(struct gdrfab_proto *proto,
			    struct gdrfab_conn *conn);
/* Sends a FIN or NOP on a connection (from the control reserve); data
 * is a FIN's status (0 or FI_E*). */
void gdrfab_send_ctrl(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
		      uint8_t type, uint64_t msg_id, uint64_t data);
/* A request for the application (NULL when only the control reserve is
 * left) or for a control message (from the reserve). */
struct gdrfab_req *gdrfab_req_alloc(struct gdrfab_proto *proto, bool ctrl);
/* A request for the application bound to the connection to the AV's
 * fi_addr (made on first use); the caller holds the endpoint lock.
 * -FI_EAGAIN when requests run out, -FI_EINVAL for an fi_addr not in the
 * AV. */
int gdrfab_req_to_peer(struct gdrfab_proto *proto, fi_addr_t peer,
		       struct gdrfab_req **out);
struct gdrfab_txbuf *gdrfab_txbuf_alloc(struct gdrfab_proto *proto);
void gdrfab_txbuf_free(struct gdrfab_proto *proto, struct gdrfab_txbuf *tb);
/* Queues a request on its connection and posts what it can. */
void gdrfab_req_submit(struct gdrfab_req *req);
/* The connection's side of a send-queue work completion, a request's or
 * a send slot's: its slot back, the peer alive, or on an error the
 * connection failed with err (FI_E*, positive). */
void gdrfab_conn_send_wc(struct gdrfab_conn *conn, const struct ibv_wc *wc,
			 int err);
void gdrfab_req_send_wc(struct gdrfab_proto *proto, struct gdrfab_req *req,
			const struct ibv_wc *wc);
/* The same for a striped request's work request on rail (> 0): that
 * rail's slots and CQ room come back (gdrfab_stripe.h). */
void gdrfab_req_rail_wc(struct gdrfab_proto *proto, size_t rail,
			struct gdrfab_req *req, const struct ibv_wc *wc);
/* What the FIN answering a delivery ACK (GDRFAB_PKT_DELIVERY_ACK) says
 * of a message of size bytes, got of which reached the receive's buffer:
 * err (FI_E*, positive) when its delivery failed, else FI_ETRUNC when not
 * all of it fit, else 0. The eager, rendezvous and GPU receive paths all
 * answer by it. */
static inline int gdrfab_delivery_status(size_t got, uint64_t size, int err)
{
	if (err)
		return err;
	return got < size ? FI_ETRUNC : 0;
}
/* The error (FI_E*, prov_errno) of an operation whose work request
 * completed with status, not IBV_WC_SUCCESS, on conn: a flushed one
 * fails for the reason its connection failed, where one is known (the
 * flush is only how the NIC returns it); others as the NIC says. */
void gdrfab_conn_wc_error(const struct gdrfab_conn *conn,
			  enum ibv_wc_status status, int *err, int *prov_errno);
/* Copies the local iovec and finds (or registers, for a NULL desc) the
 * lkeys; with IBV_ACCESS_REMOTE_READ in access also the rkeys, into rseg. */
int gdrfab_req_set_local(struct gdrfab_proto *proto, struct gdrfab_req *req,
			 const struct iovec *iov, void **desc, size_t count,
			 int access);
/* The bytes of an iovec; inline: every data call asks it. */
static inline size_t gdrfab_iov_len(const struct iovec *iov, size_t count)
{
	size_t len = 0;

	for (size_t i = 0; i < count; i++)
		len += iov[i].iov_len;
	return len;
}
/* Maps a failed work completion to an FI_E* code (positive). */
static inline int gdrfab_wc_to_fi(enum ibv_wc_status status)
{
	switch (status) {
	case IBV_WC_SUCCESS: return 0;
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_ACCESS_ERR: return FI_EACCES;
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_LOC_LEN_ERR: return FI_EINVAL;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR: return FI_EHOSTUNREACH;
	case IBV_WC_WR_FLUSH_ERR: return FI_ECANCELED;
	default: return FI_EIO;
	}
}

/* ---- the end of a request (gdrfab_finish.c) ----
 * Completion paths only mark a request ended and queue it; the drain, run
 * by progress and at the end of each application call into the protocol,
 * is the one place that reports (CQ entry, counter) and frees. */
/* Ends a request (once: a second call is ignored); the drain works out
 * its report. */
/* The resume function of a request whose maker set none (given at
 * allocation): its asynchronous step ended, it is finished. */
void gdrfab_req_resume_finish(struct gdrfab_proto *proto,
			      struct gdrfab_req *req, int err, int prov_errno);
void gdrfab_req_finish(struct gdrfab_proto *proto, struct gdrfab_req *req);
/* Marks the request failed (the first error sticks) and ends it unless
 * work requests of it are still out (their completion ends it). */
void gdrfab_req_fail(struct gdrfab_proto *proto, struct gdrfab_req *req,
		     int err, int prov_errno);
/* A receive-side report for the request: with last, the request ends
 * with it; without (a multi-receive buffer that stays posted), it is
 * written now and the request lives on. */
void gdrfab_req_report_rx(struct gdrfab_proto *proto, struct gdrfab_req *req,
			  bool last, uint64_t flags, size_t len, void *buf,
			  uint64_t data, uint64_t tag, fi_addr_t src);
void gdrfab_req_report_error(struct gdrfab_proto *proto, struct gdrfab_req *req,
			     bool last, uint64_t flags, size_t len, size_t olen,
			     void *buf, uint64_t data, uint64_t tag, int err,
			     int prov_errno);
/* Ends the request without a report. */
void gdrfab_req_end_silent(struct gdrfab_proto *proto, struct gdrfab_req *req);
/* Reports that belong to no request of ours: a peer's RMA with CQ data,
 * counted remote accesses (FI_RMA_EVENT). */
void gdrfab_report_remote_data(struct gdrfab_proto *proto, uint64_t flags,
			       size_t len, uint64_t data,
			       struct gdrfab_conn *conn);
/* ... and its failure (err FI_E*, positive): the data landed but could
 * not be made visible. */
void gdrfab_report_remote_error(struct gdrfab_proto *proto, uint64_t flags,
				size_t len, uint64_t data, int err);
void gdrfab_report_rma_event(struct gdrfab_proto *proto, bool read, uint64_t n);
/* Finishes the ended requests, in the order they ended. Called after
 * every event and at the end of every call, it mostly finds nothing: the
 * test is inline, so an empty queue costs no call. */
void gdrfab_req_drain_queue(struct gdrfab_proto *proto);
static inline void gdrfab_req_drain(struct gdrfab_proto *proto)
{
	if (!gdrfab_list_empty(&proto->finished))
		gdrfab_req_drain_queue(proto);
}
/* Returns a request to the slab at once: only for one that never started
 * (the call that made it failed before submitting it) or at close. */
void gdrfab_req_free(struct gdrfab_proto *proto, struct gdrfab_req *req);

/* ---- receive buffers back to the SRQ (gdrfab_rxbuf.c) ---- */
/* Gives the handled receive buffers that wait in proto->repost_head back
 * to the SRQ in one post (from progress, once repost_min wait). */
void gdrfab_rxbuf_repost_flush(struct gdrfab_proto *proto);
/* How many handled receive buffers progress lets wait before it reposts
 * them, for an SRQ of rxbuf_cnt. */
unsigned gdrfab_rxbuf_repost_min(size_t rxbuf_cnt);
/* Gives a receive bounce buffer back to the SRQ, at once with any that
 * wait for the next progress call. */
void gdrfab_rxbuf_repost(struct gdrfab_proto *proto,
			 struct gdrfab_rxbuf *rxbuf);
/* The most buffers one repost posts (gdrfab_rxbuf.c). */
#define GDRFAB_REPOST_BATCH 16
/* Queues a handled receive buffer for the next repost: at the latest when
 * the batch is full. Inline: the receive path's own cost. */
static inline void gdrfab_rxbuf_repost_later(struct gdrfab_proto *proto,
					     struct gdrfab_rxbuf *rb)
{
	rb->next_repost = proto->repost_head;
	proto->repost_head = rb;
	if (++proto->repost_cnt >= GDRFAB_REPOST_BATCH)
		gdrfab_rxbuf_repost_flush(proto);
	else if (proto->repost_cnt >= proto->repost_min)
		gdrfab_proto_wake(proto); /* progress reposts them */
}

#endif /* GDRFAB_REQ_H */
