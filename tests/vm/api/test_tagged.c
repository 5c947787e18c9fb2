/* SPDX-License-Identifier: BSD-2-Clause */
/* Tagged messages: tag and ignore bits, directed and any-source receives,
 * unexpected messages, FI_PEEK / FI_CLAIM / FI_DISCARD. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "dp_helpers.h"

/* Three endpoints: 0 and 1 on rxe0/rxe1 send to 2 (on rxe1). */
static struct dp_ep p[3];

static void setup(void)
{
	require_vm();
	dp_open(&p[0], "rxe0", NULL);
	dp_open(&p[1], "rxe1", NULL);
	dp_open(&p[2], "rxe1", NULL);
	dp_connect_all(p, 3);
}

static void teardown(void)
{
	for (int i = 2; i >= 0; i--)
		dp_close(&p[i]);
}

TestSuite(tagged, .init = setup, .fini = teardown, .timeout = 240);

/* A receive at p[2] into buf (32 bytes), which is also its context. */
static void trecv(char *buf, uint64_t tag, uint64_t ignore)
{
	DP_POST(p, 3,
		fi_trecv(p[2].ep, buf, 32, NULL, FI_ADDR_UNSPEC, tag, ignore,
			 buf));
}

/* The send completions of n messages from p[0]. */
static void reap_sends(int n)
{
	struct fi_cq_tagged_entry e;

	for (int i = 0; i < n; i++)
		dp_expect(p[0].txcq, &e, NULL, p, 3);
}

static void tsend(int from, const char *text, uint64_t tag)
{
	DP_POST(p, 3,
		fi_tsend(p[from].ep, text, strlen(text) + 1, NULL,
			 p[from].peer[2], tag, NULL));
}

Test(tagged, tag_and_ignore_bits_select_the_message)
{
	char a[32], b[32], c[32];
	struct fi_cq_tagged_entry e;

	trecv(a, 0x20, 0);
	trecv(b, 0x1000, 0xff);
	trecv(c, 0x10, 0);
	tsend(0, "ten", 0x10);
	tsend(0, "10ab", 0x10ab); /* matches 0x1000 with low byte ignored */
	tsend(0, "twenty", 0x20);
	for (int i = 0; i < 3; i++) {
		dp_expect(p[2].rxcq, &e, NULL, p, 3);
		cr_assert(e.flags & FI_TAGGED);
		if (e.op_context == a)
			cr_assert(!strcmp(a, "twenty") && e.tag == 0x20);
		else if (e.op_context == b)
			cr_assert(!strcmp(b, "10ab") && e.tag == 0x10ab);
		else
			cr_assert(!strcmp(c, "ten") && e.tag == 0x10);
	}
	reap_sends(3);
}

/* All 64 bits are tag bits (the format advertised): Open MPI's mtl puts
 * its CID in the top bits and MPICH its protocol bits at 54-55. */
Test(tagged, the_top_tag_bits_match_too)
{
	char a[32], b[32];
	struct fi_cq_tagged_entry e;
	const uint64_t top = 0x8000000000000000ULL,
		       high = 0x00C0000000000001ULL;

	trecv(a, top | 5, 0);
	trecv(b, high, 0);
	tsend(0, "low", 5); /* matches neither: stays unexpected */
	tsend(0, "high", high);
	tsend(0, "top", top | 5);
	for (int i = 0; i < 2; i++) {
		dp_expect(p[2].rxcq, &e, NULL, p, 3);
		if (e.op_context == a)
			cr_assert(!strcmp(a, "top") && e.tag == (top | 5));
		else
			cr_assert(!strcmp(b, "high") && e.tag == high);
	}
	trecv(a, 5, 0);
	dp_expect(p[2].rxcq, &e, NULL, p, 3);
	cr_assert(!strcmp(a, "low") && e.tag == 5);
	reap_sends(3);
}

Test(tagged, directed_receive_takes_only_its_source)
{
	char from1[16], any[16];
	struct fi_cq_tagged_entry e;
	fi_addr_t src;

	/* Endpoint 0 sends first, but the directed receive wants 1. */
	DP_POST(p, 3,
		fi_trecv(p[2].ep, from1, 16, NULL, p[2].peer[1], 7, 0, from1));
	tsend(0, "from0", 7);
	dp_expect_none(p[2].rxcq, p, 3, 100);
	tsend(1, "from1", 7);
	dp_expect(p[2].rxcq, &e, &src, p, 3);
	cr_assert_eq(e.op_context, from1);
	cr_assert_str_eq(from1, "from1");
	cr_assert_eq(src, p[2].peer[1]);
	/* FI_ADDR_UNSPEC takes the one still waiting. */
	DP_POST(p, 3,
		fi_trecv(p[2].ep, any, 16, NULL, FI_ADDR_UNSPEC, 7, 0, any));
	dp_expect(p[2].rxcq, &e, &src, p, 3);
	cr_assert_str_eq(any, "from0");
	cr_assert_eq(src, p[2].peer[0]);
	dp_expect(p[0].txcq, &e, NULL, p, 3);
	dp_expect(p[1].txcq, &e, NULL, p, 3);
}

Test(tagged, unexpected_rendezvous_is_matched_later)
{
	size_t len = 300000;
	uint8_t *src = dp_alloc(len), *dst = dp_alloc(len);
	struct fi_cq_tagged_entry e;

	dp_fill(src, len, 5);
	DP_POST(p, 3,
		fi_tsend(p[0].ep, src, len, NULL, p[0].peer[2], 99, NULL));
	dp_expect_none(p[2].rxcq, p, 3, 50);
	DP_POST(p, 3,
		fi_trecv(p[2].ep, dst, len, NULL, FI_ADDR_UNSPEC, 99, 0, NULL));
	dp_expect(p[2].rxcq, &e, NULL, p, 3);
	cr_assert_eq(e.len, len);
	cr_assert(dp_check(dst, len, 5));
	dp_expect(p[0].txcq, &e, NULL, p, 3);
	free(src);
	free(dst);
}

static ssize_t peek(uint64_t tag, uint64_t flags, struct fi_context *ctx,
		    void *buf, size_t len)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct fi_msg_tagged msg = {.msg_iov = buf ? &iov : NULL,
				    .iov_count = buf ? 1 : 0,
				    .addr = FI_ADDR_UNSPEC,
				    .tag = tag,
				    .context = ctx};

	return fi_trecvmsg(p[2].ep, &msg, flags);
}

Test(tagged, peek_claim_and_discard)
{
	struct fi_context ctx1, ctx2, ctx3;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	char buf[32];

	/* Nothing there yet: FI_ENOMSG. */
	cr_assert_eq(peek(5, FI_PEEK, &ctx1, NULL, 0), 0);
	cr_assert_eq(dp_wait(p[2].rxcq, &e, NULL, &err, p, 3, 1000),
		     -FI_EAVAIL);
	cr_assert_eq(err.err, FI_ENOMSG);
	tsend(0, "claim me", 5);
	tsend(0, "drop me", 6);
	/* Peek until it has arrived: len and tag, data stays queued. */
	for (;;) {
		dp_progress(p, 3);
		cr_assert_eq(peek(5, FI_PEEK, &ctx1, NULL, 0), 0);
		if (dp_wait(p[2].rxcq, &e, NULL, &err, p, 3, 1000) == 1)
			break;
		cr_assert_eq(err.err, FI_ENOMSG);
	}
	cr_assert_eq(e.len, 9);
	cr_assert_eq(e.tag, 5);
	/* Claim it, then receive it by its context. */
	cr_assert_eq(peek(5, FI_PEEK | FI_CLAIM, &ctx2, NULL, 0), 0);
	dp_expect(p[2].rxcq, &e, NULL, p, 3);
	cr_assert_eq(e.op_context, &ctx2);
	/* A claimed message no longer matches an ordinary receive. */
	cr_assert_eq(peek(5, FI_PEEK, &ctx1, NULL, 0), 0);
	cr_assert_eq(dp_wait(p[2].rxcq, &e, NULL, &err, p, 3, 1000),
		     -FI_EAVAIL);
	cr_assert_eq(peek(5, FI_CLAIM, &ctx2, buf, sizeof(buf)), 0);
	dp_expect(p[2].rxcq, &e, NULL, p, 3);
	cr_assert_str_eq(buf, "claim me");
	/* FI_CLAIM with a context that claimed nothing is refused. */
	ctx3.internal[0] = &ctx3;
	cr_assert_eq(peek(5, FI_CLAIM, &ctx3, buf, sizeof(buf)), -FI_EINVAL);
	/* Peek and discard the second one. */
	for (;;) {
		dp_progress(p, 3);
		cr_assert_eq(peek(6, FI_PEEK | FI_DISCARD, &ctx1, NULL, 0), 0);
		if (dp_wait(p[2].rxcq, &e, NULL, &err, p, 3, 1000) == 1)
			break;
	}
	cr_assert_eq(peek(6, FI_PEEK, &ctx1, NULL, 0), 0);
	cr_assert_eq(dp_wait(p[2].rxcq, &e, NULL, &err, p, 3, 1000), -FI_EAVAIL,
		     "discarded");
	cr_assert_eq(err.err, FI_ENOMSG);
	dp_expect(p[0].txcq, &e, NULL, p, 3);
	dp_expect(p[0].txcq, &e, NULL, p, 3);
}

Test(tagged, tagged_and_untagged_do_not_mix)
{
	char t[16], u[16];
	struct fi_cq_tagged_entry e;

	DP_POST(p, 3, fi_recv(p[2].ep, u, 16, NULL, FI_ADDR_UNSPEC, u));
	tsend(0, "tagged", 0);
	dp_expect_none(p[2].rxcq, p, 3, 100);
	DP_POST(p, 3, fi_trecv(p[2].ep, t, 16, NULL, FI_ADDR_UNSPEC, 0, 0, t));
	dp_expect(p[2].rxcq, &e, NULL, p, 3);
	cr_assert_eq(e.op_context, t);
	cr_assert_eq(fi_cancel(&p[2].ep->fid, u), 0);
	dp_expect(p[0].txcq, &e, NULL, p, 3);
}
