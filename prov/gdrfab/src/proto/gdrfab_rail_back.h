/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Taking a pair's rails back after a failure (issue 31). A piece that
 * fails on a rail beyond 0 while the connection stands takes the pair's
 * rails out (gdrfab_stripe.h): nothing more is striped on them, their QPs
 * go to the error state so that every piece still on them comes back
 * flushed (and goes again on rail 0), and the pair waits for the rails'
 * ports. A pair of three rails or more that has another rail beyond 0
 * left takes the failed one out alone (cr->out, its QP to the error
 * state; LOST while still up): the others stripe on, so that a job on a
 * GPU with four NICs keeps three while one is down. Once the lost rails'
 * ports are active again, the others stop too (up false: what was still
 * to go on them goes on rail 0) and the pair takes all of them back as
 * below, since the exchange resets every rail QP. Once every rail QP of the
 * pair is drained and our rails' ports are active again (ibv_query_port, at
 * most every GDRFAB_RAIL_PORT_CHECK_MS per endpoint, only while some rail is
 * out), the pair connects them anew over rail 0:
 *
 *   A: rail QPs reset (RESET -> INIT, new PSNs)  -- OFFER, A's rails -->
 *   B: rails out if they were not (QPs to error), and once drained and
 *      its own ports are active: reset, connected to A's  <-- ACCEPT,
 *      B's rails --
 *   A: connected to B's, striping again  -- NOP RAILS_UP -->
 *   B: striping again
 *
 * An RC QP cannot be reconnected alone: the peer's QP, in the error
 * state too once its retries ran out or still ready to send when only
 * our side saw the failure, must be reset and connected with it; an
 * OFFER makes it so either way. Each side stripes only once it knows
 * both are connected (A when the ACCEPT comes, B when the RAILS_UP
 * does), and resets a QP only once nothing is in flight on it (a reset
 * drops work requests without completing them). When both sides offer at
 * once, the CM requester's offer stands and the acceptor takes it.
 *
 * Logged once each way ("rail N (nic) to peer back: striping again";
 * the loss by gdrfab_stripe_rail_lost), counted on the rail
 * (fi_gdrfab_stats' rail_back). A port that flaps again takes them out
 * again the same way. The messages go only to a peer that agreed on
 * rails, on rail 0 (GDRFAB_PKT_RAILS_RESET, gdrfab_wire.h), so no
 * version change.
 *
 * Retries. A reset or connection of our rail QPs that fails, or an
 * OFFER that has no answer in time, is tried again later, from the
 * connection timers (rail 0 carries everything meanwhile): a side that
 * could not reset goes back to LOST and offers anew (new PSNs); one that
 * could not connect an ACCEPT goes back to LOST too (the peer, ACCEPTED,
 * takes the new offer); one that could not accept keeps the offer
 * (ASKED) and accepts it again; an OFFER unanswered is sent again as it
 * was, the same QPs and PSNs, never reset in between. The waits double
 * from GDRFAB_RAIL_RETRY_FIRST_MS to GDRFAB_RAIL_RETRY_MAX_MS and stay
 * there, for as long as the connection stands: a port may come back
 * after any outage, and a fixed count of attempts would leave a pair on
 * rail 0 for good after a long one; at the cap it costs one control
 * message of some 200 bytes per 30 s, so a build before this one, which
 * drops OFFER as unknown (rate-limited in its log), never gets them at
 * a high rate. Logged once per take-back, at its first retry, with when
 * the next goes (the QP errors themselves at debug level); the tries
 * start from the first again once the rails are back or lost anew. The
 * timers do nothing for a pair whose rails are STEADY (up) or ACCEPTED,
 * so the empty poll pays nothing, and none sleeps or spins.
 *
 * Copies and late answers. Each side still stripes only once it knows
 * both are connected (the ACCEPT, the RAILS_UP). The messages carry no
 * sequence number, and none can be added without a peer of the build
 * before retries dropping them (gdrfab_rail_back_check wants every
 * other header field and the trailer's reserved bytes 0); the PSNs in
 * the rails name an exchange instead: a reset never keeps a QP's PSN,
 * and each side notes the peer's PSNs it last connected to (peer_psn).
 * So an OFFER sent again is a copy of the one offer, and an answer to
 * any copy answers it. A peer ACCEPTED that reads a copy of the offer
 * it accepted (A timed out while the ACCEPT was on its way) sends the
 * same ACCEPT again, with no second reset; A takes the first and drops
 * the copies (the PSNs it connected to), also those that come after it
 * offered anew. (A fresh ACCEPT carrying by chance the PSNs of the last
 * one taken, one chance in 2^24 after a failed attempt of the peer's,
 * would be dropped as a copy: the pair would stay on rail 0 until the
 * rails are lost again or the connection is made again.) An ACCEPT when
 * we did not offer (we took the peer's offer, without waiting for our
 * own's answer) is dropped; a RAILS_UP when not ACCEPTED too. A peer of
 * the build before retries resets and accepts anew for every copy it
 * reads after its first ACCEPT: A, striping on the first, sees a second,
 * different ACCEPT and takes the rails out again, for an exchange
 * without copies; the pieces that fail meanwhile go again on rail 0.
 */
#ifndef GDRFAB_RAIL_BACK_H
#define GDRFAB_RAIL_BACK_H

#include <stddef.h>

#include "gdrfab_conn.h"
#include "gdrfab_wire.h"

/* How often an endpoint with rails out asks whether their ports are
 * back. */
#define GDRFAB_RAIL_PORT_CHECK_MS 100
/* The first wait before an attempt is made again (a failed reset or
 * connection, an unanswered OFFER), doubled at each to at most the
 * second. */
#define GDRFAB_RAIL_RETRY_FIRST_MS 1000
#define GDRFAB_RAIL_RETRY_MAX_MS   30000

/* conn's rails (up) are taken out after a failure on rail: rail alone
 * while another beyond 0 is left (the rest stripe on), else all of them:
 * nothing more is striped; what is on the rails out comes back flushed. */
void gdrfab_rail_back_out(struct gdrfab_conn *conn, size_t rail);
/* From the connection timers, for a connected conn whose rails are out:
 * the next step once what it waits for is there. */
void gdrfab_rail_back_timers(struct gdrfab_conn *conn);
/* The wait after the tries-th attempt of a take-back (tries >= 1). */
long long gdrfab_rail_back_delay(unsigned tries);
/* What is wrong with a GDRFAB_PKT_RAILS_RESET header h of len bytes
 * (the rails after it included), or NULL. */
const char *gdrfab_rail_back_check(const struct gdrfab_pkt_hdr *h, size_t len);
/* A GDRFAB_PKT_RAILS_RESET from conn's peer (checked). */
void gdrfab_rail_back_rx(struct gdrfab_conn *conn,
			 const struct gdrfab_pkt_hdr *h);
/* Both sides are connected again: striping resumes (logged, counted). */
void gdrfab_rail_back_done(struct gdrfab_conn *conn);

#endif /* GDRFAB_RAIL_BACK_H */
