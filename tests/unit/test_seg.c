/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Segmented eager messages (gdrfab_seg.h, issue 34) on the fake verbs
 * device: a message of eager_max < len <= seg_max goes as a GDRFAB_PKT_SEG
 * packet and continuations (SEND with GDRFAB_IMM_SEG), no RDMA READ, and
 * arrives whole, byte for byte, at the sizes around both limits (the one
 * past seg_max by rendezvous), expected and unexpected, truncated into a
 * small receive, back to back and queued behind a full send queue; seg
 * off (FI_GDRFAB_SEG_MAX=0) and mixed settings between the two endpoints
 * (the pair uses the smaller); a peer that breaks the rule (a continuation
 * with no message, a message past the pair's limit, a continuation past
 * the announced size, another message inside one) fails its connection
 * and delivers nothing. The reassembly and the limit's encoding are also
 * checked on their own.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "fake_verbs.h"
#include "gdrfab.h"
#include "gdrfab_conn.h"
#include "gdrfab_mr_desc.h"
#include "gdrfab_objs.h"
#include "gdrfab_params.h"
#include "gdrfab_proto.h"
#include "gdrfab_seg.h"
#include "gdrfab_verbs_ops.h"
#include "proto_fixture.h"

#define A 0
#define B 1

static struct pf f;

/* The sizes below are chosen against a limit of 64 KiB (eight pieces of
 * the default 8 KiB eager limit), whatever FI_GDRFAB_SEG_MAX defaults
 * to. */
static void seg_64k(void)
{
	gdrfab_params.seg_max = 64 << 10;
}

TestSuite(seg, .init = seg_64k);

static void *ctx(int i)
{
	return (void *)(uintptr_t)(0x5e6000 + i);
}

static struct gdrfab_proto *proto_of(int i)
{
	return gdrfab_container_of(f.s[i].ep, struct gdrfab_ep, fid)->proto;
}

/* Side i's connection to the other side (its only one). */
static struct gdrfab_conn *conn_of(int i)
{
	struct gdrfab_proto *proto = proto_of(i);

	cr_assert(!gdrfab_list_empty(&proto->conns), "side %d: no connection",
		  i);
	return gdrfab_list_entry(proto->conns.next, struct gdrfab_conn, entry);
}

static size_t eager(void)
{
	return gdrfab_params.eager_max;
}

/* The sizes around both limits, and a few odd ones between. */
enum { SIZES = 10 };
static size_t seg_len(int i)
{
	size_t e = eager(), s = gdrfab_params.seg_max;

	return (size_t[]){e,	     e + 1,	2 * e - 1, 2 * e, 2 * e + 1,
			  3 * e + 7, 5 * e + 3, s - 1,	   s,	  s + 1}[i];
}

/* Continuations of a segmented message of len bytes. */
static int continuations(size_t len)
{
	return (int)((len - 1) / eager());
}

static bool is_seg(size_t len)
{
	return len > eager() && len <= gdrfab_params.seg_max;
}

static void tsend(int side, const void *buf, size_t len, uint64_t tag, int c)
{
	cr_assert_eq(fi_tsend(f.s[side].ep, buf, len, NULL, f.s[side].peer, tag,
			      ctx(c)),
		     0, "send of %zu bytes", len);
}

static void trecv(int side, void *buf, size_t len, uint64_t tag, int c)
{
	cr_assert_eq(fi_trecv(f.s[side].ep, buf, len, NULL, f.s[side].peer, tag,
			      0, ctx(c)),
		     0);
}

/* Receive k at side rx got len bytes of seed for context c, and nothing
 * was written past them. */
static void check_rx(int rx, int k, const uint8_t *in, size_t len,
		     unsigned seed, int c)
{
	cr_assert_eq(f.s[rx].ok[k].op_context, ctx(c), "receive %d", k);
	cr_assert_eq(f.s[rx].ok[k].len, len, "receive %d", k);
	cr_assert(pf_check(in, len, seed), "%zu bytes delivered", len);
	cr_assert_eq(in[len], 0, "nothing past the message of %zu", len);
}

/* The index of side's completion for context c (they may come in
 * another order than posted: a rendezvous's after the messages behind
 * it). */
static int ok_of(int side, int c)
{
	for (int k = 0; k < f.s[side].n_ok; k++) {
		if (f.s[side].ok[k].op_context == ctx(c))
			return k;
	}
	cr_assert_fail("side %d: no completion for context %d", side, c);
	return -1;
}

/* Expected: the receive is posted first. While the continuations are
 * held on the wire the receiver holds the first packet in reassembly and
 * completes nothing; once they go the message is whole. No READ up to
 * seg_max, one past it. */
Test(seg, sizes_around_both_limits_expected, .timeout = 20)
{
	size_t max = seg_len(SIZES - 1);
	uint8_t *out = malloc(max), *in = malloc(max + 64);
	uint64_t rx0, tx0;

	pf_open(&f);
	pf_connect(&f);
	cr_assert_eq(conn_of(A)->seg_max, gdrfab_params.seg_max);
	cr_assert_eq(conn_of(B)->seg_max, gdrfab_params.seg_max);
	for (int i = 0; i < SIZES; i++) {
		size_t len = seg_len(i);
		bool seg = is_seg(len);

		rx0 = proto_of(B)->seg_rx_msgs;
		tx0 = proto_of(A)->seg_tx_msgs;
		pf_fill(out, len, 10 + (unsigned)i);
		memset(in, 0, max + 64);
		trecv(B, in, len + 64, 0x100 + (uint64_t)i, i);
		fake_verbs_hold(IBV_WR_SEND_WITH_IMM, true);
		fake_verbs_hold(IBV_WR_RDMA_READ, true);
		tsend(A, out, len, 0x100 + (uint64_t)i, 100 + i);
		pf_drive(&f, 0);
		cr_assert_eq(fake_verbs_waiting(IBV_WR_SEND_WITH_IMM),
			     seg ? continuations(len) : 0, "%zu bytes", len);
		cr_assert_eq(fake_verbs_waiting(IBV_WR_RDMA_READ),
			     len > gdrfab_params.seg_max, "%zu bytes", len);
		cr_assert_eq(gdrfab_seg_rx_busy(&conn_of(B)->seg_rx), seg);
		cr_assert_eq(conn_of(B)->seg_rx.recv != NULL, seg,
			     "%zu bytes: filled in place", len);
		cr_assert_null(conn_of(B)->seg_rx.buf, "no copy of its own");
		if (len > eager())
			cr_assert_eq(f.s[B].n_ok, i, "%zu bytes: not yet", len);
		fake_verbs_hold(IBV_WR_SEND_WITH_IMM, false);
		fake_verbs_hold(IBV_WR_RDMA_READ, false);
		cr_assert(pf_drive_until(&f, B, i + 1, 2000));
		cr_assert(pf_drive_until(&f, A, i + 1, 2000));
		check_rx(B, i, in, len, 10 + (unsigned)i, i);
		cr_assert_eq(f.s[A].ok[i].op_context, ctx(100 + i));
		cr_assert_eq(proto_of(B)->seg_rx_msgs - rx0, seg);
		cr_assert_eq(proto_of(A)->seg_tx_msgs - tx0, seg);
		cr_assert(!gdrfab_seg_rx_busy(&conn_of(B)->seg_rx));
	}
	cr_assert_eq(f.s[A].n_err + f.s[B].n_err, 0);
	pf_close(&f);
	free(out);
	free(in);
}

/* Unexpected: the whole message waits (reassembly over, no completion),
 * then a receive takes it; FI_PEEK sees its full size first. */
Test(seg, sizes_around_both_limits_unexpected, .timeout = 20)
{
	size_t max = seg_len(SIZES - 1);
	uint8_t *out = malloc(max), *in = malloc(max + 64);

	pf_open(&f);
	pf_connect(&f);
	for (int i = 0; i < SIZES; i++) {
		size_t len = seg_len(i);
		struct fi_msg_tagged peek = {.tag = 0x200 + (uint64_t)i,
					     .addr = f.s[B].peer,
					     .context = ctx(50 + i)};
		int k = 2 * i;

		pf_fill(out, len, 30 + (unsigned)i);
		memset(in, 0, max + 64);
		tsend(A, out, len, 0x200 + (uint64_t)i, 100 + i);
		pf_drive(&f, 20);
		cr_assert_eq(f.s[B].n_ok + f.s[B].n_err, k, "%zu bytes", len);
		cr_assert(!gdrfab_seg_rx_busy(&conn_of(B)->seg_rx));
		cr_assert_eq(fi_trecvmsg(f.s[B].ep, &peek, FI_PEEK), 0);
		cr_assert(pf_drive_until(&f, B, k + 1, 2000));
		cr_assert_eq(f.s[B].ok[k].len, len, "peek sees the whole size");
		trecv(B, in, len + 64, 0x200 + (uint64_t)i, i);
		cr_assert(pf_drive_until(&f, B, k + 2, 2000));
		cr_assert(pf_drive_until(&f, A, i + 1, 2000));
		check_rx(B, k + 1, in, len, 30 + (unsigned)i, i);
	}
	cr_assert_eq(f.s[A].n_err + f.s[B].n_err, 0);
	pf_close(&f);
	free(out);
	free(in);
}

/* Where the first packet finds no receive to fill in place, the message
 * is put together on its own and matched when whole: a receive posted
 * while it arrives, and a multi-receive buffer (which later messages may
 * take space from), get it then, intact. */
Test(seg, received_whole_when_no_receive_took_the_first_packet, .timeout = 10)
{
	size_t len = 4 * eager() + 11;
	uint8_t *out = malloc(len), *in = calloc(1, len + 64);
	uint8_t *multi = calloc(1, 2 * len + 64);
	struct iovec iov = {multi, 2 * len + 64};
	struct fi_msg m = {.msg_iov = &iov,
			   .iov_count = 1,
			   .addr = FI_ADDR_UNSPEC,
			   .context = ctx(7)};

	pf_open(&f);
	pf_connect(&f);
	pf_fill(out, len, 41);
	fake_verbs_hold(IBV_WR_SEND_WITH_IMM, true);
	tsend(A, out, len, 0xc00, 1);
	pf_drive(&f, 0);
	cr_assert(gdrfab_seg_rx_busy(&conn_of(B)->seg_rx));
	cr_assert_null(conn_of(B)->seg_rx.recv);
	trecv(B, in, len + 64, 0xc00, 2);
	fake_verbs_hold(IBV_WR_SEND_WITH_IMM, false);
	cr_assert(pf_drive_until(&f, B, 1, 2000));
	check_rx(B, 0, in, len, 41, 2);

	/* Untagged, into a multi-receive buffer: two messages. */
	cr_assert_eq(fi_recvmsg(f.s[B].ep, &m, FI_MULTI_RECV), 0);
	for (int i = 0; i < 2; i++) {
		pf_fill(out, len, 42 + (unsigned)i);
		cr_assert_eq(fi_send(f.s[A].ep, out, len, NULL, f.s[A].peer,
				     ctx(3 + i)),
			     0);
		cr_assert(pf_drive_until(&f, B, 2 + i, 2000));
		cr_assert_eq(f.s[B].ok[1 + i].len, len);
		cr_assert_eq(f.s[B].ok[1 + i].buf, multi + (size_t)i * len);
		cr_assert(pf_check(multi + (size_t)i * len, len,
				   42 + (unsigned)i));
	}
	cr_assert(pf_drive_until(&f, A, 3, 2000));
	cr_assert_eq(f.s[A].n_err + f.s[B].n_err, 0);
	pf_close(&f);
	free(out);
	free(in);
	free(multi);
}

/* Side i's connections with a segmented message under way. */
static int busy_conns(int i)
{
	struct gdrfab_list *it;
	int n = 0;

	for (it = proto_of(i)->conns.next; it != &proto_of(i)->conns;
	     it = it->next)
		n += gdrfab_seg_rx_busy(
			&gdrfab_list_entry(it, struct gdrfab_conn, entry)
				 ->seg_rx);
	return n;
}

/* Two connections into one endpoint, their pieces interleaved: A's
 * connection to itself and B's to A each put their own message together
 * (conn->seg_rx is per connection), into posted receives and as
 * unexpected messages alike. */
Test(seg, two_peers_interleaved_into_one_endpoint, .timeout = 10)
{
	size_t len = 3 * eager() + 1;
	uint8_t *out[2], *in[2];

	pf_open(&f);
	pf_connect(&f);
	for (int k = 0; k < 2; k++) {
		out[k] = malloc(len);
		in[k] = calloc(1, len + 64);
		pf_fill(out[k], len, 20 + (unsigned)k);
	}
	for (int round = 0; round < 2; round++) {
		bool unexpected = round;
		int a0 = f.s[A].n_ok;

		memset(in[0], 0, len + 64);
		memset(in[1], 0, len + 64);
		for (int k = 0; k < 2 && !unexpected; k++)
			cr_assert_eq(fi_trecv(f.s[A].ep, in[k], len + 64, NULL,
					      FI_ADDR_UNSPEC,
					      0xd00 + (uint64_t)k, 0,
					      ctx(30 + k)),
				     0);
		fake_verbs_hold(IBV_WR_SEND_WITH_IMM, true);
		cr_assert_eq(fi_tsend(f.s[A].ep, out[0], len, NULL, f.s[A].self,
				      0xd00, ctx(40)),
			     0);
		tsend(B, out[1], len, 0xd01, 41);
		pf_drive(&f, 0);
		cr_assert_eq(busy_conns(A), 2, "both messages under way");
		fake_verbs_hold(IBV_WR_SEND_WITH_IMM, false);
		pf_drive(&f, 0);
		for (int k = 0; k < 2 && unexpected; k++)
			cr_assert_eq(fi_trecv(f.s[A].ep, in[k], len + 64, NULL,
					      FI_ADDR_UNSPEC,
					      0xd00 + (uint64_t)k, 0,
					      ctx(30 + k)),
				     0);
		/* A's receives, and its own send to itself. */
		cr_assert(pf_drive_until(&f, A, a0 + 3, 2000), "round %d",
			  round);
		for (int k = 0; k < 2; k++) {
			check_rx(A, ok_of(A, 30 + k), in[k], len,
				 20 + (unsigned)k, 30 + k);
			f.s[A].ok[ok_of(A, 30 + k)].op_context = NULL;
		}
		f.s[A].ok[ok_of(A, 40)].op_context = NULL;
	}
	cr_assert_eq(f.s[A].n_err + f.s[B].n_err, 0);
	pf_close(&f);
	for (int k = 0; k < 2; k++) {
		free(out[k]);
		free(in[k]);
	}
}

/* FI_CLAIM then FI_DISCARD of whole segmented messages, as of eager
 * ones: the claimed one is delivered, the discarded one never is. */
Test(seg, peek_claim_and_discard, .timeout = 10)
{
	size_t len = 3 * eager() + 7;
	uint8_t *out = malloc(len), *in = calloc(1, len + 64);
	struct fi_context claim_ctx;
	struct fi_msg_tagged m = {
		.tag = 0x300, .addr = f.s[B].peer, .context = &claim_ctx};
	struct iovec iov = {in, len + 64};

	pf_open(&f);
	pf_connect(&f);
	m.addr = f.s[B].peer;
	pf_fill(out, len, 70);
	tsend(A, out, len, 0x300, 1);
	tsend(A, out, len, 0x301, 2);
	cr_assert(pf_drive_until(&f, A, 2, 2000));
	cr_assert_eq(fi_trecvmsg(f.s[B].ep, &m, FI_PEEK | FI_CLAIM), 0);
	cr_assert(pf_drive_until(&f, B, 1, 2000));
	m.msg_iov = &iov;
	m.iov_count = 1;
	cr_assert_eq(fi_trecvmsg(f.s[B].ep, &m, FI_CLAIM), 0);
	cr_assert(pf_drive_until(&f, B, 2, 2000));
	cr_assert_eq(f.s[B].ok[1].len, len);
	cr_assert(pf_check(in, len, 70));
	m.tag = 0x301;
	m.msg_iov = NULL;
	m.iov_count = 0;
	m.context = ctx(9);
	cr_assert_eq(fi_trecvmsg(f.s[B].ep, &m, FI_PEEK | FI_DISCARD), 0);
	cr_assert(pf_drive_until(&f, B, 3, 2000));
	cr_assert(gdrfab_list_empty(&proto_of(B)->unexp_tag), "discarded");
	cr_assert_eq(f.s[A].n_err + f.s[B].n_err, 0);
	pf_close(&f);
	free(out);
	free(in);
}

/* A receive smaller than the message: FI_ETRUNC with the bytes that fit,
 * nothing past them, expected and unexpected. */
Test(seg, truncation_expected_and_unexpected, .timeout = 10)
{
	size_t len = 3 * eager() + 5, room = eager() + 100;
	uint8_t *out = malloc(len), *in[2];

	pf_open(&f);
	pf_connect(&f);
	pf_fill(out, len, 80);
	for (int k = 0; k < 2; k++) {
		in[k] = calloc(1, room + 64);
		if (!k)
			trecv(B, in[k], room, 0x400, k);
		tsend(A, out, len, 0x400, 10 + k);
		pf_drive(&f, 0);
		if (k)
			trecv(B, in[k], room, 0x400, k);
		cr_assert(pf_drive_until(&f, B, k + 1, 2000));
		cr_assert_eq(f.s[B].n_err, k + 1);
		cr_assert_eq(f.s[B].err[k].err, FI_ETRUNC);
		cr_assert_eq(f.s[B].err[k].len, room);
		cr_assert_eq(f.s[B].err[k].olen, len - room);
		cr_assert(pf_check(in[k], room, 80));
		cr_assert_eq(in[k][room], 0);
		free(in[k]);
	}
	cr_assert(pf_drive_until(&f, A, 2, 2000));
	cr_assert_eq(f.s[A].n_err, 0, "the sends complete normally");
	pf_close(&f);
	free(out);
}

/* Messages back to back on one connection, with a send queue of 8
 * slots held full: the segmented ones post as slots come back, nothing
 * overtakes them, and eager, segmented and rendezvous messages all
 * arrive whole and in the order sent, to receives posted before and
 * after. */
Test(seg, many_queued_past_a_full_send_queue_arrive_in_order, .timeout = 20)
{
	enum { N = 12 };
	size_t saved = gdrfab_params.tx_size;
	size_t len[N];
	uint8_t *out[N], *in[N];

	gdrfab_params.tx_size = 8;
	pf_open(&f);
	pf_connect(&f);
	for (int i = 0; i < N; i++) {
		len[i] = (size_t[]){100, 5 * eager() + 3, eager() + 1,
				    gdrfab_params.seg_max + 1}[i % 4];
		out[i] = malloc(len[i]);
		in[i] = calloc(1, len[i] + 64);
		pf_fill(out[i], len[i], 90 + (unsigned)i);
	}
	for (int i = 0; i < N / 2; i++)
		trecv(B, in[i], len[i] + 64, 0x500, i);
	fake_verbs_hold(IBV_WR_SEND, true);
	for (int i = 0; i < N; i++)
		tsend(A, out[i], len[i], 0x500, 100 + i);
	cr_assert_leq(fake_verbs_waiting(IBV_WR_SEND) +
			      fake_verbs_waiting(IBV_WR_SEND_WITH_IMM),
		      8, "no more than the send queue's slots");
	fake_verbs_hold(IBV_WR_SEND, false);
	pf_drive(&f, 0);
	for (int i = N / 2; i < N; i++)
		trecv(B, in[i], len[i] + 64, 0x500, i);
	cr_assert(pf_drive_until(&f, B, N, 5000), "all delivered");
	cr_assert(pf_drive_until(&f, A, N, 5000), "all sent");
	cr_assert_eq(f.s[A].n_err + f.s[B].n_err, 0);
	for (int i = 0; i < N; i++) {
		check_rx(B, ok_of(B, i), in[i], len[i], 90 + (unsigned)i, i);
		free(out[i]);
		free(in[i]);
	}
	pf_close(&f);
	gdrfab_params.tx_size = saved;
}

/* FI_GDRFAB_SEG_MAX=0: past eager_max everything goes by rendezvous, and
 * the connection agrees on no segments. */
Test(seg, off_when_seg_max_is_0, .timeout = 10)
{
	size_t saved = gdrfab_params.seg_max, len = eager() + 1;
	uint8_t *out = malloc(len), *in = calloc(1, len + 64);

	gdrfab_params.seg_max = 0;
	pf_open(&f);
	pf_connect(&f);
	cr_assert_eq(conn_of(A)->seg_max, 0);
	cr_assert_eq(conn_of(B)->seg_max, 0);
	pf_fill(out, len, 3);
	trecv(B, in, len + 64, 0x600, 0);
	fake_verbs_hold(IBV_WR_RDMA_READ, true);
	tsend(A, out, len, 0x600, 1);
	pf_drive(&f, 0);
	cr_assert_eq(fake_verbs_waiting(IBV_WR_RDMA_READ), 1, "rendezvous");
	fake_verbs_hold(IBV_WR_RDMA_READ, false);
	cr_assert(pf_drive_until(&f, B, 1, 2000));
	check_rx(B, 0, in, len, 3, 0);
	cr_assert_eq(proto_of(A)->seg_tx_msgs, 0);
	pf_close(&f);
	gdrfab_params.seg_max = saved;
	free(out);
	free(in);
}

/* Sends len bytes from side tx to the other and says whether it went by
 * rendezvous (an RDMA READ), checking the bytes. */
static bool went_rndv(int tx, size_t len, unsigned seed)
{
	int rx = !tx, k = f.s[rx].n_ok, sent = f.s[tx].n_ok;
	uint8_t *out = malloc(len), *in = calloc(1, len + 64);
	int reads;

	pf_fill(out, len, seed);
	trecv(rx, in, len + 64, 0x700 + seed, k);
	fake_verbs_hold(IBV_WR_RDMA_READ, true);
	tsend(tx, out, len, 0x700 + seed, 200 + k);
	pf_drive(&f, 0);
	reads = fake_verbs_waiting(IBV_WR_RDMA_READ);
	fake_verbs_hold(IBV_WR_RDMA_READ, false);
	cr_assert(pf_drive_until(&f, rx, k + 1, 2000));
	cr_assert(pf_drive_until(&f, tx, sent + 1, 2000));
	check_rx(rx, k, in, len, seed, k);
	free(out);
	free(in);
	return reads > 0;
}

/* Mixed settings: each side announces its own limit and both use the
 * smaller, whichever way a message goes; a side with segments off turns
 * them off for the pair. Everything still arrives. */
Test(seg, mixed_settings_use_the_smaller_limit, .timeout = 20)
{
	size_t small = 16 << 10;

	pf_open(&f);
	proto_of(B)->seg_max = small;
	pf_connect(&f);
	cr_assert_eq(conn_of(A)->seg_max, small);
	cr_assert_eq(conn_of(B)->seg_max, small);
	cr_assert(!went_rndv(A, small, 1));
	cr_assert(went_rndv(A, small + 1, 2));
	cr_assert(!went_rndv(B, small, 3));
	cr_assert(went_rndv(B, gdrfab_params.seg_max, 4));
	cr_assert_eq(f.s[A].n_err + f.s[B].n_err, 0);
	pf_close(&f);

	pf_open(&f);
	proto_of(A)->seg_max = 0;
	pf_connect(&f);
	cr_assert_eq(conn_of(A)->seg_max, 0);
	cr_assert_eq(conn_of(B)->seg_max, 0);
	cr_assert(went_rndv(A, eager() + 1, 5));
	cr_assert(went_rndv(B, eager() + 1, 6));
	cr_assert_eq(f.s[A].n_err + f.s[B].n_err, 0);
	pf_close(&f);
}

/* The link lost while a segmented message is on the wire: its send
 * ends once, in error, whether all its pieces were posted (8 send slots)
 * or some still waited for a slot (4); nothing is delivered, and the
 * receiver's part of it is freed with its connection (pf_close). */
static void link_lost_mid_message(size_t slots)
{
	size_t saved = gdrfab_params.tx_size, len = 5 * eager() + 3;
	uint8_t *out = malloc(len), *in = calloc(1, len + 64);

	gdrfab_params.tx_size = slots;
	pf_open(&f);
	pf_connect(&f);
	pf_fill(out, len, 60);
	trecv(B, in, len + 64, 0x900, 0);
	fake_verbs_hold(IBV_WR_SEND_WITH_IMM, true);
	tsend(A, out, len, 0x900, 1);
	pf_drive(&f, 0);
	cr_assert(gdrfab_seg_rx_busy(&conn_of(B)->seg_rx), "the first piece");
	cr_assert_geq(fake_verbs_fail(IBV_WR_SEND_WITH_IMM,
				      IBV_WC_RETRY_EXC_ERR, true),
		      1);
	fake_verbs_hold(IBV_WR_SEND_WITH_IMM, false);
	cr_assert(pf_drive_until(&f, A, 1, 2000), "the send ends");
	pf_drive(&f, 50);
	cr_assert_eq(f.s[A].n_ok, 0);
	cr_assert_eq(f.s[A].n_err, 1, "one error, got %d", f.s[A].n_err);
	cr_assert_eq(f.s[A].err[0].op_context, ctx(1));
	cr_assert_eq(f.s[B].n_ok, 0, "nothing delivered");
	pf_close(&f);
	gdrfab_params.tx_size = saved;
	free(out);
	free(in);
}

Test(seg, link_lost_with_every_piece_posted, .timeout = 10)
{
	link_lost_mid_message(8);
}

Test(seg, link_lost_with_pieces_waiting_for_slots, .timeout = 10)
{
	link_lost_mid_message(4);
}

/* A send with FI_DELIVERY_COMPLETE, segmented: it completes on the
 * receiver's FIN only; FI_ETRUNC reaches both sides; fi_cancel ends one
 * that waits, once, and the message is still delivered. */
static void send_dc(const void *buf, size_t len, uint64_t tag, int c)
{
	struct iovec iov = {(void *)buf, len};
	struct fi_msg_tagged m = {.msg_iov = &iov,
				  .iov_count = 1,
				  .addr = f.s[A].peer,
				  .tag = tag,
				  .context = ctx(c)};

	cr_assert_eq(fi_tsendmsg(f.s[A].ep, &m,
				 FI_DELIVERY_COMPLETE | FI_COMPLETION),
		     0);
}

Test(seg, delivery_complete_truncated_and_cancelled, .timeout = 10)
{
	size_t len = 3 * eager() + 9, room = 2 * eager();
	uint8_t *out = malloc(len), *in = calloc(1, len + 64);

	pf_open(&f);
	pf_connect(&f);
	pf_fill(out, len, 66);
	send_dc(out, len, 0xb00, 1);
	pf_drive(&f, 10);
	cr_assert_eq(f.s[A].n_ok + f.s[A].n_err, 0, "waits for the FIN");
	trecv(B, in, room, 0xb00, 2);
	cr_assert(pf_drive_until(&f, A, 1, 2000));
	cr_assert_eq(f.s[B].n_err, 1);
	cr_assert_eq(f.s[B].err[0].err, FI_ETRUNC);
	cr_assert_eq(f.s[A].n_err, 1);
	cr_assert_eq(f.s[A].err[0].err, FI_ETRUNC, "carried by the FIN");
	cr_assert(pf_check(in, room, 66));
	cr_assert_eq(in[room], 0);

	memset(in, 0, len + 64);
	send_dc(out, len, 0xb01, 3);
	pf_drive(&f, 10);
	cr_assert_eq(fi_cancel(&f.s[A].ep->fid, ctx(3)), 0);
	pf_drive(&f, 0);
	cr_assert_eq(f.s[A].n_err, 2);
	cr_assert_eq(f.s[A].err[1].err, FI_ECANCELED);
	trecv(B, in, len + 64, 0xb01, 4);
	pf_drive(&f, 20);
	cr_assert_eq(f.s[B].n_ok, 1, "the message was out: it is delivered");
	check_rx(B, 0, in, len, 66, 4);
	cr_assert_eq(f.s[A].n_ok + f.s[A].n_err, 2, "nothing more at A");
	pf_close(&f);
	free(out);
	free(in);
}

/* ---- a peer that breaks the rule ---- */

/* Posts a raw SEND (imm: with GDRFAB_IMM_SEG) of len bytes at p,
 * registered as mr, on side A's connection QP, unsignaled: what a broken
 * or hostile peer would put on the wire. */
static void raw_send(const void *p, size_t len, struct fid_mr *mr, bool imm)
{
	struct gdrfab_mr_desc *d = fi_mr_desc(mr);
	struct ibv_sge sge = {.addr = (uintptr_t)p,
			      .length = (uint32_t)len,
			      .lkey = d->ibv_mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sge,
				 .num_sge = 1,
				 .opcode = imm ? IBV_WR_SEND_WITH_IMM
					       : IBV_WR_SEND},
			   *bad;

	if (imm)
		wr.imm_data = htonl(GDRFAB_IMM_SEG);
	cr_assert_eq(gdrfab_vops->post_send(conn_of(A)->qp, &wr, &bad), 0);
}

/* A SEG header of size bytes carrying n bytes, in buf. */
static size_t seg_header(uint8_t *buf, uint64_t size, size_t n)
{
	struct gdrfab_pkt_hdr h = {.version = GDRFAB_WIRE_VERSION,
				   .type = GDRFAB_PKT_SEG,
				   .flags = GDRFAB_PKT_TAGGED,
				   .tag = 0x800,
				   .size = size};

	memcpy(buf, &h, sizeof(h));
	return sizeof(h) + n;
}

enum broken { NO_MESSAGE, TOO_LARGE, PAST_SIZE, INTERLEAVED, BROKEN_COUNT };

/* B fails its connection to A, logs it, and delivers nothing to the
 * receive waiting for the message; no crash, nothing leaked (pf_close). */
static void broken_peer(enum broken how)
{
	size_t e = eager(), cap = e + 64;
	uint8_t *buf = calloc(1, cap + sizeof(struct gdrfab_pkt_hdr));
	uint8_t *in = calloc(1, 4 * e);
	struct fid_mr *mr;
	uint64_t failed;

	pf_open(&f);
	pf_connect(&f);
	mr = pf_reg(&f, buf, cap + sizeof(struct gdrfab_pkt_hdr), 0);
	trecv(B, in, 4 * e, 0x800, 0);
	failed = proto_of(B)->stats.c[GDRFAB_STAT_conn_failed];
	switch (how) {
	case NO_MESSAGE: raw_send(buf, 16, mr, true); break;
	case TOO_LARGE:
		raw_send(buf, seg_header(buf, gdrfab_params.seg_max + 1, 16),
			 mr, false);
		break;
	case PAST_SIZE:
		raw_send(buf, seg_header(buf, e + 10, 16), mr, false);
		pf_drive(&f, 0);
		cr_assert(gdrfab_seg_rx_busy(&conn_of(B)->seg_rx));
		raw_send(buf, e, mr, true); /* 16 + e > e + 10 */
		break;
	case INTERLEAVED:
		raw_send(buf, seg_header(buf, 2 * e, 16), mr, false);
		pf_drive(&f, 0);
		tsend(A, buf, 8, 0x800, 1);
		break;
	case BROKEN_COUNT: break;
	}
	pf_drive(&f, 20);
	cr_assert_eq(proto_of(B)->stats.c[GDRFAB_STAT_conn_failed], failed + 1,
		     "case %d: B failed the connection", how);
	cr_assert_eq(f.s[B].n_ok, 0, "case %d: nothing delivered", how);
	if (how == PAST_SIZE || how == INTERLEAVED) {
		/* The receive its first packet matched fails with it. */
		cr_assert_eq(f.s[B].n_err, 1, "case %d", how);
		cr_assert_eq(f.s[B].err[0].err, FI_EIO);
		cr_assert_eq(f.s[B].err[0].op_context, ctx(0));
		cr_assert(f.s[B].err[0].flags & FI_RECV);
	} else {
		cr_assert_eq(f.s[B].n_err, 0, "case %d: the receive waits",
			     how);
	}
	fi_close(&mr->fid);
	pf_close(&f);
	free(buf);
	free(in);
}

Test(seg, a_continuation_with_no_message_fails_the_connection, .timeout = 10)
{
	broken_peer(NO_MESSAGE);
}

Test(seg, a_message_past_the_pairs_limit_fails_the_connection, .timeout = 10)
{
	broken_peer(TOO_LARGE);
}

Test(seg, a_continuation_past_the_size_fails_the_connection, .timeout = 10)
{
	broken_peer(PAST_SIZE);
}

Test(seg, another_message_inside_one_fails_the_connection, .timeout = 10)
{
	broken_peer(INTERLEAVED);
}

/* ---- the parts on their own ---- */

/* The limit in cm_flags: whole 4 KiB units, the smaller of both, none
 * when it does not exceed eager_max or a side announces none. */
Test(seg, the_pair_limit)
{
	uint16_t f64 = gdrfab_seg_cm_flags(64 << 10);

	cr_assert_eq(f64 & ~GDRFAB_CM_SEG_MASK, 0);
	cr_assert_eq(gdrfab_seg_pair_max(64 << 10, f64, 8192), 64 << 10);
	cr_assert_eq(gdrfab_seg_pair_max(128 << 10, f64, 8192), 64 << 10);
	cr_assert_eq(gdrfab_seg_pair_max(16 << 10, f64, 8192), 16 << 10);
	cr_assert_eq(gdrfab_seg_pair_max(64 << 10, 0, 8192), 0,
		     "an earlier build announces none");
	cr_assert_eq(gdrfab_seg_pair_max(0, f64, 8192), 0);
	cr_assert_eq(gdrfab_seg_pair_max(8192, gdrfab_seg_cm_flags(8192), 8192),
		     0, "not above eager_max");
	cr_assert_eq(gdrfab_seg_pair_max(
			     GDRFAB_SEG_MAX_LIMIT,
			     gdrfab_seg_cm_flags(GDRFAB_SEG_MAX_LIMIT), 8192),
		     GDRFAB_SEG_MAX_LIMIT);
	cr_assert_eq(gdrfab_seg_cm_flags(1u << 30) >> GDRFAB_CM_SEG_SHIFT, 255,
		     "clamped to what the byte holds");
}

/* Reassembly: pieces in order make the message; a continuation with
 * none, empty, too large or past the size is refused and changes
 * nothing. */
Test(seg, reassembly)
{
	struct gdrfab_seg_rx s = {0};
	struct gdrfab_sizepool pool = {0};
	struct gdrfab_pkt_hdr h = {.type = GDRFAB_PKT_SEG, .size = 10}, got;
	const uint8_t bytes[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
	bool whole;
	uint8_t *msg;

	cr_assert_not_null(gdrfab_seg_rx_append(&s, bytes, 1, 4, &whole));
	cr_assert_not_null(gdrfab_seg_rx_check(&h, 4, 8, 4),
			   "past the pair's limit");
	cr_assert_not_null(gdrfab_seg_rx_check(&h, 4, 10, 10),
			   "within the eager limit");
	cr_assert_not_null(gdrfab_seg_rx_check(&h, 5, 10, 4),
			   "a first piece past the eager limit");
	cr_assert_null(gdrfab_seg_rx_check(&h, 4, 10, 4));
	cr_assert(!gdrfab_seg_rx_busy(&s));
	cr_assert_null(gdrfab_seg_rx_start(&s, &pool, &h, bytes, 4));
	cr_assert(gdrfab_seg_rx_busy(&s));
	cr_assert_not_null(gdrfab_seg_rx_append(&s, bytes, 0, 4, &whole));
	cr_assert_not_null(gdrfab_seg_rx_append(&s, bytes, 5, 4, &whole));
	cr_assert_null(gdrfab_seg_rx_append(&s, bytes + 4, 4, 4, &whole));
	cr_assert(!whole);
	cr_assert_not_null(gdrfab_seg_rx_append(&s, bytes, 3, 4, &whole),
			   "past the size");
	cr_assert_null(gdrfab_seg_rx_append(&s, bytes + 8, 2, 4, &whole));
	cr_assert(whole);
	msg = gdrfab_seg_rx_take(&s, &got);
	cr_assert(!gdrfab_seg_rx_busy(&s));
	cr_assert_eq(got.type, GDRFAB_PKT_EAGER);
	cr_assert_eq(got.size, 10);
	cr_assert_arr_eq(msg, bytes, 10);
	gdrfab_sizepool_put(&pool, msg);
	cr_assert_null(gdrfab_seg_rx_start(&s, &pool, &h, bytes, 4));
	gdrfab_seg_rx_clear(&s, &pool);
	cr_assert(!gdrfab_seg_rx_busy(&s));
	/* Filled in place: only counted here, whole all the same. */
	gdrfab_seg_rx_start_in(&s, &h, 4, (struct gdrfab_req *)&s, 0, 10, true);
	cr_assert(gdrfab_seg_rx_busy(&s));
	cr_assert_null(gdrfab_seg_rx_append(&s, bytes, 6, 6, &whole));
	cr_assert(whole);
	cr_assert_null(gdrfab_seg_rx_take(&s, &got), "no buffer of its own");
	cr_assert(!gdrfab_seg_rx_busy(&s));
	cr_assert_eq(gdrfab_sizepool_fini(&pool), 0, "every buffer back");
}

/* FI_GDRFAB_SEG_MAX as the provider reads it when libfabric loads it:
 * rounded down to whole 4 KiB units, 0 turning it off, a value outside
 * [0, GDRFAB_SEG_MAX_LIMIT] falling back to the default. */
Test(seg, the_variable_read_at_start)
{
	static const struct {
		const char *value;
		size_t want;
	} cases[] = {
		{NULL, GDRFAB_DEFAULT_SEG_MAX},
		{"131072", 128 << 10},
		{"20000", 16 << 10},
		{"0", 0},
		{"1044480", GDRFAB_SEG_MAX_LIMIT},
		{"1044481", GDRFAB_DEFAULT_SEG_MAX},
		{"-1", GDRFAB_DEFAULT_SEG_MAX},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].value)
			setenv("FI_GDRFAB_SEG_MAX", cases[i].value, 1);
		else
			unsetenv("FI_GDRFAB_SEG_MAX");
		gdrfab_params_init();
		cr_expect_eq(gdrfab_params.seg_max, cases[i].want,
			     "FI_GDRFAB_SEG_MAX=%s: %zu", cases[i].value,
			     gdrfab_params.seg_max);
	}
	unsetenv("FI_GDRFAB_SEG_MAX");
	gdrfab_params_init();
	gdrfab_params_fini();
}
