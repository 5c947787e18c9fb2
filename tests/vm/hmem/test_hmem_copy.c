/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * GPU bytes that the CPU or CUDA must copy in the call itself (an eager
 * send the NIC does not gather, atomic operands) are copied before the
 * endpoint's lock is taken, with CUDA, never read by the CPU directly.
 * The CUDA stand-in's device pages are PROT_NONE to the CPU, so a direct
 * read crashes the test; its copy counters show CUDA made the copy.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_atomic.h>

#include "dp_helpers.h"
#include "gpu_standin.h"

static struct dp_ep *const p = dp_pair_eps;

static void start(void)
{
	require_vm();
	gpu_open();
	dp_pair_open(NULL);
}

TestSuite(hmem_copy, .fini = dp_pair_teardown, .timeout = 240);

/* The application registered its GPU buffer but passes no descriptor:
 * even a message small enough to go inline is copied out with CUDA. */
Test(hmem_copy, send_from_gpu_without_its_descriptor)
{
	size_t sizes[] = {1, 100, 4096};

	start();
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len = sizes[i];
		uint8_t *src = gpu_alloc(len), *dst = dp_alloc(len + 64);
		struct fid_mr *smr = gpu_reg(&p[0], src, len, FI_SEND);
		uint64_t before = gpu_stats().copies_to_host;
		struct fi_cq_tagged_entry e;

		gpu_fill(src, len, 11);
		DP_POST(p, 2,
			fi_trecv(p[1].ep, dst, len + 64, NULL, FI_ADDR_UNSPEC,
				 0x51, 0, dst));
		DP_POST(p, 2,
			fi_tsend(p[0].ep, src, len, NULL, p[0].peer[1], 0x51,
				 src));
		dp_expect(p[1].rxcq, &e, NULL, p, 2);
		cr_assert_eq(e.len, len);
		dp_expect(p[0].txcq, &e, NULL, p, 2);
		cr_assert_eq(e.op_context, src);
		cr_assert(dp_check(dst, len, 11), "%zu bytes arrived", len);
		cr_assert_gt(gpu_stats().copies_to_host, before,
			     "%zu bytes: CUDA copied them out", len);
		fi_close(&smr->fid);
		gpu_free(src);
		free(dst);
	}
}

/* Operands and compare values in GPU memory, with their descriptors, on a
 * host target: each arrives as the application wrote it. */
Test(hmem_copy, atomic_operands_in_gpu_memory)
{
	uint32_t *t, ops[2], cmpv[2], swp[2] = {77, 88}, r[2] = {0};
	uint32_t *gops, *gcmp;
	struct fid_mr *tmr, *omr, *cmr;
	struct fi_cq_tagged_entry e;
	uint64_t before;

	start();
	t = dp_alloc(64);
	tmr = dp_reg(&p[1], t, 64, FI_REMOTE_READ | FI_REMOTE_WRITE);
	gops = gpu_alloc(sizeof(ops));
	gcmp = gpu_alloc(sizeof(cmpv));
	omr = gpu_reg(&p[0], gops, sizeof(ops), FI_WRITE | FI_READ);
	cmr = gpu_reg(&p[0], gcmp, sizeof(cmpv), FI_WRITE | FI_READ);
	dp_fill(ops, sizeof(ops), 21);
	gpu_fill(gops, sizeof(ops), 21);
	dp_fill(cmpv, sizeof(cmpv), 22);
	gpu_fill(gcmp, sizeof(cmpv), 22);

	/* FI_SUM of the GPU operands into zeros. */
	t[0] = t[1] = 0;
	before = gpu_stats().copies_to_host;
	DP_POST(p, 2,
		fi_atomic(p[0].ep, gops, 2, fi_mr_desc(omr), p[0].peer[1],
			  (uintptr_t)t, fi_mr_key(tmr), FI_UINT32, FI_SUM,
			  gops));
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	cr_assert_eq(e.op_context, gops);
	cr_assert(t[0] == ops[0] && t[1] == ops[1], "sum: %u %u, want %u %u",
		  t[0], t[1], ops[0], ops[1]);
	cr_assert_gt(gpu_stats().copies_to_host, before);

	/* FI_CSWAP with the compare values in GPU memory: element 0
	 * matches and is swapped, element 1 does not. */
	t[0] = cmpv[0];
	t[1] = cmpv[1] + 1;
	DP_POST(p, 2,
		fi_compare_atomic(p[0].ep, swp, 2, NULL, gcmp, fi_mr_desc(cmr),
				  r, NULL, p[0].peer[1], (uintptr_t)t,
				  fi_mr_key(tmr), FI_UINT32, FI_CSWAP, gcmp));
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	cr_assert_eq(e.op_context, gcmp);
	cr_assert(r[0] == cmpv[0] && r[1] == cmpv[1] + 1);
	cr_assert(t[0] == 77 && t[1] == cmpv[1] + 1);

	fi_close(&omr->fid);
	fi_close(&cmr->fid);
	fi_close(&tmr->fid);
	gpu_free(gops);
	gpu_free(gcmp);
	free(t);
}
