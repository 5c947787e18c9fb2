/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Striping (issue 31): a rendezvous message of at least
 * FI_GDRFAB_STRIPE_MIN bytes between two endpoints whose rails are up
 * (gdrfab_conn_rails.h) is read in one contiguous piece per rail, each a
 * multiple of 64 KiB but the last, each posted on its rail's QP with that
 * rail's keys. The sender lists its segments' keys on every rail in its
 * RNDV (GDRFAB_PKT_RAIL_KEYS); the receiver, where its own buffer is
 * registered on every rail too, stripes. The request counts its work
 * requests on every rail as one (req->wr_pending) and ends, with its one
 * FIN, where any request ends (gdrfab_finish.c). Eager messages, control
 * packets and FINs stay on rail 0.
 *
 * Not striped (rail 0 alone, as before): staged buffers (their host
 * bounce buffers are rail 0's), GPU memory whose writes are flushed by a
 * READ (a flush READ orders only its own QP's writes), and RMA, whose
 * initiator holds rail 0's key alone. A message that waited as unexpected
 * kept its rail keys (struct gdrfab_unexp) and is striped too.
 */
#ifndef GDRFAB_STRIPE_H
#define GDRFAB_STRIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gdrfab_proto.h"
#include "gdrfab_req.h"
#include "gdrfab_wire.h"

/* Pieces are cut at multiples of this. */
#define GDRFAB_STRIPE_ALIGN (64u << 10)

/* Whether extra bytes after an RNDV's segments are what its flags say:
 * none without GDRFAB_PKT_RAIL_KEYS, else seg_count keys for 1 to
 * GDRFAB_CM_RAILS_MAX - 1 rails. */
bool gdrfab_stripe_keys_fit(const struct gdrfab_pkt_hdr *h, size_t extra);

/* The sender: appends req's keys on every rail to its RNDV header (built
 * in req->ctrl) when its connection's rails are up, it is long enough,
 * and every buffer is registered on every rail; else leaves it as it is. */
void gdrfab_stripe_rndv_keys(struct gdrfab_proto *proto,
			     struct gdrfab_req *req);

/* The receiver: makes rd (an RNDV_READ, its local buffers and segments
 * set) striped when it may be, with keys, the sender's (h's
 * GDRFAB_PKT_RAIL_KEYS). */
void gdrfab_stripe_read_setup(struct gdrfab_proto *proto, struct gdrfab_req *rd,
			      const struct gdrfab_pkt_hdr *h,
			      const uint32_t *keys);

/* The rail a striped request's next bytes (from req->posted) go on, and
 * in *left how many are left of that rail's piece. */
size_t gdrfab_stripe_rail(const struct gdrfab_req *req, uint64_t *left);

/* ---- a rail that fails ----
 * A piece that fails on rail (> 0) while the connection stands (its link
 * down past the RC retry budget, its QP in error) takes the connection's
 * rails out: nothing more is striped on it (until it is made again, when
 * the pair agrees on rails anew), which is logged once, naming the rail's
 * NIC and the peer; the piece's error is counted on its rail. The request
 * is marked (req->rail_lost), posts no more pieces, and once nothing of it
 * is in flight is read again whole on rail 0: a READ can be repeated,
 * the sender's buffer is held until the FIN. Rail 0 failing fails the
 * connection as on a NIC alone. */
void gdrfab_stripe_rail_lost(struct gdrfab_req *req, size_t rail);
/* A request so marked, once nothing of it is in flight: made to be read
 * again whole on rail 0 when its connection stands and it holds no
 * error (true: the caller queues it again). Otherwise false, and it ends
 * as it is (with its connection's error when that failed meanwhile). */
bool gdrfab_stripe_retry(struct gdrfab_req *req);

#endif /* GDRFAB_STRIPE_H */
