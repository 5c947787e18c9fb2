/* SPDX-License-Identifier: BSD-2-Clause */
/* Atomics over rxe (fi_atomic(3)): every operation and datatype the valid
 * queries report, with the target's new values and the fetched values
 * checked; many in flight on one location from two endpoints; refused keys,
 * ranges and combinations; inject, messages, CQ data, order, counters. */
#include <criterion/criterion.h>
#include <rdma/fi_atomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp_helpers.h"

static struct dp_ep p[3];

static void setup(void)
{
	struct dp_opts o = {.counters = true};

	require_vm();
	dp_open(&p[0], "rxe0", &o);
	dp_open(&p[1], "rxe1", &o);
	dp_open(&p[2], "rxe0", &o);
	dp_connect_all(p, 3);
}

static void teardown(void)
{
	dp_close(&p[2]);
	dp_close(&p[1]);
	dp_close(&p[0]);
}

TestSuite(atomic, .init = setup, .fini = teardown, .timeout = 240);

/* Elements as doubles, whatever their datatype. */
static void put(enum fi_datatype dt, void *buf, int i, double v)
{
	switch (dt) {
	case FI_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
	case FI_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
	case FI_INT16: ((int16_t *)buf)[i] = (int16_t)v; break;
	case FI_UINT16: ((uint16_t *)buf)[i] = (uint16_t)v; break;
	case FI_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
	case FI_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
	case FI_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
	case FI_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
	case FI_FLOAT: ((float *)buf)[i] = (float)v; break;
	case FI_DOUBLE: ((double *)buf)[i] = v; break;
	default: cr_assert_fail("datatype %d", dt);
	}
}

static double get(enum fi_datatype dt, const void *buf, int i)
{
	switch (dt) {
	case FI_INT8: return ((const int8_t *)buf)[i];
	case FI_UINT8: return ((const uint8_t *)buf)[i];
	case FI_INT16: return ((const int16_t *)buf)[i];
	case FI_UINT16: return ((const uint16_t *)buf)[i];
	case FI_INT32: return ((const int32_t *)buf)[i];
	case FI_UINT32: return ((const uint32_t *)buf)[i];
	case FI_INT64: return (double)((const int64_t *)buf)[i];
	case FI_UINT64: return (double)((const uint64_t *)buf)[i];
	case FI_FLOAT: return ((const float *)buf)[i];
	case FI_DOUBLE: return ((const double *)buf)[i];
	default: cr_assert_fail("datatype %d", dt);
	}
	return 0;
}

/* fi_atomic(3)'s definitions on small non-negative values, which every
 * datatype holds exactly. */
static double expected(enum fi_op op, double t, double s, double c)
{
	long long lt = (long long)t, ls = (long long)s, lc = (long long)c;

	switch (op) {
	case FI_MIN: return t < s ? t : s;
	case FI_MAX: return t > s ? t : s;
	case FI_SUM: return t + s;
	case FI_PROD: return t * s;
	case FI_LOR: return t || s;
	case FI_LAND: return t && s;
	case FI_BOR: return (double)(lt | ls);
	case FI_BAND: return (double)(lt & ls);
	case FI_LXOR: return (t != 0) != (s != 0);
	case FI_BXOR: return (double)(lt ^ ls);
	case FI_ATOMIC_READ: return t;
	case FI_ATOMIC_WRITE: return s;
	case FI_CSWAP: return c == t ? s : t;
	case FI_CSWAP_NE: return c != t ? s : t;
	case FI_CSWAP_LE: return c <= t ? s : t;
	case FI_CSWAP_LT: return c < t ? s : t;
	case FI_CSWAP_GE: return c >= t ? s : t;
	case FI_CSWAP_GT: return c > t ? s : t;
	case FI_MSWAP: return (double)((ls & lc) | (lt & ~lc));
	default: cr_assert_fail("op %d", op);
	}
	return 0;
}

#define NE 4
/* Target, operand and compare values per element: equal, greater, less,
 * and a zero target (for the logical ops). */
static const double tv[NE] = {6, 6, 6, 0}, sv[NE] = {3, 3, 3, 3},
		    cv[NE] = {6, 9, 2, 0};

enum family { WRITE, FETCH, COMPARE };

/* Runs one op on NE elements of the peer's buffer; checks the completion,
 * the new values and the fetched values. */
static void run_one(enum family fam, enum fi_op op, enum fi_datatype dt,
		    uint8_t *target, struct fid_mr *tmr)
{
	uint64_t src[NE], cmp[NE], res[NE];
	struct fi_cq_tagged_entry e;
	uint64_t key = fi_mr_key(tmr), addr = (uintptr_t)target;
	fi_addr_t to = p[0].peer[1];
	const char *what = fi_tostr(&op, FI_TYPE_ATOMIC_OP);
	char name[64];

	snprintf(name, sizeof(name), "%s", what);
	for (int i = 0; i < NE; i++) {
		put(dt, target, i, tv[i]);
		put(dt, src, i, sv[i]);
		put(dt, cmp, i, cv[i]);
		put(dt, res, i, 99);
	}
	if (fam == WRITE)
		DP_POST(p, 3,
			fi_atomic(p[0].ep, src, NE, NULL, to, addr, key, dt, op,
				  src));
	else if (fam == FETCH)
		DP_POST(p, 3,
			fi_fetch_atomic(p[0].ep, src, NE, NULL, res, NULL, to,
					addr, key, dt, op, src));
	else
		DP_POST(p, 3,
			fi_compare_atomic(p[0].ep, src, NE, NULL, cmp, NULL,
					  res, NULL, to, addr, key, dt, op,
					  src));
	dp_expect(p[0].txcq, &e, NULL, p, 3);
	cr_assert_eq(e.op_context, src);
	cr_assert_eq(e.flags, FI_ATOMIC | (fam == WRITE ? FI_WRITE : FI_READ),
		     "%s: flags 0x%llx", name, (unsigned long long)e.flags);
	for (int i = 0; i < NE; i++) {
		double want = expected(op, tv[i], sv[i], cv[i]);

		cr_assert_eq(get(dt, target, i), want,
			     "%s on %s, element %d: %g, not %g", name,
			     fi_tostr(&dt, FI_TYPE_ATOMIC_TYPE), i,
			     get(dt, target, i), want);
		if (fam != WRITE)
			cr_assert_eq(get(dt, res, i), tv[i],
				     "%s on %s, element %d: fetched %g", name,
				     fi_tostr(&dt, FI_TYPE_ATOMIC_TYPE), i,
				     get(dt, res, i));
	}
}

Test(atomic, every_op_and_datatype_the_valid_queries_report)
{
	uint8_t *target = dp_alloc(4096);
	struct fid_mr *tmr =
		dp_reg(&p[1], target, 4096, FI_REMOTE_READ | FI_REMOTE_WRITE);
	int ran[3] = {0};

	for (enum fi_datatype dt = FI_INT8; dt <= FI_LONG_DOUBLE_COMPLEX;
	     dt++) {
		for (enum fi_op op = FI_MIN; op <= FI_MSWAP; op++) {
			for (int fam = WRITE; fam <= COMPARE; fam++) {
				struct fi_atomic_attr attr;
				size_t count = 0;
				int ret = fam == WRITE
						  ? fi_atomicvalid(p[0].ep, dt,
								   op, &count)
					  : fam == FETCH
						  ? fi_fetch_atomicvalid(
							    p[0].ep, dt, op,
							    &count)
						  : fi_compare_atomicvalid(
							    p[0].ep, dt, op,
							    &count);
				uint64_t qflags = fam == FETCH ? FI_FETCH_ATOMIC
						  : fam == COMPARE
							  ? FI_COMPARE_ATOMIC
							  : 0;

				if (ret) {
					cr_assert_eq(ret, -FI_EOPNOTSUPP);
					cr_assert_eq(fi_query_atomic(
							     p[0].d.domain, dt,
							     op, &attr, qflags),
						     -FI_EOPNOTSUPP);
					continue;
				}
				cr_assert_geq(count, NE);
				cr_assert_eq(fi_query_atomic(p[0].d.domain, dt,
							     op, &attr, qflags),
					     0);
				cr_assert_geq(attr.size, 1);
				run_one(fam, op, dt, target, tmr);
				ran[fam]++;
			}
		}
	}
	/* Integers: 10 ops and WRITE (+ READ fetched), 6 swaps and MSWAP;
	 * floats lack the bitwise ones. */
	cr_assert_eq(ran[WRITE], 8 * 11 + 2 * 8);
	cr_assert_eq(ran[FETCH], 8 * 12 + 2 * 9);
	cr_assert_eq(ran[COMPARE], 8 * 7 + 2 * 6);
	fi_close(&tmr->fid);
	free(target);
}

/* Two endpoints (on both ports) each post many fetch-and-adds of 1 to one
 * counter without waiting: the total is exact, and the fetched values are
 * every number below it exactly once. */
Test(atomic, many_in_flight_from_two_endpoints_give_the_exact_total)
{
	enum { N = 400 };
	uint64_t *counter = dp_alloc(64), one = 1;
	uint64_t *got = calloc(2 * N, sizeof(*got));
	uint8_t *seen = calloc(2 * N, 1);
	struct fid_mr *cmr =
		dp_reg(&p[2], counter, 64, FI_REMOTE_READ | FI_REMOTE_WRITE);
	struct fi_cq_tagged_entry e;
	int from[2] = {0, 1};

	*counter = 0;
	for (int i = 0; i < N; i++) {
		for (int k = 0; k < 2; k++) {
			struct dp_ep *ep = &p[from[k]];

			DP_POST(p, 3,
				fi_fetch_atomic(ep->ep, &one, 1, NULL,
						&got[k * N + i], NULL,
						ep->peer[2], (uintptr_t)counter,
						fi_mr_key(cmr), FI_UINT64,
						FI_SUM, NULL));
		}
	}
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < N; i++)
			dp_expect(p[from[k]].txcq, &e, NULL, p, 3);
	cr_assert_eq(*counter, 2 * N);
	for (int i = 0; i < 2 * N; i++) {
		cr_assert_lt(got[i], 2 * N);
		cr_assert_not(seen[got[i]], "%llu fetched twice",
			      (unsigned long long)got[i]);
		seen[got[i]] = 1;
	}
	fi_close(&cmr->fid);
	free(counter);
	free(got);
	free(seen);
}

static void expect_error(int err)
{
	struct fi_cq_err_entry e;

	cr_assert_eq(dp_wait(p[0].txcq, NULL, NULL, &e, p, 3, DP_TIMEOUT_MS),
		     -FI_EAVAIL, "a refused atomic must not succeed");
	cr_assert_eq(e.err, err, "got %s", fi_strerror(e.err));
	cr_assert(e.flags & FI_ATOMIC);
}

Test(atomic, bad_keys_ranges_and_combinations_are_refused)
{
	uint64_t *buf = dp_alloc(4096), v = 5, res;
	uint64_t two[2] = {5, 5}; /* the operands of a 2-element atomic */
	uint64_t *ro = dp_alloc(64);
	struct fid_mr *mr = dp_reg(&p[1], buf, 64, FI_REMOTE_WRITE);
	struct fid_mr *ro_mr = dp_reg(&p[1], ro, 64, FI_REMOTE_READ);
	uint64_t key = fi_mr_key(mr);
	fi_addr_t to = p[0].peer[1];
	float f = 1;
	size_t max = 0;
	struct fi_cq_tagged_entry e;

	buf[8] = 77; /* just past the registration */
	/* Refused at the call. */
	cr_assert_eq(fi_atomic(p[0].ep, &f, 1, NULL, to, (uintptr_t)buf, key,
			       FI_FLOAT, FI_BOR, NULL),
		     -FI_EOPNOTSUPP);
	cr_assert_eq(fi_atomic(p[0].ep, &v, 1, NULL, to, (uintptr_t)buf, key,
			       FI_UINT64, FI_CSWAP, NULL),
		     -FI_EOPNOTSUPP);
	cr_assert_eq(fi_atomic(p[0].ep, &v, 1, NULL, to, (uintptr_t)buf, key,
			       FI_LONG_DOUBLE, FI_SUM, NULL),
		     -FI_EOPNOTSUPP);
	cr_assert_eq(fi_atomicvalid(p[0].ep, FI_UINT64, FI_SUM, &max), 0);
	cr_assert_eq(fi_atomic(p[0].ep, buf, max + 1, NULL, to, (uintptr_t)buf,
			       key, FI_UINT64, FI_SUM, NULL),
		     -FI_EMSGSIZE);
	cr_assert_eq(fi_atomic(p[0].ep, &v, 0, NULL, to, (uintptr_t)buf, key,
			       FI_UINT64, FI_SUM, NULL),
		     -FI_EINVAL);
	cr_assert_eq(fi_atomic(p[0].ep, &v, 1, NULL, to, (uintptr_t)buf,
			       1ULL << 40, FI_UINT64, FI_SUM, NULL),
		     -FI_EINVAL, "not a gdrfab key");
	/* Refused by the target: error completions. */
	DP_POST(p, 3,
		fi_atomic(p[0].ep, &v, 1, NULL, to, (uintptr_t)buf, key ^ 0x55,
			  FI_UINT64, FI_SUM, NULL));
	expect_error(FI_EACCES);
	DP_POST(p, 3,
		fi_atomic(p[0].ep, &v, 1, NULL, to, (uintptr_t)&buf[8], key,
			  FI_UINT64, FI_SUM, NULL));
	expect_error(FI_EACCES);
	DP_POST(p, 3,
		fi_atomic(p[0].ep, two, 2, NULL, to, (uintptr_t)&buf[7], key,
			  FI_UINT64, FI_SUM, NULL));
	expect_error(FI_EACCES);
	cr_assert_eq(buf[7], 0, "nothing applied of a refused atomic");
	cr_assert_eq(buf[8], 77, "nothing written outside the MR");
	DP_POST(p, 3,
		fi_fetch_atomic(p[0].ep, &v, 1, NULL, &res, NULL, to,
				(uintptr_t)buf, key, FI_UINT64, FI_ATOMIC_READ,
				NULL));
	expect_error(FI_EACCES); /* the key allows no reads */
	DP_POST(p, 3,
		fi_atomic(p[0].ep, &v, 1, NULL, to, (uintptr_t)ro,
			  fi_mr_key(ro_mr), FI_UINT64, FI_SUM, NULL));
	expect_error(FI_EACCES); /* nor this one writes */
	DP_POST(p, 3,
		fi_atomic(p[0].ep, &v, 1, NULL, to, (uintptr_t)buf + 4, key,
			  FI_UINT64, FI_SUM, NULL));
	expect_error(FI_EINVAL); /* misaligned */
	/* The connection still works. */
	DP_POST(p, 3,
		fi_atomic(p[0].ep, &v, 1, NULL, to, (uintptr_t)buf, key,
			  FI_UINT64, FI_SUM, NULL));
	dp_expect(p[0].txcq, &e, NULL, p, 3);
	cr_assert_eq(buf[0], 5);
	/* A closed MR's key is refused. */
	fi_close(&mr->fid);
	DP_POST(p, 3,
		fi_atomic(p[0].ep, &v, 1, NULL, to, (uintptr_t)buf, key,
			  FI_UINT64, FI_SUM, NULL));
	expect_error(FI_EACCES);
	cr_assert_eq(buf[0], 5);
	fi_close(&ro_mr->fid);
	free(buf);
	free(ro);
}

Test(atomic, inject_messages_cq_data_order_and_counters)
{
	uint32_t *t = dp_alloc(64), a[2] = {1, 2}, b[2] = {10, 20};
	uint32_t r[4] = {0}, cmpv[2] = {11, 0}, swp[2] = {100, 200};
	struct fid_mr *mr =
		dp_reg(&p[1], t, 64, FI_REMOTE_READ | FI_REMOTE_WRITE);
	fi_addr_t to = p[0].peer[1];
	struct fi_cq_tagged_entry e;
	fi_addr_t from;
	uint64_t writes = fi_cntr_read(p[0].txcntr);
	struct fi_ioc ioc[2] = {{.addr = &a[0], .count = 1},
				{.addr = &a[1], .count = 1}};
	struct fi_ioc rioc[2] = {{.addr = &r[0], .count = 1},
				 {.addr = &r[1], .count = 1}};
	struct fi_rma_ioc rma = {
		.addr = (uintptr_t)t, .count = 2, .key = fi_mr_key(mr)};
	struct fi_msg_atomic msg = {.msg_iov = ioc,
				    .iov_count = 2,
				    .addr = to,
				    .rma_iov = &rma,
				    .rma_iov_count = 1,
				    .datatype = FI_UINT32,
				    .op = FI_SUM,
				    .context = ioc,
				    .data = 0xbeef};

	t[0] = 0;
	t[1] = 0;
	/* Inject: no completion, the counter moves, the buffer is free. */
	DP_POST(p, 3,
		fi_inject_atomic(p[0].ep, b, 2, to, (uintptr_t)t, fi_mr_key(mr),
				 FI_UINT32, FI_ATOMIC_WRITE));
	memset(b, 0, sizeof(b));
	while (fi_cntr_read(p[0].txcntr) == writes)
		dp_progress(p, 3);
	dp_expect_none(p[0].txcq, p, 3, 20);
	cr_assert(t[0] == 10 && t[1] == 20);
	/* fi_atomicmsg with CQ data: the target's CQ reports it. */
	DP_POST(p, 3, fi_atomicmsg(p[0].ep, &msg, FI_REMOTE_CQ_DATA));
	dp_expect(p[1].rxcq, &e, &from, p, 3);
	cr_assert_eq(e.flags, FI_ATOMIC | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA);
	cr_assert_eq(e.data, 0xbeef);
	cr_assert_eq(from, p[1].peer[0]);
	dp_expect(p[0].txcq, &e, NULL, p, 3);
	cr_assert_eq(e.op_context, ioc);
	cr_assert(t[0] == 11 && t[1] == 22);
	/* fi_fetch_atomicmsg into two result iovecs. */
	DP_POST(p, 3, fi_fetch_atomicmsg(p[0].ep, &msg, rioc, NULL, 2, 0));
	dp_expect(p[0].txcq, &e, NULL, p, 3);
	cr_assert_eq(e.flags, FI_ATOMIC | FI_READ);
	cr_assert(r[0] == 11 && r[1] == 22 && t[0] == 12 && t[1] == 24);
	/* fi_compare_atomicv: element 0 matches, element 1 does not. */
	{
		struct fi_ioc sv[1] = {{.addr = swp, .count = 2}};
		struct fi_ioc cvec[1] = {{.addr = cmpv, .count = 2}};
		struct fi_ioc rv[1] = {{.addr = &r[2], .count = 2}};

		cmpv[0] = 12;
		DP_POST(p, 3,
			fi_compare_atomicv(p[0].ep, sv, NULL, 1, cvec, NULL, 1,
					   rv, NULL, 1, to, (uintptr_t)t,
					   fi_mr_key(mr), FI_UINT32, FI_CSWAP,
					   NULL));
		dp_expect(p[0].txcq, &e, NULL, p, 3);
		cr_assert(r[2] == 12 && r[3] == 24);
		cr_assert(t[0] == 100 && t[1] == 24);
	}
	/* Posted back to back without waiting, applied in order: a write,
	 * then a read that sees it (FI_ORDER_ATOMIC_RAW). */
	for (uint32_t i = 1; i <= 20; i++) {
		uint32_t w = i;

		DP_POST(p, 3,
			fi_inject_atomic(p[0].ep, &w, 1, to, (uintptr_t)t,
					 fi_mr_key(mr), FI_UINT32,
					 FI_ATOMIC_WRITE));
		DP_POST(p, 3,
			fi_fetch_atomic(p[0].ep, &w, 1, NULL, &r[0], NULL, to,
					(uintptr_t)t, fi_mr_key(mr), FI_UINT32,
					FI_ATOMIC_READ, NULL));
		dp_expect(p[0].txcq, &e, NULL, p, 3);
		cr_assert_eq(r[0], i, "read %u after writing %u", r[0], i);
	}
	fi_close(&mr->fid);
	free(t);
}
