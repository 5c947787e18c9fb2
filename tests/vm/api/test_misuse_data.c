/* SPDX-License-Identifier: BSD-2-Clause */
/* API misuse on the data path, between two enabled endpoints: iovec
 * counts above iov_limit, lengths that are huge or whose sum wraps, NULL
 * buffers, addresses not in the AV, bad RMA keys and messages, receive
 * flags that do not combine, and descriptors that are stale (their MR
 * closed), of another domain, not a descriptor, or not covering the
 * buffer. Each case asserts the code fi_msg(3), fi_tagged(3), fi_rma(3) or
 * fi_gdrfab(7) gives. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "dp_helpers.h"
#include "misuse_tally.h"

static struct dp_ep *const p = dp_pair_eps;

static void teardown(void)
{
	misuse_tally_flush();
	dp_pair_teardown();
}

TestSuite(misuse_data, .init = dp_pair_setup, .fini = teardown, .timeout = 180);

#define TOO_MANY  5 /* iov_limit is at most 4 (fi_gdrfab(7)) */
#define NOT_IN_AV 77

Test(misuse_data, iovecs_and_lengths)
{
	static char buf[64];
	void *base = (void *)(uintptr_t)0x10000;
	struct iovec many[TOO_MANY] = {
		{buf, 1}, {buf, 1}, {buf, 1}, {buf, 1}, {buf, 1}};
	struct iovec wrap[2] = {{base, 1ULL << 63}, {base, 1ULL << 63}};
	fi_addr_t to = p[0].peer[1];
	struct fi_msg msg = {
		.msg_iov = many, .iov_count = TOO_MANY, .addr = to};
	struct fi_msg_tagged tmsg = {
		.msg_iov = many, .iov_count = TOO_MANY, .addr = to};
	struct fi_rma_iov rma = {.addr = 0, .len = TOO_MANY, .key = 1};
	struct fi_msg_rma rmsg = {.msg_iov = many,
				  .iov_count = TOO_MANY,
				  .addr = to,
				  .rma_iov = &rma,
				  .rma_iov_count = 1};
	const size_t huge = (size_t)1 << 40;

	/* More iovecs than iov_limit, through every vector call. */
	MISUSE(fi_recvv(p[0].ep, many, NULL, TOO_MANY, FI_ADDR_UNSPEC, NULL),
	       -FI_EINVAL);
	MISUSE(fi_tsendv(p[0].ep, many, NULL, TOO_MANY, to, 1, NULL),
	       -FI_EINVAL);
	MISUSE(fi_trecvv(p[0].ep, many, NULL, TOO_MANY, FI_ADDR_UNSPEC, 1, 0,
			 NULL),
	       -FI_EINVAL);
	MISUSE(fi_readv(p[0].ep, many, NULL, TOO_MANY, to, 0, 1, NULL),
	       -FI_EINVAL);
	MISUSE(fi_writev(p[0].ep, many, NULL, TOO_MANY, to, 0, 1, NULL),
	       -FI_EINVAL);
	MISUSE(fi_sendmsg(p[0].ep, &msg, 0), -FI_EINVAL);
	MISUSE(fi_recvmsg(p[0].ep, &msg, 0), -FI_EINVAL);
	MISUSE(fi_tsendmsg(p[0].ep, &tmsg, 0), -FI_EINVAL);
	MISUSE(fi_writemsg(p[0].ep, &rmsg, 0), -FI_EINVAL);
	MISUSE(fi_readmsg(p[0].ep, &rmsg, 0), -FI_EINVAL);
	/* A count with no iovec array. */
	msg.msg_iov = NULL;
	msg.iov_count = 1;
	MISUSE(fi_sendmsg(p[0].ep, &msg, 0), -FI_EINVAL);
	rmsg.msg_iov = NULL;
	rmsg.iov_count = 1;
	rma.len = 1;
	MISUSE(fi_writemsg(p[0].ep, &rmsg, 0), -FI_EINVAL);
	MISUSE(fi_readmsg(p[0].ep, &rmsg, 0), -FI_EINVAL);
	/* NULL messages. */
	MISUSE(fi_sendmsg(p[0].ep, NULL, 0), -FI_EINVAL);
	MISUSE(fi_recvmsg(p[0].ep, NULL, 0), -FI_EINVAL);
	MISUSE(fi_tsendmsg(p[0].ep, NULL, 0), -FI_EINVAL);
	MISUSE(fi_trecvmsg(p[0].ep, NULL, 0), -FI_EINVAL);
	MISUSE(fi_writemsg(p[0].ep, NULL, 0), -FI_EINVAL);
	MISUSE(fi_readmsg(p[0].ep, NULL, 0), -FI_EINVAL);
	/* Lengths whose sum wraps around. */
	MISUSE(fi_tsendv(p[0].ep, wrap, NULL, 2, to, 1, NULL), -FI_EMSGSIZE);
	MISUSE(fi_trecvv(p[0].ep, wrap, NULL, 2, FI_ADDR_UNSPEC, 1, 0, NULL),
	       -FI_EMSGSIZE);
	MISUSE(fi_writev(p[0].ep, wrap, NULL, 2, to, 0, 1, NULL), -FI_EMSGSIZE);
	MISUSE(fi_readv(p[0].ep, wrap, NULL, 2, to, 0, 1, NULL), -FI_EMSGSIZE);
	rmsg.msg_iov = wrap;
	rmsg.iov_count = 2;
	rma.len = 0; /* what the wrapped sum would be */
	MISUSE(fi_writemsg(p[0].ep, &rmsg, 0), -FI_EMSGSIZE);
	/* Beyond max_msg_size, and beyond inject_size. */
	MISUSE(fi_tsend(p[0].ep, buf, huge, NULL, to, 1, NULL), -FI_EMSGSIZE);
	MISUSE(fi_recv(p[0].ep, buf, huge, NULL, FI_ADDR_UNSPEC, NULL),
	       -FI_EMSGSIZE);
	MISUSE(fi_write(p[0].ep, buf, huge, NULL, to, 0, 1, NULL),
	       -FI_EMSGSIZE);
	MISUSE(fi_inject(p[0].ep, buf, 1 << 20, to), -FI_EMSGSIZE);
	MISUSE(fi_tinject(p[0].ep, buf, 1 << 20, to, 1), -FI_EMSGSIZE);
	MISUSE(fi_inject_write(p[0].ep, buf, 1 << 20, to, 0, 1), -FI_EMSGSIZE);
	MISUSE(fi_injectdata(p[0].ep, buf, 1 << 20, 7, to), -FI_EMSGSIZE);
	/* NULL buffers with a length. */
	MISUSE(fi_tsend(p[0].ep, NULL, 8, NULL, to, 1, NULL), -FI_EINVAL);
	MISUSE(fi_recv(p[0].ep, NULL, 8, NULL, FI_ADDR_UNSPEC, NULL),
	       -FI_EINVAL);
	MISUSE(fi_read(p[0].ep, NULL, 8, NULL, to, 0, 1, NULL), -FI_EINVAL);
	MISUSE(fi_write(p[0].ep, NULL, 8, NULL, to, 0, 1, NULL), -FI_EINVAL);
	MISUSE(fi_inject(p[0].ep, NULL, 8, to), -FI_EINVAL);
}

Test(misuse_data, addresses_keys_and_flags)
{
	static char buf[64];
	struct iovec iov = {buf, 8};
	struct iovec two[2] = {{buf, 8}, {buf + 8, 8}};
	struct fi_rma_iov rma = {.addr = (uintptr_t)buf, .len = 4, .key = 1};
	struct fi_msg_rma rmsg = {.msg_iov = &iov,
				  .iov_count = 1,
				  .addr = p[0].peer[1],
				  .rma_iov = &rma,
				  .rma_iov_count = 1};
	struct fi_msg msg = {.msg_iov = two, .iov_count = 2};
	struct fi_msg_tagged tmsg = {.msg_iov = &iov, .iov_count = 1};

	/* fi_addr_t values that are not in the AV. */
	MISUSE(fi_tsend(p[0].ep, buf, 8, NULL, NOT_IN_AV, 1, NULL), -FI_EINVAL);
	MISUSE(fi_tinject(p[0].ep, buf, 8, NOT_IN_AV, 1), -FI_EINVAL);
	MISUSE(fi_senddata(p[0].ep, buf, 8, NULL, 7, NOT_IN_AV, NULL),
	       -FI_EINVAL);
	MISUSE(fi_write(p[0].ep, buf, 8, NULL, NOT_IN_AV, 0, 1, NULL),
	       -FI_EINVAL);
	MISUSE(fi_read(p[0].ep, buf, 8, NULL, FI_ADDR_NOTAVAIL, 0, 1, NULL),
	       -FI_EINVAL);
	MISUSE(fi_inject_write(p[0].ep, buf, 8, FI_ADDR_UNSPEC, 0, 1),
	       -FI_EINVAL);
	/* RMA: keys gdrfab never hands out, one remote segment only, local
	 * and remote lengths that differ. */
	MISUSE(fi_write(p[0].ep, buf, 8, NULL, p[0].peer[1], 0, 1ULL << 40,
			NULL),
	       -FI_EINVAL);
	MISUSE(fi_read(p[0].ep, buf, 8, NULL, p[0].peer[1], 0, UINT64_MAX,
		       NULL),
	       -FI_EINVAL);
	MISUSE(fi_writemsg(p[0].ep, &rmsg, 0), -FI_EINVAL);
	rma.len = 8;
	rmsg.rma_iov_count = 2;
	MISUSE(fi_writemsg(p[0].ep, &rmsg, 0), -FI_EINVAL);
	rmsg.rma_iov_count = 0;
	MISUSE(fi_readmsg(p[0].ep, &rmsg, 0), -FI_EINVAL);
	rmsg.rma_iov_count = 1;
	rmsg.rma_iov = NULL;
	MISUSE(fi_readmsg(p[0].ep, &rmsg, 0), -FI_EINVAL);
	/* Receive flags that do not combine. */
	msg.addr = FI_ADDR_UNSPEC;
	MISUSE(fi_recvmsg(p[0].ep, &msg, FI_MULTI_RECV), -FI_EINVAL);
	msg.iov_count = 1;
	MISUSE(fi_recvmsg(p[0].ep, &msg, FI_PEEK), -FI_EINVAL);
	MISUSE(fi_recvmsg(p[0].ep, &msg, FI_CLAIM), -FI_EINVAL);
	tmsg.addr = FI_ADDR_UNSPEC;
	MISUSE(fi_trecvmsg(p[0].ep, &tmsg, FI_MULTI_RECV), -FI_EINVAL);
	MISUSE(fi_trecvmsg(p[0].ep, &tmsg, FI_CLAIM), -FI_EINVAL);
	/* Cancelling what was never posted. */
	MISUSE(fi_cancel(&p[0].ep->fid, buf), -FI_ENOENT);
	MISUSE(fi_cancel(&p[0].ep->fid, NULL), -FI_ENOENT);
	/* fi_setname once the queue pair exists. */
	MISUSE(fi_setname(&p[0].ep->fid, p[0].name, sizeof(p[0].name)),
	       -FI_EINVAL);
}

/* Waits for the receive posted with a bad descriptor to fail. */
static void expect_rx_error(int err)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ce = {0};

	cr_assert_eq(dp_wait(p[1].rxcq, &e, NULL, &ce, p, 2, DP_TIMEOUT_MS),
		     -FI_EAVAIL);
	cr_assert_eq(ce.err, err, "error %d (%s)", ce.err, fi_strerror(ce.err));
	misuse_cases++;
}

/* The MR of a descriptor was closed: every path of a send refuses it
 * (inline, eager, rendezvous), and so does RMA, instead of reading what
 * the close released. */
Test(misuse_data, stale_descriptors)
{
	const size_t sizes[] = {8, 4096, 65536};
	const size_t big = 65536;
	char *buf = dp_alloc(big), *dst = dp_alloc(big);
	struct fid_mr *live = dp_reg(&p[0], dst, big, FI_SEND | FI_RECV);
	struct fid_mr *mr = dp_reg(&p[0], buf, big, FI_SEND | FI_RECV);
	struct fid_mr *rmr = dp_reg(&p[1], dst, big, FI_RECV);
	void *desc = fi_mr_desc(mr);
	fi_addr_t to = p[0].peer[1];
	struct iovec two[2] = {{dst, 8}, {buf, 8}};
	void *descs[2] = {fi_mr_desc(live), desc};
	struct fi_cq_tagged_entry e;

	MISUSE(fi_close(&mr->fid), 0);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];

		MISUSE(fi_send(p[0].ep, buf, n, desc, to, NULL), -FI_EINVAL);
		MISUSE(fi_tsend(p[0].ep, buf, n, desc, to, 1, NULL),
		       -FI_EINVAL);
		MISUSE(fi_senddata(p[0].ep, buf, n, desc, 7, to, NULL),
		       -FI_EINVAL);
		MISUSE(fi_write(p[0].ep, buf, n, desc, to, (uintptr_t)dst,
				fi_mr_key(rmr), NULL),
		       -FI_EINVAL);
		MISUSE(fi_read(p[0].ep, buf, n, desc, to, (uintptr_t)dst,
			       fi_mr_key(rmr), NULL),
		       -FI_EINVAL);
	}
	MISUSE(fi_sendv(p[0].ep, two, descs, 2, to, NULL), -FI_EINVAL);
	MISUSE(fi_writev(p[0].ep, two, descs, 2, to, (uintptr_t)dst,
			 fi_mr_key(rmr), NULL),
	       -FI_EINVAL);
	/* A receive refuses a closed MR's descriptor when posted; one whose
	 * MR closes after it was posted fails when a message lands in it
	 * (eager copy or rendezvous READ alike: FI_EINVAL). */
	MISUSE(fi_close(&rmr->fid), 0);
	MISUSE(fi_recv(p[1].ep, dst, big, fi_mr_desc(rmr), FI_ADDR_UNSPEC,
		       NULL),
	       -FI_EINVAL);
	MISUSE(fi_trecv(p[1].ep, dst, big, fi_mr_desc(rmr), FI_ADDR_UNSPEC, 1,
			0, NULL),
	       -FI_EINVAL);
	for (size_t i = 1; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		rmr = dp_reg(&p[1], dst, big, FI_RECV);
		DP_POST(p, 2,
			fi_recv(p[1].ep, dst, big, fi_mr_desc(rmr),
				FI_ADDR_UNSPEC, NULL));
		MISUSE(fi_close(&rmr->fid), 0);
		DP_POST(p, 2,
			fi_send(p[0].ep, dst, sizes[i], fi_mr_desc(live), to,
				NULL));
		expect_rx_error(FI_EINVAL);
	}
	rmr = dp_reg(&p[1], dst, big, FI_RECV);
	/* The endpoint is unharmed: a good send still arrives. */
	DP_POST(p, 2,
		fi_recv(p[1].ep, dst, big, fi_mr_desc(rmr), FI_ADDR_UNSPEC,
			NULL));
	DP_POST(p, 2, fi_send(p[0].ep, dst, 8, fi_mr_desc(live), to, NULL));
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	cr_assert_eq(e.len, 8);
	fi_close(&rmr->fid);
	fi_close(&live->fid);
	free(buf);
	free(dst);
}

/* Descriptors that are live but wrong: another domain's MR, a pointer that
 * is no descriptor, an MR that does not cover the buffer, at every size
 * (inline, eager, rendezvous, RMA). */
Test(misuse_data, wrong_descriptors)
{
	static uint64_t not_a_desc[64];
	const size_t big = 65536;
	char *buf = dp_alloc(big);
	struct fid_mr *mine = dp_reg(&p[0], buf, 4096, FI_SEND | FI_RECV);
	struct fid_mr *theirs = dp_reg(&p[1], buf, big, FI_SEND | FI_RECV);
	fi_addr_t to = p[0].peer[1];

	MISUSE(fi_send(p[0].ep, buf, 8, fi_mr_desc(theirs), to, NULL),
	       -FI_EINVAL);
	MISUSE(fi_send(p[0].ep, buf, 4096, fi_mr_desc(theirs), to, NULL),
	       -FI_EINVAL);
	MISUSE(fi_recv(p[0].ep, buf, 4096, fi_mr_desc(theirs), FI_ADDR_UNSPEC,
		       NULL),
	       -FI_EINVAL);
	MISUSE(fi_send(p[0].ep, buf, big, fi_mr_desc(theirs), to, NULL),
	       -FI_EINVAL);
	MISUSE(fi_write(p[0].ep, buf, 8, fi_mr_desc(theirs), to, 0, 1, NULL),
	       -FI_EINVAL);
	MISUSE(fi_tsend(p[0].ep, buf, 4096, not_a_desc, to, 1, NULL),
	       -FI_EINVAL);
	MISUSE(fi_read(p[0].ep, buf, 8, not_a_desc, to, 0, 1, NULL),
	       -FI_EINVAL);
	/* 4 KiB registered; the buffer starts before it or runs past it. */
	MISUSE(fi_send(p[0].ep, buf + 2048, 4096, fi_mr_desc(mine), to, NULL),
	       -FI_EINVAL);
	MISUSE(fi_send(p[0].ep, buf, big, fi_mr_desc(mine), to, NULL),
	       -FI_EINVAL);
	MISUSE(fi_write(p[0].ep, buf + 4096, 8, fi_mr_desc(mine), to, 0, 1,
			NULL),
	       -FI_EINVAL);
	MISUSE(fi_read(p[0].ep, buf - 8, 16, fi_mr_desc(mine), to, 0, 1, NULL),
	       -FI_EINVAL);
	fi_close(&theirs->fid);
	fi_close(&mine->fid);
	free(buf);
}
