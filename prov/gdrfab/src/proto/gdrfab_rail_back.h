/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Taking a pair's rails back after a failure (issue 31). A piece that
 * fails on a rail beyond 0 while the connection stands takes the pair's
 * rails out (gdrfab_stripe.h): nothing more is striped on them, their QPs
 * go to the error state so that every piece still on them comes back
 * flushed (and goes again on rail 0), and the pair waits for the rails'
 * ports. Once every rail QP of the pair is drained and our rails' ports
 * are active again (ibv_query_port, at most every
 * GDRFAB_RAIL_PORT_CHECK_MS per endpoint, only while some rail is out),
 * the pair connects them anew over rail 0:
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
 * again the same way. A reset or connection that fails leaves the pair
 * on rail 0 until the connection is made again, logged once; so does a
 * peer that never answers an OFFER (a build before this one drops it as
 * unknown). The messages go only to a peer that agreed on rails, on rail
 * 0 (GDRFAB_PKT_RAILS_RESET, gdrfab_wire.h), so no version change.
 */
#ifndef GDRFAB_RAIL_BACK_H
#define GDRFAB_RAIL_BACK_H

#include <stddef.h>

#include "gdrfab_conn.h"
#include "gdrfab_wire.h"

/* How often an endpoint with rails out asks whether their ports are
 * back. */
#define GDRFAB_RAIL_PORT_CHECK_MS 100

/* conn's rails (up) are taken out after a failure on rail: nothing more
 * is striped, and what is on them comes back flushed. */
void gdrfab_rail_back_out(struct gdrfab_conn *conn, size_t rail);
/* From the connection timers, for a connected conn whose rails are out:
 * the next step once what it waits for is there. */
void gdrfab_rail_back_timers(struct gdrfab_conn *conn);
/* What is wrong with a GDRFAB_PKT_RAILS_RESET header h of len bytes
 * (the rails after it included), or NULL. */
const char *gdrfab_rail_back_check(const struct gdrfab_pkt_hdr *h, size_t len);
/* A GDRFAB_PKT_RAILS_RESET from conn's peer (checked). */
void gdrfab_rail_back_rx(struct gdrfab_conn *conn,
			 const struct gdrfab_pkt_hdr *h);
/* Both sides are connected again: striping resumes (logged, counted). */
void gdrfab_rail_back_done(struct gdrfab_conn *conn);

#endif /* GDRFAB_RAIL_BACK_H */
