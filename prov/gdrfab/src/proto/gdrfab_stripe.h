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
 * RMA (fi_read, fi_write, fi_writedata and their msg forms) of at least
 * FI_GDRFAB_STRIPE_MIN bytes is striped the same way: one request whose
 * pieces go one per rail, one completion (and counter increment) when
 * the last completed, the pieces counted on their rails (stripe_ops,
 * stripe_bytes) by the initiator.
 *
 * The keys. The initiator holds one 64-bit key; the target's MR has an
 * rkey on every rail. A rail-set domain's MR that peers may access gets
 * a key of its own (gdrfab_rail_key, hmem's gdrfab_hmem.h): rail 0's
 * rkey in the low 32 bits, so that RMA on rail 0 needs nothing more, a
 * tag, and a generation of the domain above them, so that no two MRs of
 * a domain ever share a key however the NIC reuses rkeys. The first RMA
 * of a large size to a (peer, key) goes on rail 0 and asks the target
 * for the key's rkeys on its other rails (GDRFAB_PKT_RAIL_KEYS_REQ on
 * rail 0, answered from the domain's key table by a RAIL_KEYS_REP:
 * gdrfab_wire.h); the answer is kept in the connection's small table
 * (struct gdrfab_conn_rails's keys, by the key's hash, gone with the
 * connection's rails), and the RMAs after it are striped. Nothing waits
 * for the answer, so two sides asking each other at once never wait on
 * each other; it comes when the target's endpoint progresses, as its
 * other control messages do (a target that never reads its CQ leaves
 * the initiator on rail 0). Since a key names one MR for good, an entry
 * is never stale for a live MR: a new MR has a new key, asked anew. An
 * RMA with a closed MR's key finds what it found on rail 0 alone: every
 * rail's rkey of that MR was deregistered with it, and the NIC refuses
 * each piece (a refused piece on a rail beyond 0 takes the rails out,
 * below, and the RMA goes again on rail 0, refused there too: one error
 * completion, the connection failed and made again, as for any refused
 * key); while the registration cache still
 * holds the registration (GPU memory is unpinned lazily) the access
 * succeeds on every rail as it does on rail 0. A peer without an MR for
 * the key, or one that will not have it striped (GPU memory peers may
 * write into, where its endpoint may flush GPU writes by a READ, which
 * orders one NIC's writes only: env.flush_by_read), answers with no
 * rkeys: rail 0 for that key.
 *
 * Remote CQ data and order. A striped fi_writedata's CQ data must come
 * once and after all its data: rail 0 takes the last piece, and its last
 * work request, the WRITE with immediate (rails beyond 0 have no receive
 * queue), is posted only once every other rail's work requests
 * completed. RMA claims no order (gdrfab advertises FI_ORDER_SAS and the
 * atomics' orders: no FI_ORDER_RAW, WAW, WAR, RAR or the *AS ones), so
 * pieces of one RMA, and RMAs after it, may land in any order across
 * rails: on one QP nothing promised otherwise either.
 *
 * Below the threshold: taking turns. A rendezvous message or an RMA of
 * at least GDRFAB_RAIL_TURN_MIN bytes below FI_GDRFAB_STRIPE_MIN goes
 * whole on one rail, the connection's rails taking turns (conn->rails->
 * turn), so that a window of mid-size messages, or several peers' at
 * once, spreads over the NICs as striping spreads a large one: the same
 * keys, the same one request, its bytes counted on its rail (rail 0's
 * too, so that the rails' bytes add up to the messages' that went on
 * them), the same retry on rail 0 when its rail fails. Not for
 * fi_writedata (its CQ data must come on rail 0, after its bytes: one
 * piece on another rail would wait for a second work request) nor
 * anything not striped below. The sender lists its keys on every rail in
 * every rendezvous header while the rails are up; a receiver of the
 * build before this one stripes only above its threshold, and a sender
 * of it lists none below: that message stays on rail 0.
 *
 * Not striped (rail 0 alone, as before): staged buffers (their host
 * bounce buffers are rail 0's), GPU memory whose writes are flushed by a
 * READ (a flush READ orders only its own QP's writes), an injected write
 * (its bounce buffer is rail 0's), emulated RMA to staged GPU memory,
 * and the first large RMA to a (peer, key) (above). A message that
 * waited as unexpected kept its rail keys (struct gdrfab_unexp) and is
 * striped too.
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
/* stripe_turn of a request cut in one piece per rail. */
#define GDRFAB_STRIPE_ALL 0xff
/* RMA below the stripe threshold takes a rail in turn from this size
 * (smaller ones stay on rail 0: their keys are not worth asking for). */
#define GDRFAB_RAIL_TURN_MIN (16u << 10)

/* Whether extra bytes after an RNDV's segments are what its flags say:
 * none without GDRFAB_PKT_RAIL_KEYS, else seg_count keys for 1 to
 * GDRFAB_CM_RAILS_MAX - 1 rails. */
bool gdrfab_stripe_keys_fit(const struct gdrfab_pkt_hdr *h, size_t extra);

/* The sender: appends req's keys on every rail to its RNDV header (built
 * in req->ctrl) when its connection's rails are up and every buffer is
 * registered on every rail; else leaves it as it is. */
void gdrfab_stripe_rndv_keys(struct gdrfab_proto *proto,
			     struct gdrfab_req *req);

/* The receiver: puts rd (an RNDV_READ, its local buffers and segments
 * set) on the rails when it may be, striped or whole on the rail of its
 * turn, with keys, the sender's (h's GDRFAB_PKT_RAIL_KEYS). */
void gdrfab_stripe_read_setup(struct gdrfab_proto *proto, struct gdrfab_req *rd,
			      const struct gdrfab_pkt_hdr *h,
			      const uint32_t *keys);

/* The rail a striped request's next bytes (from req->posted) go on, and
 * in *left how many are left of that rail's piece. */
size_t gdrfab_stripe_rail(const struct gdrfab_req *req, uint64_t *left);

/* The initiator of an RMA (req: its local buffers and rseg[0] set) whose
 * key is a GDRFAB_RAIL_KEY one: puts it on the rails (striped or whole
 * on the rail of its turn) when its peer's rkeys for the key are known,
 * or asks for them (once: req stays on rail 0). */
void gdrfab_stripe_rma_setup(struct gdrfab_proto *proto, struct gdrfab_req *req,
			     uint64_t key);
/* The target: a peer asked for key's rkeys (GDRFAB_PKT_RAIL_KEYS_REQ). */
void gdrfab_stripe_keys_answer(struct gdrfab_proto *proto,
			       struct gdrfab_conn *conn, uint64_t key);
/* The initiator: the peer's answer, n rkeys (none: rail 0 alone). */
void gdrfab_stripe_keys_learn(struct gdrfab_conn *conn, uint64_t key,
			      const uint32_t *rkey, size_t n);

/* ---- a rail that fails ----
 * A piece that fails on rail (> 0) while the connection stands (its link
 * down past the RC retry budget, its QP in error) takes that rail out
 * (gdrfab_rail_back.h): with another rail beyond 0 left, it alone (its QP
 * to the error state, conn->rails->out), and requests set up afterwards
 * stripe over the rest (req->stripe_mask) and take turns among them;
 * else all of the connection's rails, rail 0 carrying everything, until
 * the rails are taken back. Logged once, naming the rail's NIC and the
 * peer; the piece's error is counted on its rail. The request
 * is marked (req->rail_lost, the failed rail in req->rail_bad), posts no
 * more pieces, and once nothing of it is in flight goes again from the
 * first byte that may not have landed: the start of the first piece on a
 * rail with a failed work request (taking the rails out flushes what was
 * in flight on them, which counts as failed), or the first byte it had
 * not posted. What landed before that, rail 0's piece among it, is not
 * moved again; a piece after it that landed is moved again unchanged
 * (with two rails there is none). It goes again on rail 0, or, with a
 * rail beyond 0 still up, cut anew over the rails left from that byte
 * (req->stripe_base), or whole on the next of them in turn if it went
 * whole on one; a striped fi_writedata goes on rail 0, its CQ data last.
 * A READ or WRITE can be repeated, its local buffer is held until it
 * completes (a rendezvous sender's until the FIN), and a striped
 * fi_writedata's CQ data had not gone (rail 0's last piece waits for the
 * other rails'). Rail 0 failing fails the connection as on a NIC alone. */
void gdrfab_stripe_rail_lost(struct gdrfab_req *req, size_t rail);
/* A request so marked, once nothing of it is in flight: made to go again
 * from its first lost byte, on rail 0 or the rails left, when its
 * connection stands and it holds no error (true: the caller queues it
 * again). Otherwise false, and it ends as it is (with its connection's
 * error when that failed meanwhile). */
bool gdrfab_stripe_retry(struct gdrfab_req *req);

#endif /* GDRFAB_STRIPE_H */
