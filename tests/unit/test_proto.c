/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The protocol without hardware: two endpoints on the fake verbs device
 * (fake_verbs.h), driven through the libfabric API (proto_fixture.h).
 * Eager and rendezvous messages, emulated RMA, a connection race and a
 * peer lost in the middle of a rendezvous; each test asserts the data,
 * how many completions each side gets and their errors, and (pf_close)
 * that no verbs object is left behind.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_verbs.h"
#include "gdrfab.h"
#include "gdrfab_conn.h"
#include "gdrfab_hmem.h"
#include "gdrfab_hmem_domain.h"
#include "gdrfab_objs.h"
#include "gdrfab_params.h"
#include "gdrfab_proto.h"
#include "gdrfab_strerror.h"
#include "proto_fixture.h"

#define A 0
#define B 1

static struct pf f;

/* Larger than FI_GDRFAB_EAGER_MAX's default: goes by rendezvous. */
#define RNDV_LEN (256u * 1024)

static void *ctx(int i)
{
	return (void *)(uintptr_t)(0xc0de00 + i);
}

/* Posts at B a receive of len bytes into in for tag (context rctx), then
 * sends out's len bytes from A with that tag (context sctx). */
static void post_pair(void *in, const void *out, size_t len, uint64_t tag,
		      int rctx, int sctx)
{
	cr_assert_eq(fi_trecv(f.s[B].ep, in, len, NULL, f.s[B].peer, tag, 0,
			      ctx(rctx)),
		     0);
	cr_assert_eq(fi_tsend(f.s[A].ep, out, len, NULL, f.s[A].peer, tag,
			      ctx(sctx)),
		     0);
}

Test(proto, eager_tagged_expected_and_unexpected, .timeout = 10)
{
	char early[100], late[100], got1[128], got2[128], other[128];
	struct fi_cq_tagged_entry *e;

	pf_open(&f);
	pf_fill(early, sizeof(early), 1);
	pf_fill(late, sizeof(late), 2);
	/* Unexpected: sent (and carried) before any receive is posted. */
	cr_assert_eq(fi_tsend(f.s[A].ep, early, sizeof(early), NULL,
			      f.s[A].peer, 0x1001, ctx(1)),
		     0);
	/* Connecting waits for the address handle (a thread makes it). */
	cr_assert(pf_drive_until(&f, A, 1, 2000), "the connection is made");
	cr_assert_eq(f.s[A].n_ok, 1, "the eager send completed at A");
	cr_assert_eq(f.s[A].ok[0].op_context, ctx(1));
	cr_assert_eq(f.s[A].ok[0].flags, FI_SEND | FI_TAGGED);
	cr_assert_eq(f.s[B].n_ok + f.s[B].n_err, 0, "nothing posted at B");
	/* A receive for another tag leaves it waiting. */
	cr_assert_eq(fi_trecv(f.s[B].ep, other, sizeof(other), NULL,
			      FI_ADDR_UNSPEC, 0x2002, 0, ctx(2)),
		     0);
	pf_drive(&f, 0);
	cr_assert_eq(f.s[B].n_ok, 0, "tag 0x2002 matches no message");
	/* Its own tag (under an ignore mask) takes it. */
	cr_assert_eq(fi_trecv(f.s[B].ep, got1, sizeof(got1), NULL, f.s[B].peer,
			      0x1000, 0xff, ctx(3)),
		     0);
	pf_drive(&f, 0);
	cr_assert_eq(f.s[B].n_ok, 1);
	e = &f.s[B].ok[0];
	cr_assert_eq(e->op_context, ctx(3));
	cr_assert_eq(e->len, sizeof(early));
	cr_assert_eq(e->tag, 0x1001);
	cr_assert_eq(e->flags, FI_RECV | FI_TAGGED);
	cr_assert(pf_check(got1, sizeof(early), 1), "unexpected data");
	/* Expected: the receive waits for the message. */
	cr_assert_eq(fi_trecv(f.s[B].ep, got2, sizeof(got2), NULL, f.s[B].peer,
			      0x3003, 0, ctx(4)),
		     0);
	cr_assert_eq(fi_tsend(f.s[A].ep, late, sizeof(late), NULL, f.s[A].peer,
			      0x3003, ctx(5)),
		     0);
	pf_drive(&f, 0);
	cr_assert_eq(f.s[B].n_ok, 2);
	e = &f.s[B].ok[1];
	cr_assert_eq(e->op_context, ctx(4));
	cr_assert_eq(e->len, sizeof(late));
	cr_assert(pf_check(got2, sizeof(late), 2), "expected data");
	cr_assert_eq(f.s[A].n_ok, 2);
	/* The receive for 0x2002 is still there: cancel it. */
	cr_assert_eq(fi_cancel(&f.s[B].ep->fid, ctx(2)), 0);
	pf_drive(&f, 0);
	cr_assert_eq(f.s[B].n_err, 1);
	cr_assert_eq(f.s[B].err[0].err, FI_ECANCELED);
	cr_assert_eq(f.s[B].err[0].op_context, ctx(2));
	cr_assert_eq(f.s[A].n_err, 0);
	pf_close(&f);
}

/* Issue 34: without locks (FI_THREAD_DOMAIN) a read of an idle CQ is
 * the protocol's quick path, one poll of the NIC's CQ and nothing else;
 * what that path does not look for is still found: messages both ways,
 * eager and rendezvous (whose requests end in progress and from the
 * application's calls), and a receive cancelled outside progress. */
Test(proto, unlocked_idle_reads_poll_once_and_miss_nothing, .timeout = 10)
{
	uint8_t *src = malloc(RNDV_LEN), *dst = calloc(1, RNDV_LEN);
	char out[64], in[64];
	struct fi_cq_tagged_entry e;
	struct gdrfab_ep *ep;
	struct gdrfab_cq *cq;
	struct fid_mr *smr, *dmr;
	long polls;
	struct timespec t0, t1;
	long long ms;

	pf_threading = FI_THREAD_DOMAIN;
	pf_open(&f);
	pf_connect(&f);
	ep = gdrfab_container_of(f.s[B].ep, struct gdrfab_ep, fid);
	cq = gdrfab_container_of(f.s[B].cq, struct gdrfab_cq, fid);
	cr_assert_eq(*cq->quick_proto, ep->proto, "the quick read is on");
	/* Eager, expected then unexpected, and a rendezvous. */
	pf_fill(out, sizeof(out), 7);
	post_pair(in, out, sizeof(out), 0x71, 1, 2);
	pf_drive(&f, 0);
	cr_assert_eq(f.s[B].n_ok, 1);
	cr_assert(pf_check(in, sizeof(out), 7));
	cr_assert_eq(fi_tsend(f.s[A].ep, out, sizeof(out), NULL, f.s[A].peer,
			      0x72, ctx(3)),
		     0);
	pf_drive(&f, 0);
	memset(in, 0, sizeof(in));
	cr_assert_eq(fi_trecv(f.s[B].ep, in, sizeof(in), NULL, f.s[B].peer,
			      0x72, 0, ctx(4)),
		     0);
	pf_drive(&f, 0);
	cr_assert_eq(f.s[B].n_ok, 2);
	cr_assert(pf_check(in, sizeof(out), 7));
	pf_fill(src, RNDV_LEN, 8);
	smr = pf_reg(&f, src, RNDV_LEN, 0);
	dmr = pf_reg(&f, dst, RNDV_LEN, 0);
	cr_assert_eq(fi_trecv(f.s[B].ep, dst, RNDV_LEN, fi_mr_desc(dmr),
			      f.s[B].peer, 0x73, 0, ctx(5)),
		     0);
	cr_assert_eq(fi_tsend(f.s[A].ep, src, RNDV_LEN, fi_mr_desc(smr),
			      f.s[A].peer, 0x73, ctx(6)),
		     0);
	pf_drive(&f, 20); /* and the clock's rate is measured */
	cr_assert_eq(f.s[B].n_ok, 3);
	cr_assert_eq(f.s[A].n_ok, 3);
	cr_assert(pf_check(dst, RNDV_LEN, 8));
	/* Idle: each read polls the NIC's CQ once; a call in full adds
	 * the UD CQ's poll, every 64 calls or when the ms moves. */
	polls = fake_verbs_counts().polls;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(fi_cq_read(f.s[B].cq, &e, 1), -FI_EAGAIN);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	polls = fake_verbs_counts().polls - polls;
	ms = (t1.tv_sec - t0.tv_sec) * 1000 +
	     (t1.tv_nsec - t0.tv_nsec) / 1000000;
	cr_assert_geq(polls, 1000);
	cr_assert_leq(polls, 1000 + 1000 / 32 + 2 * (ms + 2),
		      "%ld polls for 1000 reads in %lld ms", polls, ms);
	/* The budget: spent by quick calls, emptied by a wake, and set
	 * again by the full call that the next read then runs. */
	for (int i = 0;
	     i < 100 && ep->proto->quick_given == ep->proto->quick_left; i++)
		cr_assert_eq(fi_cq_read(f.s[B].cq, &e, 1), -FI_EAGAIN);
	cr_assert_gt(ep->proto->quick_given, ep->proto->quick_left,
		     "no read took the quick path");
	gdrfab_proto_wake(ep->proto);
	cr_assert_eq(ep->proto->quick_left, 0);
	cr_assert_eq(fi_cq_read(f.s[B].cq, &e, 1), -FI_EAGAIN);
	/* The wake left given (the quick calls made, at least one) above
	 * left (0): only a full call sets them equal again. */
	cr_assert_eq(ep->proto->quick_given, ep->proto->quick_left,
		     "a full call ran");
	/* A receive cancelled by the application ends outside progress. */
	cr_assert_eq(fi_trecv(f.s[B].ep, in, sizeof(in), NULL, f.s[B].peer,
			      0x74, 0, ctx(7)),
		     0);
	cr_assert_eq(fi_cancel(&f.s[B].ep->fid, ctx(7)), 0);
	pf_drive(&f, 0);
	cr_assert_eq(f.s[B].n_err, 1);
	cr_assert_eq(f.s[B].err[0].err, FI_ECANCELED);
	fi_close(&smr->fid);
	fi_close(&dmr->fid);
	pf_close(&f);
	free(src);
	free(dst);
}

Test(proto, rendezvous_receive_posted_after_the_rndv_arrived, .timeout = 10)
{
	uint8_t *src = malloc(RNDV_LEN), *dst = calloc(1, RNDV_LEN + 64);
	struct fid_mr *smr, *dmr;

	pf_open(&f);
	pf_connect(&f);
	pf_fill(src, RNDV_LEN, 3);
	smr = pf_reg(&f, src, RNDV_LEN, 0);
	dmr = pf_reg(&f, dst, RNDV_LEN + 64, 0);
	cr_assert_eq(fi_tsend(f.s[A].ep, src, RNDV_LEN, fi_mr_desc(smr),
			      f.s[A].peer, 0x44, ctx(1)),
		     0);
	pf_drive(&f, 0);
	cr_assert_eq(f.s[A].n_ok, 0, "a rendezvous send waits for the FIN");
	cr_assert_eq(f.s[B].n_ok, 0);
	/* The receive finds the RNDV waiting and pulls it: hold the READs
	 * to see that nothing completes before the data is there. */
	fake_verbs_hold(IBV_WR_RDMA_READ, true);
	cr_assert_eq(fi_trecv(f.s[B].ep, dst, RNDV_LEN + 64, fi_mr_desc(dmr),
			      FI_ADDR_UNSPEC, 0x44, 0, ctx(2)),
		     0);
	pf_drive(&f, 0);
	cr_assert_gt(fake_verbs_waiting(IBV_WR_RDMA_READ), 0,
		     "the receiver reads the data");
	cr_assert_eq(f.s[A].n_ok + f.s[B].n_ok, 0, "nothing before the READ");
	fake_verbs_hold(IBV_WR_RDMA_READ, false);
	pf_drive(&f, 0);
	cr_assert_eq(f.s[B].n_ok, 1);
	cr_assert_eq(f.s[B].ok[0].op_context, ctx(2));
	cr_assert_eq(f.s[B].ok[0].len, RNDV_LEN);
	cr_assert_eq(f.s[B].ok[0].tag, 0x44);
	cr_assert(pf_check(dst, RNDV_LEN, 3), "rendezvous data");
	cr_assert_eq(dst[RNDV_LEN], 0, "nothing written past the message");
	cr_assert_eq(f.s[A].n_ok, 1, "the FIN completed the send");
	cr_assert_eq(f.s[A].ok[0].op_context, ctx(1));
	cr_assert_eq(f.s[A].n_err + f.s[B].n_err, 0);
	fi_close(&smr->fid);
	fi_close(&dmr->fid);
	pf_close(&f);
	free(src);
	free(dst);
}

/* Gives a registered host buffer an emulated-RMA key, as a staged GPU
 * buffer with remote access gets (gdrfab_emu_mr.c): the initiator then
 * asks the target's protocol to do the access (gdrfab_rma_emu.c). */
static uint64_t emu_key(struct fid_mr *mr)
{
	struct gdrfab_domain *d =
		gdrfab_container_of(f.domain, struct gdrfab_domain, fid);
	struct gdrfab_mr *m = gdrfab_container_of(mr, struct gdrfab_mr, fid);
	uint64_t key;

	cr_assert_eq(gdrfab_emu_mr_add(d, m, &key), 0);
	cr_assert_eq(key >> 32, GDRFAB_EMU_KEY >> 32);
	return key;
}

static void emu_remove(uint64_t key)
{
	gdrfab_emu_mr_remove(
		gdrfab_container_of(f.domain, struct gdrfab_domain, fid), key);
}

Test(proto, emulated_rma_write_and_read, .timeout = 10)
{
	const size_t sizes[] = {100, RNDV_LEN};
	size_t tlen = RNDV_LEN + 4096;
	uint8_t *tgt = calloc(1, tlen), *src = malloc(RNDV_LEN),
		*back = malloc(RNDV_LEN);
	struct fid_mr *tmr, *smr, *bmr;
	uint64_t key;
	int done = 0;

	pf_open(&f);
	tmr = pf_reg(&f, tgt, tlen, FI_REMOTE_READ | FI_REMOTE_WRITE);
	smr = pf_reg(&f, src, RNDV_LEN, 0);
	bmr = pf_reg(&f, back, RNDV_LEN, 0);
	key = emu_key(tmr);
	for (size_t i = 0; i < 2; i++) {
		size_t n = sizes[i];
		uint64_t raddr = (uintptr_t)tgt + 4096;

		pf_fill(src, n, 10 + (unsigned)i);
		memset(back, 0, n);
		cr_assert_eq(fi_write(f.s[A].ep, src, n, fi_mr_desc(smr),
				      f.s[A].peer, raddr, key, ctx(1)),
			     0);
		cr_assert(pf_drive_until(&f, A, ++done, 2000), "write %zu", n);
		cr_assert_eq(f.s[A].n_err, 0);
		cr_assert_eq(f.s[A].ok[done - 1].flags, FI_RMA | FI_WRITE);
		cr_assert(pf_check(tgt + 4096, n, 10 + (unsigned)i),
			  "%zu bytes written by the target's protocol", n);
		cr_assert_eq(tgt[4095], 0, "nothing before the target");
		cr_assert_eq(fi_read(f.s[A].ep, back, n, fi_mr_desc(bmr),
				     f.s[A].peer, raddr, key, ctx(2)),
			     0);
		cr_assert(pf_drive_until(&f, A, ++done, 2000), "read %zu", n);
		cr_assert_eq(f.s[A].ok[done - 1].flags, FI_RMA | FI_READ);
		cr_assert_eq(f.s[A].ok[done - 1].op_context, ctx(2));
		cr_assert(pf_check(back, n, 10 + (unsigned)i),
			  "%zu bytes read back", n);
	}
	/* A key the target does not know: refused with FI_EACCES, once. */
	cr_assert_eq(fi_write(f.s[A].ep, src, 100, fi_mr_desc(smr), f.s[A].peer,
			      (uintptr_t)tgt, key + 1, ctx(3)),
		     0);
	cr_assert(pf_drive_until(&f, A, done + 1, 2000));
	cr_assert_eq(f.s[A].n_err, 1);
	cr_assert_eq(f.s[A].err[0].err, FI_EACCES);
	cr_assert_eq(f.s[A].err[0].op_context, ctx(3));
	cr_assert_eq(f.s[B].n_ok + f.s[B].n_err, 0, "no completion at B");
	emu_remove(key);
	fi_close(&tmr->fid);
	fi_close(&smr->fid);
	fi_close(&bmr->fid);
	pf_close(&f);
	free(tgt);
	free(src);
	free(back);
}

Test(proto, both_sides_connect_at_once, .timeout = 10)
{
	char msg[2][64], got[2][64];

	pf_open(&f);
	for (int i = 0; i < 2; i++) {
		pf_fill(msg[i], sizeof(msg[i]), 20 + (unsigned)i);
		cr_assert_eq(fi_recv(f.s[i].ep, got[i], sizeof(got[i]), NULL,
				     f.s[i].peer, ctx(10 + i)),
			     0);
	}
	/* Both post before either's connection request is carried: each
	 * side's REQ crosses the other's on the wire. */
	for (int i = 0; i < 2; i++)
		cr_assert_eq(fi_send(f.s[i].ep, msg[i], sizeof(msg[i]), NULL,
				     f.s[i].peer, ctx(20 + i)),
			     0);
	for (int i = 0; i < 2; i++)
		cr_assert(pf_drive_until(&f, i, 2, 3000), "side %d", i);
	pf_drive(&f, 20);
	for (int i = 0; i < 2; i++) {
		struct pf_side *s = &f.s[i];
		int sends = 0, recvs = 0;

		cr_assert_eq(s->n_err, 0, "side %d: no error", i);
		cr_assert_eq(s->n_ok, 2, "side %d: one send, one receive", i);
		for (int k = 0; k < 2; k++) {
			if (s->ok[k].flags & FI_SEND) {
				cr_assert_eq(s->ok[k].op_context, ctx(20 + i));
				sends++;
			} else {
				cr_assert_eq(s->ok[k].op_context, ctx(10 + i));
				cr_assert_eq(s->ok[k].len, sizeof(got[i]));
				recvs++;
			}
		}
		cr_assert_eq(sends, 1);
		cr_assert_eq(recvs, 1);
		cr_assert(pf_check(got[i], sizeof(got[i]),
				   20 + (unsigned)(1 - i)),
			  "side %d got the other's message", i);
	}
	/* One connection survives the race: one RC QP a side. */
	cr_assert_eq(fake_verbs_counts().rc_qp, 2);
	pf_close(&f);
}

Test(proto, peer_lost_during_rendezvous, .timeout = 10)
{
	uint8_t *src = malloc(RNDV_LEN), *dst = calloc(1, RNDV_LEN);
	struct fid_mr *smr, *dmr;
	int saved = gdrfab_params.peer_timeout_ms;

	/* Keepalives after 25 ms of silence, so that the sender, which has
	 * nothing in flight while it waits for the FIN, notices too. */
	gdrfab_params.peer_timeout_ms = 50;
	pf_open(&f);
	pf_connect(&f);
	pf_fill(src, RNDV_LEN, 4);
	smr = pf_reg(&f, src, RNDV_LEN, 0);
	dmr = pf_reg(&f, dst, RNDV_LEN, 0);
	fake_verbs_hold(IBV_WR_RDMA_READ, true);
	cr_assert_eq(fi_trecv(f.s[B].ep, dst, RNDV_LEN, fi_mr_desc(dmr),
			      f.s[B].peer, 0x55, 0, ctx(2)),
		     0);
	cr_assert_eq(fi_tsend(f.s[A].ep, src, RNDV_LEN, fi_mr_desc(smr),
			      f.s[A].peer, 0x55, ctx(1)),
		     0);
	pf_drive(&f, 0);
	cr_assert_gt(fake_verbs_waiting(IBV_WR_RDMA_READ), 0);
	/* The link goes while the data is being read. */
	cr_assert_gt(
		fake_verbs_fail(IBV_WR_RDMA_READ, IBV_WC_RETRY_EXC_ERR, true),
		0);
	fake_verbs_hold(IBV_WR_RDMA_READ, false);
	cr_assert(pf_drive_until(&f, B, 1, 2000), "the receive ends");
	cr_assert(pf_drive_until(&f, A, 1, 2000), "the send ends");
	pf_drive(&f, 100); /* and nothing more comes */
	for (int i = 0; i < 2; i++) {
		struct pf_side *s = &f.s[i];

		cr_assert_eq(s->n_ok, 0, "side %d: no success", i);
		cr_assert_eq(s->n_err, 1, "side %d: one error, got %d", i,
			     s->n_err);
		cr_assert_eq(s->err[0].op_context, ctx(i == A ? 1 : 2));
		cr_assert_neq(s->err[0].err, 0);
		cr_assert_neq(s->err[0].err, FI_ECANCELED);
	}
	fi_close(&smr->fid);
	fi_close(&dmr->fid);
	pf_close(&f);
	gdrfab_params.peer_timeout_ms = saved;
	free(src);
	free(dst);
}

Test(proto, a_send_the_nic_gives_up_on_fails_once_and_the_pair_reconnects,
     .timeout = 10)
{
	char out[64], in[64];

	pf_open(&f);
	pf_connect(&f);
	pf_fill(out, sizeof(out), 30);
	fake_verbs_hold(IBV_WR_SEND, true);
	cr_assert_eq(fi_tsend(f.s[A].ep, out, sizeof(out), NULL, f.s[A].peer,
			      0x66, ctx(1)),
		     0);
	pf_drive(&f, 0);
	cr_assert_eq(fake_verbs_waiting(IBV_WR_SEND), 1);
	/* The peer does not acknowledge it; the link itself stays. */
	cr_assert_eq(fake_verbs_fail(IBV_WR_SEND, IBV_WC_RETRY_EXC_ERR, false),
		     1);
	fake_verbs_hold(IBV_WR_SEND, false);
	cr_assert(pf_drive_until(&f, A, 1, 2000));
	pf_drive(&f, 20);
	cr_assert_eq(f.s[A].n_ok, 0);
	cr_assert_eq(f.s[A].n_err, 1, "one error, got %d", f.s[A].n_err);
	cr_assert_eq(f.s[A].err[0].op_context, ctx(1));
	cr_assert_neq(f.s[A].err[0].err, 0);
	cr_assert_eq(f.s[B].n_ok + f.s[B].n_err, 0, "B saw nothing");
	/* The next send connects again and arrives. */
	post_pair(in, out, sizeof(in), 0x67, 2, 3);
	cr_assert(pf_drive_until(&f, B, 1, 3000), "delivered after the error");
	cr_assert(pf_drive_until(&f, A, 2, 3000));
	cr_assert_eq(f.s[B].n_ok, 1);
	cr_assert_eq(f.s[B].ok[0].op_context, ctx(2));
	cr_assert(pf_check(in, sizeof(in), 30));
	cr_assert_eq(f.s[A].n_ok, 1);
	cr_assert_eq(f.s[A].ok[0].op_context, ctx(3));
	pf_close(&f);
}

/* Issue 33: once earlier processes have used it, rxe can keep work
 * requests posted across a port outage for ever, without a completion.
 * Sends held on the wire stand for them. Silence alone is never judged (a
 * live peer may be slow to post receives); after a port event, work
 * older than it that does not move for the retry budget fails, every
 * operation once and for that reason, and the pair connects again. */
Test(proto, work_stuck_across_a_port_outage_fails_and_the_pair_reconnects,
     .timeout = 10)
{
	int saved = gdrfab_params.peer_timeout_ms;
	char out[2][64], in[64];

	gdrfab_params.peer_timeout_ms = 50;
	pf_open(&f);
	pf_connect(&f);
	fake_verbs_hold(IBV_WR_SEND, true);
	for (int i = 0; i < 2; i++) {
		pf_fill(out[i], sizeof(out[i]), 40 + (unsigned)i);
		cr_assert_eq(fi_tsend(f.s[A].ep, out[i], sizeof(out[i]), NULL,
				      f.s[A].peer, 0x68 + (unsigned)i,
				      ctx(1 + i)),
			     0);
	}
	pf_drive(&f, 200); /* four retry budgets, no port event */
	cr_assert_eq(fake_verbs_waiting(IBV_WR_SEND), 2);
	cr_assert_eq(f.s[A].n_ok + f.s[A].n_err, 0, "silence is not judged");
	fake_verbs_port_event(IBV_EVENT_PORT_ERR);
	fake_verbs_port_event(IBV_EVENT_PORT_ACTIVE);
	cr_assert(pf_drive_until(&f, A, 2, 2000), "both sends end");
	cr_assert_eq(f.s[A].n_ok, 0);
	cr_assert_eq(f.s[A].n_err, 2, "two errors, got %d", f.s[A].n_err);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(f.s[A].err[i].op_context, ctx(1 + i));
		cr_assert_eq(f.s[A].err[i].err, FI_EIO);
		cr_assert_eq(f.s[A].err[i].prov_errno, GDRFAB_PERR_LINK_STALLED,
			     "send %d: prov_errno %d", i,
			     f.s[A].err[i].prov_errno);
	}
	cr_assert_eq(fake_verbs_waiting(IBV_WR_SEND), 0, "flushed");
	fake_verbs_hold(IBV_WR_SEND, false);
	cr_assert_eq(f.s[B].n_ok + f.s[B].n_err, 0, "B saw nothing");
	/* The next send connects again and arrives. */
	post_pair(in, out[0], sizeof(in), 0x69, 4, 5);
	cr_assert(pf_drive_until(&f, B, 1, 3000), "delivered after the error");
	cr_assert(pf_drive_until(&f, A, 3, 3000));
	cr_assert_eq(f.s[B].ok[0].op_context, ctx(4));
	cr_assert(pf_check(in, sizeof(in), 40));
	cr_assert_eq(f.s[A].n_ok, 1);
	pf_close(&f);
	gdrfab_params.peer_timeout_ms = saved;
}

/* Opens the pair with a send queue of 8 slots, connected; returns the
 * tx_size to restore. */
static size_t open_with_8_send_slots(void)
{
	size_t saved = gdrfab_params.tx_size;

	gdrfab_params.tx_size = 8;
	pf_open(&f);
	pf_connect(&f);
	return saved;
}

/* MSGS tagged messages from A to B, message i of len[i] bytes (up to
 * MSG_MAX) and tag tag[i], its bytes from seed + i; the receives match
 * any tag bit outside ignore of 0. */
enum { MSGS = 20, MSG_MAX = 1024 };
struct msgs {
	uint8_t out[MSGS][MSG_MAX], in[MSGS][MSG_MAX];
	size_t len[MSGS];
	uint64_t tag[MSGS];
	unsigned seed;
};

static void msgs_send(struct msgs *m)
{
	for (int i = 0; i < MSGS; i++) {
		pf_fill(m->out[i], m->len[i], m->seed + (unsigned)i);
		cr_assert_eq(fi_tsend(f.s[A].ep, m->out[i], m->len[i], NULL,
				      f.s[A].peer, m->tag[i], ctx(i)),
			     0, "send %d", i);
	}
}

static void msgs_recv(struct msgs *m, uint64_t ignore)
{
	for (int i = 0; i < MSGS; i++)
		cr_assert_eq(fi_trecv(f.s[B].ep, m->in[i], MSG_MAX, NULL,
				      f.s[B].peer, 0, ignore, ctx(100 + i)),
			     0);
}

/* Every message arrived at B, from completion b0 on, whole and in the
 * order sent. */
static void msgs_check(const struct msgs *m, int b0)
{
	for (int i = 0; i < MSGS; i++) {
		const struct fi_cq_tagged_entry *e = &f.s[B].ok[b0 + i];

		cr_assert_eq(e->op_context, ctx(100 + i));
		cr_assert_eq(e->tag, m->tag[i], "receive %d got tag %llu", i,
			     (unsigned long long)e->tag);
		cr_assert_eq(e->len, m->len[i], "message %d", i);
		cr_assert(pf_check(m->in[i], m->len[i], m->seed + (unsigned)i),
			  "message %d's bytes", i);
	}
}

/* Eager sends go out at once, without a request, only when nothing waits
 * before them on the connection: with the send queue full (8 slots, all
 * held on the wire), the next ones wait as requests, and those after them
 * must not overtake them. Inline sends (8 bytes) and sends copied into a
 * bounce buffer (1 KiB, beyond the QP's inline limit) alternate; every
 * message arrives whole and in the order sent. */
Test(proto, eager_sends_past_a_full_send_queue_arrive_in_order, .timeout = 10)
{
	size_t saved = open_with_8_send_slots();
	static struct msgs m = {.seed = 40};
	int a0 = f.s[A].n_ok, b0 = f.s[B].n_ok;

	for (int i = 0; i < MSGS; i++) {
		m.len[i] = i % 2 ? MSG_MAX : 8;
		m.tag[i] = (uint64_t)i;
	}
	fake_verbs_hold(IBV_WR_SEND, true);
	msgs_send(&m);
	cr_assert_eq(fake_verbs_waiting(IBV_WR_SEND), 8,
		     "the send queue's 8 slots hold the first ones");
	msgs_recv(&m, ~0ULL);
	fake_verbs_hold(IBV_WR_SEND, false);
	cr_assert(pf_drive_until(&f, B, b0 + MSGS, 3000), "all delivered");
	cr_assert(pf_drive_until(&f, A, a0 + MSGS, 3000), "all sent");
	cr_assert_eq(f.s[A].n_err + f.s[B].n_err, 0);
	msgs_check(&m, b0);
	pf_close(&f);
	gdrfab_params.tx_size = saved;
}

/* A send of a registered host buffer beyond the QP's inline limit is
 * read by the NIC from the caller's buffer, not copied: bytes changed
 * while it waits on the wire arrive changed, for a message with its
 * header and for a repeat alike. An inject's buffer is the caller's again
 * when the call returns, so it is copied: bytes changed after the call
 * arrive as they were. */
Test(proto, a_registered_send_is_gathered_and_an_inject_copied, .timeout = 10)
{
	enum { BIG = 1024 };
	static uint8_t out[3][BIG], in[3][BIG];
	size_t saved = open_with_8_send_slots();
	struct fid_mr *mr = pf_reg(&f, out, sizeof(out), 0);
	void *desc = fi_mr_desc(mr);
	int a0 = f.s[A].n_ok, b0 = f.s[B].n_ok;

	for (int i = 0; i < 3; i++)
		pf_fill(out[i], BIG, 80 + (unsigned)i);
	fake_verbs_hold(IBV_WR_SEND, true);
	fake_verbs_hold(IBV_WR_SEND_WITH_IMM, true);
	cr_assert_eq(
		fi_tsend(f.s[A].ep, out[0], BIG, desc, f.s[A].peer, 5, ctx(0)),
		0);
	cr_assert_eq(
		fi_tsend(f.s[A].ep, out[1], BIG, desc, f.s[A].peer, 5, ctx(1)),
		0);
	/* fi_tinject takes no descriptor; fi_tsendmsg with FI_INJECT
	 * does. */
	cr_assert_eq(
		fi_tsendmsg(f.s[A].ep,
			    &(struct fi_msg_tagged){
				    .msg_iov = &(struct iovec){out[2], BIG},
				    .desc = &desc,
				    .iov_count = 1,
				    .addr = f.s[A].peer,
				    .tag = 5,
				    .context = ctx(2)},
			    FI_INJECT | FI_COMPLETION),
		0);
	cr_assert_eq(fake_verbs_waiting(IBV_WR_SEND), 1, "the header's send");
	cr_assert_eq(fake_verbs_waiting(IBV_WR_SEND_WITH_IMM), 2,
		     "two repeats");
	for (int i = 0; i < 3; i++) {
		pf_fill(out[i], BIG, 90 + (unsigned)i);
		cr_assert_eq(fi_trecv(f.s[B].ep, in[i], BIG, NULL, f.s[B].peer,
				      5, 0, ctx(100 + i)),
			     0);
	}
	fake_verbs_hold(IBV_WR_SEND, false);
	fake_verbs_hold(IBV_WR_SEND_WITH_IMM, false);
	cr_assert(pf_drive_until(&f, B, b0 + 3, 3000), "all delivered");
	cr_assert(pf_drive_until(&f, A, a0 + 3, 3000), "all sent");
	cr_assert_eq(f.s[A].n_err + f.s[B].n_err, 0);
	cr_assert(pf_check(in[0], BIG, 90), "the first send, read in place");
	cr_assert(pf_check(in[1], BIG, 91), "the repeat, read in place");
	cr_assert(pf_check(in[2], BIG, 82), "the inject, copied at the call");
	fi_close(&mr->fid);
	pf_close(&f);
	gdrfab_params.tx_size = saved;
}

/* Sends of one tag go as repeats (GDRFAB_IMM_REPEAT), those posted at
 * once and those the request path posts once the send queue has room
 * alike, and arrive in order with their tags, lengths and bytes; a new
 * tag goes with its header again. */
Test(proto, sends_of_one_tag_go_as_repeats_on_both_paths, .timeout = 10)
{
	size_t saved = open_with_8_send_slots();
	static struct msgs m = {.seed = 60};
	int a0 = f.s[A].n_ok, b0 = f.s[B].n_ok;

	for (int i = 0; i < MSGS; i++) {
		m.len[i] = (size_t[]){8, MSG_MAX, 0}[i % 3];
		m.tag[i] = i < 16 ? 7 : 9;
	}
	fake_verbs_hold(IBV_WR_SEND, true);
	fake_verbs_hold(IBV_WR_SEND_WITH_IMM, true);
	msgs_send(&m);
	cr_assert_eq(fake_verbs_waiting(IBV_WR_SEND), 1, "one full header");
	cr_assert_eq(fake_verbs_waiting(IBV_WR_SEND_WITH_IMM), 7,
		     "the other 7 posted at once are repeats");
	msgs_recv(&m, 0xf);
	/* The full header goes; its slot lets the request path post the
	 * next, a repeat too. */
	fake_verbs_hold(IBV_WR_SEND, false);
	cr_assert(pf_drive_until(&f, A, a0 + 1, 3000), "the first sent");
	for (int i = 0; i < 100; i++)
		fake_verbs_run();
	cr_assert_geq(fake_verbs_waiting(IBV_WR_SEND_WITH_IMM), 8,
		      "the request path posted a repeat");
	fake_verbs_hold(IBV_WR_SEND_WITH_IMM, false);
	cr_assert(pf_drive_until(&f, B, b0 + MSGS, 3000),
		  "all delivered: %d of %d, sent %d, errors %d %d",
		  f.s[B].n_ok - b0, MSGS, f.s[A].n_ok - a0, f.s[A].n_err,
		  f.s[B].n_err);
	cr_assert(pf_drive_until(&f, A, a0 + MSGS, 3000), "all sent");
	cr_assert_eq(f.s[A].n_err + f.s[B].n_err, 0);
	msgs_check(&m, b0);
	pf_close(&f);
	gdrfab_params.tx_size = saved;
}

/* Whether an EAGER message of these flags, tag and data goes as a repeat
 * of memo m. */
static bool repeats(const struct gdrfab_memo *m, uint16_t flags, uint64_t tag,
		    uint64_t data)
{
	struct gdrfab_pkt_hdr h = {.version = GDRFAB_WIRE_VERSION,
				   .type = GDRFAB_PKT_EAGER,
				   .flags = flags,
				   .tag = tag,
				   .data = data};

	return gdrfab_memo_repeats(m, &h);
}

/* The rule both ends apply to full headers (GDRFAB_IMM_REPEAT): an EAGER
 * header is remembered, one with emulated-RMA flags forgets, other types
 * leave it; a repeat needs flags, tag and data all equal. */
Test(proto, the_header_memo_follows_one_rule)
{
	struct gdrfab_memo m = {.valid = false};
	struct gdrfab_pkt_hdr h = {.version = GDRFAB_WIRE_VERSION,
				   .type = GDRFAB_PKT_EAGER,
				   .flags = GDRFAB_PKT_TAGGED,
				   .tag = 42,
				   .size = 100};

	cr_assert_not(repeats(&m, GDRFAB_PKT_TAGGED, 42, 0));
	gdrfab_memo_note(&m, &h);
	cr_assert(repeats(&m, GDRFAB_PKT_TAGGED, 42, 0));
	cr_assert_not(repeats(&m, GDRFAB_PKT_TAGGED, 43, 0));
	cr_assert_not(repeats(&m, 0, 42, 0));
	cr_assert_not(repeats(&m, GDRFAB_PKT_TAGGED, 42, 1));
	/* Control messages and rendezvous headers leave it. */
	h.type = GDRFAB_PKT_FIN;
	gdrfab_memo_note(&m, &h);
	h.type = GDRFAB_PKT_RNDV;
	h.tag = 7;
	gdrfab_memo_note(&m, &h);
	cr_assert(repeats(&m, GDRFAB_PKT_TAGGED, 42, 0));
	/* An emulated write's header forgets it. */
	h.type = GDRFAB_PKT_EAGER;
	h.flags = GDRFAB_PKT_EMU_WRITE;
	gdrfab_memo_note(&m, &h);
	cr_assert_not(repeats(&m, GDRFAB_PKT_TAGGED, 42, 0));
	cr_assert_not(repeats(&m, GDRFAB_PKT_EMU_WRITE, 7, 0));
	/* CQ data is part of it. */
	h.flags = GDRFAB_PKT_CQ_DATA;
	h.data = 9;
	gdrfab_memo_note(&m, &h);
	cr_assert(repeats(&m, GDRFAB_PKT_CQ_DATA, 7, 9));
	/* Never a message with a msg_id, nor one of another type. */
	h.msg_id = 5;
	cr_assert_not(gdrfab_memo_repeats(&m, &h));
	h.msg_id = 0;
	h.type = GDRFAB_PKT_RNDV;
	cr_assert_not(gdrfab_memo_repeats(&m, &h));
	h.type = GDRFAB_PKT_EAGER;
	cr_assert(gdrfab_memo_repeats(&m, &h));
}
