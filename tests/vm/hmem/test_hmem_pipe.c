/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The staged path's pipeline over rxe with the CUDA stand-in, whose
 * asynchronous copies run only when their events are queried: messages
 * and RMA at sizes around the copy chunk (FI_GDRFAB_STAGE_CHUNK, set small
 * here so that many chunks cost little), across iovec entries, many in
 * flight, and a copy that fails: one error completion, nothing leaked.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp_helpers.h"
#include "gpu_standin.h"

#define CHUNK 65536

static struct dp_ep *const p = dp_pair_eps;

static void start(void)
{
	char chunk[32];

	require_vm();
	snprintf(chunk, sizeof(chunk), "%d", CHUNK);
	setenv("FI_GDRFAB_STAGE_CHUNK", chunk, 1);
	gpu_open();
	dp_pair_open(NULL);
}

TestSuite(hmem_pipe, .fini = dp_pair_teardown, .timeout = 300);

/* Sizes around the chunk and the ring of copies in flight. */
static const size_t sizes[] = {
	0,	   1,	      CHUNK - 1,      CHUNK,
	CHUNK + 1, 3 * CHUNK, 17 * CHUNK + 3, (size_t)40 * CHUNK - 1,
};

/* A tagged message from GPU memory into GPU memory, checked. */
static void gpu_to_gpu(size_t len, unsigned seed)
{
	uint8_t *src = gpu_alloc(len + 1), *dst = gpu_alloc(len + 64);
	struct fid_mr *smr = gpu_reg(&p[0], src, len + 1, FI_SEND);
	struct fid_mr *dmr = gpu_reg(&p[1], dst, len + 64, FI_RECV);
	struct fi_cq_tagged_entry e;

	gpu_fill(src, len, seed);
	DP_POST(p, 2,
		fi_trecv(p[1].ep, dst, len + 64, fi_mr_desc(dmr),
			 FI_ADDR_UNSPEC, seed, 0, dst));
	DP_POST(p, 2,
		fi_tsend(p[0].ep, src, len, fi_mr_desc(smr), p[0].peer[1], seed,
			 src));
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	cr_assert_eq(e.len, len);
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	cr_assert(gpu_check(dst, len, seed), "%zu bytes arrived", len);
	fi_close(&smr->fid);
	fi_close(&dmr->fid);
	gpu_free(src);
	gpu_free(dst);
}

Test(hmem_pipe, messages_around_chunk_boundaries)
{
	struct standin_stats before, after;

	start(); /* rxe: no dma-buf, no peermem: staged */
	before = gpu_stats();
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		gpu_to_gpu(sizes[i], (unsigned)i + 1);
	gpu_to_gpu((size_t)64 << 20, 99);
	after = gpu_stats();
	/* Pieces of one chunk growing to four (gdrfab_stage_piece_grid):
	 * 258 copies each way for the 64 MiB. */
	cr_assert_geq(
		after.async_copies,
		before.async_copies + 2 * ((64 << 20) / (4 * CHUNK)),
		"64 MiB in 64 KiB chunks: a copy per piece of up to four chunks each way");
	cr_assert_gt(after.not_ready, before.not_ready,
		     "progress polled copies that had not run yet");
	cr_assert_eq(after.stream_syncs, before.stream_syncs,
		     "no cuStreamSynchronize on the data path");
	cr_assert_gt(after.host_regs, 0, "bounce buffers pinned for CUDA");
}

/* A message whose both sides are three iovec entries, GPU and host mixed,
 * with an entry boundary inside a chunk. */
Test(hmem_pipe, message_across_iov_entries)
{
	size_t n[3] = {CHUNK / 2 + 5, 2 * CHUNK, CHUNK + 7};
	size_t total = n[0] + n[1] + n[2];
	uint8_t *gs, *gd, *hs = dp_alloc(n[1]), *hd = dp_alloc(n[1]);
	struct fid_mr *gsm, *gdm, *hsm, *hdm;
	struct iovec siov[3], diov[3];
	void *sdesc[3], *ddesc[3];
	struct fi_cq_tagged_entry e;
	uint8_t *tmp = dp_alloc(total);

	start();
	gs = gpu_alloc(total);
	gd = gpu_alloc(total);
	gsm = gpu_reg(&p[0], gs, total, FI_SEND);
	gdm = gpu_reg(&p[1], gd, total, FI_RECV);
	hsm = dp_reg(&p[0], hs, n[1], FI_SEND);
	hdm = dp_reg(&p[1], hd, n[1], FI_RECV);
	/* gs holds the pattern; the message is gs[0, n0) | hs | gs[n0 + n1,
	 * total), hs being the pattern's middle: the whole pattern. */
	dp_fill(tmp, total, 5);
	gpu_fill(gs, total, 5);
	memcpy(hs, tmp + n[0], n[1]);
	siov[0] = (struct iovec){gs, n[0]};
	siov[1] = (struct iovec){hs, n[1]};
	siov[2] = (struct iovec){gs + n[0] + n[1], n[2]};
	sdesc[0] = sdesc[2] = fi_mr_desc(gsm);
	sdesc[1] = fi_mr_desc(hsm);
	diov[0] = (struct iovec){gd, n[0]};
	diov[1] = (struct iovec){hd, n[1]};
	diov[2] = (struct iovec){gd + n[0] + n[1], n[2]};
	ddesc[0] = ddesc[2] = fi_mr_desc(gdm);
	ddesc[1] = fi_mr_desc(hdm);
	DP_POST(p, 2,
		fi_trecvv(p[1].ep, diov, ddesc, 3, FI_ADDR_UNSPEC, 7, 0, NULL));
	DP_POST(p, 2,
		fi_tsendv(p[0].ep, siov, sdesc, 3, p[0].peer[1], 7, NULL));
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	cr_assert_eq(e.len, total);
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	/* Entry by entry: GPU, host, GPU, each as sent. */
	{
		uint8_t *got = dp_alloc(total);

		gpu_read(got, gd, total);
		cr_assert_eq(memcmp(got, tmp, n[0]), 0, "first GPU entry");
		cr_assert_eq(memcmp(hd, tmp + n[0], n[1]), 0, "host entry");
		cr_assert_eq(memcmp(got + n[0] + n[1], tmp + n[0] + n[1], n[2]),
			     0, "last GPU entry");
		free(got);
	}
	fi_close(&gsm->fid);
	fi_close(&gdm->fid);
	fi_close(&hsm->fid);
	fi_close(&hdm->fid);
	gpu_free(gs);
	gpu_free(gd);
	free(hs);
	free(hd);
	free(tmp);
}

/* fi_write and fi_read between local GPU memory and remote host memory,
 * and both ways into the peer's staged GPU memory (emulated RMA). */
Test(hmem_pipe, rma_around_chunk_boundaries)
{
	size_t max = (size_t)64 << 20;
	uint8_t *src, *back, *remote = dp_alloc(max), *tgt;
	struct fid_mr *smr, *bmr, *rmr, *tmr;
	struct fi_cq_tagged_entry e;

	start();
	src = gpu_alloc(max);
	back = gpu_alloc(max);
	tgt = gpu_alloc(max);
	smr = gpu_reg(&p[0], src, max, FI_WRITE | FI_READ);
	bmr = gpu_reg(&p[0], back, max, FI_WRITE | FI_READ);
	rmr = dp_reg(&p[1], remote, max, FI_REMOTE_READ | FI_REMOTE_WRITE);
	tmr = gpu_reg(&p[1], tgt, max, FI_REMOTE_READ | FI_REMOTE_WRITE);
	for (size_t i = 0; i <= sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len =
			i < sizeof(sizes) / sizeof(sizes[0]) ? sizes[i] : max;
		unsigned seed = (unsigned)i + 11;

		gpu_fill(src, len, seed);
		DP_POST(p, 2,
			fi_write(p[0].ep, src, len, fi_mr_desc(smr),
				 p[0].peer[1], (uintptr_t)remote,
				 fi_mr_key(rmr), NULL));
		dp_expect(p[0].txcq, &e, NULL, p, 2);
		cr_assert(dp_check(remote, len, seed), "write of %zu", len);
		DP_POST(p, 2,
			fi_read(p[0].ep, back, len, fi_mr_desc(bmr),
				p[0].peer[1], (uintptr_t)remote, fi_mr_key(rmr),
				NULL));
		dp_expect(p[0].txcq, &e, NULL, p, 2);
		cr_assert(gpu_check(back, len, seed), "read of %zu", len);
		if (len > (size_t)8 << 20)
			continue; /* the emulated path: up to 8 MiB here */
		/* GPU to the peer's staged GPU memory and back. */
		DP_POST(p, 2,
			fi_write(p[0].ep, src, len, fi_mr_desc(smr),
				 p[0].peer[1], (uintptr_t)tgt, fi_mr_key(tmr),
				 NULL));
		dp_expect(p[0].txcq, &e, NULL, p, 2);
		cr_assert(gpu_check(tgt, len, seed), "emulated write %zu", len);
		DP_POST(p, 2,
			fi_read(p[0].ep, back, len, fi_mr_desc(bmr),
				p[0].peer[1], (uintptr_t)tgt, fi_mr_key(tmr),
				NULL));
		dp_expect(p[0].txcq, &e, NULL, p, 2);
		cr_assert(gpu_check(back, len, seed), "emulated read %zu", len);
	}
	fi_close(&smr->fid);
	fi_close(&bmr->fid);
	fi_close(&rmr->fid);
	fi_close(&tmr->fid);
	gpu_free(src);
	gpu_free(back);
	gpu_free(tgt);
	free(remote);
}

#define IN_FLIGHT 24

/* Many staged sends and RMA writes at once, completed in any order by
 * the copies, delivered in order with every byte checked. */
Test(hmem_pipe, many_in_flight)
{
	size_t len[IN_FLIGHT];
	uint8_t *src[IN_FLIGHT], *dst[IN_FLIGHT], *remote;
	struct fid_mr *smr[IN_FLIGHT], *dmr[IN_FLIGHT], *rmr;
	struct fi_cq_tagged_entry e;

	start();
	remote = dp_alloc((size_t)IN_FLIGHT * 5 * CHUNK);
	rmr = dp_reg(&p[1], remote, (size_t)IN_FLIGHT * 5 * CHUNK,
		     FI_REMOTE_WRITE);
	for (int i = 0; i < IN_FLIGHT; i++) {
		len[i] = (size_t)(i % 5) * CHUNK + (size_t)i * 37;
		src[i] = gpu_alloc(len[i] + 1);
		dst[i] = gpu_alloc(len[i] + 1);
		smr[i] = gpu_reg(&p[0], src[i], len[i] + 1, FI_SEND | FI_WRITE);
		dmr[i] = gpu_reg(&p[1], dst[i], len[i] + 1, FI_RECV);
		gpu_fill(src[i], len[i], 100 + (unsigned)i);
		DP_POST(p, 2,
			fi_trecv(p[1].ep, dst[i], len[i], fi_mr_desc(dmr[i]),
				 FI_ADDR_UNSPEC, 0x77, 0,
				 (void *)(uintptr_t)i));
	}
	for (int i = 0; i < IN_FLIGHT; i++) {
		DP_POST(p, 2,
			fi_tsend(p[0].ep, src[i], len[i], fi_mr_desc(smr[i]),
				 p[0].peer[1], 0x77, NULL));
		DP_POST(p, 2,
			fi_write(p[0].ep, src[i], len[i], fi_mr_desc(smr[i]),
				 p[0].peer[1],
				 (uintptr_t)remote + (size_t)i * 5 * CHUNK,
				 fi_mr_key(rmr), NULL));
	}
	/* Same tag: matched in order, so receive i holds message i (they
	 * complete in any order: eager ones before earlier rendezvous). */
	for (int i = 0; i < IN_FLIGHT; i++) {
		uintptr_t k;

		dp_expect(p[1].rxcq, &e, NULL, p, 2);
		k = (uintptr_t)e.op_context;
		cr_assert_lt(k, IN_FLIGHT);
		cr_assert_eq(e.len, len[k], "receive %zu: %zu bytes", (size_t)k,
			     e.len);
	}
	for (int i = 0; i < 2 * IN_FLIGHT; i++)
		dp_expect(p[0].txcq, &e, NULL, p, 2);
	for (int i = 0; i < IN_FLIGHT; i++) {
		cr_assert(gpu_check(dst[i], len[i], 100 + (unsigned)i),
			  "message %d (%zu bytes)", i, len[i]);
		cr_assert(dp_check(remote + (size_t)i * 5 * CHUNK, len[i],
				   100 + (unsigned)i),
			  "write %d (%zu bytes)", i, len[i]);
		fi_close(&smr[i]->fid);
		fi_close(&dmr[i]->fid);
		gpu_free(src[i]);
		gpu_free(dst[i]);
	}
	fi_close(&rmr->fid);
	free(remote);
}

/* One error completion for the operation whose copy failed, nothing more;
 * the endpoint goes on working. */
static void expect_one_error(struct fid_cq *cq, void *context)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = {0};
	int ret = dp_wait(cq, &e, NULL, &err, p, 2, DP_TIMEOUT_MS);

	cr_assert_eq(ret, -FI_EAVAIL, "an error completion (got %d)", ret);
	cr_assert_eq(err.err, FI_EIO, "FI_EIO, got %s", fi_strerror(err.err));
	cr_assert_eq(err.op_context, context);
	dp_expect_none(cq, p, 2, 300);
}

Test(hmem_pipe, failed_copy_fails_its_operation_once)
{
	size_t len = 5 * CHUNK + 3;
	uint8_t *src, *dst, *remote = dp_alloc(len);
	struct fid_mr *smr, *dmr, *rmr;
	struct standin_stats before, after;
	struct fi_cq_tagged_entry e;

	start();
	before = gpu_stats();
	src = gpu_alloc(len);
	dst = gpu_alloc(len);
	smr = gpu_reg(&p[0], src, len, FI_SEND | FI_WRITE | FI_READ);
	dmr = gpu_reg(&p[1], dst, len, FI_RECV);
	rmr = dp_reg(&p[1], remote, len, FI_REMOTE_READ | FI_REMOTE_WRITE);
	gpu_fill(src, len, 21);

	/* The sender's third copy out of the GPU fails: its send fails,
	 * nothing goes; the receive stays posted and gets the next one. */
	DP_POST(p, 2,
		fi_trecv(p[1].ep, dst, len, fi_mr_desc(dmr), FI_ADDR_UNSPEC, 1,
			 0, dst));
	gpu_fail_copies(3);
	DP_POST(p, 2,
		fi_tsend(p[0].ep, src, len, fi_mr_desc(smr), p[0].peer[1], 1,
			 (void *)0x51));
	expect_one_error(p[0].txcq, (void *)0x51);
	dp_expect_none(p[1].rxcq, p, 2, 100);
	DP_POST(p, 2,
		fi_tsend(p[0].ep, src, len, fi_mr_desc(smr), p[0].peer[1], 1,
			 NULL));
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	cr_assert(gpu_check(dst, len, 21));

	/* The receiver's copy into the GPU fails (6 pieces out, then the
	 * second in): its receive fails, the sender's send completes. */
	DP_POST(p, 2,
		fi_trecv(p[1].ep, dst, len, fi_mr_desc(dmr), FI_ADDR_UNSPEC, 2,
			 0, (void *)0x52));
	gpu_fail_copies(6 + 2);
	DP_POST(p, 2,
		fi_tsend(p[0].ep, src, len, fi_mr_desc(smr), p[0].peer[1], 2,
			 NULL));
	expect_one_error(p[1].rxcq, (void *)0x52);
	dp_expect(p[0].txcq, &e, NULL, p, 2);

	/* A staged RMA write whose fourth copy fails, after some of it
	 * went: one error, and a read into the GPU whose copy fails. */
	gpu_fail_copies(4);
	DP_POST(p, 2,
		fi_write(p[0].ep, src, len, fi_mr_desc(smr), p[0].peer[1],
			 (uintptr_t)remote, fi_mr_key(rmr), (void *)0x53));
	expect_one_error(p[0].txcq, (void *)0x53);
	gpu_fail_copies(1);
	DP_POST(p, 2,
		fi_read(p[0].ep, src, len, fi_mr_desc(smr), p[0].peer[1],
			(uintptr_t)remote, fi_mr_key(rmr), (void *)0x54));
	expect_one_error(p[0].txcq, (void *)0x54);
	gpu_fail_copies(0);

	/* Still working, and every bounce buffer given back at close. */
	gpu_to_gpu(3 * CHUNK, 22);
	fi_close(&smr->fid);
	fi_close(&dmr->fid);
	fi_close(&rmr->fid);
	dp_pair_teardown();
	after = gpu_stats();
	cr_assert_eq(after.failed_copies - before.failed_copies, 4);
	cr_assert_eq(after.host_regs - before.host_regs,
		     after.host_unregs - before.host_unregs,
		     "every pinned bounce buffer unpinned at close");
	gpu_free(src);
	gpu_free(dst);
	free(remote);
}
