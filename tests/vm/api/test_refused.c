/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Accesses a NIC refuses: an RMA write with a key the target never gave,
 * and a rendezvous whose source memory was closed before the receiver
 * read it. The operations concerned fail with an error completion (never
 * a hang), and the pair keeps working for later operations both ways:
 * the QPs that went to error are replaced by new connections. (An
 * operation the target posts on its dead QP before it learns of the
 * error fails with FI_EIO; the man page says so.)
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dp_helpers.h"

#define BIG (1 << 20) /* above the eager size: a rendezvous */

static struct dp_ep *const p = dp_pair_eps;

TestSuite(refused, .init = dp_pair_setup, .fini = dp_pair_teardown,
	  .timeout = 240);

/* from sends len bytes of pattern seed to to; both sides check it. */
static void message_passes(int from, int to, size_t len, unsigned seed)
{
	uint8_t *tx = dp_alloc(len), *rx = dp_alloc(len);
	struct fid_mr *tmr = dp_reg(&p[from], tx, len, FI_SEND);
	struct fid_mr *rmr = dp_reg(&p[to], rx, len, FI_RECV);
	struct fi_cq_tagged_entry e;

	dp_fill(tx, len, seed);
	DP_POST(p, 2,
		fi_recv(p[to].ep, rx, len, fi_mr_desc(rmr), FI_ADDR_UNSPEC,
			rx));
	DP_POST(p, 2,
		fi_send(p[from].ep, tx, len, fi_mr_desc(tmr), p[from].peer[to],
			tx));
	dp_expect(p[from].txcq, &e, NULL, p, 2);
	dp_expect(p[to].rxcq, &e, NULL, p, 2);
	cr_assert_eq(e.len, len);
	cr_assert(dp_check(rx, len, seed), "data corrupted");
	fi_close(&tmr->fid);
	fi_close(&rmr->fid);
	free(tx);
	free(rx);
}

/* Waits for one error completion on cq; returns its err. */
static int expect_error(struct fid_cq *cq, void *context)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int ret = dp_wait(cq, &e, NULL, &err, p, 2, 30000);

	cr_assert_eq(ret, -FI_EAVAIL, "%s",
		     ret == 1 ? "the refused operation succeeded"
			      : "no completion: the operation hangs");
	cr_assert_eq(err.op_context, context);
	cr_assert_neq(err.err, 0);
	return err.err;
}

Test(refused, a_write_with_a_key_never_given_fails_and_the_pair_recovers)
{
	uint8_t *buf = dp_alloc(4096);
	struct fid_mr *mr = dp_reg(&p[0], buf, 4096, FI_WRITE);
	int ctx;

	message_passes(0, 1, 64, 1); /* connected */
	DP_POST(p, 2,
		fi_write(p[0].ep, buf, 4096, fi_mr_desc(mr), p[0].peer[1],
			 0x10000, 0x7777, &ctx));
	expect_error(p[0].txcq, &ctx);
	/* The target's QP went to error with the initiator's, and the
	 * initiator's new connection request tells the target so (soft-RoCE
	 * raises no asynchronous event). Once it has arrived, neither
	 * direction may fail. */
	for (int i = 0; i < 200; i++) {
		dp_progress(p, 2);
		usleep(1000);
	}
	message_passes(1, 0, 64, 2);
	message_passes(0, 1, 64, 3);
	message_passes(1, 0, BIG, 4);
	fi_close(&mr->fid);
	free(buf);
}

Test(refused, a_rendezvous_whose_memory_closed_fails_both_sides_once)
{
	uint8_t *tx = dp_alloc(BIG), *rx = dp_alloc(BIG);
	struct fid_mr *tmr = dp_reg(&p[0], tx, BIG, FI_SEND);
	struct fi_cq_tagged_entry e;
	int sctx, rctx;

	message_passes(0, 1, 64, 1);
	DP_POST(p, 2,
		fi_send(p[0].ep, tx, BIG, fi_mr_desc(tmr), p[0].peer[1],
			&sctx));
	dp_progress(p, 2); /* the rendezvous header is out, unexpected */
	fi_close(&tmr->fid);
	DP_POST(p, 2, fi_recv(p[1].ep, rx, BIG, NULL, FI_ADDR_UNSPEC, &rctx));
	expect_error(p[1].rxcq, &rctx);
	expect_error(p[0].txcq, &sctx);
	/* Exactly once each. */
	dp_expect_none(p[0].txcq, p, 2, 500);
	dp_expect_none(p[1].rxcq, p, 2, 500);
	(void)e;
	message_passes(0, 1, BIG, 5);
	message_passes(1, 0, BIG, 6);
	free(tx);
	free(rx);
}
