/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Rails of an endpoint and of its connections (issue 31). An endpoint of
 * a rail-set domain has a CQ on each rail beyond rail 0 (a CQ never spans
 * devices); a connection to a peer of several rails has one RC QP per
 * rail of the pair, min(ours, its) of them, rail i paired with the peer's
 * rail i. Rail 0 is the connection's own QP, which alone carries eager
 * messages, control packets and FINs: tag matching, the repeat memo and
 * delivery order rest on one QP's order. Rails beyond it carry RDMA READs
 * and WRITEs only, so they need no receive queue.
 *
 * They are agreed by the connection's one exchange on rail 0
 * (gdrfab_wire.h, GDRFAB_CM_F_RAILS): the REQ offers, the acceptor makes
 * its rail QPs and lists them in its REP, the requester makes and
 * connects its own and lists them in its RTU, the acceptor connects and
 * tells the requester on rail 0 that they are up. Nothing here calls the
 * connection core: it asks, and the core sends and decides.
 */
#ifndef GDRFAB_CONN_RAILS_H
#define GDRFAB_CONN_RAILS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gdrfab_conn.h"
#include "gdrfab_wire.h"

/* Striped RMA (gdrfab_stripe.h): what the initiator learned of the
 * peer's keys, a small table indexed by the key's hash; a slot taken by
 * another key is asked again. */
#define GDRFAB_RAIL_KEY_CACHE 64 /* a power of two */
enum gdrfab_rail_key_state {
	GDRFAB_RKEY_EMPTY,
	GDRFAB_RKEY_ASKED, /* a RAIL_KEYS_REQ is out */
	GDRFAB_RKEY_KNOWN, /* rkey[] holds the peer's rails' rkeys */
	GDRFAB_RKEY_NONE,  /* the peer has none for it: rail 0 alone */
};
struct gdrfab_rail_key {
	uint64_t key;
	uint32_t state; /* enum gdrfab_rail_key_state */
	uint32_t rkey[GDRFAB_CM_RAILS_MAX - 1];
	long long asked_ms; /* when ASKED */
};

/* Where a pair's rails stand after a failure (gdrfab_rail_back.h). */
enum gdrfab_rail_back_state {
	GDRFAB_RAILS_STEADY,   /* up, or not up yet after the CM exchange */
	GDRFAB_RAILS_LOST,     /* taken out: until drained, ports back and
				* next_ms */
	GDRFAB_RAILS_OFFERED,  /* reset and offered: the peer's ACCEPT, or
				* offered again at next_ms */
	GDRFAB_RAILS_ASKED,    /* the peer offered: accept once drained,
				* ports back and next_ms */
	GDRFAB_RAILS_ACCEPTED, /* connected: the peer's RAILS_UP? */
};

struct gdrfab_conn_rails {
	size_t more; /* rails of the pair beyond rail 0 */
	/* Both sides' rail QPs are connected: work may go on them. The
	 * acceptor knows it at the RTU, the requester from the acceptor's
	 * GDRFAB_NOP_RAILS_UP; after a failure, both from the exchange that
	 * takes them back (gdrfab_rail_back.h). */
	bool up;
	/* We made the rails from the peer's REP (the CM requester): when
	 * both sides offer to take them back at once, ours goes. */
	bool requester;
	uint8_t back;	   /* enum gdrfab_rail_back_state */
	uint8_t lost_rail; /* the rail that failed, for the log */
	/* Rails (bit r for rail r) taken out while up: the pair's others
	 * carry on (three rails or more, gdrfab_rail_back.h); none once the
	 * rails are back. */
	uint8_t out;
	struct gdrfab_cm_rails offer; /* the peer's, while ASKED, ACCEPTED */
	/* The take-back's retries (gdrfab_rail_back.h): attempts so far,
	 * whether they were logged, and when the next may go. */
	uint8_t tries;
	bool told;
	long long next_ms;
	/* The PSNs of the peer's rails ours were last connected (or meant
	 * to be) to: a copy of an ACCEPT already taken is known by them. */
	uint32_t peer_psn[GDRFAB_CM_RAILS_MAX - 1];
	struct ibv_qp *qp[GDRFAB_CM_RAILS_MAX - 1];
	uint32_t psn[GDRFAB_CM_RAILS_MAX - 1];
	int sq_avail[GDRFAB_CM_RAILS_MAX - 1]; /* free send queue slots */
	/* The rail the next message or RMA below the stripe threshold goes
	 * on, modulo the rails (gdrfab_stripe.h): they take turns. */
	uint8_t turn;
	struct gdrfab_rail_key keys[GDRFAB_RAIL_KEY_CACHE];
};

/* ---- the endpoint's CQs ---- */
/* A CQ per rail beyond rail 0 (none for a NIC alone): 0 or -FI_ENOMEM,
 * logged. */
int gdrfab_rails_cqs_create(struct gdrfab_proto *proto);
void gdrfab_rails_cqs_destroy(struct gdrfab_proto *proto);

/* ---- the connection messages ---- */
/* Marks a REQ as coming from an endpoint of several rails. */
void gdrfab_cm_rails_offer(const struct gdrfab_proto *proto,
			   struct gdrfab_cm_msg *msg);
/* What is wrong with a connection message of len bytes as to its length
 * and rails (flag, count, and the trailer t, the bytes after msg), or
 * NULL. */
const char *gdrfab_cm_rails_check(const struct gdrfab_cm_msg *msg,
				  const struct gdrfab_cm_rails *t, size_t len);
/* Fills out with conn's rails for its REP or RTU: the wire length of the
 * trailer, 0 when the pair has no rails. */
size_t gdrfab_cm_rails_fill(const struct gdrfab_conn *conn,
			    struct gdrfab_cm_rails *out);

/* ---- a connection's rails ---- */
/* The acceptor of a REQ: makes rail QPs for the pair when both sides
 * have several rails (none when it cannot: the pair uses rail 0). */
void gdrfab_conn_rails_accept(struct gdrfab_conn *conn,
			      const struct gdrfab_cm_msg *req);
/* The requester, on a REP whose trailer is peer (NULL: the peer uses one
 * rail): makes its rail QPs and connects them to the peer's. Without
 * rails after it (none offered, or a QP that could not be made), the
 * RTU goes without a trailer and the pair uses rail 0 alone. */
void gdrfab_conn_rails_on_rep(struct gdrfab_conn *conn,
			      const struct gdrfab_cm_rails *peer);
/* The acceptor, on the RTU whose trailer is peer: connects its rail QPs
 * to the requester's. True when they are up, and the requester must be
 * told (GDRFAB_NOP_RAILS_UP); false when the pair uses rail 0 alone. */
bool gdrfab_conn_rails_on_rtu(struct gdrfab_conn *conn,
			      const struct gdrfab_cm_rails *peer);
/* The peer said its rails are up (GDRFAB_NOP_RAILS_UP): at the CM
 * exchange, or when it took them back after ours (gdrfab_rail_back.h). */
void gdrfab_conn_rails_up(struct gdrfab_conn *conn);
/* What is wrong with a rails trailer t of len bytes, or NULL. */
const char *gdrfab_cm_rails_check_trailer(const struct gdrfab_cm_rails *t,
					  size_t len);
/* Whether no work request is outstanding on any of conn's rail QPs. */
bool gdrfab_conn_rails_drained(const struct gdrfab_conn *conn);
/* Takes conn's rail QPs back to INIT (through RESET), each with a new
 * PSN (never the one it had), so that they can be connected anew; they
 * must be drained. False when one cannot be (logged at debug level: the
 * caller, which tries again, says it once). */
bool gdrfab_conn_rails_reset(struct gdrfab_conn *conn);
/* Connects conn's rail QPs (in INIT) to the peer's (its trailer, as many
 * rails), noting the peer's PSNs (peer_psn) first; false when one cannot
 * be (logged at debug level, as a reset). */
bool gdrfab_conn_rails_connect(struct gdrfab_conn *conn,
			       const struct gdrfab_cm_rails *peer);
/* The connection failed: its rail QPs go to the error state, so that
 * what they hold comes back flushed now, as rail 0's does. */
void gdrfab_conn_rails_error(struct gdrfab_conn *conn);
/* Rail's QP alone (1 to more) to the error state: it is taken out while
 * the others carry on. */
void gdrfab_conn_rail_error(struct gdrfab_conn *conn, size_t rail);
/* Whether work may go on rail (1 to more) of conn's rails now. */
static inline bool gdrfab_conn_rail_usable(const struct gdrfab_conn_rails *cr,
					   size_t rail)
{
	return cr->up && !(cr->out & (1u << rail));
}
/* Destroys conn's rail QPs. */
void gdrfab_conn_rails_free(struct gdrfab_conn *conn);

#endif /* GDRFAB_CONN_RAILS_H */
