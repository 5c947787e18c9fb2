/* SPDX-License-Identifier: BSD-2-Clause */
/* Taking a pair's rails back after a failure (gdrfab_rail_back.h). */
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_addr.h"
#include "gdrfab_conn_rails.h"
#include "gdrfab_proto.h"
#include "gdrfab_proto_stats.h"
#include "gdrfab_rail_back.h"
#include "gdrfab_req.h"
#include "gdrfab_verbs_ops.h"

/* Every rail a pair may have fits one control message. */
_Static_assert(sizeof(struct gdrfab_pkt_hdr) + sizeof(struct gdrfab_cm_rails) <=
		       GDRFAB_CTRL_SIZE,
	       "a rails reset fits a control request");

/* A new take-back: its retries start from the first again. */
static void phase_start(struct gdrfab_conn_rails *cr)
{
	cr->tries = 0;
	cr->told = false;
	cr->next_ms = 0;
}

/* Every rail out: rail 0 carries the connection alone. */
static void all_out(struct gdrfab_conn *conn, size_t rail)
{
	struct gdrfab_conn_rails *cr = conn->rails;

	cr->up = false;
	cr->back = GDRFAB_RAILS_LOST;
	cr->lost_rail = (uint8_t)rail;
	phase_start(cr);
	/* What is still on them comes back flushed now, to go again on
	 * rail 0, instead of after each QP's retries; and the pair's
	 * rails are reset only once nothing is on them. */
	gdrfab_conn_rails_error(conn);
}

void gdrfab_rail_back_out(struct gdrfab_conn *conn, size_t rail)
{
	struct gdrfab_conn_rails *cr = conn->rails;
	uint8_t all = (uint8_t)(((1u << cr->more) - 1) << 1);
	uint8_t out = (uint8_t)(cr->out | 1u << rail);

	/* Striping (STEADY), or already without another rail (LOST while
	 * up), and a rail beyond 0 left besides this one: it alone goes
	 * out; what is on it comes back flushed, and the others carry on
	 * until its port is back (the timers). */
	if (cr->up && out != all &&
	    (cr->back == GDRFAB_RAILS_STEADY ||
	     cr->back == GDRFAB_RAILS_LOST)) {
		if (cr->back == GDRFAB_RAILS_STEADY) {
			cr->back = GDRFAB_RAILS_LOST;
			cr->lost_rail = (uint8_t)rail;
			phase_start(cr);
		}
		cr->out = out;
		gdrfab_conn_rail_error(conn, rail);
		return;
	}
	all_out(conn, rail);
}

long long gdrfab_rail_back_delay(unsigned tries)
{
	long long ms = GDRFAB_RAIL_RETRY_FIRST_MS;

	for (unsigned i = 1; i < tries && ms < GDRFAB_RAIL_RETRY_MAX_MS; i++)
		ms *= 2;
	return GDRFAB_MIN(ms, (long long)GDRFAB_RAIL_RETRY_MAX_MS);
}

/* One more attempt of this take-back went (or failed): the next not
 * before the backoff's delay. */
static long long count_try(struct gdrfab_conn *conn)
{
	struct gdrfab_conn_rails *cr = conn->rails;
	long long delay;

	if (cr->tries < UINT8_MAX)
		cr->tries++;
	delay = gdrfab_rail_back_delay(cr->tries);
	cr->next_ms = conn->proto->now_ms + delay;
	return delay;
}

/* An attempt failed (why) or went unanswered: tried again after the
 * backoff, said once per take-back, with when. */
static void retry_later(struct gdrfab_conn *conn, const char *why)
{
	struct gdrfab_conn_rails *cr = conn->rails;
	long long delay = count_try(conn);
	char peer[128];

	if (cr->told)
		return;
	cr->told = true;
	gdrfab_addr_to_str(&conn->peer, peer, sizeof(peer));
	GDRFAB_WARN(FI_LOG_EP_CTRL,
		    "rails to %s not taken back yet (%s): rail 0 carries the "
		    "connection alone; trying again in %lld ms, then backing "
		    "off to every %d s (not logged again until they are "
		    "back)\n",
		    peer, why, delay, GDRFAB_RAIL_RETRY_MAX_MS / 1000);
}

/* Our attempt failed with our QPs half made: they go to the error state
 * (reset anew from there), and back (LOST: we offer anew; ASKED: we
 * accept the offer we hold) after the backoff. */
static void failed(struct gdrfab_conn *conn, uint8_t back, const char *why)
{
	conn->rails->up = false;
	conn->rails->back = back;
	gdrfab_conn_rails_error(conn);
	retry_later(conn, why);
}

/* Whether the ports of rails 1 to more are active: asked of the devices
 * at most every GDRFAB_RAIL_PORT_CHECK_MS, the answer kept meanwhile for
 * every connection of the endpoint. */
static bool ports_active(struct gdrfab_proto *proto, size_t more)
{
	uint32_t want = ((1u << more) - 1) << 1;

	if (proto->now_ms - proto->rail_ports_ms >= GDRFAB_RAIL_PORT_CHECK_MS) {
		proto->rail_ports_ms = proto->now_ms;
		proto->rail_ports_active = 0;
		for (size_t r = 1; r < proto->env.nrails; r++) {
			const struct gdrfab_proto_rail *pr =
				&proto->env.more_rails[r - 1];
			struct ibv_port_attr attr;

			if (!gdrfab_vops->query_port(pr->ctx, pr->port_num,
						     &attr) &&
			    attr.state == IBV_PORT_ACTIVE)
				proto->rail_ports_active |= 1u << r;
		}
	}
	return (proto->rail_ports_active & want) == want;
}

/* Sends our rails (reset, or connected) as an OFFER or ACCEPT: false
 * when no control request is free (the timers try again). */
static bool send_rails(struct gdrfab_conn *conn, uint64_t what)
{
	struct gdrfab_cm_rails mine;
	size_t len = gdrfab_cm_rails_fill(conn, &mine);

	return gdrfab_send_ctrl_ext(conn->proto, conn, GDRFAB_PKT_RAILS_RESET,
				    what, 0, &mine, len);
}

/* LOST, drained, our ports back and the backoff over: reset ours and
 * offer them. */
static void offer(struct gdrfab_conn *conn)
{
	if (!gdrfab_conn_rails_reset(conn)) {
		failed(conn, GDRFAB_RAILS_LOST, "a QP cannot be reset");
		return;
	}
	/* Unsent, they are reset again (new PSNs) at the next try. */
	if (!send_rails(conn, GDRFAB_RAILS_OFFER))
		return;
	conn->rails->back = GDRFAB_RAILS_OFFERED;
	count_try(conn); /* the answer's time */
}

/* OFFERED and no answer in time: the same offer again (our QPs stay as
 * they are, same PSNs), so that an answer to any copy answers the one
 * offer. */
static void offer_again(struct gdrfab_conn *conn)
{
	if (!send_rails(conn, GDRFAB_RAILS_OFFER))
		return; /* no control request free: the next timers */
	retry_later(conn, "the peer did not answer our offer");
}

/* ASKED, drained, our ports back and the backoff over: ours reset and
 * connected to the peer's offer, and said so. We do not stripe before
 * its RAILS_UP: its QPs are connected to ours only when it reads our
 * ACCEPT. One that fails keeps the offer and tries it again. */
static void accept(struct gdrfab_conn *conn)
{
	struct gdrfab_conn_rails *cr = conn->rails;

	if (!gdrfab_conn_rails_reset(conn)) {
		failed(conn, GDRFAB_RAILS_ASKED, "a QP cannot be reset");
		return;
	}
	if (!gdrfab_conn_rails_connect(conn, &cr->offer)) {
		failed(conn, GDRFAB_RAILS_ASKED, "a QP cannot be connected");
		return;
	}
	if (send_rails(conn, GDRFAB_RAILS_ACCEPT))
		cr->back = GDRFAB_RAILS_ACCEPTED;
}

void gdrfab_rail_back_timers(struct gdrfab_conn *conn)
{
	struct gdrfab_conn_rails *cr = conn->rails;

	/* STEADY and ACCEPTED wait for nothing of ours: in ACCEPTED the
	 * offerer, whose own retries end the exchange, moves next. */
	if (cr->back == GDRFAB_RAILS_STEADY ||
	    cr->back == GDRFAB_RAILS_ACCEPTED ||
	    conn->proto->now_ms < cr->next_ms)
		return;
	if (cr->back == GDRFAB_RAILS_OFFERED) {
		offer_again(conn);
		return;
	}
	/* Rails left carrying on (LOST while up): once the lost ones'
	 * ports are back, they stop too, as the pair resets every rail;
	 * what was still to go on them goes on rail 0 meanwhile. */
	if (cr->up) {
		if (!ports_active(conn->proto, cr->more))
			return;
		cr->up = false;
	}
	/* A reset drops what a QP holds without completing it. */
	if (!gdrfab_conn_rails_drained(conn) ||
	    !ports_active(conn->proto, cr->more))
		return;
	if (cr->back == GDRFAB_RAILS_LOST)
		offer(conn);
	else
		accept(conn);
}

const char *gdrfab_rail_back_check(const struct gdrfab_pkt_hdr *h, size_t len)
{
	if (h->flags || h->seg_count || h->tag || h->msg_id || h->size ||
	    (h->data != GDRFAB_RAILS_OFFER && h->data != GDRFAB_RAILS_ACCEPT))
		return "bad rails reset";
	if (len < sizeof(*h))
		return "wrong length";
	return gdrfab_cm_rails_check_trailer(
		(const struct gdrfab_cm_rails *)(h + 1), len - sizeof(*h));
}

/* Whether t's rails are the ones ours were last connected (or meant to
 * be) to: a copy of what we took already. */
static bool same_rails(const struct gdrfab_conn_rails *cr,
		       const struct gdrfab_cm_rails *t)
{
	for (size_t i = 0; i < cr->more; i++) {
		if (t->rail[i].psn != cr->peer_psn[i])
			return false;
	}
	return true;
}

/* The peer reset its rails and offers them. */
static void on_offer(struct gdrfab_conn *conn, const struct gdrfab_cm_rails *t)
{
	struct gdrfab_conn_rails *cr = conn->rails;

	/* Both offered at once: the requester's offer stands, and the
	 * peer takes it as we take theirs otherwise. */
	if (cr->back == GDRFAB_RAILS_OFFERED && cr->requester)
		return;
	/* A copy of the offer we accepted (the peer offered again before
	 * it read our ACCEPT): the same ACCEPT again, no second reset, so
	 * that whichever copy of it the peer takes, both sides agree. */
	if (cr->back == GDRFAB_RAILS_ACCEPTED && same_rails(cr, t)) {
		send_rails(conn, GDRFAB_RAILS_ACCEPT);
		return;
	}
	memcpy(&cr->offer, t, sizeof(*t));
	/* Our side may not have seen the failure (it only read, or its
	 * pieces had not timed out yet): taken out all the same, as the
	 * peer's QPs are reset now. */
	if (cr->up) {
		char peer[128];

		gdrfab_addr_to_str(&conn->peer, peer, sizeof(peer));
		GDRFAB_INFO(FI_LOG_EP_CTRL,
			    "rails to %s reset by the peer: connected anew\n",
			    peer);
	}
	if (cr->back == GDRFAB_RAILS_STEADY)
		phase_start(cr);
	/* Our offer's wait for an answer is not the accept's to keep;
	 * the wait after an attempt that failed (LOST, ASKED) is. */
	if (cr->back == GDRFAB_RAILS_OFFERED)
		cr->next_ms = 0;
	cr->up = false;
	if (cr->back != GDRFAB_RAILS_OFFERED)
		gdrfab_conn_rails_error(conn);
	cr->back = GDRFAB_RAILS_ASKED;
	gdrfab_rail_back_timers(conn);
}

/* The peer connected its rails to ours (which it has now): ours to its,
 * then both stripe. */
static void on_accept(struct gdrfab_conn *conn, const struct gdrfab_cm_rails *t)
{
	struct gdrfab_conn_rails *cr = conn->rails;

	/* A copy of an ACCEPT we took already (it answered a copy of our
	 * offer), even if we offered anew since: not an answer to this. */
	if (same_rails(cr, t))
		return;
	if (cr->back == GDRFAB_RAILS_STEADY && cr->up) {
		/* A second, different ACCEPT of our one offer: a peer of the
		 * build before retries reset and connected again for a copy
		 * of it, so its QPs no longer match ours. Out, and a new
		 * exchange; what fails meanwhile goes again on rail 0. */
		all_out(conn, cr->lost_rail ? cr->lost_rail : 1);
		return;
	}
	if (cr->back != GDRFAB_RAILS_OFFERED)
		return; /* not ours to take: we took the peer's offer */
	if (!gdrfab_conn_rails_connect(conn, t)) {
		failed(conn, GDRFAB_RAILS_LOST, "a QP cannot be connected");
		return;
	}
	/* On rail 0, so the peer stripes only once it read this. One that
	 * cannot go (no control request free, logged) leaves the peer on
	 * rail 0 while we stripe: correct, only not as fast. */
	gdrfab_send_ctrl(conn->proto, conn, GDRFAB_PKT_NOP, GDRFAB_NOP_RAILS_UP,
			 0);
	gdrfab_rail_back_done(conn);
}

void gdrfab_rail_back_rx(struct gdrfab_conn *conn,
			 const struct gdrfab_pkt_hdr *h)
{
	const struct gdrfab_cm_rails *t = (const void *)(h + 1);
	char peer[128];

	if (!conn->rails || t->count != conn->rails->more) {
		/* Never sent by a peer of this build: the pair agreed on
		 * as many rails. */
		gdrfab_addr_to_str(&conn->peer, peer, sizeof(peer));
		GDRFAB_WIRE_WARN(
			conn->proto, FI_LOG_EP_CTRL,
			"rails reset from %s ignored: %u rails, ours %zu", peer,
			t->count, conn->rails ? conn->rails->more : 0);
		return;
	}
	if (h->data == GDRFAB_RAILS_OFFER)
		on_offer(conn, t);
	else
		on_accept(conn, t);
}

void gdrfab_rail_back_done(struct gdrfab_conn *conn)
{
	struct gdrfab_conn_rails *cr = conn->rails;
	struct gdrfab_proto *proto = conn->proto;
	size_t rail = cr->lost_rail ? cr->lost_rail : 1;
	char peer[128];

	cr->up = true;
	cr->out = 0;
	cr->back = GDRFAB_RAILS_STEADY;
	phase_start(cr);
	gdrfab_pstat_rail_back(proto, rail);
	gdrfab_addr_to_str(&conn->peer, peer, sizeof(peer));
	GDRFAB_WARN(FI_LOG_EP_DATA,
		    "rail %zu (%s) to %s back: striping again\n", rail,
		    gdrfab_pstat_rail_name(proto, rail), peer);
}
