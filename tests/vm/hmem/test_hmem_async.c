/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copies into GPU memory that progress starts and never waits for (issue
 * 16), over rxe with the CUDA stand-in: eager messages into a receive
 * buffer given without a descriptor (expected and unexpected), an eager
 * emulated write into staged GPU memory, and the fetched values of
 * message-borne and NIC atomics into GPU result buffers (with and without
 * a descriptor). The stand-in runs one step of a stream per event query
 * (a copy, then the event), so a copy started in one progress call cannot
 * be seen done in that call unless progress waited for it. Each of these
 * asserts the data is in GPU memory when the completion says so, and that
 * the completion (or the target's answer) did not come from the progress
 * call that started the copy. Last, a receive into host memory without a
 * descriptor: CUDA is asked what its buffers are once per entry, not once
 * to choose the path and again before the CPU copy.
 */
#include <criterion/criterion.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_ext_gdrfab.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dp_helpers.h"
#include "gpu_standin.h"

static struct dp_ep *const p = dp_pair_eps;

/* Staged (rxe without peermem): the domain the emulated RMA needs, and
 * where every GPU byte the CPU must move goes through CUDA copies. */
static void start(const char *nic_atomics)
{
	require_vm();
	if (nic_atomics)
		setenv("FI_GDRFAB_NIC_ATOMICS", nic_atomics, 1);
	gpu_open();
	dp_pair_open(NULL);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

TestSuite(hmem_async, .fini = dp_pair_teardown, .timeout = 240);

/* Reads one completion from cq (progressing its endpoint once per read,
 * and the other endpoint, other, between reads), asserting that the read
 * that returns it started no copy: a completion from the call that
 * started its copy was waited for. Returns how many copies the reads
 * started in all. */
static uint64_t expect_after_copies(struct fid_cq *cq, struct dp_ep *other,
				    struct fi_cq_tagged_entry *e)
{
	long long deadline = now_ms() + DP_TIMEOUT_MS;
	uint64_t started = 0;

	for (;;) {
		uint64_t before = gpu_stats().async_copies, now;
		ssize_t ret = fi_cq_read(cq, e, 1);

		now = gpu_stats().async_copies;
		if (ret == 1) {
			cr_assert_eq(
				now, before,
				"the completion came from the progress call that started its copy: it waited for it");
			return started + (now - before);
		}
		cr_assert_eq(ret, -FI_EAGAIN, "fi_cq_read: %s",
			     fi_strerror((int)-ret));
		started += now - before;
		dp_progress(other, 1);
		cr_assert_lt(now_ms(), deadline, "no completion");
	}
}

/* Connects the pair (both progressed): later steps progress one side
 * at a time. */
static void connect_pair(void)
{
	uint8_t *buf = dp_alloc(64);
	struct fi_cq_tagged_entry e;

	DP_POST(p, 2,
		fi_trecv(p[1].ep, buf + 32, 32, NULL, FI_ADDR_UNSPEC, 1, 0,
			 NULL));
	DP_POST(p, 2, fi_tsend(p[0].ep, buf, 8, NULL, p[0].peer[1], 1, NULL));
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	free(buf);
}

/* A tagged message of len bytes from host memory into GPU memory whose
 * receive is posted without a descriptor (the memory is registered, as
 * FI_MR_HMEM asks, but the application passes NULL), before the message
 * comes or after it waited as unexpected. The sender's completion is
 * awaited progressing the sender alone, so that the receiver sees the
 * message only in the calls the test watches. */
static void eager_no_desc(size_t len, bool unexpected)
{
	uint8_t *src = dp_alloc(len + 1), *dst = gpu_alloc(len + 64);
	struct fid_mr *smr = dp_reg(&p[0], src, len + 1, FI_SEND);
	struct fid_mr *dmr = gpu_reg(&p[1], dst, len + 64, FI_RECV);
	struct fi_cq_tagged_entry e;
	unsigned seed = (unsigned)(len % 241) + unexpected;
	uint64_t base = gpu_stats().async_copies, c;

	dp_fill(src, len, seed);
	if (!unexpected)
		DP_POST(&p[1], 1,
			fi_trecv(p[1].ep, dst, len + 64, NULL, FI_ADDR_UNSPEC,
				 seed, 0, dst));
	DP_POST(&p[0], 1,
		fi_tsend(p[0].ep, src, len, fi_mr_desc(smr), p[0].peer[1], seed,
			 src));
	cr_assert_eq(
		dp_wait(p[0].txcq, &e, NULL, NULL, &p[0], 1, DP_TIMEOUT_MS), 1,
		"the send did not complete");
	if (unexpected) {
		/* Taken in as unexpected (the send completed: it is
		 * there), then matched by the receive's post, which
		 * starts the copy: the next read cannot find it done. */
		dp_progress(&p[1], 1);
		c = gpu_stats().async_copies;
		cr_assert_eq(c, base, "a copy before any receive matched");
		DP_POST(&p[1], 1,
			fi_trecv(p[1].ep, dst, len + 64, NULL, FI_ADDR_UNSPEC,
				 seed, 0, dst));
		if (gpu_stats().async_copies != c)
			cr_assert_eq(
				fi_cq_read(p[1].rxcq, &e, 1), -FI_EAGAIN,
				"complete at the first read after the receive started its copy: it waited for it");
	}
	expect_after_copies(p[1].rxcq, &p[0], &e);
	cr_assert_eq(e.op_context, dst);
	cr_assert_eq(e.len, len);
	cr_assert_gt(gpu_stats().async_copies, base,
		     "%zu bytes: no asynchronous copy", len);
	cr_assert(gpu_check(dst, len, seed), "%zu bytes arrived", len);
	fi_close(&smr->fid);
	fi_close(&dmr->fid);
	gpu_free(dst);
	free(src);
}

Test(hmem_async, eager_into_gpu_without_descriptor)
{
	struct standin_stats before;
	size_t sizes[] = {1, 100, 4096, 8192}; /* up to the eager limit */

	start(NULL);
	connect_pair();
	before = gpu_stats();
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		eager_no_desc(sizes[i], false);
		eager_no_desc(sizes[i], true);
	}
	cr_assert_eq(gpu_stats().stream_syncs, before.stream_syncs);
}

/* A tagged message of HOST_N entries of HOST_LEN bytes into host memory,
 * its receive posted without a descriptor (before the message, or after
 * it waited as unexpected), on a domain that registered GPU memory: CUDA
 * is asked what each entry is, once, and that answer both keeps the
 * bytes off the GPU step and lets the CPU copy them. Returns how many
 * pointer queries CUDA answered meanwhile. */
enum { HOST_N = 3, HOST_LEN = 100 };

static uint64_t host_no_desc(bool unexpected)
{
	uint8_t *src = dp_alloc(HOST_N * HOST_LEN), *dst[HOST_N];
	struct fid_mr *smr = dp_reg(&p[0], src, HOST_N * HOST_LEN, FI_SEND);
	struct iovec iov[HOST_N];
	struct fi_cq_tagged_entry e;
	unsigned seed = 11 + unexpected;
	uint64_t q = gpu_stats().ptr_queries;

	for (int i = 0; i < HOST_N; i++) {
		/* Apart: each entry is a buffer of its own. */
		dst[i] = dp_alloc(HOST_LEN);
		iov[i].iov_base = dst[i];
		iov[i].iov_len = HOST_LEN;
	}
	dp_fill(src, HOST_N * HOST_LEN, seed);
	if (!unexpected)
		DP_POST(p, 2,
			fi_trecvv(p[1].ep, iov, NULL, HOST_N, FI_ADDR_UNSPEC,
				  seed, 0, dst[0]));
	DP_POST(p, 2,
		fi_tsend(p[0].ep, src, HOST_N * HOST_LEN, fi_mr_desc(smr),
			 p[0].peer[1], seed, src));
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	if (unexpected) {
		dp_progress(&p[1], 1); /* taken in as unexpected */
		DP_POST(p, 2,
			fi_trecvv(p[1].ep, iov, NULL, HOST_N, FI_ADDR_UNSPEC,
				  seed, 0, dst[0]));
	}
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	q = gpu_stats().ptr_queries - q;
	cr_assert_eq(e.op_context, dst[0]);
	cr_assert_eq(e.len, HOST_N * HOST_LEN);
	for (int i = 0; i < HOST_N; i++) {
		cr_assert_arr_eq(dst[i], src + i * HOST_LEN, HOST_LEN,
				 "entry %d", i);
		free(dst[i]);
	}
	fi_close(&smr->fid);
	free(src);
	return q;
}

Test(hmem_async, host_receive_without_descriptor_asks_cuda_once)
{
	uint8_t *gpu;
	struct fid_mr *gmr;

	start(NULL);
	connect_pair();
	/* GPU memory registered in the receiver's domain: from now on a
	 * buffer given without a descriptor may be GPU memory, and CUDA is
	 * asked. */
	gpu = gpu_alloc(4096);
	gmr = gpu_reg(&p[1], gpu, 4096, FI_RECV);
	for (int unexpected = 0; unexpected < 2; unexpected++) {
		uint64_t q = host_no_desc(unexpected);

		cr_log_info(
			"%s receive of %d host entries: %llu CUDA pointer queries\n",
			unexpected ? "unexpected" : "expected", HOST_N,
			(unsigned long long)q);
		cr_assert_gt(
			q, 0,
			"CUDA was not asked: the path under test was not taken");
		/* One classification of a host address is two queries
		 * (its buffer ID, none, then all six attributes). */
		cr_assert_leq(
			q, 2 * HOST_N,
			"%llu pointer queries for %d entries: CUDA asked more than once per entry",
			(unsigned long long)q, HOST_N);
	}
	fi_close(&gmr->fid);
	gpu_free(gpu);
}

/* An eager fi_write into staged GPU memory: the target copies it in and
 * answers (FIN) when the copy is done. After the target's call that
 * started the copy, the initiator alone cannot complete: no answer was
 * sent from that call. */
Test(hmem_async, emulated_write_answers_after_its_copy)
{
	size_t n = 3000;
	uint8_t *src, *tgt;
	struct fid_mr *smr, *tmr;
	struct fi_cq_tagged_entry e;
	long long deadline;
	bool copied = false;

	start(NULL);
	src = dp_alloc(n);
	tgt = gpu_alloc(n);
	smr = dp_reg(&p[0], src, n, FI_WRITE);
	tmr = gpu_reg(&p[1], tgt, n, FI_REMOTE_WRITE | FI_REMOTE_READ);
	/* Connected first, so the write goes at once. */
	connect_pair();
	dp_fill(src, n, 5);
	DP_POST(p, 2,
		fi_write(p[0].ep, src, n, fi_mr_desc(smr), p[0].peer[1],
			 (uintptr_t)tgt, fi_mr_key(tmr), src));
	deadline = now_ms() + DP_TIMEOUT_MS;
	while (!copied) {
		uint64_t before = gpu_stats().async_copies;

		cr_assert_eq(fi_cq_read(p[0].txcq, &e, 1), -FI_EAGAIN,
			     "the write completed before the target copied");
		fi_cq_read(p[1].rxcq, NULL, 0);
		copied = gpu_stats().async_copies != before;
		cr_assert_lt(now_ms(), deadline, "the target never copied");
	}
	/* The initiator alone, for a while: nothing to complete it yet. */
	dp_expect_none(p[0].txcq, &p[0], 1, 300);
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	cr_assert_eq(e.op_context, src);
	cr_assert(gpu_check(tgt, n, 5), "written when complete");
	fi_close(&smr->fid);
	fi_close(&tmr->fid);
	gpu_free(tgt);
	free(src);
}

/* A tagged send with FI_DELIVERY_COMPLETE of len bytes (up to the eager
 * limit: eager, with a delivery ACK) from host memory into GPU memory, or
 * from GPU memory (copied out by the staging pipeline, or before the call)
 * into host memory. Into GPU memory the receiver answers only once its
 * asynchronous copy ended: after the receiver's call that started the
 * copy, the sender alone cannot complete. Either way the data is in the
 * receive's buffer at the send's completion. */
static void delivery_complete(size_t len, bool to_gpu)
{
	uint8_t *src = to_gpu ? dp_alloc(len) : gpu_alloc(len);
	uint8_t *dst = to_gpu ? gpu_alloc(len + 64) : dp_alloc(len + 64);
	struct fid_mr *smr = to_gpu ? dp_reg(&p[0], src, len, FI_SEND)
				    : gpu_reg(&p[0], src, len, FI_SEND);
	struct fid_mr *dmr = to_gpu ? gpu_reg(&p[1], dst, len + 64, FI_RECV)
				    : dp_reg(&p[1], dst, len + 64, FI_RECV);
	void *sdesc = fi_mr_desc(smr);
	struct iovec iov = {src, len};
	unsigned seed = (unsigned)(len % 241) + 3;
	struct fi_msg_tagged m = {.msg_iov = &iov,
				  .desc = &sdesc,
				  .iov_count = 1,
				  .addr = p[0].peer[1],
				  .tag = seed,
				  .context = src};
	struct fi_cq_tagged_entry e;
	long long deadline = now_ms() + DP_TIMEOUT_MS;
	bool copied = !to_gpu;

	if (to_gpu)
		dp_fill(src, len, seed);
	else
		gpu_fill(src, len, seed);
	DP_POST(p, 2,
		fi_trecv(p[1].ep, dst, len + 64, fi_mr_desc(dmr),
			 FI_ADDR_UNSPEC, seed, 0, dst));
	DP_POST(p, 2,
		fi_tsendmsg(p[0].ep, &m, FI_DELIVERY_COMPLETE | FI_COMPLETION));
	while (!copied) {
		uint64_t before = gpu_stats().async_copies;

		cr_assert_eq(fi_cq_read(p[0].txcq, &e, 1), -FI_EAGAIN,
			     "%zu bytes: the send completed before the "
			     "receiver copied",
			     len);
		dp_progress(&p[0], 1);
		fi_cq_read(p[1].rxcq, NULL, 0);
		copied = gpu_stats().async_copies != before;
		cr_assert_lt(now_ms(), deadline, "the receiver never copied");
	}
	if (to_gpu) /* the sender alone: nothing to complete it yet */
		dp_expect_none(p[0].txcq, &p[0], 1, 100);
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	cr_assert_eq(e.op_context, src);
	cr_assert(to_gpu ? gpu_check(dst, len, seed) : dp_check(dst, len, seed),
		  "%zu bytes in place at the send's completion", len);
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	cr_assert_eq(e.op_context, dst);
	cr_assert_eq(e.len, len);
	fi_close(&smr->fid);
	fi_close(&dmr->fid);
	if (to_gpu) {
		gpu_free(dst);
		free(src);
	} else {
		gpu_free(src);
		free(dst);
	}
}

Test(hmem_async, delivery_complete_eager_waits_for_the_gpu_copy)
{
	size_t sizes[] = {1, 100, 8192}; /* up to the eager limit */

	start(NULL);
	connect_pair();
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		delivery_complete(sizes[i], true);
		delivery_complete(sizes[i], false);
	}
}

/* fi_fetch_atomic (FI_SUM on a uint64_t) whose fetched value goes into
 * GPU memory, with or without its descriptor; the target is host memory.
 * Returns after checking the value and the target. */
static void fetch_into_gpu(uint64_t *t, struct fid_mr *tmr, bool desc)
{
	uint64_t *res = gpu_alloc(sizeof(*res)), v = 5, got = 0, old = *t;
	struct fid_mr *rmr = gpu_reg(&p[0], res, sizeof(*res), FI_READ);
	struct fi_cq_tagged_entry e;
	uint64_t started;

	DP_POST(p, 2,
		fi_fetch_atomic(p[0].ep, &v, 1, NULL, res,
				desc ? fi_mr_desc(rmr) : NULL, p[0].peer[1],
				(uintptr_t)t, fi_mr_key(tmr), FI_UINT64, FI_SUM,
				res));
	started = expect_after_copies(p[0].txcq, &p[1], &e);
	cr_assert_eq(e.op_context, res);
	cr_assert_gt(started, 0, "no asynchronous copy of the result");
	gpu_read(&got, res, sizeof(got));
	cr_assert_eq(got, old, "fetched %llu, held %llu",
		     (unsigned long long)got, (unsigned long long)old);
	cr_assert_eq(*t, old + 5);
	fi_close(&rmr->fid);
	gpu_free(res);
}

/* Atomics the initiator ran on the NIC so far. */
static uint64_t nic_count(void)
{
	struct fi_gdrfab_atomic_ops *ops = NULL;
	struct fi_gdrfab_atomic_stats s;

	cr_assert_eq(fi_open_ops(&p[0].d.domain->fid, FI_GDRFAB_ATOMIC_OPS, 0,
				 (void **)&ops, NULL),
		     0);
	cr_assert_eq(ops->stats(&p[0].d.domain->fid, &s), 0);
	return s.nic;
}

static void fetches(const char *nic_atomics, uint64_t on_nic)
{
	uint64_t *t, warm, nic;
	struct fid_mr *tmr;
	struct fi_cq_tagged_entry e;

	start(nic_atomics);
	t = dp_alloc(4096);
	tmr = dp_reg(&p[1], t, 4096, FI_REMOTE_READ | FI_REMOTE_WRITE);
	*t = 40;
	/* Connected, and the peer's device known (NIC atomics need it). */
	DP_POST(p, 2,
		fi_fetch_atomic(p[0].ep, NULL, 1, NULL, &warm, NULL,
				p[0].peer[1], (uintptr_t)t, fi_mr_key(tmr),
				FI_UINT64, FI_ATOMIC_READ, &warm));
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	cr_assert_eq(warm, 40);
	nic = nic_count();
	fetch_into_gpu(t, tmr, true);
	fetch_into_gpu(t, tmr, false);
	cr_assert_eq(*t, 50);
	cr_assert_eq(nic_count() - nic, on_nic, "the path the atomics took");
	fi_close(&tmr->fid);
	free(t);
}

Test(hmem_async, message_atomic_result_into_gpu)
{
	fetches("off", 0);
}

Test(hmem_async, nic_atomic_result_into_gpu)
{
	fetches("unsafe_hca", 2);
}
