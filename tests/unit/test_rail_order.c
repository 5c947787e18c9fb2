/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Order across rails (issue 31): on a rail-set endpoint, messages of one
 * tag sent back to back, striped ones among eager and segmented ones,
 * match the receives in the order they were sent, each intact, as on one
 * NIC. Striping moves only a rendezvous's bulk bytes; its RTS goes on
 * rail 0 in turn with the other messages, so a reordering here would be
 * the protocol's, not the wire's.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_ext_gdrfab.h>

#include "proto_fixture.h"

#define NMSG   8
#define MAXLEN (3u << 20)

/* Sizes in the order sent: striped (above FI_GDRFAB_STRIPE_MIN), eager,
 * segmented and unstriped rendezvous mixed. */
static const size_t sizes[NMSG] = {
	MAXLEN, 1, 100, (2u << 20) + 1, 64 * 1024, 1u << 20, 8, MAXLEN - 7,
};

static uint64_t striped_bytes(struct pf *f, int side)
{
	static struct fi_gdrfab_stats s;
	uint64_t sum = 0;

	pf_read_stats(f, side, &s);
	for (size_t r = 1; r < FI_GDRFAB_STATS_RAILS; r++)
		sum += s.rails[r].stripe_bytes;
	return sum;
}

Test(rail_order, mixed_sizes_of_one_tag_match_in_order)
{
	static const char *const dom[2] = {"fake0+fake1", "fake0+fake1"};
	uint8_t *out[NMSG], *in[NMSG];
	struct pf f;

	pf_open_domains(&f, 2, dom);
	pf_connect(&f);
	pf_drive(&f, 20);
	for (int i = 0; i < NMSG; i++) {
		out[i] = malloc(sizes[i]);
		in[i] = calloc(1, MAXLEN);
		cr_assert(out[i] && in[i]);
		pf_fill(out[i], sizes[i], 100 + i);
		cr_assert_eq(fi_trecv(f.s[1].ep, in[i], MAXLEN, NULL,
				      f.s[1].peer, 7, 0, in[i]),
			     0);
	}
	for (int i = 0; i < NMSG; i++)
		cr_assert_eq(fi_tsend(f.s[0].ep, out[i], sizes[i], NULL,
				      f.s[0].peer, 7, out[i]),
			     0, "send %d", i);
	cr_assert(pf_drive_until(&f, 1, NMSG, 10000), "all received");
	cr_assert(pf_drive_until(&f, 0, NMSG, 10000), "all sent");
	cr_expect_eq(f.s[0].n_err + f.s[1].n_err, 0);
	for (int i = 0; i < NMSG; i++) {
		/* Receive i took message i: its context, length and bytes. */
		const struct fi_cq_tagged_entry *c = NULL;

		for (int k = 0; k < f.s[1].n_ok; k++)
			if (f.s[1].ok[k].op_context == in[i])
				c = &f.s[1].ok[k];
		cr_assert(c, "receive %d completed", i);
		cr_expect_eq(c->len, sizes[i], "receive %d got %zu bytes", i,
			     c->len);
		cr_expect(pf_check(in[i], sizes[i], 100 + i),
			  "receive %d holds message %d", i, i);
	}
	cr_expect_gt(striped_bytes(&f, 1), 0, "the large ones were striped");
	for (int i = 0; i < NMSG; i++) {
		free(out[i]);
		free(in[i]);
	}
	pf_close(&f);
}
