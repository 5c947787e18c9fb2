/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The protocol layer of an RDM endpoint: connections set up on demand over
 * the endpoint's UD queue pair, then eager messages through pre-registered
 * bounce buffers, rendezvous messages that the receiver pulls with RDMA
 * READ straight into the posted buffer, and RMA, all over one RC queue pair
 * per peer. Everything here runs under the endpoint's lock.
 *
 * This header is the protocol's instance (struct gdrfab_proto), what it
 * asks of the object layer (struct gdrfab_proto_ops) and its lifecycle
 * (gdrfab_proto.c). Each unit has its own header: the request and its end
 * (gdrfab_req.h), connections (gdrfab_conn.h), messages (gdrfab_msg.h),
 * RMA (gdrfab_rma.h), atomics (gdrfab_atomic.h), GPU memory
 * (gdrfab_gpu.h). The messages on the wire are in gdrfab_wire.h.
 */
#ifndef GDRFAB_PROTO_H
#define GDRFAB_PROTO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <infiniband/verbs.h>
#include <rdma/fi_eq.h>

#include <rdma/fabric.h>

#include "gdrfab_addr.h"
#include "gdrfab_addrmap.h"
#include "gdrfab_async.h"
#include "gdrfab_list.h"
#include "gdrfab_proto_env.h"
#include "gdrfab_ratelimit.h"
#include "gdrfab_signal.h"
#include "gdrfab_sizepool.h"
#include "gdrfab_stage.h"
#include "gdrfab_stats.h"
#include "gdrfab_tick.h"
#include "gdrfab_verbs_ops.h"
#include "gdrfab_wire.h"

/* Completions one poll of the CQ takes. */
#define GDRFAB_POLL_BATCH 32

struct gdrfab_conn;
struct gdrfab_itx;
struct gdrfab_loop;
struct gdrfab_mr_desc;
struct gdrfab_report;
struct gdrfab_req;
struct gdrfab_rxbuf;
struct gdrfab_txbuf;

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
	/* The rkeys on rails 1 to max of the MR behind a peer's
	 * GDRFAB_RAIL_KEY key, for striped RMA: how many (max), or 0 (GPU
	 * memory the peer may write into too, unless gpu_ok). */
	size_t (*mr_rail_keys)(struct gdrfab_domain *domain, uint64_t key,
			       uint32_t *rkey, size_t max, bool gpu_ok);
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
	/* What polls it (gdrfab_vops->poll_cq_fn): the quick path calls the
	 * driver directly. */
	gdrfab_poll_cq_fn poll_cq;
	/* Rails 1 and on (env.nrails > 1): rail i's RC QPs' CQ is
	 * rail_cq[i - 1] (a CQ never spans devices). */
	struct ibv_cq *rail_cq[GDRFAB_CM_RAILS_MAX - 1];
	int rail_cq_credits[GDRFAB_CM_RAILS_MAX - 1];
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
	/* The device's port changes seen so far (env.port_events), and when
	 * the last was seen: work in flight across it is watched
	 * (gdrfab_conn_timers). */
	unsigned port_events_seen;
	long long port_event_ms;
	/* Lost rails' ports (gdrfab_rail_back.c): when last asked, and bit
	 * r set when rail r's was active then. */
	long long rail_ports_ms;
	uint32_t rail_ports_active;
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
	/* The receive side's heap memory per message, kept for reuse
	 * (issue 34): unexpected messages' records (struct gdrfab_unexp)
	 * and payload copies, segmented messages' reassembly buffers;
	 * under the endpoint's lock, as everything that takes or frees
	 * them (gdrfab_recv.c, gdrfab_seg.c, gdrfab_req_loop.c). */
	struct gdrfab_sizepool rx_pool;
	/* A bounce buffer of eager_max bytes for the copies out of GPU
	 * memory that sends make before the endpoint's lock
	 * (gdrfab_copy_in_unlocked), kept between calls; NULL while a
	 * call holds it. Atomic exchanges, no lock. */
	uint8_t *copy_spare;
	/* Limits. */
	size_t eager_max, inject_max;
	/* FI_GDRFAB_SEG_MAX as this endpoint announces it (0: above
	 * eager_max or off); a connection's own limit is conn->seg_max. */
	size_t seg_max;
	/* Segmented eager messages sent and received whole (issue 34):
	 * internal, as stripe_bytes (the public counters count them among
	 * the eager ones). */
	uint64_t seg_tx_msgs, seg_rx_msgs;
	uint32_t max_wr_len; /* the port's max_msg_sz */
	int max_sge, sq_depth, max_rd_atomic;
	enum ibv_mtu port_mtu;
	uint64_t next_msg_id;
	/* Requests: a registered slab; the last few are kept for control
	 * messages so that a FIN never waits for the application. */
	struct gdrfab_req *reqs;
	size_t req_cnt, req_free_cnt;
	size_t req_clear_len; /* what allocation clears: up to step_fn */
	struct ibv_mr *req_mr;
	struct gdrfab_list free_reqs, live;
	/* The staging buffers, kept for reuse, and the copies of staged
	 * requests in flight (hmem/gdrfab_stage.h). */
	struct gdrfab_stage_pool stage_pool;
	/* What staging calls when more of a request's staged bytes may go
	 * (filled, or a further piece copied): its connection posts what it
	 * can (gdrfab_conn_kick, set at create, so that staging names
	 * nothing above it). */
	void (*stage_can_post)(struct gdrfab_conn *conn);
	/* Work requests the shared CQ can still take. */
	int cq_credits;
	long long last_timer_ms;
	/* The coarse clock at the start of the progress call running (for
	 * its events' handlers); when the UD CQ was last polled, and the
	 * calls since. */
	long long now_ms, ud_poll_ms;
	unsigned ud_poll_skips;
	/* That clock, read for real only when it may have moved. */
	struct gdrfab_tick tick;
	/* The quick path's budget (gdrfab_proto_poll_quick): calls of
	 * progress that may still be one poll of the CQ and nothing else.
	 * A call that runs in full sets it, to 0 while anything besides the
	 * CQ and the clock waits for progress (side_work, gdrfab_proto.c),
	 * else to the calls left until the UD CQ's turn; whatever makes such
	 * work outside a full call sets it to 0 (gdrfab_proto_wake). So an idle
	 * call tests one word instead of every queue. quick_given: what the
	 * last full call set, less what wakes took back, so that given - left
	 * is the calls since it (the UD CQ's turn, the clock's bound). */
	int quick_left, quick_given;
	/* What progress polled from the CQ (here, not on the stack: the
	 * call that finds nothing then needs no frame for it). */
	struct ibv_wc wc[GDRFAB_POLL_BATCH];
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

/* Work for progress was made outside a call of it that runs in full (a
 * request ended, buffers wait for the SRQ, a copy was staged, atomics
 * wait): the next call runs in full. Called by whatever makes such work;
 * a full call sets the budget again from what it left. */
static inline void gdrfab_proto_wake(struct gdrfab_proto *proto)
{
	proto->quick_given -= proto->quick_left;
	proto->quick_left = 0;
}

/* Progress's quick path, inline for the CQ read that finds nothing: when
 * no work but the CQ's waits, the budget lasts and the clock cannot have
 * moved, one poll of the CQ into proto->wc. 0: it found nothing and the
 * call is done; else gdrfab_proto_progress_polled must run with what it
 * returned (completions polled, or negative: poll again in full). Under
 * the endpoint's lock, as all progress. */
static inline int gdrfab_proto_poll_quick(struct gdrfab_proto *proto)
{
	if (--proto->quick_left < 0 || !gdrfab_tick_quick(&proto->tick))
		return -1;
	return proto->poll_cq(proto->cq, GDRFAB_POLL_BATCH, proto->wc);
}

/* The rest of a progress call whose quick path returned n (non-zero). */
void gdrfab_proto_progress_polled(struct gdrfab_proto *proto, int n);
/* One work completion of the endpoint's CQ, handled as progress handles
 * it (under the endpoint's lock). */
void gdrfab_proto_handle_wc(struct gdrfab_proto *proto,
			    const struct ibv_wc *wc);

#endif /* GDRFAB_PROTO_H */
