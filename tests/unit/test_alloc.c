/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Issue 34: no malloc or free per message. After a warm-up, tagged
 * messages of 8 B, 1 KiB, the eager limit, a segmented size between the
 * eager limit and seg_max and a rendezvous (seg_max + 1), unexpected
 * (sent and carried before their receives are posted) and expected,
 * from and into registered buffers, cost the provider no heap allocation
 * and no free on either side, counted on the test's thread across the
 * sends, the receives and every progress call (alloc_count.h); their
 * bytes arrive intact and in the order sent.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_count.h"
#include "fake_verbs.h"
#include "gdrfab_params.h"
#include "proto_fixture.h"

#define A 0
#define B 1
/* Messages per batch: a send and a receive completion each, within the
 * fixture's PF_MAX_CQE per side. */
#define N 16

static struct pf f;

static void *ctx(int i)
{
	return (void *)(uintptr_t)(0xa110c000 + i);
}

/* One batch of N messages of len bytes, A to B, all of one tag:
 * unexpected (every send carried before the first receive is posted) or
 * expected. Returns what the provider allocated and freed meanwhile;
 * checks afterwards (no assertion while counting: Criterion's own
 * allocations are not the provider's) that each receive k got message k
 * whole. */
static struct alloc_counts batch(uint8_t *out[N], uint8_t *in[N],
				 void *odesc[N], void *idesc[N], size_t len,
				 bool unexpected, unsigned seed)
{
	struct alloc_counts c;
	int posted = 0, sent = 0;
	bool done;

	for (int k = 0; k < N; k++) {
		pf_fill(out[k], len, seed + (unsigned)k);
		memset(in[k], 0, len + 1);
	}
	f.s[A].n_ok = f.s[B].n_ok = 0;
	alloc_count_start();
	for (int k = 0; k < N && !unexpected; k++)
		posted += !fi_trecv(f.s[B].ep, in[k], len, idesc[k],
				    f.s[B].peer, 0xa1, 0, ctx(k));
	for (int k = 0; k < N; k++)
		sent += !fi_tsend(f.s[A].ep, out[k], len, odesc[k], f.s[A].peer,
				  0xa1, ctx(100 + k));
	pf_drive(&f, 0);
	for (int k = 0; k < N && unexpected; k++)
		posted += !fi_trecv(f.s[B].ep, in[k], len, idesc[k],
				    f.s[B].peer, 0xa1, 0, ctx(k));
	done = pf_drive_until(&f, B, N, 2000) && pf_drive_until(&f, A, N, 2000);
	c = alloc_count_stop();
	cr_assert_eq(posted, N, "%zu bytes: receives posted", len);
	cr_assert_eq(sent, N, "%zu bytes: sends posted", len);
	cr_assert(done, "%zu bytes: every message and send completion", len);
	cr_assert_eq(f.s[A].n_err + f.s[B].n_err, 0);
	for (int k = 0; k < N; k++) {
		cr_assert_eq(f.s[B].ok[k].op_context, ctx(k),
			     "%zu bytes: receive %d in order", len, k);
		cr_assert_eq(f.s[B].ok[k].len, len);
		cr_assert(pf_check(in[k], len, seed + (unsigned)k),
			  "%zu bytes: message %d intact, in its order", len, k);
		cr_assert_eq(in[k][len], 0, "nothing past the message");
	}
	return c;
}

Test(alloc, no_heap_per_message_in_steady_state, .timeout = 30)
{
	size_t e = gdrfab_params.eager_max, s = gdrfab_params.seg_max;
	size_t sizes[] = {8, 1024, e, e + e / 2, s + 1};
	uint8_t *out[N], *in[N];
	struct fid_mr *omr[N], *imr[N];
	void *odesc[N], *idesc[N];
	size_t max = sizes[4];

	cr_assert_gt(s, e + e / 2, "a segmented size below seg_max");
	pf_open(&f);
	pf_connect(&f);
	for (int k = 0; k < N; k++) {
		out[k] = malloc(max);
		in[k] = malloc(max + 1);
		cr_assert(out[k] && in[k]);
		/* Registered, as FI_MR_LOCAL asks: a buffer without a
		 * descriptor is registered per message when the fixture's
		 * registration cache is off. */
		omr[k] = pf_reg(&f, out[k], max, 0);
		imr[k] = pf_reg(&f, in[k], max + 1, 0);
		odesc[k] = fi_mr_desc(omr[k]);
		idesc[k] = fi_mr_desc(imr[k]);
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (int unexp = 0; unexp < 2; unexp++) {
			struct alloc_counts warm, c;

			/* The first batch may grow the pools, not the next. */
			warm = batch(out, in, odesc, idesc, sizes[i], unexp, 1);
			c = batch(out, in, odesc, idesc, sizes[i], unexp, 2);
			cr_log_info(
				"%zu bytes, %s: %ld allocations and %ld frees in the warm-up batch, %ld and %ld in the next (%d messages each)\n",
				sizes[i], unexp ? "unexpected" : "expected",
				warm.allocs, warm.frees, c.allocs, c.frees, N);
			cr_expect_eq(
				c.allocs, 0,
				"%zu bytes, %s: %ld allocations for %d messages",
				sizes[i], unexp ? "unexpected" : "expected",
				c.allocs, N);
			cr_expect_eq(c.frees, 0,
				     "%zu bytes, %s: %ld frees for %d messages",
				     sizes[i],
				     unexp ? "unexpected" : "expected", c.frees,
				     N);
		}
	}
	for (int k = 0; k < N; k++) {
		cr_assert_eq(fi_close(&omr[k]->fid), 0);
		cr_assert_eq(fi_close(&imr[k]->fid), 0);
	}
	pf_close(&f);
	for (int k = 0; k < N; k++) {
		free(out[k]);
		free(in[k]);
	}
}
