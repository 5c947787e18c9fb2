/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_OPT_CUDA_API_PERMITTED=false over rxe with the CUDA stand-in standing
 * in for peermem (its "GPU" memory registrable by rxe): tagged messages
 * from inline to rendezvous sizes, into and out of GPU buffers, expected
 * and unexpected, move with no CUDA call at all while the provider runs
 * (the stand-in counts every call made while forbidden, and fails copies,
 * events and streams). Where GPU memory can only be staged with CUDA
 * copies, the option is refused.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "dp_helpers.h"
#include "gpu_standin.h"

#ifndef FI_OPT_CUDA_API_PERMITTED
#define FI_OPT_CUDA_API_PERMITTED 10
#endif

static struct dp_ep *const p = dp_pair_eps;
static int forbid_mode = 2; /* while one_message's data moves */

TestSuite(hmem_nocuda, .fini = dp_pair_teardown, .timeout = 240);

static int set_cuda(struct dp_ep *e, bool permitted)
{
	return fi_setopt(&e->ep->fid, FI_OPT_ENDPOINT,
			 FI_OPT_CUDA_API_PERMITTED, &permitted,
			 sizeof(permitted));
}

static int set_p2p(struct dp_ep *e, int mode)
{
	return fi_setopt(&e->ep->fid, FI_OPT_ENDPOINT, FI_OPT_FI_HMEM_P2P,
			 &mode, sizeof(mode));
}

/* A pair over the given registration path; CUDA turned off on both
 * endpoints (after fi_enable, as the option allows) when off. */
static void start(const char *cuda_reg, bool off)
{
	require_vm();
	if (cuda_reg) {
		setenv("FI_GDRFAB_CUDA_REG", cuda_reg, 1);
		setenv("GDRFAB_STANDIN_CPU_VISIBLE", "1", 1);
	}
	gpu_open();
	dp_pair_open(NULL);
	for (int i = 0; off && i < 2; i++)
		cr_assert_eq(
			set_cuda(&p[i], false), 0,
			"FI_OPT_CUDA_API_PERMITTED=false on a peermem domain");
}

static struct fid_mr *reg(struct dp_ep *e, void *buf, size_t len,
			  uint64_t access, bool gpu)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = access,
		.iface = gpu ? FI_HMEM_CUDA : FI_HMEM_SYSTEM,
	};
	struct fid_mr *mr = NULL;
	int ret = fi_mr_regattr(e->d.domain, &attr, 0, &mr);

	cr_assert_eq(ret, 0, "fi_mr_regattr: %s", fi_strerror(-ret));
	return mr;
}

struct side {
	bool gpu;
	uint8_t *buf;
	struct fid_mr *mr;
};

static void side_open(struct dp_ep *e, struct side *s, bool gpu, size_t len,
		      uint64_t access)
{
	s->gpu = gpu;
	s->buf = gpu ? gpu_alloc(len) : dp_alloc(len);
	s->mr = reg(e, s->buf, len, access, gpu);
}

static void side_close(struct side *s)
{
	fi_close(&s->mr->fid);
	if (s->gpu)
		gpu_free(s->buf);
	else
		free(s->buf);
}

/* One tagged message of len bytes, src -> dst, with the provider's CUDA
 * calls forbidden while it moves; unexpected: sent (and acknowledged)
 * before its receive is posted. Returns the calls made meanwhile. */
static uint64_t one_message(bool src_gpu, bool dst_gpu, size_t len,
			    bool unexpected, unsigned seed)
{
	size_t cap = len + 64;
	struct side s, d;
	struct fi_cq_tagged_entry e;
	uint64_t before, tag = 0x5000 + seed;

	side_open(&p[0], &s, src_gpu, len ? len : 1, FI_SEND);
	side_open(&p[1], &d, dst_gpu, cap, FI_RECV);
	if (src_gpu)
		gpu_fill(s.buf, len, seed);
	else
		dp_fill(s.buf, len, seed);
	before = gpu_stats().forbidden_calls;
	gpu_forbid(forbid_mode);
	if (!unexpected)
		DP_POST(p, 2,
			fi_trecv(p[1].ep, d.buf, cap, fi_mr_desc(d.mr),
				 FI_ADDR_UNSPEC, tag, 0, d.buf));
	DP_POST(p, 2,
		fi_tsend(p[0].ep, s.buf, len, fi_mr_desc(s.mr), p[0].peer[1],
			 tag, s.buf));
	if (unexpected) {
		/* Acknowledged (eager) or announced (rendezvous): the
		 * receiver has it before its receive exists. */
		if (len <= 8192)
			dp_expect(p[0].txcq, &e, NULL, p, 2);
		else
			dp_expect_none(p[1].rxcq, p, 2, 50);
		DP_POST(p, 2,
			fi_trecv(p[1].ep, d.buf, cap, fi_mr_desc(d.mr),
				 FI_ADDR_UNSPEC, tag, 0, d.buf));
	}
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	cr_assert_eq(e.len, len, "%zu bytes: completion says %zu", len, e.len);
	cr_assert_eq(e.tag, tag);
	cr_assert_eq(e.buf, d.buf);
	if (!unexpected || len > 8192)
		dp_expect(p[0].txcq, &e, NULL, p, 2);
	gpu_forbid(0);
	before = gpu_stats().forbidden_calls - before;
	cr_assert(dst_gpu ? gpu_check(d.buf, len, seed)
			  : dp_check(d.buf, len, seed),
		  "%zu bytes %s -> %s (%s) arrived intact", len,
		  src_gpu ? "GPU" : "host", dst_gpu ? "GPU" : "host",
		  unexpected ? "unexpected" : "expected");
	side_close(&s);
	side_close(&d);
	return before;
}

/* 0 B, inline, eager up to its limit (8 KiB), rendezvous. */
static const size_t sizes[] = {0, 1, 100, 4096, 8192, 8193, 65536, 1 << 20};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

Test(hmem_nocuda, gpu_to_gpu_without_cuda_calls)
{
	start("peermem", true);
	for (size_t i = 0; i < NSIZES; i++) {
		for (int unexp = 0; unexp < 2; unexp++)
			cr_assert_eq(
				one_message(true, true, sizes[i], unexp,
					    (unsigned)(i * 2 + unexp)),
				0,
				"CUDA calls while %zu bytes moved GPU to GPU (%s)",
				sizes[i], unexp ? "unexpected" : "expected");
	}
}

Test(hmem_nocuda, host_and_gpu_mixed_without_cuda_calls)
{
	start("peermem", true);
	for (size_t i = 0; i < NSIZES; i++) {
		for (int unexp = 0; unexp < 2; unexp++) {
			cr_assert_eq(one_message(false, true, sizes[i], unexp,
						 (unsigned)i + 40),
				     0, "host -> GPU, %zu bytes", sizes[i]);
			cr_assert_eq(one_message(true, false, sizes[i], unexp,
						 (unsigned)i + 80),
				     0, "GPU -> host, %zu bytes", sizes[i]);
		}
	}
}

/* An eager message across a receive of a host and a GPU iovec entry:
 * the host part is copied by the CPU, the GPU part written by RDMA. */
Test(hmem_nocuda, eager_across_host_and_gpu_iovecs)
{
	size_t len = 6000, half = 2500;
	uint8_t *src, *host, *gpu, *whole = dp_alloc(len);
	struct fid_mr *smr, *hmr, *gmr;
	struct iovec iov[2];
	void *desc[2];
	struct fi_cq_tagged_entry e;
	uint64_t before;

	start("peermem", true);
	src = dp_alloc(len);
	host = dp_alloc(half);
	gpu = gpu_alloc(len - half);
	smr = reg(&p[0], src, len, FI_SEND, false);
	hmr = reg(&p[1], host, half, FI_RECV, false);
	gmr = reg(&p[1], gpu, len - half, FI_RECV, true);
	dp_fill(src, len, 3);
	iov[0] = (struct iovec){host, half};
	iov[1] = (struct iovec){gpu, len - half};
	desc[0] = fi_mr_desc(hmr);
	desc[1] = fi_mr_desc(gmr);
	before = gpu_stats().forbidden_calls;
	gpu_forbid(2);
	DP_POST(p, 2,
		fi_trecvv(p[1].ep, iov, desc, 2, FI_ADDR_UNSPEC, 9, 0, NULL));
	DP_POST(p, 2,
		fi_tsend(p[0].ep, src, len, fi_mr_desc(smr), p[0].peer[1], 9,
			 NULL));
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	cr_assert_eq(e.len, len);
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	gpu_forbid(0);
	cr_assert_eq(gpu_stats().forbidden_calls, before);
	memcpy(whole, host, half);
	gpu_read(whole + half, gpu, len - half);
	cr_assert(dp_check(whole, len, 3));
	fi_close(&smr->fid);
	fi_close(&hmr->fid);
	fi_close(&gmr->fid);
	gpu_free(gpu);
	free(src);
	free(host);
	free(whole);
}

/* fi_writedata into GPU memory (aws-ofi-nccl's rdma protocol): its CQ
 * data is reported once the writes are flushed, by READ, not CUDA. */
Test(hmem_nocuda, writedata_into_gpu_flushed_by_read)
{
	size_t len = 65536;
	uint8_t *src = dp_alloc(len), *dst;
	struct fid_mr *smr, *dmr;
	struct fi_cq_tagged_entry e;
	struct standin_stats before;

	start("peermem", true);
	dst = gpu_alloc(len);
	smr = reg(&p[0], src, len, FI_WRITE, false);
	dmr = reg(&p[1], dst, len, FI_REMOTE_WRITE, true);
	dp_fill(src, len, 5);
	before = gpu_stats();
	gpu_forbid(2);
	DP_POST(p, 2,
		fi_writedata(p[0].ep, src, len, fi_mr_desc(smr), 0xabcd,
			     p[0].peer[1], (uintptr_t)dst, fi_mr_key(dmr),
			     NULL));
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	cr_assert_eq(e.data, 0xabcd);
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	gpu_forbid(0);
	cr_assert_eq(gpu_stats().forbidden_calls, before.forbidden_calls);
	cr_assert_eq(gpu_stats().flushes, before.flushes,
		     "no cuFlushGPUDirectRDMAWrites");
	cr_assert(gpu_check(dst, len, 5));
	fi_close(&smr->fid);
	fi_close(&dmr->fid);
	free(src);
}

/* The option read back, and turned on again: the CUDA path returns. */
Test(hmem_nocuda, option_reads_back_and_turns_on_again)
{
	bool off = false, got = true;
	size_t n = sizeof(got);
	uint64_t copies;

	start("peermem", false);
	cr_assert_eq(set_cuda(&p[0], false), 0);
	cr_assert_eq(fi_getopt(&p[0].ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_CUDA_API_PERMITTED, &got, &n),
		     0);
	cr_assert_eq(got, off);
	cr_assert_eq(set_cuda(&p[1], false), 0);
	cr_assert_eq(one_message(true, true, 4096, false, 1), 0);
	/* Back on: the CUDA path again, still correct. */
	cr_assert_eq(set_cuda(&p[0], true), 0);
	cr_assert_eq(set_cuda(&p[1], true), 0);
	forbid_mode = 0;
	copies = gpu_stats().copies_to_dev;
	one_message(true, true, 4096, false, 2);
	/* gpu_fill's copy, and the receiver's eager copy. */
	cr_assert_geq(gpu_stats().copies_to_dev, copies + 2,
		      "with CUDA permitted, eager data is copied by CUDA");
}

/* Staged GPU memory (rxe without peermem): every GPU transfer is a CUDA
 * copy, so the option is refused. */
Test(hmem_nocuda, refused_where_only_staging_exists)
{
	start(NULL, false);
	cr_assert_eq(set_cuda(&p[0], false), -FI_EOPNOTSUPP);
	cr_assert_eq(set_cuda(&p[0], true), 0);
}

Test(hmem_nocuda, refused_with_p2p_disabled)
{
	start("peermem", false);
	/* P2P off first: staging, so no CUDA-free path. */
	cr_assert_eq(set_p2p(&p[0], FI_HMEM_P2P_DISABLED), 0);
	cr_assert_eq(set_cuda(&p[0], false), -FI_EOPNOTSUPP);
	/* CUDA off first: P2P cannot then be disabled. */
	cr_assert_eq(set_cuda(&p[1], false), 0);
	cr_assert_eq(set_p2p(&p[1], FI_HMEM_P2P_DISABLED), -FI_EOPNOTSUPP);
	cr_assert_eq(set_p2p(&p[1], FI_HMEM_P2P_REQUIRED), 0);
}

/* An FI_INJECT send from GPU memory must be copied before the call
 * returns: without CUDA (and without gdrfab.ko) it is refused, not
 * copied by a forbidden call. */
Test(hmem_nocuda, inject_from_gpu_refused)
{
	uint8_t *src;
	struct fid_mr *smr;
	struct iovec iov;
	void *desc;
	struct fi_msg_tagged msg = {0};
	uint64_t before;

	start("peermem", true);
	src = gpu_alloc(64);
	smr = reg(&p[0], src, 64, FI_SEND, true);
	iov = (struct iovec){src, 64};
	desc = fi_mr_desc(smr);
	msg.msg_iov = &iov;
	msg.desc = &desc;
	msg.iov_count = 1;
	msg.addr = p[0].peer[1];
	before = gpu_stats().forbidden_calls;
	gpu_forbid(2);
	cr_assert_eq(fi_tsendmsg(p[0].ep, &msg, FI_INJECT), -FI_EOPNOTSUPP);
	gpu_forbid(0);
	cr_assert_eq(gpu_stats().forbidden_calls, before);
	fi_close(&smr->fid);
	gpu_free(src);
}
