/* SPDX-License-Identifier: BSD-2-Clause */
/* Striping over rails (gdrfab_stripe.h). */
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_addr.h"
#include "gdrfab_conn.h"
#include "gdrfab_conn_rails.h"
#include "gdrfab_hmem.h"
#include "gdrfab_mr_cache.h"
#include "gdrfab_mr_desc.h"
#include "gdrfab_params.h"
#include "gdrfab_proto_stats.h"
#include "gdrfab_rail_back.h"
#include "gdrfab_stripe.h"

bool gdrfab_stripe_keys_fit(const struct gdrfab_pkt_hdr *h, size_t extra)
{
	size_t per_rail = (size_t)h->seg_count * sizeof(uint32_t);

	if (!(h->flags & GDRFAB_PKT_RAIL_KEYS))
		return !extra;
	return per_rail && extra && !(extra % per_rail) &&
	       extra / per_rail <= GDRFAB_CM_RAILS_MAX - 1;
}

/* The registration of iovec i on rail r (1-based): its descriptor's (the
 * rendezvous twin for the peer's reads) or the one gdrfab made for it;
 * NULL when there is none on that rail. */
static struct ibv_mr *rail_mr(const struct gdrfab_req *req, size_t i, size_t r,
			      bool remote)
{
	const struct gdrfab_mr_desc *d = req->desc[i];
	const struct gdrfab_reg *reg =
		d ? (remote ? d->rndv_reg : d->reg) : req->tmp_reg[i];

	return reg ? reg->more_mr[r - 1] : NULL;
}

static bool rails_up(const struct gdrfab_conn *conn)
{
	return conn && conn->rails && conn->rails->up;
}

void gdrfab_stripe_rndv_keys(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	struct gdrfab_pkt_hdr *hdr = (void *)req->ctrl;
	uint32_t *keys = (uint32_t *)(req->ctrl + req->ctrl_len);
	size_t more;

	(void)proto;
	if (!rails_up(req->conn) || req->staged ||
	    (hdr->flags & GDRFAB_PKT_EMU) || req->rseg_count != req->iov_count)
		return;
	more = req->conn->rails->more;
	for (size_t i = 0; i < req->rseg_count; i++) {
		for (size_t r = 1; r <= more; r++) {
			struct ibv_mr *mr = rail_mr(req, i, r, true);

			if (!req->iov[i].iov_len) {
				keys[i * more + r - 1] = 0;
				continue;
			}
			if (!mr)
				return; /* rail 0 alone, as before */
			keys[i * more + r - 1] = mr->rkey;
		}
	}
	hdr->flags |= GDRFAB_PKT_RAIL_KEYS;
	req->ctrl_len += req->rseg_count * more * sizeof(uint32_t);
}

/* Whether rd writes into GPU memory whose writes are made visible by a
 * flush READ, which orders one QP's writes only. */
static bool flushed_by_read(const struct gdrfab_proto *proto,
			    const struct gdrfab_req *rd)
{
	if (!proto->env.flush_by_read)
		return false;
	for (size_t i = 0; i < rd->iov_count; i++) {
		const struct gdrfab_mr_desc *d = rd->desc[i];

		if (d && d->iface == FI_HMEM_CUDA)
			return true;
	}
	return false;
}

/* Each of req's local buffers' lkeys on rails 1 to more, into
 * req->rail_lkey; false (req stays on rail 0) when a non-empty one is
 * not registered on every rail. */
static bool set_rail_lkeys(struct gdrfab_req *req, size_t more)
{
	for (size_t i = 0; i < req->iov_count; i++) {
		if (!req->iov[i].iov_len)
			continue;
		for (size_t r = 1; r <= more; r++) {
			struct ibv_mr *mr = rail_mr(req, i, r, false);

			if (!mr)
				return false;
			req->rail_lkey[i][r - 1] = mr->lkey;
		}
	}
	return true;
}

/* The rail whose turn it is on conn (its rails up), for a request
 * below the stripe threshold. */
static uint8_t next_turn(struct gdrfab_conn *conn)
{
	struct gdrfab_conn_rails *cr = conn->rails;

	/* A rail taken out (cr->out) is passed over; rail 0 never is. */
	for (size_t i = 0; i <= cr->more; i++) {
		uint8_t rail = (uint8_t)(cr->turn % (cr->more + 1));

		cr->turn = (uint8_t)(rail + 1);
		if (!(cr->out & (1u << rail)))
			return rail;
	}
	return 0;
}

/* The rails a request set up now goes on, a bit per rail, rail 0's
 * included: those of the pair not taken out. */
static uint8_t usable_rails(const struct gdrfab_conn_rails *cr)
{
	return (uint8_t)((((1u << cr->more) - 1) << 1 | 1u) & ~cr->out);
}

/* Puts req, its keys on rails 1 to more set, on the rails its
 * connection has up: in one piece per rail from the stripe threshold,
 * else whole on the rail of its turn. */
static void put_on_rails(struct gdrfab_req *req, size_t more)
{
	req->stripe_more = more;
	req->stripe_mask = usable_rails(req->conn->rails);
	req->stripe_base = 0;
	req->rail_bad = 0;
	req->stripe_turn = req->len >= gdrfab_params.stripe_min
				   ? GDRFAB_STRIPE_ALL
				   : next_turn(req->conn);
	req->striped = true;
}

void gdrfab_stripe_read_setup(struct gdrfab_proto *proto, struct gdrfab_req *rd,
			      const struct gdrfab_pkt_hdr *h,
			      const uint32_t *keys)
{
	size_t more;

	if (!rails_up(rd->conn) || flushed_by_read(proto, rd))
		return;
	/* The pair agreed on as many rails as the sender listed keys for.
	 * A peer that listed fewer had its keys checked against the length
	 * it sent, and what is read past them is still inside the receive
	 * buffer (it holds GDRFAB_CTRL_SIZE): a wrong key, which the NIC
	 * refuses as it would any wrong key of that peer's. */
	(void)h;
	more = rd->conn->rails->more;
	if (!set_rail_lkeys(rd, more))
		return;
	for (size_t s = 0; s < rd->rseg_count; s++) {
		for (size_t r = 1; r <= more; r++)
			rd->rail_rkey[s][r - 1] = keys[s * more + r - 1];
	}
	put_on_rails(rd, more);
}

void gdrfab_stripe_rail_lost(struct gdrfab_req *req, size_t rail)
{
	struct gdrfab_conn *conn = req->conn;
	char peer[128];

	req->rail_lost = true;
	req->rail_bad |= (uint8_t)(1u << rail);
	/* Said already (the rail is out, or all are), unless the rails
	 * failed again as the pair was taking them back: we connected ours,
	 * the peer had not yet. */
	if ((!conn->rails->up && conn->rails->back != GDRFAB_RAILS_ACCEPTED) ||
	    (conn->rails->out & (1u << rail)))
		return;
	gdrfab_rail_back_out(conn, rail);
	gdrfab_addr_to_str(&conn->peer, peer, sizeof(peer));
	if (conn->rails->up)
		GDRFAB_WARN(
			FI_LOG_EP_DATA,
			"rail %zu (%s) to %s failed: what was on it goes again on the rails left, which carry the connection without it until its port is back\n",
			rail, gdrfab_pstat_rail_name(conn->proto, rail), peer);
	else
		GDRFAB_WARN(
			FI_LOG_EP_DATA,
			"rail %zu (%s) to %s failed: the connection's striped reads and writes go again on rail 0, which carries it alone until the rail's port is back\n",
			rail, gdrfab_pstat_rail_name(conn->proto, rail), peer);
}

/* The rail of the n-th bit (from 0) set in mask. */
static size_t nth_rail(uint8_t mask, size_t n)
{
	for (size_t r = 0; r < 8; r++) {
		if ((mask & (1u << r)) && !n--)
			return r;
	}
	return 0;
}

/* How many of mask's bits below rail are set: rail's place among them. */
static size_t rail_place(uint8_t mask, size_t rail)
{
	return (size_t)__builtin_popcount(mask & ((1u << rail) - 1));
}

/* The length of a striped request's pieces: its bytes from stripe_base
 * shared among its rails, rounded up to GDRFAB_STRIPE_ALIGN (the last
 * piece is shorter, and there may be fewer pieces than rails). */
static uint64_t piece_len(const struct gdrfab_req *req)
{
	size_t rails = (size_t)__builtin_popcount(req->stripe_mask);
	uint64_t piece = (req->len - req->stripe_base + rails - 1) / rails;

	return (piece + GDRFAB_STRIPE_ALIGN - 1) &
	       ~(uint64_t)(GDRFAB_STRIPE_ALIGN - 1);
}

/* The index of a striped request's last piece, pieces of piece bytes. */
static uint64_t last_piece(const struct gdrfab_req *req, uint64_t piece)
{
	return (req->len - req->stripe_base - 1) / piece;
}

/* Where rail's piece starts, or req->len when it has none. */
static uint64_t piece_start(const struct gdrfab_req *req, size_t rail)
{
	uint64_t piece = piece_len(req);
	uint64_t last = last_piece(req, piece);
	uint64_t idx;

	if (req->stripe_turn != GDRFAB_STRIPE_ALL)
		return rail == req->stripe_turn ? req->stripe_base : req->len;
	if (!(req->stripe_mask & (1u << rail)))
		return req->len; /* out when it was set up: no piece */
	idx = rail_place(req->stripe_mask, rail);
	if (req->stripe_last0)
		idx = rail ? rail_place(req->stripe_mask & ~1u, rail) : last;
	return idx <= last ? req->stripe_base + idx * piece : req->len;
}

/* The first byte of a striped request that may not have landed: the
 * start of the first piece on a rail whose work requests failed (those
 * in flight when the rails were taken out come back flushed, so they
 * count), or the first it had not posted. Pieces before it landed whole:
 * each was posted whole and nothing on its rail failed. */
static uint64_t first_lost(const struct gdrfab_req *req)
{
	uint64_t from = req->posted;

	for (size_t r = 1; r <= req->stripe_more; r++) {
		if (req->rail_bad & (1u << r))
			from = GDRFAB_MIN(from, piece_start(req, r));
	}
	return from;
}

/* req's places in its local buffers (liov, loff) and in the remote
 * segments (riov, roff) at byte off of its data. */
static void seek(struct gdrfab_req *req, uint64_t off)
{
	uint64_t left = off;

	req->liov = req->riov = 0;
	req->loff = req->roff = 0;
	while (req->liov < req->iov_count &&
	       left >= req->iov[req->liov].iov_len)
		left -= req->iov[req->liov++].iov_len;
	req->loff = left;
	left = off;
	while (req->riov < req->rseg_count && left >= req->rseg[req->riov].len)
		left -= req->rseg[req->riov++].len;
	req->roff = left;
}

/* With a rail beyond 0 still up (three rails or more, one out), req's
 * bytes from from are cut anew over the rails left, or go whole on the
 * next of them in turn, rather than all on rail 0: the endpoint keeps
 * the bandwidth it has left. Not a striped fi_writedata (its rail 0
 * piece must stay last behind the others': it goes on rail 0 whole, as
 * with two rails). Whether it did. */
static bool restripe(struct gdrfab_req *req, uint64_t from)
{
	uint8_t mask;

	if (req->stripe_last0 || from >= req->len || !rails_up(req->conn))
		return false;
	/* Those its keys are for (the pair's rails when it was set up). */
	mask = usable_rails(req->conn->rails) &
	       (uint8_t)((2u << req->stripe_more) - 1);
	if (!(mask & ~1u))
		return false;
	req->stripe_base = from;
	req->stripe_mask = mask;
	if (req->stripe_turn != GDRFAB_STRIPE_ALL)
		req->stripe_turn = next_turn(req->conn);
	return true;
}

bool gdrfab_stripe_retry(struct gdrfab_req *req)
{
	struct gdrfab_conn *conn = req->conn;
	uint64_t from;

	req->rail_lost = false;
	if (conn->state != GDRFAB_CONN_CONNECTED && !req->error) {
		req->error = conn->fail_err ? conn->fail_err : FI_EHOSTUNREACH;
		req->prov_errno = conn->fail_prov_errno;
	}
	if (req->error)
		return false;
	/* Only what did not land goes again, from its first byte to the
	 * end, in order: a striped fi_writedata's rail 0 piece, the last,
	 * had not gone (its CQ data waits for the other rails), and the
	 * few pieces after the first lost one that did land are written
	 * or read again unchanged, as RDMA may repeat. */
	from = first_lost(req);
	req->rail_bad = 0;
	if (!restripe(req, from)) {
		req->striped = false;
		req->stripe_last0 = false;
	}
	req->posted = from;
	req->fully_posted = false;
	seek(req, from);
	return true;
}

size_t gdrfab_stripe_rail(const struct gdrfab_req *req, uint64_t *left)
{
	uint64_t piece;
	size_t idx, last;

	if (req->stripe_turn != GDRFAB_STRIPE_ALL) {
		*left = req->len - req->posted;
		return req->stripe_turn;
	}
	piece = piece_len(req);
	idx = (size_t)((req->posted - req->stripe_base) / piece);
	*left = GDRFAB_MIN(req->stripe_base + (uint64_t)(idx + 1) * piece,
			   (uint64_t)req->len) -
		req->posted;
	if (!req->stripe_last0)
		return nth_rail(req->stripe_mask, idx);
	/* Rail 0 takes the last piece (there may be fewer pieces than
	 * rails), the others the ones before it in order. */
	last = (size_t)last_piece(req, piece);
	return idx == last ? 0 : nth_rail(req->stripe_mask & ~1u, idx);
}

/* ---- RMA ---- */

static struct gdrfab_rail_key *key_slot(struct gdrfab_conn_rails *cr,
					uint64_t key)
{
	uint64_t h = key ^ key >> 17 ^ key >> GDRFAB_RAIL_KEY_SHIFT;

	return &cr->keys[h & (GDRFAB_RAIL_KEY_CACHE - 1)];
}

/* An unanswered question is asked again after this long (its answer
 * found no control request, or the connection lost it). */
#define GDRFAB_RAIL_KEY_ASK_MS 1000

void gdrfab_stripe_rma_setup(struct gdrfab_proto *proto, struct gdrfab_req *req,
			     uint64_t key)
{
	struct gdrfab_conn *conn = req->conn;
	struct gdrfab_rail_key *e;
	size_t more;
	bool last0;

	/* Nothing to cut in an empty one (FI_GDRFAB_STRIPE_MIN=0). */
	if (!rails_up(conn) || !req->len ||
	    req->len < GDRFAB_MIN(gdrfab_params.stripe_min,
				  (size_t)GDRFAB_RAIL_TURN_MIN) ||
	    req->staged || req->txbuf || req->rseg_count != 1 ||
	    (req->op == GDRFAB_OP_READ && flushed_by_read(proto, req)))
		return;
	more = conn->rails->more;
	e = key_slot(conn->rails, key);
	if (e->key != key || e->state == GDRFAB_RKEY_EMPTY ||
	    (e->state == GDRFAB_RKEY_ASKED &&
	     proto->now_ms - e->asked_ms > GDRFAB_RAIL_KEY_ASK_MS)) {
		/* Asked once per key and peer; this one goes on rail 0. */
		if (gdrfab_send_ctrl_ext(proto, conn, GDRFAB_PKT_RAIL_KEYS_REQ,
					 key, 0, NULL, 0)) {
			e->key = key;
			e->state = GDRFAB_RKEY_ASKED;
			e->asked_ms = proto->now_ms;
		}
		return;
	}
	if (e->state != GDRFAB_RKEY_KNOWN || !set_rail_lkeys(req, more))
		return; /* rail 0 alone, as before */
	last0 = req->op == GDRFAB_OP_WRITE &&
		(req->cq_flags & FI_REMOTE_CQ_DATA);
	if (req->len < gdrfab_params.stripe_min && last0)
		return; /* its CQ data on rail 0, after its bytes */
	req->stripe_last0 = last0;
	for (size_t r = 1; r <= more; r++)
		req->rail_rkey[0][r - 1] = e->rkey[r - 1];
	put_on_rails(req, more);
}

void gdrfab_stripe_keys_answer(struct gdrfab_proto *proto,
			       struct gdrfab_conn *conn, uint64_t key)
{
	uint32_t rkey[GDRFAB_CM_RAILS_MAX - 1];
	size_t n = 0;

	if (conn->rails)
		n = proto->ops->mr_rail_keys(proto->env.domain, key, rkey,
					     conn->rails->more,
					     !proto->env.flush_by_read);
	if (!gdrfab_send_ctrl_ext(proto, conn, GDRFAB_PKT_RAIL_KEYS_REP, key,
				  (uint32_t)n, rkey, n * sizeof(*rkey)))
		GDRFAB_WARN(
			FI_LOG_EP_DATA,
			"no request left to answer a peer's rail keys: it asks again\n");
}

void gdrfab_stripe_keys_learn(struct gdrfab_conn *conn, uint64_t key,
			      const uint32_t *rkey, size_t n)
{
	struct gdrfab_rail_key *e;

	if (!conn->rails)
		return;
	e = key_slot(conn->rails, key);
	if (e->key != key || e->state != GDRFAB_RKEY_ASKED)
		return; /* forgotten meanwhile, or never asked */
	if (n < conn->rails->more) {
		e->state = GDRFAB_RKEY_NONE;
		return;
	}
	memcpy(e->rkey, rkey, conn->rails->more * sizeof(*rkey));
	e->state = GDRFAB_RKEY_KNOWN;
}
