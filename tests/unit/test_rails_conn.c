/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connections over rails (gdrfab_conn_rails.h), on the fake verbs with
 * two devices: two endpoints of rail-set domains agree on two rails in
 * their one exchange, each side's rail-1 QP connected to the other's and
 * marked up on both sides (the requester once the acceptor said so); an
 * endpoint of two rails and one of a single NIC connect, whichever
 * starts, and use rail 0 alone, with no rail QP left on either side; and
 * every rail QP and CQ is gone when they close. A peer's rails in the
 * connection messages are checked field by field. A rendezvous of at
 * least FI_GDRFAB_STRIPE_MIN bytes between two-rail endpoints is read in
 * one piece per rail (the split read from the receiver's public per-rail
 * counters, struct fi_gdrfab_stats's rails), intact, whether it waited as
 * unexpected or not; smaller ones and those of a mixed pair go on rail 0.
 * Those counters name each rail's NIC, add up to the striped bytes, are
 * summed into the domain, count a failed piece on its own rail, and a
 * reader of the struct's older size gets what it got before. A rail whose
 * piece fails while the connection stands is taken out: the message is
 * read again on rail 0, intact, reported once; rail 0's failure fails the
 * read once.
 */
#include <criterion/criterion.h>
#include <stddef.h>
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
#include "gdrfab_stripe.h"
#include "gdrfab_verbs_ops.h"
#include "proto_fixture.h"

/* Side i's connection to the other side (its only one). */
static struct gdrfab_conn *conn_of(struct pf *f, int i)
{
	struct gdrfab_ep *ep =
		gdrfab_container_of(f->s[i].ep, struct gdrfab_ep, fid);
	struct gdrfab_proto *proto = ep->proto;

	cr_assert(!gdrfab_list_empty(&proto->conns), "side %d: no connection",
		  i);
	return gdrfab_list_entry(proto->conns.next, struct gdrfab_conn, entry);
}

static uint32_t dest_qpn(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;

	memset(&attr, 0, sizeof(attr));
	cr_assert_eq(gdrfab_vops->query_qp(qp, &attr, IBV_QP_DEST_QPN, &init),
		     0);
	return attr.dest_qp_num;
}

Test(rails_conn, two_rail_pair_connects_both_rails)
{
	static const char *const dom[2] = {"fake0+fake1", "fake1+fake0"};
	struct gdrfab_conn *c[2];
	struct pf f;

	pf_open_domains(&f, 2, dom);
	pf_connect(&f);
	pf_drive(&f, 20); /* the acceptor's word that its rails are up */
	for (int i = 0; i < 2; i++) {
		c[i] = conn_of(&f, i);
		cr_assert_eq(c[i]->state, GDRFAB_CONN_CONNECTED, "side %d", i);
		cr_assert(c[i]->rails, "side %d has no rails", i);
		cr_expect_eq(c[i]->rails->more, 1, "side %d", i);
		cr_expect(c[i]->rails->up, "side %d: rails not up", i);
	}
	/* Rail 0 pairs with rail 0, rail 1 with rail 1. */
	cr_expect_eq(dest_qpn(c[0]->qp), c[1]->qp->qp_num);
	cr_expect_eq(dest_qpn(c[0]->rails->qp[0]), c[1]->rails->qp[0]->qp_num);
	cr_expect_eq(dest_qpn(c[1]->rails->qp[0]), c[0]->rails->qp[0]->qp_num);
	/* Each rail QP is on its rail's device: side 0's rail 1 is fake1. */
	cr_expect_str_eq(c[0]->rails->qp[0]->pd->context->device->name,
			 "fake1");
	cr_expect_str_eq(c[1]->rails->qp[0]->pd->context->device->name,
			 "fake0");
	/* Messages still flow on rail 0. */
	pf_connect(&f);
	pf_close(&f);
}

static void send_one(struct pf *f, size_t len, bool with_desc,
		     uint64_t split[2]);
static void read_stats(struct fid *fid, struct fi_gdrfab_stats *out);

/* A side of dom's rails reports them, in the set's order; a NIC alone
 * reports none (rail_count 0), endpoint and domain alike. dom is
 * "fakeA+fakeB" or "fakeA" (each name 5 characters). */
static void expect_rails_named(struct pf *f, int i, const char *dom)
{
	static struct fi_gdrfab_stats s;
	struct fid *fids[2] = {&f->s[i].ep->fid, &f->side_domain[i]->fid};

	for (int k = 0; k < 2; k++) {
		read_stats(fids[k], &s);
		if (!strchr(dom, '+')) {
			cr_expect_eq(s.rail_count, 0, "%s (%d)", dom, k);
			cr_expect_eq(s.rails[0].name[0], '\0');
			continue;
		}
		cr_expect_eq(s.rail_count, 2, "%s (%d)", dom, k);
		cr_expect_eq(strncmp(s.rails[0].name, dom, 5), 0, "%s",
			     s.rails[0].name);
		cr_expect_str_eq(s.rails[1].name, dom + 6);
	}
}

static void single_and_double(const char *const dom[2])
{
	struct pf f;

	pf_open_domains(&f, 2, dom);
	pf_connect(&f); /* side 0 asks */
	pf_drive(&f, 20);
	for (int i = 0; i < 2; i++) {
		struct gdrfab_conn *c = conn_of(&f, i);

		cr_expect_eq(c->state, GDRFAB_CONN_CONNECTED, "side %d", i);
		cr_expect_null(c->rails, "side %d made rails", i);
	}
	for (int i = 0; i < 2; i++)
		expect_rails_named(&f, i, dom[i]);
	pf_connect(&f);
	{
		uint64_t split[2];

		/* Large enough to stripe, were there rails: rail 0. */
		send_one(&f, 1 << 20, false, split);
		cr_expect_eq(split[0] + split[1], 0);
	}
	pf_close(&f);
}

Test(rails_conn, two_rails_asking_one_rail)
{
	static const char *const dom[2] = {"fake0+fake1", "fake1"};

	single_and_double(dom);
}

Test(rails_conn, one_rail_asking_two_rails)
{
	static const char *const dom[2] = {"fake1", "fake0+fake1"};

	single_and_double(dom);
}

/* A peer's rails are checked before anything is made of them: a REQ's
 * count, a trailer's length, count and QPs; a message without the flag
 * is as before, whatever the field earlier builds called reserved. */
Test(rails_conn, cm_rails_checked)
{
	struct {
		struct gdrfab_cm_msg msg;
		struct gdrfab_cm_rails rails;
	} m;
	size_t one = sizeof(m.msg) + offsetof(struct gdrfab_cm_rails, rail) +
		     sizeof(struct gdrfab_cm_rail);

	memset(&m, 0, sizeof(m));
	m.msg.type = GDRFAB_CM_REQ;
	cr_expect_null(gdrfab_cm_rails_check(&m.msg, &m.rails, sizeof(m.msg)));
	m.msg.rails = 3; /* no flag: not read */
	cr_expect_null(gdrfab_cm_rails_check(&m.msg, &m.rails, sizeof(m.msg)));
	m.msg.cm_flags = GDRFAB_CM_F_RAILS;
	cr_expect_null(gdrfab_cm_rails_check(&m.msg, &m.rails, sizeof(m.msg)));
	m.msg.rails = 1;
	cr_expect_not_null(
		gdrfab_cm_rails_check(&m.msg, &m.rails, sizeof(m.msg)));
	m.msg.rails = GDRFAB_CM_RAILS_MAX + 1;
	cr_expect_not_null(
		gdrfab_cm_rails_check(&m.msg, &m.rails, sizeof(m.msg)));
	m.msg.rails = 2;
	cr_expect_not_null(gdrfab_cm_rails_check(&m.msg, &m.rails, one),
			   "a REQ has no trailer");

	m.msg.type = GDRFAB_CM_REP;
	m.msg.rails = 0;
	m.rails.count = 1;
	m.rails.rail[0] = (struct gdrfab_cm_rail){
		.qpn = 0x123, .psn = 7, .port_num = 1, .mtu = IBV_MTU_1024};
	cr_expect_null(gdrfab_cm_rails_check(&m.msg, &m.rails, one));
	cr_expect_not_null(gdrfab_cm_rails_check(&m.msg, &m.rails, one + 4),
			   "longer than its count");
	cr_expect_not_null(
		gdrfab_cm_rails_check(&m.msg, &m.rails, sizeof(m.msg)),
		"flagged REP without its trailer");
	m.rails.count = 0;
	cr_expect_not_null(gdrfab_cm_rails_check(&m.msg, &m.rails, one));
	m.rails.count = GDRFAB_CM_RAILS_MAX;
	cr_expect_not_null(gdrfab_cm_rails_check(&m.msg, &m.rails, one));
	m.rails.count = 1;
	m.rails.rail[0].qpn = 0;
	cr_expect_not_null(gdrfab_cm_rails_check(&m.msg, &m.rails, one));
	m.rails.rail[0].qpn = 0x1000000;
	cr_expect_not_null(gdrfab_cm_rails_check(&m.msg, &m.rails, one));
	m.rails.rail[0].qpn = 0x123;
	m.rails.rail[0].mtu = 0;
	cr_expect_not_null(gdrfab_cm_rails_check(&m.msg, &m.rails, one));
	m.rails.rail[0].mtu = IBV_MTU_1024;
	m.rails.reserved[1] = 1;
	cr_expect_not_null(gdrfab_cm_rails_check(&m.msg, &m.rails, one));
	m.rails.reserved[1] = 0;
	m.msg.rails = 2;
	cr_expect_not_null(gdrfab_cm_rails_check(&m.msg, &m.rails, one),
			   "a rail count on a REP");
}

/* fid's counters, read as an application reads them (fi_open_ops), as
 * far as size (of the caller's struct) says; returns the size filled. */
static size_t read_sized(struct fid *fid, struct fi_gdrfab_stats *out,
			 size_t size)
{
	struct fi_gdrfab_stats_ops *ops = NULL;

	cr_assert_eq(
		fi_open_ops(fid, FI_GDRFAB_STATS_OPS, 0, (void **)&ops, NULL),
		0);
	out->size = size;
	cr_assert_eq(ops->read(fid, out), 0);
	return out->size;
}

static void read_stats(struct fid *fid, struct fi_gdrfab_stats *out)
{
	memset(out, 0, sizeof(*out));
	cr_assert_eq(read_sized(fid, out, sizeof(*out)), sizeof(*out));
}

/* Side i's endpoint's striped bytes on rails 0 and 1 now. */
static void rail_bytes(struct pf *f, int i, uint64_t bytes[2])
{
	static struct fi_gdrfab_stats s;

	read_stats(&f->s[i].ep->fid, &s);
	bytes[0] = s.rails[0].stripe_bytes;
	bytes[1] = s.rails[1].stripe_bytes;
}

/* Sends len bytes from side 0 to side 1 (the receive posted first, so
 * the message is expected), with descriptors of each side's own domain
 * when with_desc; checks the bytes and returns the receiver's striped
 * bytes per rail in split. */
static void send_one(struct pf *f, size_t len, bool with_desc,
		     uint64_t split[2])
{
	uint8_t *out = malloc(len), *in = calloc(1, len);
	struct fid_mr *mr[2] = {NULL, NULL};
	void *desc[2] = {NULL, NULL};
	uint64_t before[2];

	cr_assert(out && in);
	pf_fill(out, len, (unsigned)len);
	if (with_desc) {
		cr_assert_eq(fi_mr_reg(f->side_domain[0], out, len, FI_SEND, 0,
				       0, 0, &mr[0], NULL),
			     0);
		cr_assert_eq(fi_mr_reg(f->side_domain[1], in, len, FI_RECV, 0,
				       0, 0, &mr[1], NULL),
			     0);
		desc[0] = fi_mr_desc(mr[0]);
		desc[1] = fi_mr_desc(mr[1]);
	}
	rail_bytes(f, 1, before);
	cr_assert_eq(fi_trecv(f->s[1].ep, in, len, desc[1], f->s[1].peer, 9, 0,
			      NULL),
		     0);
	cr_assert_eq(
		fi_tsend(f->s[0].ep, out, len, desc[0], f->s[0].peer, 9, NULL),
		0);
	cr_assert(pf_drive_until(f, 1, 1, 5000), "the receive of %zu", len);
	cr_assert(pf_drive_until(f, 0, 1, 5000), "the send of %zu", len);
	cr_assert_eq(f->s[0].n_err + f->s[1].n_err, 0, "errors at %zu", len);
	cr_expect_eq(f->s[1].ok[0].len, len);
	cr_expect(pf_check(in, len, (unsigned)len), "the bytes of %zu", len);
	f->s[0].n_ok = f->s[1].n_ok = 0;
	rail_bytes(f, 1, split);
	split[0] -= before[0];
	split[1] -= before[1];
	for (int i = 0; i < 2; i++) {
		if (mr[i])
			cr_assert_eq(fi_close(&mr[i]->fid), 0);
	}
	free(out);
	free(in);
}

static void open_two_rail_pair(struct pf *f)
{
	static const char *const dom[2] = {"fake0+fake1", "fake0+fake1"};

	pf_open_domains(f, 2, dom);
	pf_connect(f);
	pf_drive(f, 20);
	cr_assert(conn_of(f, 0)->rails && conn_of(f, 0)->rails->up);
	cr_assert(conn_of(f, 1)->rails && conn_of(f, 1)->rails->up);
}

/* A two-rail pair with a striped message of len bytes from out to in
 * under way: its two READs, one per rail, held before they run. */
static void start_held_striped_read(struct pf *f, uint8_t *out, uint8_t *in,
				    size_t len)
{
	open_two_rail_pair(f);
	fake_verbs_hold(IBV_WR_RDMA_READ, true);
	cr_assert_eq(
		fi_trecv(f->s[1].ep, in, len, NULL, f->s[1].peer, 9, 0, NULL),
		0);
	cr_assert_eq(
		fi_tsend(f->s[0].ep, out, len, NULL, f->s[0].peer, 9, NULL), 0);
	pf_drive(f, 20);
	cr_assert_eq(fake_verbs_waiting(IBV_WR_RDMA_READ), 2);
}

/* A rendezvous of at least FI_GDRFAB_STRIPE_MIN bytes is read in one
 * piece per rail, the bytes intact; below it, whole on one rail, the
 * rails taking turns. From 1 MiB the rails carry within 10% of even. */
Test(rails_conn, rendezvous_striped_from_stripe_min)
{
	const size_t min = gdrfab_params.stripe_min;
	const struct {
		size_t len;
		bool desc;
	} cases[] = {{min - 1, false},	    {min, false},
		     {min + 1, true},	    {min + (64 << 10) + 1, false},
		     {(1 << 20), true},	    {(4 << 20) + 12345, false},
		     {(16 << 20) + 3, true}};
	struct pf f;

	cr_assert_eq(min, 256 << 10, "the default");
	open_two_rail_pair(&f);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = cases[i].len;
		uint64_t split[2];

		send_one(&f, len, cases[i].desc, split);
		if (len < min) {
			cr_expect(
				split[0] == len ? !split[1]
						: split[1] == len && !split[0],
				"%zu bytes not whole on one rail: %llu + %llu",
				len, (unsigned long long)split[0],
				(unsigned long long)split[1]);
			continue;
		}
		cr_expect_eq(split[0] + split[1], len, "%zu: %llu + %llu", len,
			     (unsigned long long)split[0],
			     (unsigned long long)split[1]);
		cr_expect_gt(split[1], 0, "%zu: nothing on rail 1", len);
		cr_expect_eq(
			split[0] % (64 << 10), 0,
			"%zu: rail 0's piece %llu is no multiple of 64 KiB",
			len, (unsigned long long)split[0]);
		if (len >= (1 << 20)) {
			uint64_t diff = split[0] > split[1]
						? split[0] - split[1]
						: split[1] - split[0];

			cr_expect_leq(diff, len / 10, "%zu: %llu + %llu", len,
				      (unsigned long long)split[0],
				      (unsigned long long)split[1]);
		}
	}
	pf_close(&f);
}

/* A message that waited as unexpected kept its rail keys: striped too,
 * intact. */
Test(rails_conn, unexpected_rendezvous_striped)
{
	size_t len = 1 << 20;
	uint8_t *out = malloc(len), *in = calloc(1, len);
	uint64_t split[2];
	struct pf f;

	cr_assert(out && in);
	open_two_rail_pair(&f);
	pf_fill(out, len, 5);
	cr_assert_eq(fi_tsend(f.s[0].ep, out, len, NULL, f.s[0].peer, 9, NULL),
		     0);
	pf_drive(&f, 20); /* the RNDV waits as unexpected */
	cr_assert_eq(
		fi_trecv(f.s[1].ep, in, len, NULL, f.s[1].peer, 9, 0, NULL), 0);
	cr_assert(pf_drive_until(&f, 1, 1, 5000));
	cr_assert(pf_drive_until(&f, 0, 1, 5000));
	cr_expect(pf_check(in, len, 5));
	rail_bytes(&f, 1, split);
	cr_expect_eq(split[0], len / 2);
	cr_expect_eq(split[1], len / 2);
	free(out);
	free(in);
	pf_close(&f);
}

/* Side i's CQ read once (its progress), the fake carrying out nothing. */
static ssize_t poll_side(struct pf *f, int i, struct fi_cq_tagged_entry *e)
{
	return fi_cq_read(f->s[i].cq, e, 1);
}

/* A striped read ends once, when its last piece has: the receive is
 * reported, and the FIN sent, only after both rails' READs completed. */
Test(rails_conn, striped_read_ends_after_every_piece)
{
	size_t len = 1 << 20;
	uint8_t *out = malloc(len), *in = calloc(1, len);
	struct fi_cq_tagged_entry e;
	struct pf f;

	cr_assert(out && in);
	open_two_rail_pair(&f);
	pf_fill(out, len, 11);
	fake_verbs_hold(IBV_WR_RDMA_READ, true);
	cr_assert_eq(
		fi_trecv(f.s[1].ep, in, len, NULL, f.s[1].peer, 9, 0, NULL), 0);
	cr_assert_eq(fi_tsend(f.s[0].ep, out, len, NULL, f.s[0].peer, 9, NULL),
		     0);
	pf_drive(&f, 20);
	cr_assert_eq(fake_verbs_waiting(IBV_WR_RDMA_READ), 2,
		     "one READ per rail");
	fake_verbs_hold(IBV_WR_RDMA_READ, false);
	cr_assert(fake_verbs_step(), "rail 0's READ");
	for (int i = 0; i < 5; i++)
		cr_expect_eq(poll_side(&f, 1, &e), -FI_EAGAIN,
			     "reported with a piece still out");
	cr_expect_eq(fake_verbs_waiting(IBV_WR_SEND), 0);
	cr_assert(fake_verbs_step(), "rail 1's READ");
	cr_assert(pf_drive_until(&f, 1, 1, 5000));
	cr_assert(pf_drive_until(&f, 0, 1, 5000), "the FIN");
	cr_expect_eq(f.s[1].n_ok, 1);
	cr_expect_eq(f.s[0].n_ok, 1);
	cr_expect(pf_check(in, len, 11));
	free(out);
	free(in);
	pf_close(&f);
}

/* What follows an RNDV's segments must be what its flags say. */
Test(rails_conn, rail_keys_checked)
{
	struct gdrfab_pkt_hdr h = {.type = GDRFAB_PKT_RNDV, .seg_count = 2};

	cr_expect(gdrfab_stripe_keys_fit(&h, 0));
	cr_expect_not(gdrfab_stripe_keys_fit(&h, 8), "keys without the flag");
	h.flags = GDRFAB_PKT_RAIL_KEYS;
	cr_expect_not(gdrfab_stripe_keys_fit(&h, 0), "the flag without keys");
	cr_expect(gdrfab_stripe_keys_fit(&h, 8), "two segments, one rail");
	cr_expect(gdrfab_stripe_keys_fit(&h, 8 * (GDRFAB_CM_RAILS_MAX - 1)));
	cr_expect_not(gdrfab_stripe_keys_fit(&h, 8 * GDRFAB_CM_RAILS_MAX));
	cr_expect_not(gdrfab_stripe_keys_fit(&h, 12), "half a rail");
}

/* A rail's READ that fails fails the connection (its other rail's READ
 * comes back flushed): the receive is reported once, as an error, and
 * nothing is left behind. */
Test(rails_conn, failed_piece_fails_the_read_once)
{
	size_t len = 1 << 20;
	uint8_t *out = malloc(len), *in = calloc(1, len);
	struct pf f;

	cr_assert(out && in);
	start_held_striped_read(&f, out, in, len);
	cr_assert_eq(
		fake_verbs_fail(IBV_WR_RDMA_READ, IBV_WC_REM_ACCESS_ERR, false),
		2);
	fake_verbs_hold(IBV_WR_RDMA_READ, false);
	cr_assert(pf_drive_until(&f, 1, 1, 5000), "the receive's end");
	pf_drive(&f, 50);
	cr_expect_eq(f.s[1].n_err, 1, "reported once");
	cr_expect_eq(f.s[1].n_ok, 0);
	free(out);
	free(in);
	pf_close(&f);
}

/* The first RMA between rail-set domains to a key goes on rail 0 with
 * the target's fi_mr_key (rail 0's rkey in its low 32 bits), as between
 * NICs alone, and asks for the key's other rkeys: the read after it is
 * striped (test_rma_stripe.c has the rest). Both intact. */
Test(rails_conn, rma_first_on_rail0_with_the_key)
{
	size_t len = 1 << 20;
	uint8_t *src = malloc(len), *tgt = calloc(1, len),
		*back = calloc(1, len);
	uint64_t split[2];
	struct fid_mr *tmr;
	struct pf f;

	cr_assert(src && tgt && back);
	open_two_rail_pair(&f);
	cr_assert_eq(fi_mr_reg(f.side_domain[1], tgt, len,
			       FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &tmr,
			       NULL),
		     0);
	pf_fill(src, len, 21);
	cr_assert_eq(fi_write(f.s[0].ep, src, len, NULL, f.s[0].peer,
			      (uintptr_t)tgt, fi_mr_key(tmr), NULL),
		     0);
	cr_assert(pf_drive_until(&f, 0, 1, 5000), "the write");
	pf_drive(&f, 10);
	rail_bytes(&f, 0, split);
	cr_expect_eq(split[0] + split[1], 0, "the first one striped");
	cr_assert_eq(fi_read(f.s[0].ep, back, len, NULL, f.s[0].peer,
			     (uintptr_t)tgt, fi_mr_key(tmr), NULL),
		     0);
	cr_assert(pf_drive_until(&f, 0, 2, 5000), "the read");
	cr_expect_eq(f.s[0].n_err, 0);
	cr_expect(pf_check(tgt, len, 21), "written");
	cr_expect(pf_check(back, len, 21), "read back");
	rail_bytes(&f, 0, split);
	cr_expect_eq(split[0] + split[1], len, "the read striped");
	cr_assert_eq(fi_close(&tmr->fid), 0);
	free(src);
	free(tgt);
	free(back);
	pf_close(&f);
}

/* The public counters of a striped message: each rail's NIC named, rail 0
 * counted with the others, the rails' bytes adding up to the message's
 * (rx_rndv_bytes), one READ or more per rail, near even; the reader
 * counts, not the sender; the domain holds its endpoint's. */
Test(rails_conn, rail_counters_add_up_to_the_striped_bytes)
{
	static struct fi_gdrfab_stats ep, dom, tx;
	const size_t len = (16 << 20) + 3;
	uint64_t split[2], sum, diff;
	struct pf f;

	open_two_rail_pair(&f);
	expect_rails_named(&f, 0, "fake0+fake1");
	expect_rails_named(&f, 1, "fake0+fake1");
	send_one(&f, len, true, split);
	read_stats(&f.s[1].ep->fid, &ep);
	cr_expect_eq(split[0] + split[1], len);
	cr_expect_eq(ep.rails[0].stripe_bytes + ep.rails[1].stripe_bytes,
		     ep.rx_rndv_bytes, "every rendezvous here was striped");
	cr_expect_geq(ep.rails[0].stripe_ops, 1);
	cr_expect_geq(ep.rails[1].stripe_ops, 1);
	cr_expect_eq(ep.rails[0].errors + ep.rails[1].errors, 0);
	diff = split[0] > split[1] ? split[0] - split[1] : split[1] - split[0];
	cr_expect_leq(diff, 2 * 64 << 10, "%llu + %llu",
		      (unsigned long long)split[0],
		      (unsigned long long)split[1]);
	read_stats(&f.s[0].ep->fid, &tx);
	sum = tx.rails[0].stripe_bytes + tx.rails[1].stripe_bytes;
	cr_expect_eq(sum, 0, "the sender counts no piece");
	read_stats(&f.side_domain[1]->fid, &dom);
	cr_expect_eq(dom.rail_count, 2);
	for (int r = 0; r < 2; r++) {
		cr_expect_str_eq(dom.rails[r].name, ep.rails[r].name);
		cr_expect_eq(dom.rails[r].stripe_bytes,
			     ep.rails[r].stripe_bytes);
		cr_expect_eq(dom.rails[r].stripe_ops, ep.rails[r].stripe_ops);
	}
	pf_close(&f);
}

/* A reader whose struct ends before the rails (an older build) gets
 * exactly the bytes it got before: size is where the rails start, and
 * nothing past it is written. */
Test(rails_conn, an_old_size_reader_gets_the_old_bytes)
{
	static struct fi_gdrfab_stats full, old;
	const size_t old_size = offsetof(struct fi_gdrfab_stats, rail_count);
	uint64_t split[2];
	struct pf f;

	open_two_rail_pair(&f);
	send_one(&f, 1 << 20, false, split);
	read_stats(&f.s[1].ep->fid, &full);
	memset(&old, 0xab, sizeof(old));
	cr_assert_eq(read_sized(&f.s[1].ep->fid, &old, old_size), old_size);
	cr_expect_eq(memcmp((char *)&old + sizeof(old.size),
			    (char *)&full + sizeof(full.size),
			    old_size - sizeof(old.size)),
		     0, "the old fields as a full reader reads them");
	for (size_t i = old_size; i < sizeof(old); i++)
		cr_assert_eq(((unsigned char *)&old)[i], 0xab,
			     "byte %zu written past the old size", i);
	pf_close(&f);
}

/* A piece that fails on rail 1 while the connection stands (its link
 * down past the retry budget, its QP in error) is no failed receive: it
 * counts its error on rail 1, the connection stops striping, and rail
 * 1's half alone is read again on rail 0 (rail 0's half landed), the
 * message reported once, intact. While
 * the rail's port stays down, the next message of a striped size goes on
 * rail 0 alone, intact too (its return: test_rail_back.c). */
Test(rails_conn, a_failed_rail_piece_goes_again_on_rail_0)
{
	static struct fi_gdrfab_stats s;
	size_t len = 1 << 20;
	long posted;
	uint8_t *out = malloc(len), *in = calloc(1, len);
	struct pf f;

	cr_assert(out && in);
	pf_fill(out, len, 21);
	start_held_striped_read(&f, out, in, len);
	posted = fake_verbs_counts().rdma_bytes;
	fake_verbs_port_down(1, true); /* fake1: rail 1 */
	fake_verbs_hold(IBV_WR_RDMA_READ, false);
	cr_assert(fake_verbs_step(), "rail 0's READ");
	cr_assert_eq(
		fake_verbs_fail(IBV_WR_RDMA_READ, IBV_WC_RETRY_EXC_ERR, false),
		1, "rail 1's READ");
	cr_assert(pf_drive_until(&f, 1, 1, 5000), "the receive's end");
	cr_assert(pf_drive_until(&f, 0, 1, 5000), "the send's end");
	cr_expect_eq(f.s[1].n_err, 0);
	cr_expect_eq(f.s[1].n_ok, 1, "reported once");
	cr_expect_eq(f.s[0].n_ok, 1);
	cr_expect(pf_check(in, len, 21), "whole");
	cr_expect_eq(fake_verbs_counts().rdma_bytes - posted, (long)len / 2,
		     "rail 1's half read again, nothing more");
	cr_expect_eq(conn_of(&f, 1)->state, GDRFAB_CONN_CONNECTED);
	cr_expect_not(conn_of(&f, 1)->rails->up, "no more striping");
	read_stats(&f.s[1].ep->fid, &s);
	cr_expect_eq(s.rails[1].errors, 1);
	cr_expect_eq(s.rails[0].errors, 0);
	cr_expect_eq(s.rails[1].stripe_ops, 1);

	/* The next one: rail 0 alone. */
	memset(in, 0, len);
	pf_fill(out, len, 22);
	cr_assert_eq(
		fi_trecv(f.s[1].ep, in, len, NULL, f.s[1].peer, 9, 0, NULL), 0);
	cr_assert_eq(fi_tsend(f.s[0].ep, out, len, NULL, f.s[0].peer, 9, NULL),
		     0);
	cr_assert(pf_drive_until(&f, 1, 2, 5000));
	cr_assert(pf_drive_until(&f, 0, 2, 5000));
	cr_expect(pf_check(in, len, 22));
	read_stats(&f.s[1].ep->fid, &s);
	cr_expect_eq(s.rails[1].stripe_ops, 1, "nothing more on rail 1");
	free(out);
	free(in);
	pf_close(&f);
}

/* Below FI_GDRFAB_STRIPE_MIN a rendezvous goes whole on one rail, the
 * connection's rails taking turns (gdrfab_stripe.h): one at a time they
 * alternate, a window of them spreads half and half, each intact; eager
 * and segmented messages stay off the rails' counters (rail 0, no RDMA). */
Test(rails_conn, below_the_threshold_rails_take_turns)
{
	const size_t len = 64 << 10, n = 4;
	uint8_t *out = malloc(n * len), *in = calloc(n, len);
	uint64_t split[2], before[2], after[2];
	struct pf f;

	cr_assert(out && in);
	open_two_rail_pair(&f);
	for (size_t i = 0; i < n; i++) {
		send_one(&f, len, i % 2, split);
		cr_expect_eq(split[i % 2], len, "message %zu on rail %zu", i,
			     i % 2);
		cr_expect_eq(split[1 - i % 2], 0, "message %zu split", i);
	}
	send_one(&f, 1024, false, split);
	cr_expect_eq(split[0] + split[1], 0, "an eager message on the rails");
	send_one(&f, 8 << 10, false, split);
	cr_expect_eq(split[0] + split[1], 0, "a segmented one on the rails");

	pf_fill(out, n * len, 31);
	rail_bytes(&f, 1, before);
	pf_post_tagged(&f, out, in, len, (int)n, 20);
	cr_assert(pf_drive_until(&f, 1, (int)n, 5000));
	cr_assert(pf_drive_until(&f, 0, (int)n, 5000));
	cr_expect_eq(f.s[0].n_err + f.s[1].n_err, 0);
	cr_expect(pf_check(in, n * len, 31), "the window's bytes");
	rail_bytes(&f, 1, after);
	cr_expect_eq(after[0] - before[0], n / 2 * len, "rail 0's share");
	cr_expect_eq(after[1] - before[1], n / 2 * len, "rail 1's share");
	free(out);
	free(in);
	pf_close(&f);
}

/* A message whose turn was rail 1 and whose READ fails there goes again
 * whole on rail 0 (its one piece is the failed one); the message before
 * it, whose turn was rail 0, is not read again. Both end once, intact. */
Test(rails_conn, a_failed_turn_goes_again_on_rail_0)
{
	const size_t len = 64 << 10;
	uint8_t *out = malloc(2 * len), *in = calloc(2, len);
	long posted;
	struct pf f;

	cr_assert(out && in);
	pf_fill(out, 2 * len, 33);
	open_two_rail_pair(&f);
	posted = pf_post_held_reads(&f, out, in, len, 2, 40);
	fake_verbs_port_down(1, true);
	fake_verbs_hold(IBV_WR_RDMA_READ, false);
	cr_assert(fake_verbs_step(), "the first message's READ, rail 0's");
	cr_assert_eq(
		fake_verbs_fail(IBV_WR_RDMA_READ, IBV_WC_RETRY_EXC_ERR, false),
		1, "the second's, rail 1's");
	pf_expect_delivered(&f, in, len, 2, 33);
	cr_expect_eq(fake_verbs_counts().rdma_bytes - posted, (long)len,
		     "the second read again, whole, and nothing more");
	cr_expect_not(conn_of(&f, 1)->rails->up);
	free(out);
	free(in);
	pf_close(&f);
}
