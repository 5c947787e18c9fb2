/* SPDX-License-Identifier: BSD-2-Clause */
/* Atomics the NIC executes (FI_GDRFAB_NIC_ATOMICS). rxe's atomic_cap is
 * IBV_ATOMIC_HCA, so auto keeps every atomic on the protocol there, and
 * the test-only unsafe_hca puts 8-byte FI_SUM and FI_CSWAP on the NIC:
 * results, the stats proving which path ran, two initiators on one
 * counter, a message-borne MIN then a NIC SUM applied in order, and keys
 * the target's NIC refuses ending in error completions. */
#include <criterion/criterion.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_ext_gdrfab.h>
#include <stdlib.h>
#include <string.h>

#include "dp_helpers.h"

static struct dp_ep p[3]; /* p[1] (rxe1) is the target */

static void open_all(const char *mode)
{
	struct dp_opts o = {0};

	require_vm();
	setenv("FI_GDRFAB_NIC_ATOMICS", mode, 1);
	dp_open(&p[0], "rxe0", &o);
	dp_open(&p[1], "rxe1", &o);
	dp_open(&p[2], "rxe0", &o);
	dp_connect_all(p, 3);
}

static void setup_unsafe(void)
{
	open_all("unsafe_hca");
}

static void setup_auto(void)
{
	open_all("auto");
}

static void setup_off(void)
{
	open_all("off");
}

static void teardown(void)
{
	dp_close(&p[2]);
	dp_close(&p[1]);
	dp_close(&p[0]);
}

static struct fi_gdrfab_atomic_stats stats(int i)
{
	struct fi_gdrfab_atomic_ops *ops = NULL;
	struct fi_gdrfab_atomic_stats s;

	cr_assert_eq(fi_open_ops(&p[i].d.domain->fid, FI_GDRFAB_ATOMIC_OPS, 0,
				 (void **)&ops, NULL),
		     0);
	cr_assert_eq(ops->size, sizeof(*ops));
	cr_assert_eq(ops->stats(&p[i].d.domain->fid, &s), 0);
	return s;
}

static void expect_ok(int i, void *ctx)
{
	struct fi_cq_tagged_entry e;

	dp_expect(p[i].txcq, &e, NULL, p, 3);
	cr_assert_eq(e.op_context, ctx);
}

/* Connections are made by the first operation; the NIC is used once the
 * peer said what its device is, so each test first reads the target by
 * message (FI_ATOMIC_READ never goes to the NIC). */
static void warm(int from, uint64_t *target, uint64_t key)
{
	uint64_t res;

	DP_POST(p, 3,
		fi_fetch_atomic(p[from].ep, NULL, 1, NULL, &res, NULL,
				p[from].peer[1], (uintptr_t)target, key,
				FI_UINT64, FI_ATOMIC_READ, &res));
	expect_ok(from, &res);
	cr_assert_eq(res, *target);
}

static uint64_t *target_mem(struct fid_mr **mr)
{
	uint64_t *t = dp_alloc(4096);

	*mr = dp_reg(&p[1], t, 4096, FI_REMOTE_READ | FI_REMOTE_WRITE);
	return t;
}

/* FI_CSWAP of v where p[1]'s addr holds cmp, from p[0]; returns what the
 * location held. */
static uint64_t cswap(uint64_t addr, uint64_t key, uint64_t cmp, uint64_t v)
{
	uint64_t res = 0;

	DP_POST(p, 3,
		fi_compare_atomic(p[0].ep, &v, 1, NULL, &cmp, NULL, &res, NULL,
				  p[0].peer[1], addr, key, FI_UINT64, FI_CSWAP,
				  &cmp));
	expect_ok(0, &cmp);
	return res;
}

/* FI_SUM by fi_atomic and fi_fetch_atomic, FI_CSWAP (both outcomes),
 * then the path each took. */
static void sum_and_cswap(bool nic)
{
	struct fid_mr *mr;
	uint64_t *t = target_mem(&mr), key = fi_mr_key(mr);
	uint64_t addr = (uintptr_t)&t[1], v, res = 0;
	int64_t neg = -7, sres = 0;
	struct fi_gdrfab_atomic_stats s0, s1;

	t[1] = 10;
	warm(0, &t[1], key);
	s0 = stats(0);
	v = 5;
	DP_POST(p, 3,
		fi_fetch_atomic(p[0].ep, &v, 1, NULL, &res, NULL, p[0].peer[1],
				addr, key, FI_UINT64, FI_SUM, &res));
	expect_ok(0, &res);
	cr_assert_eq(res, 10);
	cr_assert_eq(t[1], 15);
	v = 3;
	DP_POST(p, 3,
		fi_atomic(p[0].ep, &v, 1, NULL, p[0].peer[1], addr, key,
			  FI_UINT64, FI_SUM, &v));
	expect_ok(0, &v);
	cr_assert_eq(t[1], 18);
	DP_POST(p, 3,
		fi_fetch_atomic(p[0].ep, &neg, 1, NULL, &sres, NULL,
				p[0].peer[1], addr, key, FI_INT64, FI_SUM,
				&sres));
	expect_ok(0, &sres);
	cr_assert_eq(sres, 18);
	cr_assert_eq(t[1], 11);
	cr_assert_eq(cswap(addr, key, 11, 100), 11);
	cr_assert_eq(t[1], 100);
	/* No longer equal: unchanged. */
	cr_assert_eq(cswap(addr, key, 11, 7), 100);
	cr_assert_eq(t[1], 100);
	cr_assert_eq(t[0], 0, "the neighbours are untouched");
	cr_assert_eq(t[2], 0, "the neighbours are untouched");
	s1 = stats(0);
	cr_assert_eq(s1.nic - s0.nic, nic ? 5 : 0, "%llu on the NIC",
		     (unsigned long long)(s1.nic - s0.nic));
	cr_assert_eq(s1.proto - s0.proto, nic ? 0 : 5, "%llu by message",
		     (unsigned long long)(s1.proto - s0.proto));
	fi_close(&mr->fid);
	free(t);
}

TestSuite(atomic_nic, .init = setup_unsafe, .fini = teardown, .timeout = 120);
TestSuite(atomic_nic_auto, .init = setup_auto, .fini = teardown, .timeout = 60);
TestSuite(atomic_nic_off, .init = setup_off, .fini = teardown, .timeout = 60);

Test(atomic_nic, sum_and_cswap_go_to_the_nic)
{
	cr_assert_eq(stats(1).target_mode, 2, "rxe is IBV_ATOMIC_HCA");
	sum_and_cswap(true);
}

Test(atomic_nic_auto, hca_devices_keep_atomics_on_the_protocol)
{
	cr_assert_eq(stats(1).target_mode, 0);
	sum_and_cswap(false);
}

Test(atomic_nic_off, off_keeps_atomics_on_the_protocol)
{
	cr_assert_eq(stats(1).target_mode, 0);
	sum_and_cswap(false);
}

/* What stays on the protocol under unsafe_hca: other ops, 4-byte types,
 * two elements. */
Test(atomic_nic, other_atomics_stay_on_the_protocol)
{
	struct fid_mr *mr;
	uint64_t *t = target_mem(&mr), key = fi_mr_key(mr);
	uint64_t v[2] = {3, 4}, res[2];
	uint32_t v32 = 2, r32;
	struct fi_gdrfab_atomic_stats s0, s1;

	t[0] = 9;
	t[1] = 1;
	warm(0, t, key);
	s0 = stats(0);
	DP_POST(p, 3,
		fi_fetch_atomic(p[0].ep, v, 1, NULL, res, NULL, p[0].peer[1],
				(uintptr_t)t, key, FI_UINT64, FI_MIN, res));
	expect_ok(0, res);
	cr_assert_eq(t[0], 3);
	DP_POST(p, 3,
		fi_fetch_atomic(p[0].ep, v, 2, NULL, res, NULL, p[0].peer[1],
				(uintptr_t)t, key, FI_UINT64, FI_SUM, res));
	expect_ok(0, res);
	cr_assert_eq(res[0], 3);
	cr_assert_eq(res[1], 1);
	cr_assert_eq(t[0], 6);
	cr_assert_eq(t[1], 5);
	DP_POST(p, 3,
		fi_fetch_atomic(p[0].ep, &v32, 1, NULL, &r32, NULL,
				p[0].peer[1], (uintptr_t)&t[2], key, FI_UINT32,
				FI_SUM, &r32));
	expect_ok(0, &r32);
	cr_assert_eq(r32, 0);
	s1 = stats(0);
	cr_assert_eq(s1.nic, s0.nic);
	cr_assert_eq(s1.proto - s0.proto, 3);
	fi_close(&mr->fid);
	free(t);
}

#define PER_INITIATOR 1000
#define WINDOW	      64

/* Two initiators add 1 to one counter many times, on the NIC only: the
 * sum is exact and every fetched value is seen exactly once. */
Test(atomic_nic, two_initiators_sum_exactly)
{
	struct fid_mr *mr;
	uint64_t *t = target_mem(&mr), key = fi_mr_key(mr), one = 1;
	uint64_t *res = calloc(2 * PER_INITIATOR, sizeof(*res));
	unsigned char *seen = calloc(2 * PER_INITIATOR, 1);
	int posted[2] = {0}, done[2] = {0};
	const int from[2] = {0, 2};
	struct fi_gdrfab_atomic_stats s0 = stats(0);

	cr_assert(res && seen);
	warm(0, t, key);
	warm(2, t, key);
	s0 = stats(0); /* p[0] and p[2] share rxe0 but not the domain */
	while (done[0] < PER_INITIATOR || done[1] < PER_INITIATOR) {
		for (int k = 0; k < 2; k++) {
			struct dp_ep *e = &p[from[k]];
			struct fi_cq_tagged_entry ce;

			while (posted[k] < PER_INITIATOR &&
			       posted[k] - done[k] < WINDOW) {
				uint64_t *r =
					&res[k * PER_INITIATOR + posted[k]];
				ssize_t ret = fi_fetch_atomic(
					e->ep, &one, 1, NULL, r, NULL,
					e->peer[1], (uintptr_t)t, key,
					FI_UINT64, FI_SUM, r);

				if (ret == -FI_EAGAIN)
					break;
				cr_assert_eq(ret, 0, "%s", fi_strerror(-ret));
				posted[k]++;
			}
			while (fi_cq_read(e->txcq, &ce, 1) == 1)
				done[k]++;
		}
		dp_progress(p, 3);
	}
	cr_assert_eq(*t, 2 * PER_INITIATOR, "counter %llu",
		     (unsigned long long)*t);
	for (int i = 0; i < 2 * PER_INITIATOR; i++) {
		cr_assert_lt(res[i], 2 * PER_INITIATOR);
		cr_assert_not(seen[res[i]], "value %llu fetched twice",
			      (unsigned long long)res[i]);
		seen[res[i]] = 1;
	}
	cr_assert_eq(stats(0).nic - s0.nic, PER_INITIATOR);
	cr_assert_geq(stats(2).nic, PER_INITIATOR);
	free(seen);
	free(res);
	fi_close(&mr->fid);
	free(t);
}

/* A message-borne MIN and then a NIC SUM on one location, posted back to
 * back: the SUM waits for the MIN's answer, so MIN(100, 10) + 5. */
Test(atomic_nic, message_then_nic_applies_in_order)
{
	struct fid_mr *mr;
	uint64_t *t = target_mem(&mr), key = fi_mr_key(mr);
	int64_t *x = (int64_t *)t;
	struct fi_gdrfab_atomic_stats s0;

	warm(0, t, key);
	s0 = stats(0);
	for (int round = 0; round < 50; round++) {
		int64_t m = 10, a = 5, got = -1;

		*x = 100;
		DP_POST(p, 3,
			fi_atomic(p[0].ep, &m, 1, NULL, p[0].peer[1],
				  (uintptr_t)t, key, FI_INT64, FI_MIN, &m));
		DP_POST(p, 3,
			fi_fetch_atomic(p[0].ep, &a, 1, NULL, &got, NULL,
					p[0].peer[1], (uintptr_t)t, key,
					FI_INT64, FI_SUM, &got));
		expect_ok(0, &m);
		expect_ok(0, &got);
		cr_assert_eq(got, 10, "round %d: the SUM saw %lld", round,
			     (long long)got);
		cr_assert_eq(*x, 15, "round %d: %lld", round, (long long)*x);
	}
	cr_assert_eq(stats(0).nic - s0.nic, 50);
	cr_assert_geq(stats(0).held - s0.held, 50,
		      "each SUM waited for its MIN");
	fi_close(&mr->fid);
	free(t);
}

/* A key or range the target's NIC refuses: an error completion, no hang,
 * and the peer is reachable again afterwards. */
Test(atomic_nic, refused_keys_end_in_error_completions)
{
	struct fid_mr *mr;
	uint64_t *t = target_mem(&mr), key = fi_mr_key(mr), one = 1, res;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	const struct {
		uint64_t addr, key;
	} bad[] = {
		{(uintptr_t)t, key ^ 0x100}, /* no such rkey */
		{(uintptr_t)t + 8192, key},  /* past the MR */
	};

	warm(0, t, key);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int ret;

		memset(&err, 0, sizeof(err));
		DP_POST(p, 3,
			fi_fetch_atomic(p[0].ep, &one, 1, NULL, &res, NULL,
					p[0].peer[1], bad[i].addr, bad[i].key,
					FI_UINT64, FI_SUM, &res));
		ret = dp_wait(p[0].txcq, &e, NULL, &err, p, 3, 20000);
		cr_assert_eq(ret, -FI_EAVAIL, "case %zu: %d", i, ret);
		cr_assert_eq(err.op_context, &res);
		cr_assert(err.err == FI_EACCES || err.err == FI_EIO,
			  "case %zu: %s", i, fi_strerror(err.err));
		/* Reachable again (by message until the new connection
		 * is up, then on the NIC). */
		warm(0, t, key);
	}
	cr_assert_eq(*t, 0, "nothing was added");
	fi_close(&mr->fid);
	free(t);
}
