/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connections: one RC queue pair per peer, set up on demand by messages
 * over the endpoint's UD queue pair (gdrfab_conn.c, gdrfab_cm_ud.c), its
 * timers, failure and keepalive, and the memo of the last full header each
 * way (GDRFAB_IMM_REPEAT).
 */
#ifndef GDRFAB_CONN_H
#define GDRFAB_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/fabric.h>

#include "gdrfab_addr.h"
#include "gdrfab_async.h"
#include "gdrfab_list.h"
#include "gdrfab_proto.h"
#include "gdrfab_seg.h"
#include "gdrfab_wire.h"

struct gdrfab_req;

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
	/* Segmented eager (gdrfab_seg.h): the largest message either side
	 * sends as one, agreed in the handshake (0: none, either way), and
	 * the message being reassembled from the peer. */
	size_t seg_max;
	struct gdrfab_seg_rx seg_rx;
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
	/* Atomics to it may go to the NIC (gdrfab_atomic.h). */
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
	/* When a work request of ours last completed, or (kept by the
	 * timers) when none was in flight: work older than a port outage
	 * that never completes is failed (gdrfab_conn_timers). */
	long long tx_done_ms;
	/* When the peer said its endpoint closes (GDRFAB_CM_BYE), else 0:
	 * released a little later, once what it sent before has come in
	 * on the RC queue pair (the BYE came by UD and may overtake it). */
	long long peer_left_ms;
	bool quiet_end; /* its end is logged by whoever ends it */
	/* Why it failed (FI_E*, prov_errno), for the operations whose work
	 * requests come back flushed after that; 0 before. */
	int fail_err, fail_prov_errno;
	struct gdrfab_list entry; /* proto->conns or proto->dead */
	/* Its rails beyond rail 0 (gdrfab_conn_rails.h); NULL for a pair
	 * that uses rail 0 alone. */
	struct gdrfab_conn_rails *rails;
};

/* ---- connections (gdrfab_conn.c) ---- */
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
/* The endpoint closes: tells every connected peer (GDRFAB_CM_BYE), so
 * that it releases its side now instead of finding it dead later. Waits
 * at most a few milliseconds for the messages to leave. */
void gdrfab_conn_farewell(struct gdrfab_proto *proto);
void gdrfab_conn_put(struct gdrfab_conn *conn);
fi_addr_t gdrfab_conn_fi_addr(struct gdrfab_conn *conn);
/* A counted message-borne atomic on req's connection was answered or
 * ended: the NIC atomics held behind it may go (from progress). */
void gdrfab_conn_atomic_answered(struct gdrfab_req *req);
/* A message arrived from the peer (seen by progress): it is alive, and
 * connected. */
void gdrfab_conn_rx(struct gdrfab_conn *conn);

/* ---- connection messages on the UD QP (gdrfab_cm_ud.c) ---- */
int gdrfab_ud_post_recvs(struct gdrfab_proto *proto);
size_t gdrfab_ud_mem_size(void);
/* Sends a connection message to the peer's UD QP; false when not sent
 * (every slot in flight, the QP being reset, or no address handle to the
 * peer yet: local says our application waits for it). */
bool gdrfab_ud_send(struct gdrfab_proto *proto, const struct gdrfab_addr *peer,
		    bool local, const struct gdrfab_cm_msg *msg);
/* The same for a message of len bytes from msg (len at most
 * sizeof(*msg) + sizeof(struct gdrfab_cm_rails): a trailer follows). */
bool gdrfab_ud_send_len(struct gdrfab_proto *proto,
			const struct gdrfab_addr *peer, bool local,
			const struct gdrfab_cm_msg *msg, size_t len);
/* Receives connection messages (to gdrfab_conn_handle_cm). */
void gdrfab_conn_poll_ud(struct gdrfab_proto *proto);
/* Resets the UD QP once it is found out of RTS (from the timers). */
void gdrfab_ud_check(struct gdrfab_proto *proto);

/* ---- repeated headers (gdrfab_wire.h, GDRFAB_IMM_REPEAT) ---- */
/* The one rule both ends apply to each full header, the sender as it
 * posts it and the receiver as it accepts it. A delivery ACK's header
 * leaves the memo as it was: it has a msg_id, so no message repeats it,
 * and the plain sends around it (a stream of one tag) still repeat the
 * header before it. */
static inline void gdrfab_memo_note(struct gdrfab_memo *m,
				    const struct gdrfab_pkt_hdr *h)
{
	if (h->type != GDRFAB_PKT_EAGER || (h->flags & GDRFAB_PKT_DELIVERY_ACK))
		return;
	m->valid = !(h->flags & GDRFAB_PKT_EMU);
	m->flags = h->flags;
	m->tag = h->tag;
	m->data = h->data;
}

/* Whether the message of header h may go as a repeat, both send paths
 * asking: an EAGER message whose flags, tag and data are the memo's
 * (never one with a msg_id, an emulated write's or a delivery ACK's,
 * which the peer needs; the memo never holds their flags either). */
static inline bool gdrfab_memo_repeats(const struct gdrfab_memo *m,
				       const struct gdrfab_pkt_hdr *h)
{
	return m->valid && h->type == GDRFAB_PKT_EAGER && !h->msg_id &&
	       !(h->flags & GDRFAB_PKT_DELIVERY_ACK) && m->flags == h->flags &&
	       m->tag == h->tag && m->data == h->data;
}

#endif /* GDRFAB_CONN_H */
