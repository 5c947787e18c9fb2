/* SPDX-License-Identifier: BSD-2-Clause */
/* RMA over rxe: read, write, writedata, inject, to a peer and to the
 * endpoint's own address; MR access enforced by the target. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "dp_helpers.h"

static struct dp_ep *const p = dp_pair_eps;

static void setup(void)
{
	dp_pair_open(&(struct dp_opts){.counters = true});
}

TestSuite(rma, .init = setup, .fini = dp_pair_teardown, .timeout = 240);

static void write_then_read(int target, size_t len)
{
	uint8_t *local = dp_alloc(len), *back = dp_alloc(len);
	uint8_t *remote = dp_alloc(len);
	struct fid_mr *lmr = dp_reg(&p[0], local, len, FI_WRITE);
	struct fid_mr *bmr = dp_reg(&p[0], back, len, FI_READ);
	struct fid_mr *rmr = dp_reg(&p[target], remote, len,
				    FI_REMOTE_READ | FI_REMOTE_WRITE);
	struct fi_cq_tagged_entry e;
	uint64_t writes = fi_cntr_read(p[0].txcntr);

	dp_fill(local, len, 11);
	DP_POST(p, 2,
		fi_write(p[0].ep, local, len, fi_mr_desc(lmr),
			 p[0].peer[target], (uintptr_t)remote, fi_mr_key(rmr),
			 local));
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	cr_assert_eq(e.op_context, local);
	cr_assert_eq(e.flags, FI_RMA | FI_WRITE);
	cr_assert(dp_check(remote, len, 11), "written %zu bytes", len);
	DP_POST(p, 2,
		fi_read(p[0].ep, back, len, fi_mr_desc(bmr), p[0].peer[target],
			(uintptr_t)remote, fi_mr_key(rmr), back));
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	cr_assert_eq(e.flags, FI_RMA | FI_READ);
	cr_assert(dp_check(back, len, 11), "read back %zu bytes", len);
	cr_assert_eq(fi_cntr_read(p[0].txcntr), writes + 2);
	dp_expect_none(p[target].rxcq, p, 2, 10);
	fi_close(&lmr->fid);
	fi_close(&bmr->fid);
	fi_close(&rmr->fid);
	free(local);
	free(back);
	free(remote);
}

Test(rma, write_and_read_a_peer)
{
	write_then_read(1, 4096);
	write_then_read(1, 0);
	write_then_read(1, 1 << 20);
}

Test(rma, in_pieces_beyond_the_ports_limit)
{
	write_then_read(1, (20u << 20) + 3);
}

Test(rma, to_the_endpoints_own_address)
{
	/* As NCCL's plugin does to flush: a read from itself. */
	write_then_read(0, 65536);
}

Test(rma, writedata_completes_at_the_target_with_its_data)
{
	uint8_t *src = dp_alloc(5000), *dst = dp_alloc(5000);
	struct fid_mr *rmr = dp_reg(&p[1], dst, 5000, FI_REMOTE_WRITE);
	struct fi_cq_tagged_entry e;
	fi_addr_t from;

	dp_fill(src, 5000, 4);
	DP_POST(p, 2,
		fi_writedata(p[0].ep, src, 5000, NULL, 0xcafe, p[0].peer[1],
			     (uintptr_t)dst, fi_mr_key(rmr), NULL));
	dp_expect(p[1].rxcq, &e, &from, p, 2);
	cr_assert_eq(e.flags, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA);
	cr_assert_eq(e.data, 0xcafe);
	cr_assert_eq(e.len, 5000);
	cr_assert_eq(from, p[1].peer[0]);
	cr_assert(dp_check(dst, 5000, 4), "data there before the completion");
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	cr_assert_eq(e.flags, FI_RMA | FI_WRITE);
	/* Zero bytes with data. */
	DP_POST(p, 2,
		fi_writedata(p[0].ep, src, 0, NULL, 7, p[0].peer[1],
			     (uintptr_t)dst, fi_mr_key(rmr), NULL));
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	cr_assert_eq(e.data, 7);
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	fi_close(&rmr->fid);
	free(src);
	free(dst);
}

Test(rma, inject_write_and_msg_variants)
{
	char src[16] = "injected", back[16];
	uint8_t *dst = dp_alloc(64);
	struct fid_mr *rmr =
		dp_reg(&p[1], dst, 64, FI_REMOTE_WRITE | FI_REMOTE_READ);
	struct iovec iov = {.iov_base = back, .iov_len = 9};
	struct fi_rma_iov rma = {
		.addr = (uintptr_t)dst, .len = 9, .key = fi_mr_key(rmr)};
	struct fi_msg_rma msg = {.msg_iov = &iov,
				 .iov_count = 1,
				 .addr = p[0].peer[1],
				 .rma_iov = &rma,
				 .rma_iov_count = 1,
				 .context = back};
	struct fi_cq_tagged_entry e;
	uint64_t before = fi_cntr_read(p[0].txcntr);

	DP_POST(p, 2,
		fi_inject_write(p[0].ep, src, 9, p[0].peer[1], (uintptr_t)dst,
				fi_mr_key(rmr)));
	memset(src, 0, sizeof(src));
	/* No completion, but the write counter moves once it is done. */
	while (fi_cntr_read(p[0].txcntr) == before)
		dp_progress(p, 2);
	dp_expect_none(p[0].txcq, p, 2, 20);
	cr_assert_str_eq((char *)dst, "injected");
	DP_POST(p, 2, fi_readmsg(p[0].ep, &msg, 0));
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	cr_assert_eq(e.op_context, back);
	cr_assert_str_eq(back, "injected");
	rma.len = 3;
	cr_assert_eq(fi_readmsg(p[0].ep, &msg, 0), -FI_EINVAL,
		     "lengths differ");
	cr_assert_eq(fi_read(p[0].ep, back, 1, NULL, p[0].peer[1], 0,
			     1ULL << 40, NULL),
		     -FI_EINVAL, "not a 4-byte key");
	fi_close(&rmr->fid);
	free(dst);
}

/* FI_INJECT in fi_writemsg (aws-ofi-nccl's rdma protocol writes inline
 * this way): the buffer may be reused as soon as the call returns, even
 * while the connection is still being made; the completion still comes. */
Test(rma, writemsg_inject_copies_the_buffer_at_once)
{
	char src[16] = "in flight";
	uint8_t *dst = dp_alloc(64);
	struct fid_mr *rmr = dp_reg(&p[1], dst, 64, FI_REMOTE_WRITE);
	struct iovec iov = {.iov_base = src, .iov_len = 10};
	struct fi_rma_iov rma = {
		.addr = (uintptr_t)dst, .len = 10, .key = fi_mr_key(rmr)};
	struct fi_msg_rma msg = {.msg_iov = &iov,
				 .iov_count = 1,
				 .addr = p[0].peer[1],
				 .rma_iov = &rma,
				 .rma_iov_count = 1,
				 .context = src};
	struct fi_cq_tagged_entry e;

	DP_POST(p, 2, fi_writemsg(p[0].ep, &msg, FI_INJECT | FI_COMPLETION));
	memset(src, 0, sizeof(src)); /* before any progress */
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	cr_assert_eq(e.op_context, src);
	cr_assert_str_eq((char *)dst, "in flight");
	iov.iov_len = rma.len = p[0].d.info->tx_attr->inject_size + 1;
	cr_assert_eq(fi_writemsg(p[0].ep, &msg, FI_INJECT), -FI_EMSGSIZE);
	fi_close(&rmr->fid);
	free(dst);
}

static void expect_access_error(int err)
{
	struct fi_cq_err_entry e;

	cr_assert_eq(dp_wait(p[0].txcq, NULL, NULL, &e, p, 2, DP_TIMEOUT_MS),
		     -FI_EAVAIL, "a forbidden access must not succeed");
	cr_assert_eq(e.err, err, "got %s", fi_strerror(e.err));
	cr_assert(e.prov_errno > 0);
}

Test(rma, access_the_mr_does_not_allow_fails_and_the_peer_recovers)
{
	uint8_t *ro = dp_alloc(4096), *wo = dp_alloc(4096);
	uint8_t *buf = dp_alloc(4096);
	struct fid_mr *ro_mr = dp_reg(&p[1], ro, 4096, FI_REMOTE_READ);
	struct fid_mr *wo_mr = dp_reg(&p[1], wo, 4096, FI_REMOTE_WRITE);
	struct fid_mr *send_only = dp_reg(&p[1], buf, 4096, FI_SEND);
	struct fi_cq_tagged_entry e;

	memset(ro, 0x5a, 4096);
	DP_POST(p, 2,
		fi_write(p[0].ep, buf, 64, NULL, p[0].peer[1], (uintptr_t)ro,
			 fi_mr_key(ro_mr), NULL));
	expect_access_error(FI_EACCES);
	cr_assert_eq(ro[0], 0x5a, "read-only memory untouched");
	DP_POST(p, 2,
		fi_read(p[0].ep, buf, 64, NULL, p[0].peer[1], (uintptr_t)wo,
			fi_mr_key(wo_mr), NULL));
	expect_access_error(FI_EACCES);
	/* A send buffer's key grants no remote access either, even though
	 * gdrfab itself reads such buffers for rendezvous. */
	DP_POST(p, 2,
		fi_read(p[0].ep, buf, 64, NULL, p[0].peer[1], (uintptr_t)buf,
			fi_mr_key(send_only), NULL));
	expect_access_error(FI_EACCES);
	/* The connection is rebuilt: allowed accesses work again. */
	DP_POST(p, 2,
		fi_read(p[0].ep, buf, 64, NULL, p[0].peer[1], (uintptr_t)ro,
			fi_mr_key(ro_mr), NULL));
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	cr_assert_eq(buf[0], 0x5a);
	cr_assert_geq(fi_cntr_readerr(p[0].txcntr), 3);
	fi_close(&ro_mr->fid);
	fi_close(&wo_mr->fid);
	fi_close(&send_only->fid);
	free(ro);
	free(wo);
	free(buf);
}

Test(rma, a_target_range_that_wraps_is_refused_at_the_call)
{
	uint8_t buf[64];
	struct fid_mr *mr = dp_reg(&p[0], buf, sizeof(buf), FI_WRITE);

	cr_assert_eq(fi_write(p[0].ep, buf, sizeof(buf), fi_mr_desc(mr),
			      p[0].peer[1], UINT64_MAX - 8, 1, NULL),
		     -FI_EINVAL);
	cr_assert_eq(fi_read(p[0].ep, buf, sizeof(buf), fi_mr_desc(mr),
			     p[0].peer[1], UINT64_MAX - 8, 1, NULL),
		     -FI_EINVAL);
	dp_expect_none(p[0].txcq, p, 2, 10);
	fi_close(&mr->fid);
}

/* FI_RMA_EVENT, as fabtests' fi_rdm_rma_event uses it: the writer exits as
 * soon as its write completes, while the target has not progressed since.
 * The event must be on its way by then, not waiting in the writer for a
 * send the closed endpoint would never make. */
Test(rma, an_event_outlives_a_writer_that_closes_at_its_completion)
{
	struct dp_opts o = {.counters = true, .rma_events = true};
	struct dp_ep q[2];
	uint8_t *local = dp_alloc(4096), *remote = dp_alloc(4096);
	struct fid_mr *rmr;
	struct fi_cq_tagged_entry e;

	dp_pair(&q[0], &q[1], &o);
	rmr = dp_reg(&q[1], remote, 4096, FI_REMOTE_WRITE);
	/* Connected first, both progressing: that needs the target. */
	DP_POST(q, 2,
		fi_write(q[0].ep, local, 8, NULL, q[0].peer[1],
			 (uintptr_t)remote, fi_mr_key(rmr), NULL));
	dp_expect(q[0].txcq, &e, NULL, q, 2);
	cr_assert_eq(fi_cntr_wait(q[1].rxcntr, 1, 10000), 0);
	/* Now only the writer progresses, then closes. */
	dp_fill(local, 4096, 7);
	cr_assert_eq(fi_write(q[0].ep, local, 4096, NULL, q[0].peer[1],
			      (uintptr_t)remote, fi_mr_key(rmr), NULL),
		     0);
	dp_expect(q[0].txcq, &e, NULL, q, 1);
	dp_close(&q[0]);
	cr_assert_eq(fi_cntr_wait(q[1].rxcntr, 2, 10000), 0,
		     "the target counted the write of a closed writer");
	cr_assert(dp_check(remote, 4096, 7));
	fi_close(&rmr->fid);
	dp_close(&q[1]);
	free(local);
	free(remote);
}

/* FI_RMA_EVENT: a target whose counter is bound with FI_REMOTE_WRITE and
 * FI_REMOTE_READ counts each write and read aimed at it once the data is
 * there (fabtests' fi_rdm_rma_event); a target without them is told
 * nothing. */
Test(rma, remote_accesses_are_counted_at_a_target_that_asks)
{
	struct dp_opts o = {.counters = true, .rma_events = true};
	struct dp_ep q[2];
	uint8_t *local = dp_alloc(8192), *remote = dp_alloc(8192);
	struct fid_mr *rmr;
	struct fi_cq_tagged_entry e;
	uint64_t before = fi_cntr_read(p[1].rxcntr);

	dp_pair(&q[0], &q[1], &o);
	rmr = dp_reg(&q[1], remote, 8192, FI_REMOTE_READ | FI_REMOTE_WRITE);
	dp_fill(local, 8192, 5);
	DP_POST(q, 2,
		fi_write(q[0].ep, local, 8192, NULL, q[0].peer[1],
			 (uintptr_t)remote, fi_mr_key(rmr), NULL));
	dp_expect(q[0].txcq, &e, NULL, q, 2);
	cr_assert_eq(fi_cntr_wait(q[1].rxcntr, 1, 10000), 0);
	cr_assert(dp_check(remote, 8192, 5), "counted once the data is there");
	DP_POST(q, 2,
		fi_read(q[0].ep, local, 100, NULL, q[0].peer[1],
			(uintptr_t)remote, fi_mr_key(rmr), NULL));
	dp_expect(q[0].txcq, &e, NULL, q, 2);
	cr_assert_eq(fi_cntr_wait(q[1].rxcntr, 2, 10000), 0);
	/* An injected write completes at the writer only as it makes
	 * progress (no CQ entry to wait for): both progress meanwhile. */
	DP_POST(q, 2,
		fi_inject_write(q[0].ep, local, 64, q[0].peer[1],
				(uintptr_t)remote, fi_mr_key(rmr)));
	for (int i = 0; i < 100000 && fi_cntr_read(q[1].rxcntr) < 3; i++)
		dp_progress(q, 2);
	cr_assert_eq(fi_cntr_read(q[1].rxcntr), 3);
	DP_POST(q, 2,
		fi_writedata(q[0].ep, local, 64, NULL, 9, q[0].peer[1],
			     (uintptr_t)remote, fi_mr_key(rmr), NULL));
	dp_expect(q[1].rxcq, &e, NULL, q, 2);
	cr_assert_eq(e.data, 9);
	/* The writer says so once its write completed: it must progress. */
	dp_expect(q[0].txcq, &e, NULL, q, 2);
	cr_assert_eq(fi_cntr_wait(q[1].rxcntr, 4, 10000), 0);
	dp_progress(q, 2);
	cr_assert_eq(fi_cntr_read(q[1].rxcntr), 4, "each access once");
	cr_assert_eq(fi_cntr_readerr(q[1].rxcntr), 0);
	/* The writer counts nothing of its own accesses. */
	cr_assert_eq(fi_cntr_read(q[0].rxcntr), 0);
	fi_close(&rmr->fid);
	dp_close(&q[1]);
	dp_close(&q[0]);
	/* The suite's pair asked for nothing: its counters did not move. */
	cr_assert_eq(fi_cntr_read(p[1].rxcntr), before);
	free(local);
	free(remote);
}
