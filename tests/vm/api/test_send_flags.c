/* SPDX-License-Identifier: BSD-2-Clause */
/* The completion flags of fi_sendmsg and fi_tsendmsg (fi_msg(3),
 * fi_tagged(3)): FI_INJECT (the buffer is free when the call returns),
 * FI_INJECT_COMPLETE and FI_TRANSMIT_COMPLETE (free when the completion is
 * reported), FI_DELIVERY_COMPLETE (the completion means the data is in the
 * receiver's buffer). test_msg.c covers FI_INJECT and FI_DELIVERY_COMPLETE
 * on fi_sendmsg alone; Open MPI's mtl ofi sends tagged. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "dp_helpers.h"

static struct dp_ep *const p = dp_pair_eps;

TestSuite(send_flags, .init = dp_pair_setup, .fini = dp_pair_teardown,
	  .timeout = 240);

#define TAG 0x5eedULL

/* One send of len bytes from p[0] to p[1], tagged or not, with flags. */
static ssize_t send_flags(bool tagged, void *buf, size_t len, void *ctx,
			  uint64_t flags)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct fi_msg_tagged tmsg = {
		.msg_iov = &iov,
		.iov_count = 1,
		.addr = p[0].peer[1],
		.tag = TAG,
		.context = ctx,
	};

	if (!tagged)
		return dp_sendmsg(p, buf, len, ctx, flags);
	return fi_tsendmsg(p[0].ep, &tmsg, flags);
}

static ssize_t recv_any(bool tagged, void *buf, size_t len, void *ctx)
{
	return tagged ? fi_trecv(p[1].ep, buf, len, NULL, FI_ADDR_UNSPEC, TAG,
				 0, ctx)
		      : fi_recv(p[1].ep, buf, len, NULL, FI_ADDR_UNSPEC, ctx);
}

/* The receive and send completions of one message, the data checked. */
static void expect_both(void *dst, size_t len, unsigned seed, void *sctx,
			void *rctx)
{
	struct fi_cq_tagged_entry e;

	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	cr_assert_eq(e.op_context, rctx);
	cr_assert_eq(e.len, len);
	cr_assert(dp_check(dst, len, seed), "the data as sent, %zu bytes", len);
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	cr_assert_eq(e.op_context, sctx);
}

/* FI_INJECT: the buffer is overwritten right after the call returns,
 * before any progress, at sizes up to inject_size; the receiver sees the
 * data as it was, and the completion still comes. The first send waits
 * for the connection to be made (the pair is new), so a send that read
 * the caller's buffer when posted, not when called, would carry the
 * overwritten bytes. One byte more than inject_size is -FI_EMSGSIZE. */
static void inject_copies_at_once(bool tagged)
{
	size_t max = p[0].d.info->tx_attr->inject_size;
	size_t sizes[] = {100, 0, 1, max};
	uint8_t *src = dp_alloc(max + 1), *dst = dp_alloc(max + 1);
	int sctx, rctx;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		dp_fill(src, sizes[i], (unsigned)i + 1);
		DP_POST(p, 2, recv_any(tagged, dst, max + 1, &rctx));
		DP_POST(p, 2,
			send_flags(tagged, src, sizes[i], &sctx,
				   FI_INJECT | FI_COMPLETION));
		memset(src, 0xee, max + 1);
		expect_both(dst, sizes[i], (unsigned)i + 1, &sctx, &rctx);
	}
	cr_assert_eq(send_flags(tagged, src, max + 1, &sctx, FI_INJECT),
		     -FI_EMSGSIZE);
	free(src);
	free(dst);
}

Test(send_flags, sendmsg_inject_copies_at_once)
{
	inject_copies_at_once(false);
}

Test(send_flags, tsendmsg_inject_copies_at_once)
{
	inject_copies_at_once(true);
}

/* FI_INJECT_COMPLETE and FI_TRANSMIT_COMPLETE: once the send's completion
 * is read the buffer is the application's again. It is overwritten then,
 * and the receiver must still get the data as sent: with the receive
 * posted first (eager, and rendezvous whose completion waits for the
 * receiver's read), and with the message waiting unexpected at eager
 * sizes, whose send completes before any receive is posted. */
static void reuse_after_completion(bool tagged, uint64_t flag)
{
	size_t eager = p[0].d.info->tx_attr->inject_size;
	size_t sizes[] = {0, 1, 100, eager, eager + 1, 65536, 1 << 20};
	size_t big = 1 << 20;
	uint8_t *src = dp_alloc(big), *dst = dp_alloc(big);
	struct fi_cq_tagged_entry e;
	int sctx, rctx;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len = sizes[i];

		dp_fill(src, len, (unsigned)i + 3);
		DP_POST(p, 2, recv_any(tagged, dst, big, &rctx));
		DP_POST(p, 2,
			send_flags(tagged, src, len, &sctx,
				   flag | FI_COMPLETION));
		dp_expect(p[0].txcq, &e, NULL, p, 2);
		cr_assert_eq(e.op_context, &sctx);
		memset(src, 0xee, big);
		dp_expect(p[1].rxcq, &e, NULL, p, 2);
		cr_assert_eq(e.len, len);
		cr_assert(dp_check(dst, len, (unsigned)i + 3),
			  "%zu bytes, receive posted first", len);
		if (len > eager)
			continue;
		dp_fill(src, len, (unsigned)i + 5);
		DP_POST(p, 2,
			send_flags(tagged, src, len, &sctx,
				   flag | FI_COMPLETION));
		dp_expect(p[0].txcq, &e, NULL, p, 2);
		memset(src, 0xee, big);
		DP_POST(p, 2, recv_any(tagged, dst, big, &rctx));
		dp_expect(p[1].rxcq, &e, NULL, p, 2);
		cr_assert_eq(e.len, len);
		cr_assert(dp_check(dst, len, (unsigned)i + 5),
			  "%zu bytes, unexpected", len);
	}
	free(src);
	free(dst);
}

Test(send_flags, sendmsg_inject_complete_frees_the_buffer)
{
	reuse_after_completion(false, FI_INJECT_COMPLETE);
}

Test(send_flags, tsendmsg_inject_complete_frees_the_buffer)
{
	reuse_after_completion(true, FI_INJECT_COMPLETE);
}

Test(send_flags, sendmsg_transmit_complete_frees_the_buffer)
{
	reuse_after_completion(false, FI_TRANSMIT_COMPLETE);
}

Test(send_flags, tsendmsg_transmit_complete_frees_the_buffer)
{
	reuse_after_completion(true, FI_TRANSMIT_COMPLETE);
}

/* FI_DELIVERY_COMPLETE on fi_sendmsg or fi_tsendmsg: no completion while
 * the message waits unexpected (a plain eager send completes then), and
 * when it comes the receiver's buffer holds the data. */
static void delivery_complete_waits_for_the_receive(bool tagged)
{
	size_t sizes[] = {0, 1, 100, 8192, 65536};
	uint8_t *src = dp_alloc(65536), *dst = dp_alloc(65536);
	struct fi_cq_tagged_entry e;
	int sctx, rctx;

	DP_POST(p, 2, send_flags(tagged, src, 10, &sctx, FI_COMPLETION));
	dp_expect(p[0].txcq, &e, NULL, p, 2); /* unexpected, yet complete */
	DP_POST(p, 2, recv_any(tagged, dst, 65536, &rctx));
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		dp_fill(src, sizes[i], (unsigned)i + 7);
		DP_POST(p, 2,
			send_flags(tagged, src, sizes[i], &sctx,
				   FI_DELIVERY_COMPLETE | FI_COMPLETION));
		dp_expect_none(p[0].txcq, p, 2, 300);
		memset(dst, 0, 65536);
		DP_POST(p, 2, recv_any(tagged, dst, 65536, &rctx));
		/* The send's completion first: the data must be there by
		 * then, whether or not the receiver read its CQ. */
		dp_expect(p[0].txcq, &e, NULL, p, 2);
		cr_assert_eq(e.op_context, &sctx);
		cr_assert(dp_check(dst, sizes[i], (unsigned)i + 7),
			  "%zu bytes in place at the send's completion",
			  sizes[i]);
		dp_expect(p[1].rxcq, &e, NULL, p, 2);
		cr_assert_eq(e.op_context, &rctx);
		cr_assert_eq(e.len, sizes[i]);
	}
	free(src);
	free(dst);
}

Test(send_flags, sendmsg_delivery_complete_waits_for_the_receive)
{
	delivery_complete_waits_for_the_receive(false);
}

Test(send_flags, tsendmsg_delivery_complete_waits_for_the_receive)
{
	delivery_complete_waits_for_the_receive(true);
}
