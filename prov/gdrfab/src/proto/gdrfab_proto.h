/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The protocol layer of an RDM endpoint: connections set up on demand over
 * the endpoint's UD queue pair, then eager messages through pre-registered
 * bounce buffers, rendezvous messages that the receiver pulls with RDMA
 * READ straight into the posted buffer, and RMA, all over one RC queue pair
 * per peer. Everything here runs under the endpoint's lock.
 *
 * The messages on the wire are in gdrfab_wire.h.
 */
#ifndef GDRFAB_PROTO_H
#define GDRFAB_PROTO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <infiniband/verbs.h>
#include <rdma/fi_eq.h>

#include "gdrfab_addr.h"
#include "gdrfab_addrmap.h"
#include "gdrfab_async.h"
#include "gdrfab_cuda.h"
#include "gdrfab_list.h"
#include "gdrfab_mr_desc.h"
#include "gdrfab_proto_env.h"
#include "gdrfab_ratelimit.h"
#include "gdrfab_signal.h"
#include "gdrfab_stats.h"
#include "gdrfab_wire.h"

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

enum gdrfab_conn_state {
	GDRFAB_CONN_CONNECTING, /* REQ sent, QP in INIT */
	/* The peer is a service address whose name the AV is asking for:
	 * requests wait here, without a QP, until it answers. */
	GDRFAB_CONN_RESOLVING,
	GDRFAB_CONN_ACCEPTING, /* REP sent, QP in RTS, waiting for RTU */
	GDRFAB_CONN_CONNECTED,
	GDRFAB_CONN_FAILED, /* QP in error or never connected */
};

/* The last full EAGER header on a queue pair, but for its size
 * (gdrfab_wire.h, GDRFAB_IMM_REPEAT). */
struct gdrfab_memo {
	bool valid;
	uint16_t flags;
	uint64_t tag, data;
};

struct gdrfab_conn {
	struct gdrfab_proto *proto;
	struct gdrfab_qp_owner owner; /* the RC QP's qp_context */
	struct gdrfab_addr peer;      /* RESOLVING: the service address */
	enum gdrfab_conn_state state;
	struct ibv_qp *qp; /* NULL while RESOLVING */
	uint32_t psn;
	uint32_t remote_qpn;
	uint64_t peer_nonce;  /* learnt from its REQ or REP */
	bool peer_rma_events; /* it asked for GDRFAB_PKT_RMA_EVENT */
	/* RMA to it completed and not yet told (no control request was
	 * free): writes, reads. */
	uint64_t rma_events_owed[2];
	bool initiated; /* we sent the REQ (our application asked) */
	enum ibv_mtu path_mtu;
	uint32_t max_inline; /* bytes a send may carry inline */
	/* The last full EAGER header posted to the peer (what its receiver
	 * will hold when it reaches the next message), and the last one
	 * received from it. */
	struct gdrfab_memo tx_memo, rx_memo;
	int sq_avail; /* free send queue slots */
	int wr_outstanding;
	unsigned refs; /* the table, requests, unexpected messages */
	/* Timers: REQ/REP resends and giving up. */
	long long next_resend_ms, deadline_ms;
	int resend_interval_ms;
	/* Requests waiting to post (not connected, or no send slots). */
	struct gdrfab_list pending;
	/* Rendezvous sends waiting for the receiver's FIN. */
	struct gdrfab_list rndv_wait;
	/* Atomics to it may go to the NIC (gdrfab_atomic_nic.h). */
	bool nic_atomics;
	/* Message-borne atomics sent and not yet answered; atomics held
	 * back so that a NIC atomic never overtakes one of those (and
	 * none overtakes a held one), in order; whether it waits in
	 * proto->atomic_ready for progress to release them. */
	unsigned proto_atomics_out;
	struct gdrfab_list atomic_hold;
	bool atomic_ready;
	struct gdrfab_list ready_entry;
	/* The peer's fi_addr_t, cached against the AV's generation. */
	fi_addr_t fi_addr;
	uint64_t av_generation;
	long long last_rx_ms, last_keepalive_ms;
	struct gdrfab_list entry; /* proto->conns or proto->dead */
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
	 GDRFAB_IOV_LIMIT * sizeof(struct gdrfab_rndv_seg))

#define GDRFAB_MAX_IOV GDRFAB_IOV_LIMIT

/* Copies of one staged transfer in flight at once (pieces of
 * FI_GDRFAB_STAGE_CHUNK bytes). */
#define GDRFAB_STAGE_OPS 16

/* A host buffer for staged GPU transfers: pinned for CUDA and registered
 * with the NIC (local access only: a peer's access goes through a
 * registration of the request's own), kept by the endpoint for reuse.
 * The copies into or out of it in flight live here, not in the request,
 * so that a request freed before its copies end leaves them to progress
 * (proto->stage_zombies) instead of waiting. */
struct gdrfab_stage_buf {
	struct gdrfab_stage_buf *next; /* stage_free or stage_zombies */
	uint8_t *mem;
	size_t cap;
	struct ibv_mr *mr;
	bool pinned;
	struct gdrfab_cuda_op op[GDRFAB_STAGE_OPS];
	size_t op_len[GDRFAB_STAGE_OPS];
	unsigned head, tail; /* ops issued, ops done */
};

enum gdrfab_stage_state {
	GDRFAB_STAGE_IDLE,     /* nothing in flight (or nothing staged) */
	GDRFAB_STAGE_FILLING,  /* device -> staging buffer */
	GDRFAB_STAGE_DRAINING, /* staging buffer -> device */
	GDRFAB_STAGE_DRAINED,  /* done: the data is in the application's */
};

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
	};

	/* ---- receive side (RECV, RNDV_READ, GPU_RX) ---- */
	struct {
		size_t multi_off; /* multi-receive: bytes consumed */
		size_t recv_len;  /* RNDV_READ, GPU_RX: bytes that fit */
		/* RECV: every buffer came with a descriptor of host memory
		 * (classified when posted; the copy still checks each). */
		bool host_descs;
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
	 * A 1-byte READ of flush_addr on the endpoint's flush QP, posted
	 * before the completion that reports data the NIC wrote into GPU
	 * memory; flush_err (FI_E*, positive) once it ended
	 * (GDRFAB_FLUSH_STEP_*). */
	struct {
		uint8_t flush_state;
		int flush_err;
		uint32_t flush_rkey;
		uint64_t flush_addr;
	};

	/* ---- GPU memory staged through host memory ---- */
	struct {
		/* The host buffer, and the application's buffers it is
		 * copied from or into. stage_mr gives the lkey (and, when
		 * the peer accesses it, the rkey of stage_rmr, this
		 * request's own registration). */
		bool staged;
		uint8_t *stage;
		struct gdrfab_stage_buf *stage_buf;
		struct ibv_mr *stage_mr, *stage_rmr;
		struct iovec gpu_iov[GDRFAB_MAX_IOV];
		void *gpu_desc[GDRFAB_MAX_IOV];
		size_t gpu_iov_count;
		/* The pipeline (gdrfab_stage_pipe.c): bytes to copy, copies
		 * issued, done (a prefix: a stream runs them in order), and
		 * ready to copy (all of them when filling; what the NIC
		 * wrote when draining); the gpu_iov cursor of the next
		 * copy. */
		uint8_t stage_state;
		bool stage_listed, stage_kick;
		int stage_err; /* FI_E* (positive) once a copy failed */
		size_t stage_len, stage_issued, stage_done, stage_ready;
		size_t stage_idx, stage_ioff;
		/* A staged RDMA READ's work requests in flight (they end
		 * in order): each piece copies into the GPU as soon as its
		 * bytes landed. */
		uint32_t stage_wr_len[GDRFAB_STAGE_OPS];
		unsigned stage_wr_head, stage_wr_tail;
		size_t stage_landed;
		struct gdrfab_list stage_entry;	     /* proto->staging */
		struct gdrfab_list stage_kick_entry; /* proto->stage_kicked */
	};

	/* Last (not cleared at allocation): the header and rendezvous
	 * segments of control messages, in the registered slab. */
	_Alignas(8) uint8_t ctrl[GDRFAB_CTRL_SIZE];
};

/* An eager send posted at once, without a request (gdrfab_send_inline.c):
 * what its completion reports. */
struct gdrfab_itx {
	struct gdrfab_wr_ctx wr; /* GDRFAB_WR_ITX */
	bool silent;		 /* fi_inject*: the counter only */
	struct gdrfab_itx *next_free;
	struct gdrfab_conn *conn;   /* holds a reference while posted */
	struct gdrfab_txbuf *txbuf; /* the message, when not inline */
	void *context;
	uint64_t cq_flags, op_flags;
};

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

/* A message that arrived before its receive was posted. */
struct gdrfab_unexp {
	struct gdrfab_conn *conn;
	struct gdrfab_pkt_hdr hdr;
	struct gdrfab_rndv_seg seg[GDRFAB_MAX_IOV];
	uint8_t *payload; /* eager: a copy, or in held */
	/* No memory for a copy: the message keeps its receive buffer,
	 * reposted once the message is taken (FI_RM_ENABLED: nothing a
	 * peer sent is dropped; with the SRQ empty, senders retry). */
	struct gdrfab_rxbuf *held;
	bool claimed; /* FI_PEEK|FI_CLAIM: reserved for a context */
	struct gdrfab_list entry;
};

/* What the protocol needs from the object layer above it, registered by
 * the endpoint at gdrfab_proto_create: completions are reported, and the
 * AV and memory descriptors consulted, through these, never by calling
 * up. */
struct gdrfab_proto_ops {
	/* A report (CQ entry, counter) for the endpoint's application. */
	void (*report)(struct gdrfab_ep *ep, const struct gdrfab_report *r);
	/* n of a peer's RMA aimed at this endpoint completed. */
	void (*rma_event)(struct gdrfab_ep *ep, bool read, uint64_t n);
	/* The endpoint's AV (gdrfab_objs.h says what each answers). */
	fi_addr_t (*av_find)(struct gdrfab_av *av,
			     const struct gdrfab_addr *addr);
	int (*av_get_addr)(struct gdrfab_av *av, fi_addr_t fi_addr,
			   struct gdrfab_addr *out);
	int (*av_peer)(struct gdrfab_av *av, fi_addr_t fi_addr,
		       struct gdrfab_addr *out, struct gdrfab_addr *inserted);
	int (*av_service_status)(struct gdrfab_av *av,
				 const struct gdrfab_addr *svc,
				 struct gdrfab_addr *name);
	void (*av_learn)(struct gdrfab_av *av, const struct gdrfab_addr *svc,
			 const struct gdrfab_addr *name);
	void (*av_progress)(struct gdrfab_av *av);
	/* Memory descriptors and keys of the domain. */
	/* The staged MR behind an emulated-access key's handle (the low
	 * 32 bits) that allows access to addr..addr+len, or NULL with why
	 * the cause. */
	struct gdrfab_mr_desc *(*emu_mr_find)(struct gdrfab_domain *domain,
					      uint32_t handle, uint64_t addr,
					      uint64_t len, uint64_t access,
					      const char **why);
	int (*mr_check_desc)(const struct gdrfab_domain *domain,
			     const void *desc, const void *buf, size_t len);
	int (*mr_check_descs)(const struct gdrfab_domain *domain,
			      const struct iovec *iov, void **desc,
			      size_t count);
	bool (*mr_desc_live)(const void *desc);
	int (*mr_keys_access)(struct gdrfab_domain *domain, uint64_t key,
			      uint64_t addr, uint64_t len, uint64_t access,
			      void (*fn)(void *mem, void *arg), void *arg,
			      const char **why);
	/* Whether atomics to a peer go to the NIC (the domain's policy). */
	bool (*nic_atomic_pair)(int mode, enum ibv_atomic_cap local_cap,
				uint16_t peer_cm_flags);
};

#define GDRFAB_CONN_CACHE 64 /* entries, a power of two */

/* A warning about input from the wire, rate-limited per endpoint; fmt has
 * no newline (one is added, after how many were left out if any). */
#define GDRFAB_WIRE_WARN(proto, subsys, fmt, ...)                              \
	do {                                                                   \
		uint64_t left_out_;                                            \
		if (!gdrfab_ratelimit_ok(&(proto)->wire_warn,                  \
					 gdrfab_tick_ms(), &left_out_))        \
			break;                                                 \
		if (left_out_)                                                 \
			GDRFAB_WARN(subsys, fmt " (and %llu more left out)\n", \
				    __VA_ARGS__,                               \
				    (unsigned long long)left_out_);            \
		else                                                           \
			GDRFAB_WARN(subsys, fmt "\n", __VA_ARGS__);            \
	} while (0)

/* Per-endpoint protocol state, made by fi_enable. */
struct gdrfab_proto {
	/* What it needs of the endpoint and domain (gdrfab_proto_env.h). */
	struct gdrfab_proto_env env;
	const struct gdrfab_proto_ops *ops; /* the object layer's */
	/* Warnings about what peers send (bad packets, unknown FINs). */
	struct gdrfab_ratelimit wire_warn;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq; /* every RC QP's sends and receives */
	struct ibv_srq *srq;
	/* Receive bounce buffers. */
	struct gdrfab_rxbuf *rxbufs;
	size_t rxbuf_cnt, rxbuf_size;
	uint8_t *rx_mem;
	struct ibv_mr *rx_mr;
	/* Transmit bounce buffers. */
	struct gdrfab_txbuf *txbufs, *tx_free;
	size_t txbuf_cnt, txbuf_size;
	uint8_t *tx_mem;
	struct ibv_mr *tx_mr;
	/* Connection setup over the endpoint's UD QP. */
	struct ibv_qp *ud_qp;
	struct ibv_cq *ud_cq;
	uint8_t *ud_mem;
	struct ibv_mr *ud_mr;
	/* Transmit slots the NIC may still read: bit i is slot i. */
	uint64_t ud_tx_busy;
	/* The UD QP's incarnation (in its work request ids): a QP found in
	 * the error state is reset, and what the old one left in the CQ is
	 * then ignored. */
	uint32_t ud_gen;
	unsigned ud_rx_posted;
	bool ud_broken;
	long long ud_broken_ms;
	struct gdrfab_qp_owner ud_owner;
	/* This endpoint's secret (see gdrfab_cm_msg.nonce). */
	uint64_t nonce;
	/* Connections a peer asked for, not yet confirmed (ACCEPTING). */
	int half_open;
	/* Asynchronous events noted on this endpoint's QPs. */
	_Atomic unsigned async_events;
	/* Connections by peer name, and their RC QP numbers. */
	struct gdrfab_addrmap conn_by_name;
	/* Connections by fi_addr, so that a send skips the AV copy and
	 * the name hash: an entry holds while the AV's generation and
	 * conn_epoch (bumped whenever a connection leaves conn_by_name)
	 * are those it was made under. */
	struct gdrfab_conn_cache_ent {
		fi_addr_t fi_addr;
		uint64_t av_generation, conn_epoch;
		struct gdrfab_conn *conn;
	} conn_cache[GDRFAB_CONN_CACHE];
	uint64_t conn_epoch;
	struct gdrfab_list conns, dead;
	struct gdrfab_conn **qpn_table;
	size_t qpn_table_size, qpn_used;
	/* Matching. */
	struct gdrfab_list posted_msg, posted_tag, unexp_msg, unexp_tag;
	/* Limits. */
	size_t eager_max, inject_max;
	uint32_t max_wr_len; /* the port's max_msg_sz */
	int max_sge, sq_depth, max_rd_atomic;
	enum ibv_mtu port_mtu;
	uint64_t next_msg_id;
	/* Requests: a registered slab; the last few are kept for control
	 * messages so that a FIN never waits for the application. */
	struct gdrfab_req *reqs;
	size_t req_cnt, req_free_cnt;
	size_t req_clear_len; /* what allocation clears: all but ctrl */
	struct ibv_mr *req_mr;
	struct gdrfab_list free_reqs, live;
	/* Staging buffers kept for reuse (stage_cached bytes), those whose
	 * request ended before their copies (freed once done), and the
	 * requests whose copies are in flight. */
	struct gdrfab_stage_buf *stage_free, *stage_zombies;
	size_t stage_cached;
	struct gdrfab_list staging, stage_kicked;
	/* Work requests the shared CQ can still take. */
	int cq_credits;
	long long last_timer_ms;
	/* The coarse clock at the start of the progress call running (for
	 * its events' handlers); when the UD CQ was last polled, and the
	 * calls since. */
	long long now_ms, ud_poll_ms;
	unsigned ud_poll_skips;
	/* Eager data into GPU memory without CUDA (NULL unless the
	 * endpoint set FI_OPT_CUDA_API_PERMITTED=false). */
	struct gdrfab_loop *loop;
	/* Set by a delivery that keeps the receive bounce buffer (a
	 * loopback copy reads it): not reposted until that copy ends. */
	bool rxbuf_held;
	/* Atomics that arrived while no response could be sent, in order. */
	struct gdrfab_list atomic_backlog;
	/* Connections whose held atomics may go (conn->atomic_hold). */
	struct gdrfab_list atomic_ready;
	bool closing; /* no completions while the endpoint closes */
	/* Requests that ended, in order, for gdrfab_req_drain. */
	struct gdrfab_list finished;
	/* Receive buffers whose messages were handled, for the SRQ once
	 * repost_min wait (gdrfab_rxbuf_repost_flush, from progress). */
	struct gdrfab_rxbuf *repost_head;
	unsigned repost_cnt, repost_min;
	/* Slots of eager sends posted at once (gdrfab_send_inline.c). */
	struct gdrfab_itx *itx, *itx_free;
	struct gdrfab_stats stats; /* what it did (gdrfab_proto_stats.h) */
};

#define GDRFAB_CTRL_RESERVE 64

/* ---- lifecycle (gdrfab_proto.c) ---- */
/* Makes the protocol of an endpoint being enabled, from its view (env,
 * copied) and the object layer's ops: 0 with *out, or -FI_E*. It takes
 * env's UD QP and CQ either way: on failure they are destroyed. */
int gdrfab_proto_create(const struct gdrfab_proto_env *env,
			const struct gdrfab_proto_ops *ops,
			struct gdrfab_proto **out);
void gdrfab_proto_destroy(struct gdrfab_proto *proto);
void gdrfab_proto_progress(struct gdrfab_proto *proto);
/* One work completion of the endpoint's CQ, handled as progress handles
 * it (under the endpoint's lock). */
void gdrfab_proto_handle_wc(struct gdrfab_proto *proto,
			    const struct ibv_wc *wc);

/* ---- connections (gdrfab_conn.c) ---- */
/* The connection to a peer, set up on first use. NULL: out of resources,
 * or a connection to itself that its QP refused (logged). */
struct gdrfab_conn *gdrfab_conn_get(struct gdrfab_proto *proto,
				    const struct gdrfab_addr *peer);
/* gdrfab_conn_for_addr past its cache. */
int gdrfab_conn_for_addr_lookup(struct gdrfab_proto *proto, fi_addr_t fi_addr,
				struct gdrfab_conn **out);
/* The connection to the AV's fi_addr (made on first use): 0, -FI_EINVAL
 * (not in the AV) or -FI_ENOMEM. Inline, the cache hit of every send:
 * the lookup's frame (two addresses on the stack) is built only on a
 * miss. */
static inline int gdrfab_conn_for_addr(struct gdrfab_proto *proto,
				       fi_addr_t fi_addr,
				       struct gdrfab_conn **out)
{
	const struct gdrfab_conn_cache_ent *e =
		&proto->conn_cache[fi_addr & (GDRFAB_CONN_CACHE - 1)];

	if (e->fi_addr == fi_addr && e->conn_epoch == proto->conn_epoch &&
	    e->av_generation == *proto->env.av_generation) {
		*out = e->conn;
		return 0;
	}
	return gdrfab_conn_for_addr_lookup(proto, fi_addr, out);
}
struct gdrfab_conn *gdrfab_conn_by_qpn(struct gdrfab_proto *proto,
				       uint32_t qpn);
void gdrfab_conn_handle_cm(struct gdrfab_proto *proto, const void *msg,
			   size_t len);
void gdrfab_conn_timers(struct gdrfab_proto *proto);
/* The QP failed: fails every request waiting on it and retires it. */
void gdrfab_conn_fail(struct gdrfab_conn *conn, int err, int prov_errno);
void gdrfab_conn_put(struct gdrfab_conn *conn);
fi_addr_t gdrfab_conn_fi_addr(struct gdrfab_conn *conn);
void gdrfab_conn_destroy_all(struct gdrfab_proto *proto);
/* A message arrived from the peer (seen by progress): it is alive, and
 * connected. */
void gdrfab_conn_rx(struct gdrfab_conn *conn);
/* Sends a NOP so that a dead peer is noticed by RC retries. */
void gdrfab_conn_keepalive(struct gdrfab_conn *conn);

/* ---- connection messages on the UD QP (gdrfab_cm_ud.c) ---- */
int gdrfab_ud_post_recvs(struct gdrfab_proto *proto);
size_t gdrfab_ud_mem_size(void);
/* Sends a connection message to the peer's UD QP; false when not sent
 * (every slot in flight, the QP being reset, or no address handle to the
 * peer yet: local says our application waits for it). */
bool gdrfab_ud_send(struct gdrfab_proto *proto, const struct gdrfab_addr *peer,
		    bool local, const struct gdrfab_cm_msg *msg);
/* Receives connection messages (to gdrfab_conn_handle_cm). */
void gdrfab_conn_poll_ud(struct gdrfab_proto *proto);
/* Resets the UD QP once it is found out of RTS (from the timers). */
void gdrfab_ud_check(struct gdrfab_proto *proto);

/* ---- requests and posting (gdrfab_post.c) ---- */
/* Posts what is pending on a connection, as far as slots allow. */
void gdrfab_conn_kick(struct gdrfab_conn *conn);
/* Tells the peer of the RMA to it that completed (rma_events_owed), as
 * far as control requests last; the rest waits for the timers. */
void gdrfab_send_rma_events(struct gdrfab_proto *proto,
			    struct gdrfab_conn *conn);
/* A control request (from the reserve) on the connection, its header
 * zeroed but for the version and type: the caller fills the rest and
 * submits it. NULL when the reserve is empty. */
struct gdrfab_req *gdrfab_ctrl_req(struct gdrfab_proto *proto,
				   struct gdrfab_conn *conn, uint8_t type,
				   struct gdrfab_pkt_hdr **hdr);
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
/* Posts as much of the request as slots and buffers allow; false when it
 * must wait. */
bool gdrfab_req_post(struct gdrfab_req *req);
/* The connection's side of a send-queue work completion, a request's or
 * a send slot's: its slot back, the peer alive, or on an error the
 * connection failed with err (FI_E*, positive). */
void gdrfab_conn_send_wc(struct gdrfab_conn *conn, const struct ibv_wc *wc,
			 int err);
void gdrfab_req_send_wc(struct gdrfab_proto *proto, struct gdrfab_req *req,
			const struct ibv_wc *wc);
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
int gdrfab_wc_to_fi(enum ibv_wc_status status);

/* ---- the end of a request (gdrfab_finish.c) ----
 * Completion paths only mark a request ended and queue it; the drain, run
 * by progress and at the end of each application call into the protocol,
 * is the one place that reports (CQ entry, counter) and frees. */
/* Ends a request (once: a second call is ignored); the drain works out
 * its report. */
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

/* ---- matching and receive side (gdrfab_recv.c) ---- */
void gdrfab_recv_wc(struct gdrfab_proto *proto, struct gdrfab_rxbuf *rxbuf,
		    const struct ibv_wc *wc);
int gdrfab_recv_post(struct gdrfab_proto *proto, struct gdrfab_req *req,
		     uint64_t flags);
int gdrfab_recv_cancel(struct gdrfab_proto *proto, void *context);
void gdrfab_rndv_read_done(struct gdrfab_proto *proto, struct gdrfab_req *rd);
void gdrfab_unexp_free(struct gdrfab_unexp *u);
void gdrfab_recv_flush_all(struct gdrfab_proto *proto);

/* ---- the application's calls (gdrfab_msg.c, gdrfab_rma.c) ---- */
/* One iovec entry a data call may take: a buffer (or none, of zero
 * bytes) that does not wrap the address space, of at most room bytes
 * (what max_msg_size leaves after the entries before it). */
static inline bool gdrfab_iov_entry_ok(const struct iovec *v, size_t room)
{
	return (v->iov_base || !v->iov_len) &&
	       v->iov_len <= UINTPTR_MAX - (uintptr_t)v->iov_base &&
	       v->iov_len <= room;
}
/* gdrfab_check_iov for any count. */
int gdrfab_check_iovs(struct gdrfab_proto *proto, const struct iovec *iov,
		      size_t count, const char *call);
/* Checks common to every data call; 0 or the -FI_E* to return. The one
 * buffer of fi_send, fi_trecv and their kin is tested inline; anything
 * else, and every refusal, goes to gdrfab_check_iovs. */
static inline int gdrfab_check_iov(struct gdrfab_proto *proto,
				   const struct iovec *iov, size_t count,
				   const char *call)
{
	if (count == 1 && iov &&
	    gdrfab_iov_entry_ok(iov, proto->env.max_msg_size))
		return 0;
	return gdrfab_check_iovs(proto, iov, count, call);
}
/* The application's sends and receives (fi_ops_msg, fi_ops_tagged: the
 * object layer's wrappers pass the endpoint's protocol); silent: an
 * inject, no CQ entry. The return value of the API call. */
ssize_t gdrfab_proto_send(struct gdrfab_proto *proto, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t dest,
			  uint64_t tag, uint64_t data, uint64_t flags,
			  void *context, bool tagged, bool silent);
ssize_t gdrfab_proto_recv(struct gdrfab_proto *proto, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t src,
			  uint64_t tag, uint64_t ignore, uint64_t flags,
			  void *context, bool tagged);
/* The application's RMA (fi_ops_rma), op GDRFAB_OP_READ or _WRITE. */
ssize_t gdrfab_proto_rma(struct gdrfab_proto *proto, enum gdrfab_op op,
			 const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t peer_addr, uint64_t raddr, uint64_t key,
			 uint64_t data, uint64_t flags, void *context,
			 bool silent);
/* Writes a rendezvous header (with a new cookie) into req->ctrl from
 * req->tag, data, len and rseg; the request then waits for a FIN. */
void gdrfab_rndv_header(struct gdrfab_proto *proto, struct gdrfab_req *req,
			uint16_t flags);
/* Builds a send request's message (inline, eager or rendezvous by size)
 * from req->tag and req->data; with GDRFAB_PKT_EMU_WRITE in flags it also
 * waits for the target's FIN. 0 or a negative FI_E* code. */
int gdrfab_msg_prepare(struct gdrfab_proto *proto, struct gdrfab_req *req,
		       const struct iovec *iov, void **desc, size_t count,
		       uint16_t flags);

/* ---- RMA to staged GPU memory (gdrfab_rma_emu.c) ---- */
/* Initiator: turns an RMA request whose key has GDRFAB_EMU_KEY (set up
 * by do_rma: op, flags, data) into an emulated one. 0 or -FI_E*. */
int gdrfab_emu_prepare(struct gdrfab_proto *proto, struct gdrfab_req *req,
		       const struct iovec *iov, void **desc, size_t count,
		       uint64_t raddr, uint64_t key);
/* Target: an EMU_WRITE or EMU_READ arrived. Returns the receive an
 * EMU_WRITE's data lands in (for the caller to deliver), or NULL when
 * the request was refused or handled here. */
struct gdrfab_req *gdrfab_emu_target_start(struct gdrfab_proto *proto,
					   struct gdrfab_conn *conn,
					   const struct gdrfab_pkt_hdr *h);
/* Target: the access is done (err 0) or failed (FI_E*): FIN to the
 * initiator, and an fi_writedata's CQ data to the target's CQ. */
void gdrfab_emu_target_done(struct gdrfab_proto *proto,
			    struct gdrfab_conn *conn, uint64_t msg_id,
			    bool cq_data, uint64_t data, size_t len, int err);

/* ---- atomics (gdrfab_atomic.c) ---- */
/* Elements one request may carry for a call family and datatype (every
 * message fits a bounce buffer): 0 for a pair gdrfab does not serve. */
size_t gdrfab_atomic_max_count(struct gdrfab_proto *proto, int kind, int op,
			       int datatype);
/* Initiator: fills a request (connection, context, flags set) with an
 * ATOMIC message for the operands (and compare values) and result buffers
 * given; 0 or -FI_E*. */
struct gdrfab_atomic_args {
	int kind, op, datatype;
	size_t count;			     /* elements */
	const struct iovec *src, *cmp, *res; /* bytes, as many as count */
	void **src_desc, **cmp_desc, **res_desc;
	size_t src_cnt, cmp_cnt, res_cnt;
	uint64_t addr, key;
};
int gdrfab_atomic_prepare(struct gdrfab_proto *proto, struct gdrfab_req *req,
			  const struct gdrfab_atomic_args *a);
/* Checks an ATOMIC or ATOMIC_RESP header against its length: NULL or a
 * reason to drop it. */
const char *gdrfab_atomic_check_header(const struct gdrfab_pkt_hdr *h,
				       size_t len);
/* Target: applies an ATOMIC and answers it (now, or from the backlog). */
void gdrfab_atomic_handle(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
			  const struct gdrfab_pkt_hdr *h);
/* Initiator: an ATOMIC_RESP arrived. */
void gdrfab_atomic_resp(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
			const struct gdrfab_pkt_hdr *h);
/* Initiator: sends a prepared atomic (either kind) in its turn: held on
 * its connection while earlier atomics must go first. */
void gdrfab_atomic_submit(struct gdrfab_req *req);
/* Initiator: a counted message-borne atomic was answered or ended. */
void gdrfab_atomic_answered(struct gdrfab_req *req);
/* Sends the held atomics that may go now (from progress). */
void gdrfab_atomic_release_run(struct gdrfab_proto *proto);

/* ---- atomics the NIC executes (gdrfab_atomic_nic.c) ---- */
/* Initiator: fills a request (as gdrfab_atomic_prepare) for the NIC's
 * FETCH_ADD or CMP_SWP; the caller checked gdrfab_nic_atomic_eligible. */
int gdrfab_atomic_nic_prepare(struct gdrfab_proto *proto,
			      struct gdrfab_req *req,
			      const struct gdrfab_atomic_args *a);
/* Logs why the NIC failed one. */
void gdrfab_atomic_nic_failed(struct gdrfab_proto *proto,
			      struct gdrfab_req *req, const struct ibv_wc *wc);
/* ---- an atomic's fetched values (gdrfab_atomic_result.c) ---- */
/* ATOMIC_RESP: keeps the fetched bytes in the request until its last
 * steps (0, or -FI_EIO when they cannot be kept). */
int gdrfab_atomic_result_keep(struct gdrfab_proto *proto,
			      struct gdrfab_req *req, const void *src,
			      size_t len);
/* A last step (gdrfab_finish.c): the fetched values into the result
 * buffers, GPU ones by asynchronous copies. 0, -FI_EINPROGRESS (parked:
 * the copies' end finishes the request again, and this says 0 or the
 * error then), or -FI_E*. */
int gdrfab_atomic_result_step(struct gdrfab_proto *proto,
			      struct gdrfab_req *req);
/* Answers what waits in the backlog, as far as resources allow. */
void gdrfab_atomic_backlog_run(struct gdrfab_proto *proto);
void gdrfab_atomic_backlog_free(struct gdrfab_proto *proto);

/* ---- repeated headers (gdrfab_wire.h, GDRFAB_IMM_REPEAT) ---- */
/* The one rule both ends apply to each full header, the sender as it
 * posts it and the receiver as it accepts it. */
static inline void gdrfab_memo_note(struct gdrfab_memo *m,
				    const struct gdrfab_pkt_hdr *h)
{
	if (h->type != GDRFAB_PKT_EAGER)
		return;
	m->valid = !(h->flags & GDRFAB_PKT_EMU);
	m->flags = h->flags;
	m->tag = h->tag;
	m->data = h->data;
}

/* Whether the message of header h may go as a repeat, both send paths
 * asking: an EAGER message whose flags, tag and data are the memo's
 * (never one with a msg_id, an emulated write's, which the peer needs). */
static inline bool gdrfab_memo_repeats(const struct gdrfab_memo *m,
				       const struct gdrfab_pkt_hdr *h)
{
	return m->valid && h->type == GDRFAB_PKT_EAGER && !h->msg_id &&
	       m->flags == h->flags && m->tag == h->tag && m->data == h->data;
}

/* ---- eager sends posted at once (gdrfab_send_inline.c) ---- */
/* A send of one buffer, checked by the caller (gdrfab_proto_send). */
struct gdrfab_itx_args {
	const struct iovec *iov; /* one entry */
	void **desc;		 /* NULL, or its descriptor */
	fi_addr_t dest;
	uint64_t tag, data; /* data: 0 without FI_REMOTE_CQ_DATA */
	uint64_t flags;	    /* the application's */
	uint64_t cq_flags;  /* FI_SEND | FI_TAGGED or FI_MSG */
	uint16_t pkt_flags; /* GDRFAB_PKT_TAGGED, _CQ_DATA */
	void *context;
	bool silent;
};
/* The endpoint's slots (at fi_enable); 0 or -FI_ENOMEM. */
int gdrfab_itx_init(struct gdrfab_proto *proto, size_t count);
/* Posts the eager send at once when it may go so (takes the endpoint's
 * lock): true with *ret its result; false when it takes the request path
 * (nothing was done). */
bool gdrfab_itx_send(struct gdrfab_proto *proto,
		     const struct gdrfab_itx_args *a, ssize_t *ret);
/* Its work completion: the one end of a slot (report, connection). */
void gdrfab_itx_wc(struct gdrfab_proto *proto, struct gdrfab_itx *itx,
		   const struct ibv_wc *wc);

/* ---- GPU buffers (gdrfab_stage.c) ---- */
/* Copies n bytes out of a buffer that may be GPU memory (synchronous:
 * only where the API is, before the endpoint's lock). */
int gdrfab_copy_from_buf(struct gdrfab_proto *proto, void *dst, const void *src,
			 size_t n, void *desc);
/* The GPU device of a buffer (its descriptor, or CUDA's answer for one
 * given without), or -1 for host memory. */
int gdrfab_buf_device(struct gdrfab_proto *proto, const void *buf, void *desc);
/* Whether any non-empty entry is GPU memory (gdrfab_buf_device). */
bool gdrfab_iov_gpu(struct gdrfab_proto *proto, const struct iovec *iov,
		    void **desc, size_t count);
/* Copies n bytes into the iovec from offset off, each piece's descriptor
 * checked; host memory only: GPU memory is written by asynchronous steps,
 * and a piece of it found here is refused (-FI_EOPNOTSUPP, logged).
 * nodesc_host: the caller has just found every non-empty entry given
 * without a descriptor to be host memory (gdrfab_gpu_rx_wanted or
 * gdrfab_iov_gpu answered false for this iovec), so CUDA is not asked
 * about them again; false: each such piece is classified here. Pieces
 * with a descriptor are checked from it either way. 0 or -FI_E*. */
int gdrfab_scatter_host(struct gdrfab_proto *proto, const struct iovec *iov,
			void **desc, size_t count, size_t off,
			const uint8_t *src, size_t n, bool nodesc_host);
/* An inject's GPU bytes, copied into host memory before the endpoint's
 * lock is taken. The copy is synchronous because the API is (fi_inject*
 * returns with the buffer reusable), so it must not hold up progress on
 * other threads: the caller holds no lock. When there was GPU memory,
 * *iov, *desc and *count are replaced by one host buffer, c->host in
 * c->bounce, which the caller frees after the post; without GPU memory
 * nothing changes. 0, or -FI_E*. */
/* Whether a send (or an emulated write) of len bytes from these buffers
 * would be copied into a bounce buffer by the CPU or CUDA: an inject, or
 * an eager message the NIC does not gather. Such bytes are copied with
 * gdrfab_copy_in_unlocked before the endpoint's lock. */
bool gdrfab_send_copies(struct gdrfab_proto *proto, void **desc, size_t count,
			size_t len, uint64_t flags, bool silent);
struct gdrfab_inject_copy {
	struct iovec host;
	uint8_t *bounce;
};
int gdrfab_copy_in_unlocked(struct gdrfab_proto *proto,
			    const struct iovec **iov, void ***desc,
			    size_t *count, struct gdrfab_inject_copy *c);
bool gdrfab_iov_has_gpu(struct gdrfab_proto *proto, void **desc, size_t count);
/* Whether any of the buffers must go through host memory. */
bool gdrfab_iov_stages(struct gdrfab_proto *proto, void **desc, size_t count);
/* Points the request's local side at a registered host buffer of the
 * iovec's length, filled from it when fill; access adds remote reading
 * for rendezvous sources. */
int gdrfab_stage_setup(struct gdrfab_proto *proto, struct gdrfab_req *req,
		       const struct iovec *iov, void **desc, size_t count,
		       int access, bool fill);
/* Starts copying the first len staged bytes into the application's
 * buffers: true when they are there already (or the copy failed: see
 * req->stage_err); false while copies run, after which progress calls
 * gdrfab_rndv_read_done (RNDV_READ) or gdrfab_req_finish again, with
 * stage_state DRAINED. */
bool gdrfab_stage_drain(struct gdrfab_proto *proto, struct gdrfab_req *req,
			size_t len);
/* A staged RDMA READ's work request ended: its bytes start copying into
 * the GPU. */
void gdrfab_stage_landed(struct gdrfab_proto *proto, struct gdrfab_req *req);
/* Whether a request must wait for its staging copies before posting
 * (more of) its data. */
bool gdrfab_stage_blocks(const struct gdrfab_req *req);
/* Completes staging copies (never waiting): from progress. */
void gdrfab_stage_progress(struct gdrfab_proto *proto);
void gdrfab_stage_free(struct gdrfab_proto *proto, struct gdrfab_req *req);
/* Frees the staging buffers (endpoint close: waits for their copies). */
void gdrfab_stage_pool_fini(struct gdrfab_proto *proto);

/* ---- the flush step (gdrfab_flush.c) ----
 * Data the NIC wrote into GPU memory is made visible to the GPU before the
 * completion that reports it: by cuFlushGPUDirectRDMAWrites (synchronous
 * by its API, no lock held), or by an RDMA READ of the last byte posted
 * on the endpoint's flush QP, whose work completion progress turns into
 * gdrfab_flush_done, which calls the request's finishing function again
 * (gdrfab_gpu_rx_done, gdrfab_rndv_read_done or gdrfab_req_finish). */
enum {
	GDRFAB_FLUSH_STEP_IDLE,
	GDRFAB_FLUSH_STEP_POSTED,
	GDRFAB_FLUSH_STEP_DONE,
};
/* Flushes the first len bytes the NIC wrote into these buffers of req: 0
 * (visible: host memory, no flush needed, or done), -FI_EINPROGRESS (a
 * READ is posted: the caller returns and is called again when it ended,
 * with its result answered here then), or -FI_E* (logged). */
int gdrfab_flush_step(struct gdrfab_proto *proto, struct gdrfab_req *req,
		      const struct iovec *iov, void **desc, size_t count,
		      size_t len);
/* A peer's fi_writedata landed (wc): its completion is reported once
 * what it wrote into GPU memory is visible, now or from progress. */
void gdrfab_flush_writedata(struct gdrfab_proto *proto,
			    struct gdrfab_conn *conn, const struct ibv_wc *wc);
/* A flush READ ended (err FI_E* or 0): on with the request. */
void gdrfab_flush_done(struct gdrfab_proto *proto, struct gdrfab_req *req,
		       int err, int prov_errno);

/* ---- eager data into GPU memory, asynchronously (gdrfab_gpu_rx.c) ----
 * An eager message's bytes sit in host memory (a receive bounce buffer, or
 * an unexpected message's copy) and belong in a receive's GPU buffers. A
 * step (a request of op GDRFAB_OP_GPU_RX) moves them and completes the
 * receive when its own completion arrives in progress; nothing waits.
 * With CUDA permitted, the staging pipeline's asynchronous copies (their
 * events polled by progress; gdrfab.ko's CPU mapping for small ones);
 * without (FI_OPT_CUDA_API_PERMITTED=false), an RDMA WRITE over the
 * endpoint's loopback QP (gdrfab_loop_copy.c). */
struct gdrfab_gpu_rx_args {
	struct gdrfab_req *recv;
	struct gdrfab_conn *conn;
	struct gdrfab_rxbuf *rxbuf; /* the source's bounce buffer, or NULL */
	const uint8_t *src;
	uint8_t **own; /* an unexpected copy the loopback may take over */
	size_t off, got, size;
	uint64_t cq_flags, tag, data;
	uint64_t msg_id; /* an emulated write's, for its FIN */
	bool done;	 /* the receive leaves its posted list */
};
/* Whether the receive's buffers take this path on this endpoint: a CUDA
 * descriptor, or with CUDA permitted a buffer CUDA calls device memory;
 * without CUDA, a descriptor the loopback QP can write. CUDA is asked at
 * most once per entry given without a descriptor; false also says that
 * every such non-empty entry is host memory, which the host copy then
 * takes as given (gdrfab_scatter_host's nodesc_host). */
bool gdrfab_gpu_rx_wanted(struct gdrfab_proto *proto, const struct iovec *iov,
			  void **desc, size_t count);
/* Starts the step; it completes the receive (cq_flags, tag, data, size;
 * truncated when got < size) and frees it when done. 0, or -FI_E* when
 * nothing was started. */
int gdrfab_gpu_rx_start(struct gdrfab_proto *proto,
			const struct gdrfab_gpu_rx_args *a);
/* A step's bytes are there (err 0) or not (FI_E*): completes it. */
void gdrfab_gpu_rx_done(struct gdrfab_proto *proto, struct gdrfab_req *st,
			int err, int prov_errno);
/* A new step for the receive, with its completion's fields. */
struct gdrfab_req *gdrfab_gpu_rx_step(struct gdrfab_proto *proto,
				      const struct gdrfab_gpu_rx_args *a);

/* The loopback engine (gdrfab_loop_copy.c): eager bytes RDMA-written into
 * GPU memory over a QP of the endpoint connected to itself, in a
 * protection domain of its own (no peer's QP can use its keys), then one
 * byte read back (a PCIe read flushes the writes before it). */
/* Makes the endpoint's loopback QP (idempotent). 0 or -FI_E*. */
int gdrfab_loop_open(struct gdrfab_proto *proto);
/* Makes the endpoint's flush QP (idempotent; at fi_enable, never on the
 * data path). 0 or -FI_E* (logged). */
int gdrfab_loop_flush_open(struct gdrfab_proto *proto);
/* Posts req's flush READ of 1 byte at addr (rkey in the domain's PD), or
 * queues it until the flush QP has room; gdrfab_flush_done follows from
 * progress. 0, or -FI_EIO (logged; nothing posted). */
int gdrfab_loop_flush(struct gdrfab_proto *proto, struct gdrfab_req *req,
		      uint64_t addr, uint32_t rkey);
void gdrfab_loop_close(struct gdrfab_proto *proto);
/* Whether a buffer's descriptor is GPU memory the NIC reaches. */
bool gdrfab_loop_gpu_desc(struct gdrfab_proto *proto, const void *desc);
/* Posts a step (from gdrfab_gpu_rx_step); 0 or -FI_E* (nothing posted:
 * the caller frees it). */
int gdrfab_loop_start(struct gdrfab_proto *proto, struct gdrfab_req *st,
		      const struct gdrfab_gpu_rx_args *a);
/* Completes loopback steps whose work completions arrived. */
void gdrfab_loop_progress(struct gdrfab_proto *proto);
/* Frees what a loopback step holds (from gdrfab_req_free). */
void gdrfab_loop_req_free(struct gdrfab_proto *proto, struct gdrfab_req *req);
/* Gives the handled receive buffers that wait in proto->repost_head back
 * to the SRQ in one post (from progress, once repost_min wait). */
void gdrfab_rxbuf_repost_flush(struct gdrfab_proto *proto);
/* How many handled receive buffers progress lets wait before it reposts
 * them, for an SRQ of rxbuf_cnt. */
unsigned gdrfab_rxbuf_repost_min(size_t rxbuf_cnt);
/* Gives a receive bounce buffer back to the SRQ. */
void gdrfab_rxbuf_repost(struct gdrfab_proto *proto,
			 struct gdrfab_rxbuf *rxbuf);

#endif /* GDRFAB_PROTO_H */
