/* SPDX-License-Identifier: BSD-2-Clause */
/* Untagged messages over rxe: eager and rendezvous sizes, iovecs, inject,
 * remote CQ data, unexpected arrival, truncation, multi-receive, cancel,
 * selective completion and counters. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "dp_helpers.h"

static struct dp_ep *const p = dp_pair_eps;

TestSuite(msg, .init = dp_pair_setup, .fini = dp_pair_teardown, .timeout = 240);

/* Sends len bytes a -> b, receive posted first or after, and checks the
 * completions and the data. */
static void exchange(size_t len, bool recv_first, bool use_desc)
{
	uint8_t *src = dp_alloc(len), *dst = dp_alloc(len + 64);
	struct fid_mr *smr = dp_reg(&p[0], src, len, FI_SEND);
	struct fid_mr *rmr = dp_reg(&p[1], dst, len + 64, FI_RECV);
	void *sdesc = use_desc ? fi_mr_desc(smr) : NULL;
	void *rdesc = use_desc ? fi_mr_desc(rmr) : NULL;
	struct fi_cq_tagged_entry e;
	fi_addr_t from = 0;
	int sctx, rctx;

	dp_fill(src, len, (unsigned)len);
	if (recv_first)
		DP_POST(p, 2,
			fi_recv(p[1].ep, dst, len + 64, rdesc, FI_ADDR_UNSPEC,
				&rctx));
	DP_POST(p, 2, fi_send(p[0].ep, src, len, sdesc, p[0].peer[1], &sctx));
	if (!recv_first) {
		/* Let it arrive unexpected first. */
		dp_expect_none(p[1].rxcq, p, 2, 50);
		DP_POST(p, 2,
			fi_recv(p[1].ep, dst, len + 64, rdesc, FI_ADDR_UNSPEC,
				&rctx));
	}
	dp_expect(p[1].rxcq, &e, &from, p, 2);
	cr_assert_eq(e.op_context, &rctx);
	cr_assert_eq(e.flags, FI_RECV | FI_MSG);
	cr_assert_eq(e.len, len);
	cr_assert_eq(from, p[1].peer[0], "source address (FI_SOURCE)");
	cr_assert(dp_check(dst, len, (unsigned)len), "data of %zu bytes", len);
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	cr_assert_eq(e.op_context, &sctx);
	cr_assert_eq(e.flags, FI_SEND | FI_MSG);
	fi_close(&smr->fid);
	fi_close(&rmr->fid);
	free(src);
	free(dst);
}

Test(msg, eager_sizes)
{
	static const size_t sizes[] = {0, 1, 63, 4096, 8192};

	for (size_t i = 0; i < 5; i++)
		exchange(sizes[i], true, true);
}

Test(msg, rendezvous_sizes)
{
	static const size_t sizes[] = {8193, 65536, 1 << 20};

	for (size_t i = 0; i < 3; i++)
		exchange(sizes[i], true, true);
}

Test(msg, larger_than_the_ports_message_limit)
{
	/* rxe takes 8 MiB per work request: this one is read in pieces. */
	exchange((16u << 20) + 12345, true, true);
}

/* 256 MiB, 1 GiB with GDRFAB_TEST_LONG=1 (a minute under TCG and the
 * sanitizers): every 4 KiB page carries its index at both ends (writing
 * and checking every byte would take minutes under emulation). Either
 * is read in 32 or 128 pieces of rxe's 8 MiB. */
Test(msg, a_large_message_every_page_checked, .timeout = 900)
{
	size_t len = (size_t)1 << (getenv("GDRFAB_TEST_LONG") ? 30 : 28),
	       pages = len / 4096;
	uint8_t *src = dp_alloc(len), *dst = dp_alloc(len);
	struct fid_mr *smr = dp_reg(&p[0], src, len, FI_SEND);
	struct fid_mr *rmr = dp_reg(&p[1], dst, len, FI_RECV);
	struct fi_cq_tagged_entry e;

	for (size_t i = 0; i < pages; i++) {
		memcpy(src + i * 4096, &i, sizeof(i));
		memcpy(src + i * 4096 + 4096 - sizeof(i), &i, sizeof(i));
	}
	DP_POST(p, 2,
		fi_trecv(p[1].ep, dst, len, fi_mr_desc(rmr), FI_ADDR_UNSPEC, 1,
			 0, NULL));
	DP_POST(p, 2,
		fi_tsend(p[0].ep, src, len, fi_mr_desc(smr), p[0].peer[1], 1,
			 NULL));
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	cr_assert_eq(e.len, len);
	for (size_t i = 0; i < pages; i++) {
		size_t head, tail;

		memcpy(&head, dst + i * 4096, sizeof(head));
		memcpy(&tail, dst + i * 4096 + 4096 - sizeof(tail),
		       sizeof(tail));
		cr_assert(head == i && tail == i, "page %zu holds %zu/%zu", i,
			  head, tail);
	}
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	fi_close(&smr->fid);
	fi_close(&rmr->fid);
	free(src);
	free(dst);
}

Test(msg, unexpected_eager_and_rendezvous)
{
	exchange(100, false, true);
	exchange(300000, false, true);
}

Test(msg, buffers_without_descriptors)
{
	exchange(100, true, false);
	exchange(200000, true, false);
	exchange(200000, false, false);
}

Test(msg, iovecs_both_sides)
{
	static const size_t sizes[] = {1000, 100000};

	for (size_t s = 0; s < 2; s++) {
		size_t part = sizes[s] / 4;
		uint8_t *src = dp_alloc(sizes[s]), *dst = dp_alloc(sizes[s]);
		struct iovec siov[4], riov[4];
		struct fi_cq_tagged_entry e;

		dp_fill(src, sizes[s], 9);
		for (int i = 0; i < 4; i++) {
			/* Unequal splits on each side. */
			siov[i].iov_base = src + i * part;
			siov[i].iov_len = i == 3 ? sizes[s] - 3 * part : part;
			riov[i].iov_base =
				dst + (i ? part / 2 + (i - 1) * part : 0);
			riov[i].iov_len =
				i == 0	 ? part / 2
				: i == 3 ? sizes[s] - part / 2 - 2 * part
					 : part;
		}
		DP_POST(p, 2,
			fi_recvv(p[1].ep, riov, NULL, 4, FI_ADDR_UNSPEC, NULL));
		DP_POST(p, 2,
			fi_sendv(p[0].ep, siov, NULL, 4, p[0].peer[1], NULL));
		dp_expect(p[1].rxcq, &e, NULL, p, 2);
		cr_assert_eq(e.len, sizes[s]);
		cr_assert(dp_check(dst, sizes[s], 9));
		dp_expect(p[0].txcq, &e, NULL, p, 2);
		free(src);
		free(dst);
	}
}

Test(msg, inject_makes_no_completion_and_frees_the_buffer)
{
	char buf[64], dst[64];
	struct fi_cq_tagged_entry e;

	strcpy(buf, "injected");
	DP_POST(p, 2,
		fi_recv(p[1].ep, dst, sizeof(dst), NULL, FI_ADDR_UNSPEC, NULL));
	DP_POST(p, 2, fi_inject(p[0].ep, buf, 9, p[0].peer[1]));
	memset(buf, 'x', sizeof(buf)); /* reusable at once */
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	cr_assert_str_eq(dst, "injected");
	dp_expect_none(p[0].txcq, p, 2, 50);
	cr_assert_eq(fi_inject(p[0].ep, buf, 1 << 20, p[0].peer[1]),
		     -FI_EMSGSIZE);
}

Test(msg, remote_cq_data_arrives_with_the_message)
{
	char src[32] = "with data", dst[32];
	uint8_t *big = dp_alloc(100000), *bigdst = dp_alloc(100000);
	struct fi_cq_tagged_entry e;

	DP_POST(p, 2,
		fi_recv(p[1].ep, dst, sizeof(dst), NULL, FI_ADDR_UNSPEC, NULL));
	DP_POST(p, 2,
		fi_senddata(p[0].ep, src, 10, NULL, 0xdeadbeef, p[0].peer[1],
			    NULL));
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	cr_assert_eq(e.flags, FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA);
	cr_assert_eq(e.data, 0xdeadbeef);
	DP_POST(p, 2,
		fi_recv(p[1].ep, bigdst, 100000, NULL, FI_ADDR_UNSPEC, NULL));
	DP_POST(p, 2,
		fi_senddata(p[0].ep, big, 100000, NULL, 0x1234, p[0].peer[1],
			    NULL));
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	cr_assert_eq(e.data, 0x1234, "rendezvous carries the data too");
	cr_assert(e.flags & FI_REMOTE_CQ_DATA);
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	cr_assert_eq(e.flags, FI_SEND | FI_MSG, "no CQ data flag for sender");
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	free(big);
	free(bigdst);
}

static void truncated(size_t len)
{
	uint8_t *src = dp_alloc(len), *dst = dp_alloc(len);
	struct fi_cq_err_entry err;
	struct fi_cq_tagged_entry e;
	int rctx;

	dp_fill(src, len, 3);
	DP_POST(p, 2,
		fi_recv(p[1].ep, dst, len / 2, NULL, FI_ADDR_UNSPEC, &rctx));
	DP_POST(p, 2, fi_send(p[0].ep, src, len, NULL, p[0].peer[1], NULL));
	cr_assert_eq(dp_wait(p[1].rxcq, &e, NULL, &err, p, 2, DP_TIMEOUT_MS),
		     -FI_EAVAIL);
	cr_assert_eq(err.err, FI_ETRUNC);
	cr_assert_eq(err.op_context, &rctx);
	cr_assert_eq(err.len, len / 2);
	cr_assert_eq(err.olen, len - len / 2);
	cr_assert(dp_check(dst, len / 2, 3), "what fits is delivered");
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	free(src);
	free(dst);
}

Test(msg, truncation_reports_etrunc_with_lengths)
{
	truncated(1000);
	truncated(200000);
}

Test(msg, multi_receive_buffer_takes_several_messages)
{
	size_t buflen = 4096;
	uint8_t *buf = dp_alloc(buflen);
	struct iovec iov = {.iov_base = buf, .iov_len = buflen};
	struct fi_msg msg = {.msg_iov = &iov,
			     .iov_count = 1,
			     .addr = FI_ADDR_UNSPEC,
			     .context = &iov};
	struct fi_cq_tagged_entry e;
	size_t min = 1200;
	char one[1000];
	int got = 0;
	bool released = false;

	cr_assert_eq(fi_setopt(&p[1].ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)),
		     0);
	DP_POST(p, 2, fi_recvmsg(p[1].ep, &msg, FI_MULTI_RECV));
	for (int i = 0; i < 4; i++) {
		memset(one, 'a' + i, sizeof(one));
		DP_POST(p, 2,
			fi_send(p[0].ep, one, sizeof(one), NULL, p[0].peer[1],
				NULL));
	}
	/* After 3 messages fewer than 1200 of the 4096 bytes remain: the
	 * buffer is released and the 4th waits for a new one. */
	while (got < 3) {
		dp_expect(p[1].rxcq, &e, NULL, p, 2);
		cr_assert_eq(e.op_context, &iov);
		cr_assert_eq(e.len, 1000);
		cr_assert_eq(e.buf, buf + got * 1000, "message %d in place",
			     got);
		cr_assert_eq(((uint8_t *)e.buf)[999], 'a' + got);
		released = e.flags & FI_MULTI_RECV;
		got++;
	}
	cr_assert(released, "the buffer is released with FI_MULTI_RECV");
	dp_expect_none(p[1].rxcq, p, 2, 50);
	DP_POST(p, 2, fi_recvmsg(p[1].ep, &msg, FI_MULTI_RECV));
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	cr_assert_eq(((uint8_t *)e.buf)[0], 'd');
	for (int i = 0; i < 4; i++)
		dp_expect(p[0].txcq, &e, NULL, p, 2);
	free(buf);
}

Test(msg, cancel_a_posted_receive)
{
	char buf[16];
	int ctx;
	struct fi_cq_err_entry err;

	DP_POST(p, 2,
		fi_recv(p[1].ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, &ctx));
	cr_assert_eq(fi_cancel(&p[1].ep->fid, &ctx), 0);
	cr_assert_eq(dp_wait(p[1].rxcq, NULL, NULL, &err, p, 2, 1000),
		     -FI_EAVAIL);
	cr_assert_eq(err.err, FI_ECANCELED);
	cr_assert_eq(err.op_context, &ctx);
	cr_assert_eq(fi_cancel(&p[1].ep->fid, &ctx), -FI_ENOENT);
}

Test(msg, messages_arrive_in_send_order)
{
	/* Eager and rendezvous interleaved: FI_ORDER_SAS. */
	enum { N = 12 };
	uint8_t *bufs[N], *dsts[N];
	struct fi_cq_tagged_entry e;

	for (int i = 0; i < N; i++) {
		size_t len = (i % 3 == 1) ? 50000 : 64;

		bufs[i] = dp_alloc(len);
		dsts[i] = dp_alloc(50000);
		dp_fill(bufs[i], len, (unsigned)i);
		DP_POST(p, 2,
			fi_send(p[0].ep, bufs[i], len, NULL, p[0].peer[1],
				NULL));
	}
	for (int i = 0; i < N; i++)
		DP_POST(p, 2,
			fi_recv(p[1].ep, dsts[i], 50000, NULL, FI_ADDR_UNSPEC,
				dsts[i]));
	/* Receive i must hold message i (completions of rendezvous
	 * messages may come later than those of eager ones). */
	for (int k = 0; k < N; k++) {
		int i;

		dp_expect(p[1].rxcq, &e, NULL, p, 2);
		for (i = 0; i < N && e.op_context != dsts[i]; i++)
			;
		cr_assert_lt(i, N);
		cr_assert_eq(e.len, (i % 3 == 1) ? 50000u : 64u,
			     "receive %d matched the wrong message", i);
		cr_assert(dp_check(dsts[i], e.len, (unsigned)i),
			  "receive %d holds another message", i);
	}
	for (int i = 0; i < N; i++) {
		dp_expect(p[0].txcq, &e, NULL, p, 2);
		free(bufs[i]);
		free(dsts[i]);
	}
}

Test(msg, endpoint_sends_to_itself)
{
	char src[8] = "self", dst[8];
	struct fi_cq_tagged_entry e;
	fi_addr_t from;

	DP_POST(p, 2,
		fi_recv(p[0].ep, dst, sizeof(dst), NULL, FI_ADDR_UNSPEC, NULL));
	DP_POST(p, 2, fi_send(p[0].ep, src, 5, NULL, p[0].peer[0], NULL));
	dp_expect(p[0].rxcq, &e, &from, p, 2);
	cr_assert_str_eq(dst, "self");
	cr_assert_eq(from, p[0].peer[0]);
	dp_expect(p[0].txcq, &e, NULL, p, 2);
}

Test(msg, bad_arguments)
{
	char buf[8] = "";
	struct iovec iov[5] = {
		{buf, 1}, {buf, 1}, {buf, 1}, {buf, 1}, {buf, 1}};

	cr_assert_eq(fi_send(p[0].ep, buf, 1, NULL, 77, NULL), -FI_EINVAL,
		     "fi_addr not in the AV");
	cr_assert_eq(fi_sendv(p[0].ep, iov, NULL, 5, p[0].peer[1], NULL),
		     -FI_EINVAL, "more iovecs than iov_limit");
	cr_assert_eq(fi_send(p[0].ep, NULL, 10, NULL, p[0].peer[1], NULL),
		     -FI_EINVAL);
	cr_assert_eq(fi_send(p[0].ep, buf, (size_t)1 << 40, NULL, p[0].peer[1],
			     NULL),
		     -FI_EMSGSIZE);
}

TestSuite(msg_selective, .timeout = 120);

Test(msg_selective, only_flagged_operations_complete_but_all_count)
{
	struct dp_opts o = {.tx_cq_flags = FI_SELECTIVE_COMPLETION,
			    .counters = true};
	struct dp_ep q[2];
	char buf[16] = "sel", dst[2][16];
	struct iovec iov = {.iov_base = buf, .iov_len = 4};
	struct fi_msg msg = {.msg_iov = &iov, .iov_count = 1, .context = buf};
	struct fi_cq_tagged_entry e;

	require_vm();
	dp_pair(&q[0], &q[1], &o);
	msg.addr = q[0].peer[1];
	DP_POST(q, 2, fi_recv(q[1].ep, dst[0], 16, NULL, FI_ADDR_UNSPEC, NULL));
	DP_POST(q, 2, fi_recv(q[1].ep, dst[1], 16, NULL, FI_ADDR_UNSPEC, NULL));
	DP_POST(q, 2, fi_sendmsg(q[0].ep, &msg, 0));
	DP_POST(q, 2, fi_sendmsg(q[0].ep, &msg, FI_COMPLETION));
	dp_expect(q[1].rxcq, &e, NULL, q, 2);
	dp_expect(q[1].rxcq, &e, NULL, q, 2);
	dp_expect(q[0].txcq, &e, NULL, q, 2);
	cr_assert_eq(e.op_context, buf);
	dp_expect_none(q[0].txcq, q, 2, 50);
	cr_assert_eq(fi_cntr_read(q[0].txcntr), 2);
	cr_assert_eq(fi_cntr_read(q[1].rxcntr), 2);
	cr_assert_eq(fi_cntr_wait(q[1].rxcntr, 2, 1000), 0);
	dp_close(&q[1]);
	dp_close(&q[0]);
}

/* FI_INJECT in fi_sendmsg (fi_msg(3)): the buffer may be reused as soon as
 * the call returns, even while the connection is still being made; the
 * completion is still reported. */
Test(msg, sendmsg_inject_copies_the_buffer_at_once)
{
	uint8_t buf[100], dst[100];
	struct fi_cq_tagged_entry e;
	int sctx, rctx;
	uint8_t *big = dp_alloc(p[0].d.info->tx_attr->inject_size + 1);

	dp_fill(buf, sizeof(buf), 7);
	DP_POST(p, 2,
		fi_recv(p[1].ep, dst, sizeof(dst), NULL, FI_ADDR_UNSPEC,
			&rctx));
	DP_POST(p, 2,
		dp_sendmsg(p, buf, sizeof(buf), &sctx,
			   FI_INJECT | FI_COMPLETION));
	memset(buf, 0xee, sizeof(buf)); /* before any progress */
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	cr_assert(dp_check(dst, sizeof(dst), 7), "the data as it was");
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	cr_assert_eq(e.op_context, &sctx);
	cr_assert_eq(dp_sendmsg(p, big, p[0].d.info->tx_attr->inject_size + 1,
				&sctx, FI_INJECT),
		     -FI_EMSGSIZE);
	free(big);
}

/* Lengths are checked before they are added: iovecs whose sum wraps
 * around once looked like a short message (and were copied with a
 * negative size). fi_inject of nothing from NULL is a 0-byte message. */
Test(msg, iov_lengths_that_wrap_are_refused)
{
	void *base = (void *)(uintptr_t)0x10000;
	struct iovec wrap[2] = {{base, 1ULL << 63}, {base, 1ULL << 63}};
	struct iovec past_end[1] = {{(void *)(UINTPTR_MAX - 16), 64}};
	struct fi_cq_tagged_entry e;
	uint8_t dst[8];

	cr_assert_eq(fi_sendv(p[0].ep, wrap, NULL, 2, p[0].peer[1], NULL),
		     -FI_EMSGSIZE);
	cr_assert_eq(fi_recvv(p[1].ep, wrap, NULL, 2, FI_ADDR_UNSPEC, NULL),
		     -FI_EMSGSIZE);
	cr_assert_eq(fi_sendv(p[0].ep, past_end, NULL, 1, p[0].peer[1], NULL),
		     -FI_EINVAL);
	DP_POST(p, 2,
		fi_recv(p[1].ep, dst, sizeof(dst), NULL, FI_ADDR_UNSPEC, dst));
	DP_POST(p, 2, fi_inject(p[0].ep, NULL, 0, p[0].peer[1]));
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	cr_assert_eq(e.len, 0);
}
