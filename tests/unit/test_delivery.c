/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sends with FI_DELIVERY_COMPLETE on the fake verbs device (issue 34): up
 * to FI_GDRFAB_EAGER_MAX they go eagerly with a delivery ACK
 * (GDRFAB_PKT_DELIVERY_ACK), up to FI_GDRFAB_SEG_MAX segmented with it,
 * beyond it by rendezvous, and either way the
 * send completes only on the receiver's FIN, sent once the data is in the
 * matched receive's buffer: expected, unexpected, truncated, into a
 * multi-receive buffer, through FI_PEEK|FI_CLAIM and FI_DISCARD, with the
 * connection lost or the send cancelled while it waits; the header never
 * goes as a repeat and leaves the repeat memo as it was at both ends.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "fake_verbs.h"
#include "gdrfab.h"
#include "gdrfab_conn.h"
#include "gdrfab_params.h"
#include "gdrfab_strerror.h"
#include "proto_fixture.h"

#define A 0
#define B 1

static struct pf f;

static void *ctx(int i)
{
	return (void *)(uintptr_t)(0xdc0000 + i);
}

/* A tagged send from A with FI_DELIVERY_COMPLETE (and more flags). */
static void send_dc(const void *buf, size_t len, uint64_t tag, int c,
		    uint64_t more)
{
	struct iovec iov = {(void *)buf, len};
	struct fi_msg_tagged m = {.msg_iov = &iov,
				  .iov_count = 1,
				  .addr = f.s[A].peer,
				  .tag = tag,
				  .context = ctx(c),
				  .data = 0xda7a};

	cr_assert_eq(fi_tsendmsg(f.s[A].ep, &m,
				 FI_DELIVERY_COMPLETE | FI_COMPLETION | more),
		     0);
}

static void recv_at_b(void *buf, size_t len, uint64_t tag, int c)
{
	cr_assert_eq(fi_trecv(f.s[B].ep, buf, len, NULL, f.s[B].peer, tag, 0,
			      ctx(c)),
		     0);
}

/* The sizes around the eager limit: one packet up to it, segmented
 * eager (gdrfab_seg.h) just past it; the last, past FI_GDRFAB_SEG_MAX,
 * goes by rendezvous. */
enum { DC_SIZES = 5 };
static size_t dc_len(int i)
{
	size_t e = gdrfab_params.eager_max;

	return (size_t[]){1, e - 1, e, e + 1, gdrfab_params.seg_max + 1}[i];
}

/* Message i of len bytes arrived whole at B (its completion k), nothing
 * written past it, and A's send k completed after it. */
static void check_delivered(const uint8_t *in, size_t len, unsigned seed, int k,
			    int rc, int sc)
{
	cr_assert_eq(f.s[B].n_ok, k + 1, "receive %d", k);
	cr_assert_eq(f.s[B].ok[k].op_context, ctx(rc));
	cr_assert_eq(f.s[B].ok[k].len, len);
	cr_assert(pf_check(in, len, seed), "%zu bytes delivered", len);
	cr_assert_eq(in[len], 0, "nothing past the message");
	cr_assert_eq(f.s[A].n_ok, k + 1, "send %d", k);
	cr_assert_eq(f.s[A].ok[k].op_context, ctx(sc));
	cr_assert_eq(f.s[A].ok[k].flags, FI_SEND | FI_TAGGED);
}

/* Expected: the receive is posted first. The message is carried, then
 * the wire holds every SEND (the receiver's FIN among them): the receive
 * completes and the send does not, until the FIN goes. No RDMA READ up to
 * the segmented eager limit; one beyond it. */
Test(proto, delivery_complete_expected_eager_up_to_the_limit, .timeout = 10)
{
	size_t max = dc_len(DC_SIZES - 1);
	uint8_t *out = malloc(max), *in = malloc(max + 64);

	pf_open(&f);
	pf_connect(&f);
	for (int i = 0; i < DC_SIZES; i++) {
		size_t len = dc_len(i);
		bool rndv = len > gdrfab_params.seg_max;

		pf_fill(out, len, 10 + (unsigned)i);
		memset(in, 0, max + 64);
		recv_at_b(in, len + 64, 0x500 + (uint64_t)i, 10 + i);
		fake_verbs_hold(IBV_WR_RDMA_READ, true);
		send_dc(out, len, 0x500 + (uint64_t)i, 20 + i, 0);
		fake_verbs_run(); /* the message (or RNDV) reaches B */
		fake_verbs_hold(IBV_WR_SEND, true);
		pf_drive(&f, 0);
		cr_assert_eq(fake_verbs_waiting(IBV_WR_RDMA_READ), rndv ? 1 : 0,
			     "%zu bytes: READs", len);
		fake_verbs_hold(IBV_WR_RDMA_READ, false);
		pf_drive(&f, 0);
		cr_assert_eq(f.s[B].n_ok, i + 1, "%zu bytes: received", len);
		cr_assert_eq(f.s[A].n_ok, i,
			     "%zu bytes: no send completion "
			     "before the FIN",
			     len);
		cr_assert_geq(fake_verbs_waiting(IBV_WR_SEND), 1, "the FIN");
		fake_verbs_hold(IBV_WR_SEND, false);
		cr_assert(pf_drive_until(&f, A, i + 1, 2000));
		check_delivered(in, len, 10 + (unsigned)i, i, 10 + i, 20 + i);
	}
	cr_assert_eq(f.s[A].n_err + f.s[B].n_err, 0);
	pf_close(&f);
	free(out);
	free(in);
}

/* Unexpected: the message waits at B with no receive; the send does not
 * complete until a receive takes it, and then only after it. */
Test(proto, delivery_complete_unexpected_completes_when_received, .timeout = 10)
{
	size_t max = dc_len(DC_SIZES - 1);
	uint8_t *out = malloc(max), *in = malloc(max + 64);

	pf_open(&f);
	pf_connect(&f);
	for (int i = 0; i < DC_SIZES; i++) {
		size_t len = dc_len(i);

		pf_fill(out, len, 30 + (unsigned)i);
		memset(in, 0, max + 64);
		send_dc(out, len, 0x600 + (uint64_t)i, 40 + i, 0);
		pf_drive(&f, 20);
		cr_assert_eq(f.s[A].n_ok + f.s[A].n_err, i,
			     "%zu bytes: no completion while unexpected", len);
		fake_verbs_hold(IBV_WR_RDMA_READ, true);
		fake_verbs_hold(IBV_WR_SEND, true);
		recv_at_b(in, len + 64, 0x600 + (uint64_t)i, 30 + i);
		pf_drive(&f, 0);
		if (len <= gdrfab_params.seg_max) {
			cr_assert_eq(fake_verbs_waiting(IBV_WR_RDMA_READ), 0,
				     "%zu bytes: no READ", len);
			cr_assert_eq(f.s[B].n_ok, i + 1, "delivered at once");
			cr_assert_eq(f.s[A].n_ok, i, "the FIN is held");
		} else {
			cr_assert_eq(fake_verbs_waiting(IBV_WR_RDMA_READ), 1);
		}
		fake_verbs_hold(IBV_WR_RDMA_READ, false);
		fake_verbs_hold(IBV_WR_SEND, false);
		cr_assert(pf_drive_until(&f, A, i + 1, 2000));
		check_delivered(in, len, 30 + (unsigned)i, i, 30 + i, 40 + i);
	}
	cr_assert_eq(f.s[A].n_err + f.s[B].n_err, 0);
	pf_close(&f);
	free(out);
	free(in);
}

/* A receive too small: FI_ETRUNC at B (the bytes that fit delivered)
 * and, carried by the FIN, at A; eager expected and unexpected, and a
 * rendezvous, whose FIN says so too for a delivery-complete send. */
Test(proto, delivery_complete_truncation_is_reported_on_both_sides,
     .timeout = 10)
{
	size_t big = dc_len(DC_SIZES - 1);
	uint8_t *out = malloc(big), in[3][48];

	pf_open(&f);
	pf_connect(&f);
	pf_fill(out, big, 50);
	memset(in, 0, sizeof(in));
	recv_at_b(in[0], 40, 0x700, 1);
	send_dc(out, 100, 0x700, 2, 0);
	send_dc(out, 100, 0x701, 4, 0);
	pf_drive(&f, 0);
	recv_at_b(in[1], 40, 0x701, 3);
	recv_at_b(in[2], 40, 0x702, 5);
	send_dc(out, big, 0x702, 6, 0);
	cr_assert(pf_drive_until(&f, A, 3, 2000));
	pf_drive(&f, 10);
	cr_assert_eq(f.s[B].n_ok + f.s[A].n_ok, 0);
	cr_assert_eq(f.s[B].n_err, 3);
	cr_assert_eq(f.s[A].n_err, 3, "one error a send, got %d", f.s[A].n_err);
	for (int k = 0; k < 3; k++) {
		cr_assert_eq(f.s[B].err[k].err, FI_ETRUNC);
		cr_assert_eq(f.s[B].err[k].op_context, ctx(1 + 2 * k));
		cr_assert_eq(f.s[B].err[k].olen, (k < 2 ? 100 : big) - 40);
		cr_assert(pf_check(in[k], 40, 50), "what fits is delivered");
		cr_assert_eq(in[k][40], 0);
		cr_assert_eq(f.s[A].err[k].err, FI_ETRUNC, "send %d", k);
		cr_assert_eq(f.s[A].err[k].prov_errno, GDRFAB_PERR_TRUNCATED);
		cr_assert_eq(f.s[A].err[k].op_context, ctx(2 + 2 * k));
	}
	pf_close(&f);
	free(out);
}

/* A delivery ACK's header is never a repeat, and leaves the memo as it
 * was at both ends: plain sends of tag 5 alternate with delivery ACKs of
 * tag 5 with CQ data; each plain one after the first repeats the first's
 * header (a rule that forgot or took the ACKs' headers would send them
 * whole), and B must not see the CQ data on them. */
Test(proto, a_delivery_ack_header_never_repeats_nor_replaces_the_memo,
     .timeout = 10)
{
	uint8_t out[5][64], in[5][64];

	pf_open(&f);
	pf_connect(&f);
	fake_verbs_hold(IBV_WR_SEND, true);
	fake_verbs_hold(IBV_WR_SEND_WITH_IMM, true);
	for (int i = 0; i < 5; i++) {
		pf_fill(out[i], sizeof(out[i]), 60 + (unsigned)i);
		if (i % 2)
			send_dc(out[i], sizeof(out[i]), 5, i,
				FI_REMOTE_CQ_DATA);
		else
			cr_assert_eq(fi_tsend(f.s[A].ep, out[i], sizeof(out[i]),
					      NULL, f.s[A].peer, 5, ctx(i)),
				     0);
	}
	cr_assert_eq(fake_verbs_waiting(IBV_WR_SEND), 3,
		     "the first and both delivery ACKs: full headers");
	cr_assert_eq(fake_verbs_waiting(IBV_WR_SEND_WITH_IMM), 2,
		     "the later plain ones repeat the first");
	for (int i = 0; i < 5; i++)
		recv_at_b(in[i], sizeof(in[i]), 5, 10 + i);
	fake_verbs_hold(IBV_WR_SEND, false);
	fake_verbs_hold(IBV_WR_SEND_WITH_IMM, false);
	cr_assert(pf_drive_until(&f, B, 5, 2000));
	cr_assert(pf_drive_until(&f, A, 5, 2000));
	cr_assert_eq(f.s[A].n_err + f.s[B].n_err, 0);
	for (int i = 0; i < 5; i++) {
		const struct fi_cq_tagged_entry *e = &f.s[B].ok[i];
		bool data = i % 2;

		cr_assert_eq(e->op_context, ctx(10 + i));
		cr_assert_eq(e->tag, 5);
		cr_assert_eq(!!(e->flags & FI_REMOTE_CQ_DATA), data,
			     "message %d's CQ data", i);
		if (data)
			cr_assert_eq(e->data, 0xda7a);
		cr_assert(pf_check(in[i], sizeof(in[i]), 60 + (unsigned)i));
	}
	pf_close(&f);
}

/* The rule itself (gdrfab_conn.h): noting a delivery ACK's header keeps
 * the memo, and such a header never repeats, not even without msg_id. */
Test(proto, the_memo_rule_for_delivery_acks)
{
	struct gdrfab_memo m = {.valid = false};
	struct gdrfab_pkt_hdr h = {.version = GDRFAB_WIRE_VERSION,
				   .type = GDRFAB_PKT_EAGER,
				   .flags = GDRFAB_PKT_TAGGED,
				   .tag = 42};

	gdrfab_memo_note(&m, &h);
	h.flags = GDRFAB_PKT_TAGGED | GDRFAB_PKT_DELIVERY_ACK;
	h.tag = 43;
	h.msg_id = 9;
	gdrfab_memo_note(&m, &h);
	cr_assert(m.valid);
	cr_assert_eq(m.tag, 42);
	cr_assert_eq(m.flags, GDRFAB_PKT_TAGGED);
	cr_assert_not(gdrfab_memo_repeats(&m, &h));
	h.tag = 42;
	h.msg_id = 0;
	cr_assert_not(gdrfab_memo_repeats(&m, &h));
	h.flags = GDRFAB_PKT_TAGGED;
	cr_assert(gdrfab_memo_repeats(&m, &h));
}

/* FI_PEEK|FI_CLAIM takes an unexpected one (the send completes when the
 * claiming receive has it), FI_DISCARD drops one (and completes its send:
 * the receiver took it as it chose). */
Test(proto, delivery_complete_through_peek_claim_and_discard, .timeout = 10)
{
	uint8_t out[2][32], in[32] = {0};
	struct fi_context pctx, dctx;
	struct fi_msg_tagged m = {0};

	pf_open(&f);
	pf_connect(&f);
	for (int i = 0; i < 2; i++) {
		pf_fill(out[i], sizeof(out[i]), 70 + (unsigned)i);
		send_dc(out[i], sizeof(out[i]), 0x800 + (uint64_t)i, i, 0);
	}
	pf_drive(&f, 10);
	cr_assert_eq(f.s[A].n_ok + f.s[A].n_err, 0);
	m.addr = f.s[B].peer;
	m.tag = 0x800;
	m.context = &pctx;
	cr_assert_eq(fi_trecvmsg(f.s[B].ep, &m, FI_PEEK | FI_CLAIM), 0);
	pf_drive(&f, 0);
	cr_assert_eq(f.s[B].n_ok, 1, "peeked");
	cr_assert_eq(f.s[A].n_ok, 0, "a peek delivers nothing");
	m.msg_iov = &(struct iovec){in, sizeof(in)};
	m.iov_count = 1;
	cr_assert_eq(fi_trecvmsg(f.s[B].ep, &m, FI_CLAIM), 0);
	cr_assert(pf_drive_until(&f, A, 1, 2000));
	cr_assert_eq(f.s[B].n_ok, 2);
	cr_assert(pf_check(in, sizeof(in), 70));
	cr_assert_eq(f.s[A].ok[0].op_context, ctx(0));
	m.msg_iov = NULL;
	m.iov_count = 0;
	m.tag = 0x801;
	m.context = &dctx;
	cr_assert_eq(fi_trecvmsg(f.s[B].ep, &m, FI_PEEK | FI_DISCARD), 0);
	cr_assert(pf_drive_until(&f, A, 2, 2000));
	cr_assert_eq(f.s[A].ok[1].op_context, ctx(1));
	cr_assert_eq(f.s[A].n_err + f.s[B].n_err, 0);
	pf_close(&f);
}

/* The connection lost while the send waits for its FIN (the FIN itself
 * never arrives): the send ends once, in error; the receive had its
 * data. */
Test(proto, delivery_complete_fails_once_when_the_peer_is_lost, .timeout = 10)
{
	int saved = gdrfab_params.peer_timeout_ms;
	uint8_t out[64], in[64];

	gdrfab_params.peer_timeout_ms = 50;
	pf_open(&f);
	pf_connect(&f);
	pf_fill(out, sizeof(out), 80);
	recv_at_b(in, sizeof(in), 0x900, 1);
	send_dc(out, sizeof(out), 0x900, 2, 0);
	fake_verbs_run();
	fake_verbs_hold(IBV_WR_SEND, true);
	pf_drive(&f, 0);
	cr_assert_eq(f.s[B].n_ok, 1, "delivered");
	cr_assert_eq(f.s[A].n_ok, 0);
	cr_assert_eq(fake_verbs_fail(IBV_WR_SEND, IBV_WC_RETRY_EXC_ERR, true),
		     1, "the FIN, lost with the link");
	fake_verbs_hold(IBV_WR_SEND, false);
	cr_assert(pf_drive_until(&f, A, 1, 2000), "the send ends");
	pf_drive(&f, 100);
	cr_assert_eq(f.s[A].n_ok, 0);
	cr_assert_eq(f.s[A].n_err, 1, "one error, got %d", f.s[A].n_err);
	cr_assert_eq(f.s[A].err[0].op_context, ctx(2));
	cr_assert_neq(f.s[A].err[0].err, 0);
	cr_assert(pf_check(in, sizeof(in), 80));
	pf_close(&f);
	gdrfab_params.peer_timeout_ms = saved;
}

/* fi_cancel of a send waiting for its delivery ACK ends it once, with
 * FI_ECANCELED; the FIN that comes once a receive takes the message is
 * dropped, and a second cancel finds nothing. */
Test(proto, delivery_complete_send_cancelled_while_it_waits, .timeout = 10)
{
	uint8_t out[64], in[64];

	pf_open(&f);
	pf_connect(&f);
	pf_fill(out, sizeof(out), 90);
	send_dc(out, sizeof(out), 0xa00, 1, 0);
	pf_drive(&f, 10);
	cr_assert_eq(f.s[A].n_ok + f.s[A].n_err, 0, "waits for the FIN");
	cr_assert_eq(fi_cancel(&f.s[A].ep->fid, ctx(1)), 0);
	pf_drive(&f, 0);
	cr_assert_eq(f.s[A].n_err, 1);
	cr_assert_eq(f.s[A].err[0].err, FI_ECANCELED);
	cr_assert_eq(f.s[A].err[0].op_context, ctx(1));
	cr_assert_eq(fi_cancel(&f.s[A].ep->fid, ctx(1)), -FI_ENOENT);
	recv_at_b(in, sizeof(in), 0xa00, 2);
	pf_drive(&f, 20);
	cr_assert_eq(f.s[B].n_ok, 1, "the message was out: it is delivered");
	cr_assert(pf_check(in, sizeof(in), 90));
	cr_assert_eq(f.s[A].n_ok + f.s[A].n_err, 1, "nothing more at A");
	pf_close(&f);
}

/* A multi-receive buffer takes several messages with delivery ACKs, and
 * is released after the third (less than FI_OPT_MIN_MULTI_RECV left);
 * each send completes once its message is in the buffer. */
Test(proto, delivery_complete_into_a_multi_receive_buffer, .timeout = 10)
{
	uint8_t out[3][100], buf[350] = {0};
	struct fi_msg m = {.msg_iov = &(struct iovec){buf, sizeof(buf)},
			   .iov_count = 1,
			   .context = ctx(9)};

	pf_open(&f);
	pf_connect(&f);
	m.addr = f.s[B].peer;
	cr_assert_eq(fi_setopt(&f.s[B].ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_MIN_MULTI_RECV, &(size_t){100},
			       sizeof(size_t)),
		     0);
	cr_assert_eq(fi_recvmsg(f.s[B].ep, &m, FI_MULTI_RECV), 0);
	for (int i = 0; i < 3; i++) {
		struct iovec iov = {out[i], sizeof(out[i])};
		struct fi_msg s = {.msg_iov = &iov,
				   .iov_count = 1,
				   .addr = f.s[A].peer,
				   .context = ctx(i)};

		pf_fill(out[i], sizeof(out[i]), 100 + (unsigned)i);
		cr_assert_eq(fi_sendmsg(f.s[A].ep, &s,
					FI_DELIVERY_COMPLETE | FI_COMPLETION),
			     0);
	}
	cr_assert(pf_drive_until(&f, A, 3, 2000));
	cr_assert(pf_drive_until(&f, B, 3, 2000));
	cr_assert_eq(f.s[A].n_err + f.s[B].n_err, 0);
	cr_assert_eq(f.s[A].n_ok, 3);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(f.s[B].ok[i].len, 100);
		cr_assert_eq(f.s[B].ok[i].buf, buf + 100 * i);
		cr_assert(pf_check(buf + 100 * i, 100, 100 + (unsigned)i));
	}
	cr_assert(f.s[B].ok[2].flags & FI_MULTI_RECV, "released at the last");
	pf_close(&f);
}
