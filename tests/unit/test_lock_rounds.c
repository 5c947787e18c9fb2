/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Issue 34: one lock round per operation. With the provider's locks on
 * (the threading the fixture asks for by default), after a warm-up: an
 * fi_tsend, an fi_trecv and an fi_cq_read each lock the endpoint once;
 * a read that returns a completion locks the CQ twice, once for its
 * progress writing the entry and once for taking it (the one place a
 * completion could go in one round less, left as it is: the write runs
 * under the endpoint's lock, the take must not); a receive that takes an
 * unexpected message writes its completion in the call (one CQ round)
 * and the read takes it (one more). Counted on the test's thread by
 * lock_count.h.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "fake_verbs.h"
#include "gdrfab.h"
#include "gdrfab_objs.h"
#include "lock_count.h"
#include "proto_fixture.h"

#define A 0
#define B 1

enum { EP_A, EP_B, CQ_B, NWATCH };

static struct pf f;

static pthread_mutex_t *ep_mutex(int side)
{
	return &gdrfab_container_of(f.s[side].ep, struct gdrfab_ep, fid)
			->lock.mutex;
}

static pthread_mutex_t *cq_mutex(int side)
{
	return &gdrfab_container_of(f.s[side].cq, struct gdrfab_cq, fid)
			->lock.mutex;
}

static void start(void)
{
	pthread_mutex_t *const m[NWATCH] = {ep_mutex(A), ep_mutex(B),
					    cq_mutex(B)};

	lock_count_start(m, NWATCH);
}

/* The lock rounds since start(). */
struct rounds {
	long c[NWATCH];
};

static struct rounds stop(void)
{
	struct rounds r;

	lock_count_stop(r.c);
	return r;
}

static void expect(struct rounds r, long ep_a, long ep_b, long cq_b,
		   const char *what)
{
	cr_log_info(
		"%s: endpoint A %ld, endpoint B %ld, B's CQ %ld lock rounds\n",
		what, r.c[EP_A], r.c[EP_B], r.c[CQ_B]);
	cr_expect_eq(r.c[EP_A], ep_a, "%s: A's endpoint locked %ld times", what,
		     r.c[EP_A]);
	cr_expect_eq(r.c[EP_B], ep_b, "%s: B's endpoint locked %ld times", what,
		     r.c[EP_B]);
	cr_expect_eq(r.c[CQ_B], cq_b, "%s: B's CQ locked %ld times", what,
		     r.c[CQ_B]);
}

/* One fi_cq_read of B's CQ, which must return one completion, locking
 * B's CQ cq_b times. */
static void read_one(long cq_b)
{
	struct fi_cq_tagged_entry e;
	struct rounds r;
	ssize_t n;

	start();
	n = fi_cq_read(f.s[B].cq, &e, 1);
	r = stop();
	cr_assert_eq(n, 1, "fi_cq_read: %zd", n);
	expect(r, 0, 1, cq_b, "fi_cq_read returning a completion");
}

Test(locks, one_endpoint_lock_round_per_operation, .timeout = 10)
{
	char out[8] = "lockrnd", in[8];
	struct fi_cq_tagged_entry e;
	struct rounds r;
	ssize_t n;

	pf_open(&f);
	pf_connect(&f);
	cr_assert(gdrfab_container_of(f.s[A].ep, struct gdrfab_ep, fid)
			  ->lock.enabled,
		  "the provider's locks are on");
	/* Expected: the receive first. */
	start();
	n = fi_trecv(f.s[B].ep, in, sizeof(in), NULL, f.s[B].peer, 0x1, 0,
		     (void *)0x1);
	r = stop();
	cr_assert_eq(n, 0);
	expect(r, 0, 1, 0, "fi_trecv");
	start();
	n = fi_tsend(f.s[A].ep, out, sizeof(out), NULL, f.s[A].peer, 0x1, NULL);
	r = stop();
	cr_assert_eq(n, 0);
	expect(r, 1, 0, 0, "fi_tsend");
	fake_verbs_run();
	read_one(2); /* its progress writes the entry, then it takes it */
	cr_assert_str_eq(in, "lockrnd");
	/* Unexpected: kept by a read that returns nothing, taken by the
	 * receive, whose completion the next read returns. */
	cr_assert_eq(fi_tsend(f.s[A].ep, out, sizeof(out), NULL, f.s[A].peer,
			      0x2, NULL),
		     0);
	fake_verbs_run();
	start();
	n = fi_cq_read(f.s[B].cq, &e, 1);
	r = stop();
	cr_assert_eq(n, -FI_EAGAIN);
	expect(r, 0, 1, 0, "fi_cq_read keeping an unexpected message");
	memset(in, 0, sizeof(in));
	start();
	n = fi_trecv(f.s[B].ep, in, sizeof(in), NULL, f.s[B].peer, 0x2, 0,
		     (void *)0x2);
	r = stop();
	cr_assert_eq(n, 0);
	expect(r, 0, 1, 1, "fi_trecv taking an unexpected message");
	read_one(1); /* written by the receive: taken */
	cr_assert_str_eq(in, "lockrnd");
	pf_drive(&f, 0);
	pf_close(&f);
}
