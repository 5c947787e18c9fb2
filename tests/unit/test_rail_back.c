/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Taking a pair's rails back (gdrfab_rail_back.h), on the fake verbs with
 * two devices, rail 1 on fake1. A rail lost while its port is down stays
 * out; once the port is active again the pair resets and connects the
 * rail anew over rail 0, both sides (also the one that saw no failure,
 * its QP still ready to send), and the next large message is striped
 * again, intact; each side counts the rail's return once. Both sides
 * offering at once end in one exchange. A piece in flight on the peer's
 * rail when the offer comes goes again on rail 0, once. A QP that cannot
 * be reset or connected leaves the pair on rail 0, which keeps carrying
 * every message, intact and once, until the attempt, made again after
 * its backoff, succeeds; an offer unanswered goes again as it was, and
 * the answers to its copies leave both sides on one connection; the
 * waits double to their cap. The backoff's waits are ended by the test
 * (expire), not waited out.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_ext_gdrfab.h>

#include "fake_verbs.h"
#include "gdrfab.h"
#include "gdrfab_conn.h"
#include "gdrfab_conn_rails.h"
#include "gdrfab_objs.h"
#include "gdrfab_params.h"
#include "gdrfab_proto.h"
#include "gdrfab_rail_back.h"
#include "gdrfab_verbs_ops.h"
#include "proto_fixture.h"

#define LEN (1u << 20) /* striped: above FI_GDRFAB_STRIPE_MIN */

static struct gdrfab_conn *conn_of(struct pf *f, int i)
{
	struct gdrfab_ep *ep =
		gdrfab_container_of(f->s[i].ep, struct gdrfab_ep, fid);

	cr_assert(!gdrfab_list_empty(&ep->proto->conns), "side %d", i);
	return gdrfab_list_entry(ep->proto->conns.next, struct gdrfab_conn,
				 entry);
}

static struct gdrfab_conn_rails *rails_of(struct pf *f, int i)
{
	cr_assert(conn_of(f, i)->rails, "side %d has rails", i);
	return conn_of(f, i)->rails;
}

/* Side i's rail 1: bytes striped on it, and its returns. */
static uint64_t rail1_bytes(struct pf *f, int i)
{
	static struct fi_gdrfab_stats s;

	pf_read_stats(f, i, &s);
	return s.rails[1].stripe_bytes;
}

static uint64_t rail1_back(struct pf *f, int i)
{
	static struct fi_gdrfab_stats s;

	pf_read_stats(f, i, &s);
	return s.rail_back[1];
}

static enum ibv_qp_state rail1_state(struct pf *f, int i)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;

	memset(&attr, 0, sizeof(attr));
	cr_assert_eq(gdrfab_vops->query_qp(rails_of(f, i)->qp[0], &attr,
					   IBV_QP_STATE, &init),
		     0);
	return attr.qp_state;
}

static void open_two_rail_pair(struct pf *f)
{
	static const char *const dom[2] = {"fake0+fake1", "fake0+fake1"};

	pf_open_domains(f, 2, dom);
	pf_connect(f);
	pf_drive(f, 20);
	cr_assert(rails_of(f, 0)->up && rails_of(f, 1)->up);
}

/* Drives until both sides' rails are up again (or ms pass). */
static bool both_up(struct pf *f, int ms)
{
	for (int t = 0; t < ms; t += 10) {
		if (rails_of(f, 0)->up && rails_of(f, 1)->up)
			return true;
		pf_drive(f, 10);
	}
	return rails_of(f, 0)->up && rails_of(f, 1)->up;
}

/* One message of len bytes from side 0 to side 1 (seed), tag tag,
 * received once, intact; returns the bytes rail 1 carried for it. */
static uint64_t send_one(struct pf *f, unsigned seed, uint64_t tag)
{
	uint8_t *out = malloc(LEN), *in = calloc(1, LEN);
	uint64_t before = rail1_bytes(f, 1);

	cr_assert(out && in);
	pf_fill(out, LEN, seed);
	f->s[0].n_ok = f->s[1].n_ok = 0;
	cr_assert_eq(
		fi_trecv(f->s[1].ep, in, LEN, NULL, f->s[1].peer, tag, 0, NULL),
		0);
	cr_assert_eq(
		fi_tsend(f->s[0].ep, out, LEN, NULL, f->s[0].peer, tag, NULL),
		0);
	cr_assert(pf_drive_until(f, 1, 1, 5000), "the receive, seed %u", seed);
	cr_assert(pf_drive_until(f, 0, 1, 5000), "the send, seed %u", seed);
	pf_drive(f, 5);
	cr_expect_eq(f->s[0].n_err + f->s[1].n_err, 0, "seed %u", seed);
	cr_expect_eq(f->s[1].n_ok, 1, "received once, seed %u", seed);
	cr_expect_eq(f->s[1].ok[0].tag, tag);
	cr_expect(pf_check(in, LEN, seed), "intact, seed %u", seed);
	free(out);
	free(in);
	return rail1_bytes(f, 1) - before;
}

/* A pair whose side 1 lost rail 1 reading a striped message (its READ
 * on rail 1 failed, its QP in error; side 0's still ready to send, as
 * only the reader saw it), with fake1's port down: the message read
 * again on rail 0, intact. */
static void lose_rail(struct pf *f)
{
	uint8_t *out = malloc(LEN), *in = calloc(1, LEN);

	cr_assert(out && in);
	pf_fill(out, LEN, 7);
	open_two_rail_pair(f);
	fake_verbs_port_down(1, true);
	fake_verbs_hold(IBV_WR_RDMA_READ, true);
	cr_assert_eq(
		fi_trecv(f->s[1].ep, in, LEN, NULL, f->s[1].peer, 1, 0, NULL),
		0);
	cr_assert_eq(
		fi_tsend(f->s[0].ep, out, LEN, NULL, f->s[0].peer, 1, NULL), 0);
	pf_drive(f, 20);
	cr_assert_eq(fake_verbs_waiting(IBV_WR_RDMA_READ), 2);
	fake_verbs_hold(IBV_WR_RDMA_READ, false);
	cr_assert(fake_verbs_step(), "rail 0's READ");
	cr_assert_eq(
		fake_verbs_fail(IBV_WR_RDMA_READ, IBV_WC_RETRY_EXC_ERR, false),
		1, "rail 1's READ");
	cr_assert(pf_drive_until(f, 1, 1, 5000));
	cr_assert(pf_drive_until(f, 0, 1, 5000));
	cr_assert_eq(f->s[0].n_err + f->s[1].n_err, 0);
	cr_assert(pf_check(in, LEN, 7));
	cr_assert_not(rails_of(f, 1)->up);
	cr_assert_eq(rails_of(f, 1)->back, GDRFAB_RAILS_LOST);
	f->s[0].n_ok = f->s[1].n_ok = 0;
	free(out);
	free(in);
}

static void teardown(void)
{
	fake_verbs_refuse_state(-1);
	fake_verbs_hold(IBV_WR_SEND, false);
}

/* Time for side i's take-back: its backoff's wait is over now, as if
 * the clock had gone past it (no test waits seconds). */
static void expire(struct pf *f, int i)
{
	rails_of(f, i)->next_ms = 0;
}

/* Side i's clock as its timers read it. */
static long long now_of(struct pf *f, int i)
{
	return conn_of(f, i)->proto->now_ms;
}

TestSuite(rail_back, .fini = teardown);

Test(rail_back, taken_back_when_its_port_returns)
{
	uint32_t psn0, psn1;
	struct pf f;

	lose_rail(&f);
	psn0 = rails_of(&f, 0)->psn[0];
	psn1 = rails_of(&f, 1)->psn[0];
	/* Down: out it stays, and the peer hears nothing. */
	pf_drive(&f, 300);
	cr_expect_not(rails_of(&f, 1)->up);
	cr_expect(rails_of(&f, 0)->up, "side 0 saw no failure");
	cr_expect_eq(send_one(&f, 11, 2), 0, "rail 0 alone while down");

	fake_verbs_port_down(1, false);
	cr_assert(both_up(&f, 2000), "back on both sides");
	cr_expect_eq(rails_of(&f, 0)->back, GDRFAB_RAILS_STEADY);
	cr_expect_eq(rails_of(&f, 1)->back, GDRFAB_RAILS_STEADY);
	/* Both sides reset their rail QP (new PSNs) and connected it. */
	cr_expect_neq(rails_of(&f, 0)->psn[0], psn0, "side 0 reset");
	cr_expect_neq(rails_of(&f, 1)->psn[0], psn1, "side 1 reset");
	cr_expect_eq(rail1_state(&f, 0), IBV_QPS_RTS);
	cr_expect_eq(rail1_state(&f, 1), IBV_QPS_RTS);
	cr_expect_eq(rail1_back(&f, 0), 1, "counted once");
	cr_expect_eq(rail1_back(&f, 1), 1, "counted once");
	/* Striped again, intact, several times. */
	for (unsigned i = 0; i < 3; i++)
		cr_expect_gt(send_one(&f, 20 + i, 3 + i), 0, "striped again");
	pf_drive(&f, 300);
	cr_expect_eq(rail1_back(&f, 1), 1, "no second return");
	pf_close(&f);
}

/* A flap: lost again after it came back, and back again. */
Test(rail_back, a_flap_takes_it_out_and_back_again)
{
	struct pf f;

	lose_rail(&f);
	fake_verbs_port_down(1, false);
	cr_assert(both_up(&f, 2000));
	/* Side 0 loses it now, in its turn (both sides' rails out). */
	gdrfab_rail_back_out(conn_of(&f, 0), 1);
	cr_expect_eq(send_one(&f, 31, 4), 0, "rail 0 while out");
	cr_assert(both_up(&f, 2000), "back again");
	cr_expect_eq(rail1_back(&f, 0), 2);
	cr_expect_eq(rail1_back(&f, 1), 2);
	cr_expect_gt(send_one(&f, 32, 5), 0, "striped again");
	pf_close(&f);
}

/* Both sides lost the rail and offer at the same time: the requester's
 * offer stands, one exchange, and both stripe again. */
Test(rail_back, both_offer_at_once)
{
	struct pf f;

	open_two_rail_pair(&f);
	fake_verbs_port_down(1, true);
	gdrfab_rail_back_out(conn_of(&f, 0), 1);
	gdrfab_rail_back_out(conn_of(&f, 1), 1);
	pf_drive(&f, 150);
	cr_expect_eq(rails_of(&f, 0)->back, GDRFAB_RAILS_LOST);
	cr_expect_eq(rails_of(&f, 1)->back, GDRFAB_RAILS_LOST);
	fake_verbs_port_down(1, false);
	/* Within the first wait for an answer: the one that takes the
	 * requester's offer does not wait for its own offer's answer. */
	cr_assert(both_up(&f, 700));
	cr_expect_eq(rail1_back(&f, 0), 1, "one exchange");
	cr_expect_eq(rail1_back(&f, 1), 1, "one exchange");
	cr_expect_gt(send_one(&f, 41, 6), 0, "striped again");
	cr_expect_gt(send_one(&f, 42, 7), 0, "striped again");
	pf_close(&f);
}

/* The side that saw nothing has a striped write's piece on rail 1 when
 * the offer comes: the piece comes back flushed (its QP is reset only
 * once nothing is on it) and the write goes again on rail 0, reported
 * once, its bytes whole; then the rail is back. */
Test(rail_back, piece_in_flight_at_the_offer_goes_again_once)
{
	uint8_t *src = malloc(LEN), *tgt = calloc(1, LEN);
	uint64_t key;
	struct fid_mr *mr;
	struct pf f;

	cr_assert(src && tgt);
	pf_fill(src, LEN, 51);
	open_two_rail_pair(&f);
	cr_assert_eq(fi_mr_reg(f.side_domain[1], tgt, LEN, FI_REMOTE_WRITE, 0,
			       0, 0, &mr, NULL),
		     0);
	key = fi_mr_key(mr);
	/* The first large write asks for the key's rkeys, on rail 0. */
	cr_assert_eq(fi_write(f.s[0].ep, src, LEN, NULL, f.s[0].peer,
			      (uintptr_t)tgt, key, NULL),
		     0);
	cr_assert(pf_drive_until(&f, 0, 1, 5000));
	pf_drive(&f, 10);
	memset(tgt, 0, LEN);
	f.s[0].n_ok = 0;

	fake_verbs_hold(IBV_WR_RDMA_WRITE, true);
	cr_assert_eq(fi_write(f.s[0].ep, src, LEN, NULL, f.s[0].peer,
			      (uintptr_t)tgt, key, NULL),
		     0);
	pf_drive(&f, 20);
	cr_assert_eq(fake_verbs_waiting(IBV_WR_RDMA_WRITE), 2, "striped");
	/* Side 1 lost the rail (its port flapped): it offers. */
	gdrfab_rail_back_out(conn_of(&f, 1), 1);
	pf_drive(&f, 200);
	cr_expect_eq(fake_verbs_waiting(IBV_WR_RDMA_WRITE), 1,
		     "rail 1's piece flushed, rail 0's held");
	cr_expect_neq(rails_of(&f, 0)->back, GDRFAB_RAILS_STEADY);
	fake_verbs_hold(IBV_WR_RDMA_WRITE, false);
	cr_assert(pf_drive_until(&f, 0, 1, 5000));
	cr_assert(both_up(&f, 2000));
	pf_drive(&f, 20);
	cr_expect_eq(f.s[0].n_ok, 1, "reported once");
	cr_expect_eq(f.s[0].n_err, 0);
	cr_expect(pf_check(tgt, LEN, 51), "written whole");
	cr_expect_gt(send_one(&f, 52, 8), 0, "striped again");
	cr_assert_eq(fi_close(&mr->fid), 0);
	pf_close(&f);
	free(src);
	free(tgt);
}

/* A QP that cannot be reset (the side that lost it) or connected (the
 * side that accepts): the pair stays on rail 0, which carries every
 * message once and intact, nothing counted as back, and the attempt
 * waits for its backoff; once the device takes it again, the attempt
 * after the wait takes the rail back and striping resumes. */
static void refused(enum ibv_qp_state state)
{
	struct pf f;
	int i;

	lose_rail(&f);
	fake_verbs_refuse_state(state);
	fake_verbs_port_down(1, false);
	pf_drive(&f, 400);
	cr_expect_not(rails_of(&f, 0)->up && rails_of(&f, 1)->up);
	/* The side that failed: side 1 its reset, side 0 its connect. */
	i = state == IBV_QPS_RESET ? 1 : 0;
	cr_expect_eq(rails_of(&f, i)->back, state == IBV_QPS_RESET
						    ? GDRFAB_RAILS_LOST
						    : GDRFAB_RAILS_ASKED);
	cr_expect_eq(rails_of(&f, i)->tries, 1, "one attempt, then the wait");
	cr_expect(rails_of(&f, i)->told, "logged");
	cr_expect_gt(rails_of(&f, i)->next_ms, now_of(&f, i), "waiting");
	for (unsigned k = 0; k < 3; k++)
		cr_expect_eq(send_one(&f, 60 + k, 10 + k), 0, "rail 0 alone");
	cr_expect_eq(rails_of(&f, i)->tries, 1, "no attempt before the wait");
	cr_expect_eq(rail1_back(&f, 0) + rail1_back(&f, 1), 0);

	fake_verbs_refuse_state(-1);
	expire(&f, 0);
	expire(&f, 1);
	cr_assert(both_up(&f, 2000), "taken back at the next attempt");
	cr_expect_eq(rail1_back(&f, 0), 1);
	cr_expect_eq(rail1_back(&f, 1), 1);
	cr_expect_eq(rails_of(&f, i)->tries, 0, "the next take-back anew");
	cr_expect_not(rails_of(&f, i)->told);
	cr_expect_gt(send_one(&f, 63, 13), 0, "striped again");
	cr_expect_gt(send_one(&f, 64, 14), 0, "striped again");
	pf_close(&f);
}

Test(rail_back, reset_refused_is_tried_again)
{
	refused(IBV_QPS_RESET);
}

Test(rail_back, connect_refused_is_tried_again)
{
	refused(IBV_QPS_RTR);
}

/* Lets every control message waiting on the wire go, then holds those
 * posted after. */
static void let_go(void)
{
	fake_verbs_hold(IBV_WR_SEND, false);
	while (fake_verbs_step())
		;
	fake_verbs_hold(IBV_WR_SEND, true);
}

/* A pair whose side 1 lost the rail and, its port back, has offered to
 * take it back, the offer held on the wire with every control message
 * after it. */
static void offer_held(struct pf *f)
{
	lose_rail(f);
	fake_verbs_hold(IBV_WR_SEND, true);
	fake_verbs_port_down(1, false);
	pf_drive(f, 300);
	cr_assert_eq(rails_of(f, 1)->back, GDRFAB_RAILS_OFFERED);
}

/* Side 1 offers; side 0's ACCEPT is still on its way when side 1's wait
 * ends: side 1 offers again, the same QPs and PSNs. Side 0 reads the
 * copy after it accepted, and answers it with the same ACCEPT; side 1
 * takes the first and drops the second. One reset per side, both on
 * one connection, striping. */
Test(rail_back, unanswered_offer_goes_again_late_answer_agrees)
{
	uint32_t psn0, psn1;
	struct pf f;

	offer_held(&f);
	cr_assert_eq(rails_of(&f, 1)->tries, 1);
	cr_assert_geq(fake_verbs_waiting(IBV_WR_SEND), 1, "the offer");
	/* Its wait is a second: nothing more meanwhile. */
	pf_drive(&f, 300);
	cr_expect_eq(rails_of(&f, 1)->tries, 1, "not offered again yet");
	let_go();
	pf_drive(&f, 300);
	cr_assert_eq(rails_of(&f, 0)->back, GDRFAB_RAILS_ACCEPTED);
	cr_assert_geq(fake_verbs_waiting(IBV_WR_SEND), 1, "the accept");
	psn0 = rails_of(&f, 0)->psn[0];
	psn1 = rails_of(&f, 1)->psn[0];

	/* The answer is late: offered again, unchanged. */
	expire(&f, 1);
	pf_drive(&f, 50);
	cr_expect_eq(rails_of(&f, 1)->back, GDRFAB_RAILS_OFFERED);
	cr_expect_eq(rails_of(&f, 1)->tries, 2, "offered again once");
	cr_expect_eq(rails_of(&f, 1)->psn[0], psn1, "not reset again");
	cr_expect(rails_of(&f, 1)->told, "logged");
	cr_expect_geq(rails_of(&f, 1)->next_ms - now_of(&f, 1), 1500,
		      "the next wait doubled");
	cr_expect_not(rails_of(&f, 0)->up || rails_of(&f, 1)->up,
		      "no side stripes yet");

	fake_verbs_hold(IBV_WR_SEND, false);
	cr_assert(both_up(&f, 2000));
	pf_drive(&f, 100);
	cr_expect_eq(rails_of(&f, 0)->back, GDRFAB_RAILS_STEADY);
	cr_expect_eq(rails_of(&f, 1)->back, GDRFAB_RAILS_STEADY);
	cr_expect_eq(rails_of(&f, 0)->psn[0], psn0, "one reset on side 0");
	cr_expect_eq(rails_of(&f, 1)->psn[0], psn1, "one reset on side 1");
	/* Each side connected to the other's one reset. */
	cr_expect_eq(rails_of(&f, 1)->peer_psn[0], psn0);
	cr_expect_eq(rails_of(&f, 0)->peer_psn[0], psn1);
	cr_expect_eq(rail1_back(&f, 0), 1, "counted once");
	cr_expect_eq(rail1_back(&f, 1), 1, "counted once");
	for (unsigned k = 0; k < 3; k++)
		cr_expect_gt(send_one(&f, 70 + k, 20 + k), 0, "striped");
	pf_close(&f);
}

/* The copy of the ACCEPT comes after side 1 lost the rail again and
 * offered anew: dropped (it names the PSNs side 1 connected to), and the
 * new offer's own answer takes the rail back. */
Test(rail_back, accept_copy_after_a_new_offer_is_dropped)
{
	uint32_t psn0;
	struct pf f;

	offer_held(&f);
	let_go(); /* the offer */
	pf_drive(&f, 300);
	cr_assert_eq(rails_of(&f, 0)->back, GDRFAB_RAILS_ACCEPTED);
	expire(&f, 1);
	pf_drive(&f, 50); /* the copy, behind side 1's hold */
	psn0 = rails_of(&f, 0)->psn[0];
	let_go(); /* the ACCEPT and the copy */
	pf_drive(&f, 300);
	cr_assert(rails_of(&f, 1)->up, "side 1 took the ACCEPT");
	/* Side 0 answered the copy (held), and read the RAILS_UP? Not
	 * yet: held behind. Side 1 loses the rail again and offers anew
	 * before the copy of the ACCEPT comes. */
	gdrfab_rail_back_out(conn_of(&f, 1), 1);
	pf_drive(&f, 300);
	cr_assert_eq(rails_of(&f, 1)->back, GDRFAB_RAILS_OFFERED);
	cr_expect_neq(rails_of(&f, 1)->psn[0], rails_of(&f, 0)->peer_psn[0],
		      "a new reset");
	fake_verbs_hold(IBV_WR_SEND, false);
	cr_assert(both_up(&f, 2000), "back by the new offer's answer");
	pf_drive(&f, 100);
	cr_expect_neq(rails_of(&f, 0)->psn[0], psn0, "side 0 reset anew");
	cr_expect_eq(rails_of(&f, 1)->peer_psn[0], rails_of(&f, 0)->psn[0]);
	cr_expect_eq(rails_of(&f, 0)->peer_psn[0], rails_of(&f, 1)->psn[0]);
	cr_expect_gt(send_one(&f, 80, 30), 0, "striped");
	pf_close(&f);
}

/* A reset refused for good: one attempt per wait, never more, the waits
 * doubling from a second to their cap of 30 s and staying there. */
Test(rail_back, backoff_doubles_to_its_cap)
{
	static const long long want[] = {1000,	2000,  4000,  8000, 16000,
					 30000, 30000, 30000, 30000};
	struct pf f;

	lose_rail(&f);
	fake_verbs_refuse_state(IBV_QPS_RESET);
	fake_verbs_port_down(1, false);
	pf_drive(&f, 300);
	for (unsigned k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		struct gdrfab_conn_rails *cr = rails_of(&f, 1);
		long long wait = cr->next_ms - now_of(&f, 1);

		cr_expect_eq(cr->tries, k + 1, "attempt %u", k + 1);
		cr_expect_eq(cr->back, GDRFAB_RAILS_LOST);
		cr_expect(wait > want[k] - 500 && wait <= want[k],
			  "attempt %u: waits %lld ms, not %lld", k + 1, wait,
			  want[k]);
		pf_drive(&f, 150);
		cr_expect_eq(cr->tries, k + 1, "none before the wait ends");
		expire(&f, 1);
		pf_drive(&f, 150);
	}
	cr_expect_eq(gdrfab_rail_back_delay(200), 30000, "capped");
	cr_expect_eq(gdrfab_rail_back_delay(1), 1000);
	cr_expect_eq(send_one(&f, 90, 40), 0, "rail 0 alone");
	cr_expect_eq(rail1_back(&f, 0) + rail1_back(&f, 1), 0);
	fake_verbs_refuse_state(-1);
	pf_close(&f);
}

/* A rails reset's header and rails as gdrfab_rail_back_check reads them:
 * an offer or accept with one to seven well-formed rails after it, and
 * nothing else. */
Test(rail_back, rails_reset_checked)
{
	struct {
		struct gdrfab_pkt_hdr h;
		struct gdrfab_cm_rails t;
	} m;
	size_t one = sizeof(m.h) + offsetof(struct gdrfab_cm_rails, rail) +
		     sizeof(struct gdrfab_cm_rail);

	memset(&m, 0, sizeof(m));
	m.h.type = GDRFAB_PKT_RAILS_RESET;
	m.h.data = GDRFAB_RAILS_OFFER;
	m.t.count = 1;
	m.t.rail[0].qpn = 0x100;
	m.t.rail[0].port_num = 1;
	m.t.rail[0].mtu = IBV_MTU_4096;
	cr_expect_null(gdrfab_rail_back_check(&m.h, one));
	m.h.data = GDRFAB_RAILS_ACCEPT;
	cr_expect_null(gdrfab_rail_back_check(&m.h, one));
	cr_expect_not_null(gdrfab_rail_back_check(&m.h, sizeof(m.h)));
	cr_expect_not_null(gdrfab_rail_back_check(&m.h, one + 1));
	m.h.data = 0;
	cr_expect_not_null(gdrfab_rail_back_check(&m.h, one));
	m.h.data = GDRFAB_RAILS_OFFER;
	m.h.msg_id = 1;
	cr_expect_not_null(gdrfab_rail_back_check(&m.h, one));
	m.h.msg_id = 0;
	m.t.count = 0;
	cr_expect_not_null(gdrfab_rail_back_check(&m.h, one));
	m.t.count = 1;
	m.t.rail[0].mtu = 0;
	cr_expect_not_null(gdrfab_rail_back_check(&m.h, one));
	m.t.rail[0].mtu = IBV_MTU_1024;
	m.t.rail[0].qpn = 1u << 24;
	cr_expect_not_null(gdrfab_rail_back_check(&m.h, one));
}

/* A pair of three-rail domains (fake0+fake1+fake2), connected, their
 * rails up. */
static void open_three_rails(struct pf *f)
{
	static const char *const dom[2] = {"fake0+fake1+fake2",
					   "fake0+fake1+fake2"};

	pf_open_domains(f, 3, dom);
	pf_connect(f);
	pf_drive(f, 20);
	cr_assert(rails_of(f, 0)->up && rails_of(f, 1)->up);
	cr_assert_eq(rails_of(f, 1)->more, 2);
}

/* Side i's bytes striped on each of three rails. */
static void rail_bytes3(struct pf *f, int i, uint64_t b[3])
{
	static struct fi_gdrfab_stats s;

	pf_read_stats(f, i, &s);
	for (int r = 0; r < 3; r++)
		b[r] = s.rails[r].stripe_bytes;
}

/* Three rails, and rail 2's port goes down under a striped read: that
 * rail alone goes out. Its piece, and nothing more, is read again, cut
 * over rails 0 and 1, the rails left; the next messages stripe over
 * them too (the endpoint keeps what is left); once the port is back the
 * pair resets its rails and stripes over all three again, each message
 * intact. */
Test(rail_back, three_rails_one_lost_the_others_carry_on)
{
	uint8_t *out = malloc(LEN), *in = calloc(1, LEN);
	uint64_t b0[3], b1[3];
	long posted;
	struct pf f;

	cr_assert(out && in);
	open_three_rails(&f);
	pf_fill(out, LEN, 61);
	fake_verbs_port_down(2, true);
	fake_verbs_hold(IBV_WR_RDMA_READ, true);
	cr_assert_eq(
		fi_trecv(f.s[1].ep, in, LEN, NULL, f.s[1].peer, 1, 0, NULL), 0);
	cr_assert_eq(fi_tsend(f.s[0].ep, out, LEN, NULL, f.s[0].peer, 1, NULL),
		     0);
	rail_bytes3(&f, 1, b0);
	pf_drive(&f, 20);
	cr_assert_eq(fake_verbs_waiting(IBV_WR_RDMA_READ), 3);
	posted = fake_verbs_counts().rdma_bytes;
	fake_verbs_hold(IBV_WR_RDMA_READ, false);
	cr_assert(fake_verbs_step(), "rail 0's READ");
	cr_assert(fake_verbs_step(), "rail 1's READ");
	cr_assert_eq(
		fake_verbs_fail(IBV_WR_RDMA_READ, IBV_WC_RETRY_EXC_ERR, false),
		1, "rail 2's READ");
	cr_assert(pf_drive_until(&f, 1, 1, 5000));
	cr_assert(pf_drive_until(&f, 0, 1, 5000));
	cr_expect_eq(f.s[0].n_err + f.s[1].n_err, 0);
	cr_expect(pf_check(in, LEN, 61), "intact");
	/* Pieces of 384 KiB (a third, rounded up to 64 KiB): rail 2's is
	 * the last 256 KiB. */
	cr_expect_eq(fake_verbs_counts().rdma_bytes - posted, 256 << 10,
		     "rail 2's piece read again, and nothing more");
	/* Its 256 KiB again in two pieces of 128 KiB, on rails 0 and 1. */
	rail_bytes3(&f, 1, b1);
	cr_expect_eq(b1[0] - b0[0], (384 + 128) << 10, "rail 0: %llu",
		     (unsigned long long)(b1[0] - b0[0]));
	cr_expect_eq(b1[1] - b0[1], (384 + 128) << 10, "rail 1: %llu",
		     (unsigned long long)(b1[1] - b0[1]));
	cr_expect_eq(b1[2] - b0[2], 256 << 10, "rail 2: its piece, once");
	cr_expect(rails_of(&f, 1)->up, "the other rails carry on");
	cr_expect_eq(rails_of(&f, 1)->out, 1u << 2);

	for (unsigned i = 0; i < 2; i++) {
		rail_bytes3(&f, 1, b0);
		send_one(&f, 62 + i, 2 + i);
		rail_bytes3(&f, 1, b1);
		cr_expect_eq(b1[2], b0[2], "rail 2 while it is out");
		cr_expect_gt(b1[1] - b0[1], 0, "rail 1 carries on");
		cr_expect_eq(b1[0] - b0[0] + b1[1] - b0[1], LEN,
			     "rails 0 and 1 carry it all");
	}

	fake_verbs_port_down(2, false);
	for (int t = 0; t < 2000; t += 10) {
		if (rails_of(&f, 1)->back == GDRFAB_RAILS_STEADY &&
		    rails_of(&f, 1)->up && both_up(&f, 10))
			break;
		pf_drive(&f, 10);
	}
	cr_assert(both_up(&f, 10), "back on both sides");
	cr_expect_eq(rails_of(&f, 1)->back, GDRFAB_RAILS_STEADY);
	cr_expect_eq(rails_of(&f, 1)->out, 0);
	rail_bytes3(&f, 1, b0);
	send_one(&f, 64, 4);
	rail_bytes3(&f, 1, b1);
	cr_expect_gt(b1[2] - b0[2], 0, "rail 2 striped again");
	cr_expect_gt(b1[1] - b0[1], 0);
	free(out);
	free(in);
	pf_close(&f);
}

/* Three rails, messages below the stripe threshold taking turns (rails
 * 0, 1, 2, 0), and rail 2's port goes down under the third: it goes
 * again whole on the next rail left in turn, rail 1, not on rail 0, and
 * nothing else is read again. Each message ends once, intact. */
Test(rail_back, three_rails_a_failed_turn_goes_on_the_next_rail_left)
{
	const size_t len = 64 << 10;
	uint8_t *out = malloc(4 * len), *in = calloc(4, len);
	uint64_t b0[3], b1[3];
	long posted;
	struct pf f;

	cr_assert(out && in);
	open_three_rails(&f);
	pf_fill(out, 4 * len, 71);
	rail_bytes3(&f, 1, b0);
	posted = pf_post_held_reads(&f, out, in, len, 4, 50);
	fake_verbs_port_down(2, true);
	fake_verbs_hold(IBV_WR_RDMA_READ, false);
	cr_assert_eq(
		fake_verbs_fail_on(2, IBV_WR_RDMA_READ, IBV_WC_RETRY_EXC_ERR),
		1, "the third's READ, rail 2's, the one on fake2");
	pf_expect_delivered(&f, in, len, 4, 71);
	cr_expect_eq(fake_verbs_counts().rdma_bytes - posted, (long)len,
		     "the third read again, whole, and nothing more");
	rail_bytes3(&f, 1, b1);
	cr_expect_eq(b1[0] - b0[0], 2 * len, "rail 0: the first and fourth");
	cr_expect_eq(b1[1] - b0[1], 2 * len,
		     "rail 1: the second, and the third again");
	cr_expect_eq(b1[2] - b0[2], len, "rail 2: the third, once");
	cr_expect(rails_of(&f, 1)->up, "rails 0 and 1 carry on");
	cr_expect_eq(rails_of(&f, 1)->out, 1u << 2);
	free(out);
	free(in);
	pf_close(&f);
}
