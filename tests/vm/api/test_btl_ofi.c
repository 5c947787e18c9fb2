/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Open MPI 4.1's btl ofi as osc rdma drives it (open-mpi/ompi v4.1.4:
 * opal/mca/btl/ofi/btl_ofi_component.c, btl_ofi_module.c,
 * btl_ofi_context.c, btl_ofi_atomics.c, btl_ofi_rdma.c), replayed against
 * gdrfab call by call:
 *   - fi_getinfo(1.5) with its hints (FI_RMA | FI_ATOMIC | FI_MSG, mode
 *     FI_CONTEXT | FI_CONTEXT2, mr_mode FI_MR_ALLOCATED | FI_MR_PROV_KEY |
 *     FI_MR_VIRT_ADDR, iov_limit 1, FI_DELIVERY_COMPLETE), and the checks
 *     of its validate_info: an mr_mode with any other bit (FI_MR_LOCAL
 *     above all) is refused;
 *   - an FI_AV_MAP AV, an FI_CQ_FORMAT_CONTEXT CQ bound FI_TRANSMIT |
 *     FI_SEND | FI_RECV, regions registered for all four accesses with the
 *     registration's address as requested key, and remote addresses given
 *     as offsets from the region's base unless mr_mode has FI_MR_VIRT_ADDR;
 *   - mca_btl_ofi_acswap: fi_compare_atomic(FI_CSWAP, FI_UINT64 or
 *     FI_UINT32, count 1) with the operand and compare values in unregistered
 *     memory and NULL descriptors, the result in a registered buffer with
 *     its descriptor; afop and aop: fi_fetch_atomic and fi_atomic with
 *     FI_SUM and FI_ATOMIC_WRITE; and fi_read/fi_write.
 * osc rdma's MPI_Compare_and_swap spin lock is replayed with two
 * endpoints contending for one lock word with both acquisitions in flight:
 * exactly one wins each round, and the counter it guards is exact.
 */
#include <criterion/criterion.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ex_objs.h"
#include "vm_helpers.h"

#define BTL_MR_MODE (FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR)

struct bep {
	struct ex_objs objs;
	char name[64];
	size_t namelen;
	fi_addr_t peer[3];
};

/* mca_btl_ofi_rdma_completion_t: the context first, the operands after. */
struct comp {
	struct fi_context2 ctx;
	uint64_t operand, compare;
	int done;
};

static struct bep b[3]; /* 0 and 2 on rxe0 contend for memory on 1 (rxe1) */

static struct fi_info *btl_info(const char *device)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	int ret;

	cr_assert_not_null(hints);
	hints->fabric_attr->prov_name = strdup("gdrfab");
	hints->domain_attr->name = strdup(device);
	hints->domain_attr->mr_mode = BTL_MR_MODE;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_RMA | FI_ATOMIC | FI_MSG;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->tx_attr->iov_limit = 1;
	hints->rx_attr->iov_limit = 1;
	hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
	ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	cr_assert_eq(ret, 0, "fi_getinfo with btl ofi's hints: %s",
		     fi_strerror(-ret));
	return info;
}

static void bep_open(struct bep *e, const char *device)
{
	struct fi_av_attr av_attr = {.type = FI_AV_MAP};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT,
				     .wait_obj = FI_WAIT_NONE};
	const char *failed = NULL;
	int mr_mode, ret;

	memset(e, 0, sizeof(*e));
	e->objs.info = btl_info(device);
	/* validate_info */
	cr_assert_eq(e->objs.info->caps & (FI_RMA | FI_ATOMIC | FI_MSG),
		     FI_RMA | FI_ATOMIC | FI_MSG);
	mr_mode = e->objs.info->domain_attr->mr_mode;
	cr_assert(mr_mode == FI_MR_BASIC || mr_mode == FI_MR_SCALABLE ||
			  (mr_mode & ~BTL_MR_MODE) == 0,
		  "btl ofi refuses mr_mode 0x%x", mr_mode);
	ret = ex_objs_open(&e->objs, fi_fabric, &av_attr, &cq_attr,
			   FI_TRANSMIT | FI_SEND | FI_RECV, &failed);
	cr_assert_eq(ret, 0, "%s: %s", failed, fi_strerror(-ret));
	e->namelen = sizeof(e->name);
	cr_assert_eq(fi_getname(&e->objs.ep->fid, e->name, &e->namelen), 0);
}

static void bep_close(struct bep *e)
{
	ex_objs_close(&e->objs);
}

static void setup(void)
{
	require_vm();
	bep_open(&b[0], "rxe0");
	bep_open(&b[1], "rxe1");
	bep_open(&b[2], "rxe0");
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			cr_assert_eq(fi_av_insert(b[i].objs.av, b[j].name, 1,
						  &b[i].peer[j], 0, NULL),
				     1);
}

static void teardown(void)
{
	for (int i = 2; i >= 0; i--)
		bep_close(&b[i]);
}

TestSuite(btl_ofi, .init = setup, .fini = teardown, .timeout = 120);

/* mca_btl_ofi_reg_mem: all four accesses, the registration's address as
 * requested key; base_addr 0 where remote addresses are virtual. */
struct reg {
	struct fid_mr *mr;
	uint64_t rkey, base_addr;
	void *desc;
};

static struct reg reg_mem(struct bep *e, void *base, size_t len)
{
	struct reg r = {0};
	int mr_mode = e->objs.info->domain_attr->mr_mode;
	int ret =
		fi_mr_reg(e->objs.domain, base, len,
			  FI_REMOTE_WRITE | FI_REMOTE_READ | FI_READ | FI_WRITE,
			  0, (uint64_t)(uintptr_t)&r, 0, &r.mr, NULL);

	cr_assert_eq(ret, 0, "fi_mr_reg: %s", fi_strerror(-ret));
	r.rkey = fi_mr_key(r.mr);
	r.desc = fi_mr_desc(r.mr);
	r.base_addr = (mr_mode == FI_MR_BASIC || (mr_mode & FI_MR_VIRT_ADDR))
			      ? 0
			      : (uint64_t)(uintptr_t)base;
	return r;
}

/* mca_btl_ofi_context_progress: reads contexts from every CQ until the
 * given completions are done. */
static void wait_done(struct comp **c, int n)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		int left = 0;

		for (int i = 0; i < n; i++)
			left += !c[i]->done;
		if (!left)
			return;
		for (int i = 0; i < 3; i++) {
			struct fi_cq_entry e;
			struct fi_cq_err_entry err = {0};
			ssize_t got = fi_cq_read(b[i].objs.cq, &e, 1);

			if (got == 1)
				((struct comp *)e.op_context)->done = 1;
			else if (got == -FI_EAVAIL) {
				fi_cq_readerr(b[i].objs.cq, &err, 0);
				cr_assert_fail("completion error: %s",
					       fi_strerror(err.err));
			} else
				cr_assert_eq(got, -FI_EAGAIN, "fi_cq_read: %s",
					     fi_strerror((int)-got));
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		cr_assert_lt(now.tv_sec - start.tv_sec, 30,
			     "no completion in 30 s");
	}
}

/* Retries on -FI_EAGAIN as the btl does (OPAL_ERR_OUT_OF_RESOURCE makes
 * osc rdma progress and call again). */
#define POST(call)                                                             \
	do {                                                                   \
		ssize_t ret_;                                                  \
		while ((ret_ = (call)) == -FI_EAGAIN)                          \
			for (int i_ = 0; i_ < 3; i_++)                         \
				fi_cq_read(b[i_].objs.cq, NULL, 0);            \
		cr_assert_eq(ret_, 0, "%s: %s", #call,                         \
			     fi_strerror((int)-ret_));                         \
	} while (0)

/* mca_btl_ofi_acswap from endpoint e: the result lands in *res, a slot
 * of a registered buffer. */
static void acswap(int e, struct comp *c, void *res, const struct reg *local,
		   uint64_t raddr, const struct reg *remote, uint64_t compare,
		   uint64_t value, enum fi_datatype dt)
{
	memset(c, 0, sizeof(*c));
	c->operand = value;
	c->compare = compare;
	POST(fi_compare_atomic(b[e].objs.ep, &c->operand, 1, NULL, &c->compare,
			       NULL, res, local->desc, b[e].peer[1],
			       raddr - remote->base_addr, remote->rkey, dt,
			       FI_CSWAP, &c->ctx));
}

Test(btl_ofi, cswap_spin_lock_from_two_endpoints_with_both_in_flight)
{
	enum { ROUNDS = 50 };
	uint64_t *win = calloc(512, sizeof(*win));	    /* on 1 */
	uint64_t *frag[2] = {calloc(64, 8), calloc(64, 8)}; /* on 0, 2 */
	struct reg rwin = reg_mem(&b[1], win, 512 * sizeof(*win));
	struct reg rfrag[2] = {reg_mem(&b[0], frag[0], 512),
			       reg_mem(&b[2], frag[1], 512)};
	uint64_t lock = (uintptr_t)&win[0], counter = (uintptr_t)&win[1];
	int ep[2] = {0, 2}, wins[2] = {0};

	for (int k = 0; k < ROUNDS; k++) {
		struct comp c[2], *cp[2] = {&c[0], &c[1]};
		int winner;

		/* Both try to take the lock at once: one gets 0 back. */
		for (int j = 0; j < 2; j++)
			acswap(ep[j], &c[j], &frag[j][0], &rfrag[j], lock,
			       &rwin, 0, (uint64_t)j + 1, FI_UINT64);
		wait_done(cp, 2);
		cr_assert((frag[0][0] == 0) != (frag[1][0] == 0),
			  "round %d: fetched %llu and %llu, one must be 0", k,
			  (unsigned long long)frag[0][0],
			  (unsigned long long)frag[1][0]);
		winner = frag[0][0] == 0 ? 0 : 1;
		cr_assert_eq(frag[!winner][0], (uint64_t)winner + 1);
		cr_assert_eq(win[0], (uint64_t)winner + 1);
		wins[winner]++;
		/* The holder increments the counter by get and put. */
		memset(&c[0], 0, sizeof(c[0]));
		POST(fi_read(b[ep[winner]].objs.ep, &frag[winner][1], 8,
			     rfrag[winner].desc, b[ep[winner]].peer[1],
			     counter - rwin.base_addr, rwin.rkey, &c[0].ctx));
		wait_done(cp, 1);
		frag[winner][1]++;
		memset(&c[0], 0, sizeof(c[0]));
		POST(fi_write(b[ep[winner]].objs.ep, &frag[winner][1], 8,
			      rfrag[winner].desc, b[ep[winner]].peer[1],
			      counter - rwin.base_addr, rwin.rkey, &c[0].ctx));
		wait_done(cp, 1);
		/* Release: compare with its own mark, swap in 0. */
		acswap(ep[winner], &c[0], &frag[winner][2], &rfrag[winner],
		       lock, &rwin, (uint64_t)winner + 1, 0, FI_UINT64);
		wait_done(cp, 1);
		cr_assert_eq(frag[winner][2], (uint64_t)winner + 1);
		cr_assert_eq(win[0], 0);
	}
	cr_assert_eq(win[1], ROUNDS);
	cr_assert_eq(wins[0] + wins[1], ROUNDS);
	fi_close(&rfrag[1].mr->fid);
	fi_close(&rfrag[0].mr->fid);
	fi_close(&rwin.mr->fid);
	free(frag[1]);
	free(frag[0]);
	free(win);
}

/* The btl's afop from endpoint 0 on a 64-bit word at addr of region
 * remote: operand op, the old value into res (in the local region), waited
 * for. */
static void afop(struct comp *c, uint64_t *res, const struct reg *local,
		 uintptr_t addr, const struct reg *remote, uint64_t operand,
		 enum fi_op op)
{
	memset(c, 0, sizeof(*c));
	c->operand = operand;
	POST(fi_fetch_atomic(b[0].objs.ep, &c->operand, 1, NULL, res,
			     local->desc, b[0].peer[1],
			     addr - remote->base_addr, remote->rkey, FI_UINT64,
			     op, &c->ctx));
	wait_done(&c, 1);
}

/* MCA_BTL_ATOMIC_FLAG_32BIT: FI_UINT32, a miss and a hit, the
 * neighbouring 32 bits untouched; afop (FI_SUM, FI_ATOMIC_WRITE) and aop
 * (FI_SUM) on 64 bits at an offset into the region. */
Test(btl_ofi, cswap_32_bit_and_the_fetch_and_plain_atomics)
{
	uint32_t *w32 = calloc(64, sizeof(*w32));
	uint64_t *w64 = calloc(64, sizeof(*w64));
	uint64_t *frag = calloc(64, sizeof(*frag));
	struct reg r32 = reg_mem(&b[1], w32, 64 * sizeof(*w32));
	struct reg r64 = reg_mem(&b[1], w64, 64 * sizeof(*w64));
	struct reg rf = reg_mem(&b[0], frag, 64 * sizeof(*frag));
	struct comp c, *cp = &c;
	uint32_t *res32 = (uint32_t *)&frag[0];

	w32[5] = 7;
	w32[6] = 0xabcdef01;
	acswap(0, &c, res32, &rf, (uintptr_t)&w32[5], &r32, 8, 9, FI_UINT32);
	wait_done(&cp, 1);
	cr_assert_eq(*res32, 7);
	cr_assert_eq(w32[5], 7, "a compare that misses writes nothing");
	acswap(0, &c, res32, &rf, (uintptr_t)&w32[5], &r32, 7, 9, FI_UINT32);
	wait_done(&cp, 1);
	cr_assert_eq(*res32, 7);
	cr_assert_eq(w32[5], 9);
	cr_assert_eq(w32[6], 0xabcdef01);

	w64[10] = 100;
	afop(&c, &frag[1], &rf, (uintptr_t)&w64[10], &r64, 5, FI_SUM);
	cr_assert_eq(frag[1], 100);
	cr_assert_eq(w64[10], 105);
	afop(&c, &frag[2], &rf, (uintptr_t)&w64[10], &r64, 42, FI_ATOMIC_WRITE);
	cr_assert_eq(frag[2], 105);
	cr_assert_eq(w64[10], 42);
	memset(&c, 0, sizeof(c));
	c.operand = (uint64_t)-2;
	POST(fi_atomic(b[0].objs.ep, &c.operand, 1, NULL, b[0].peer[1],
		       (uintptr_t)&w64[10] - r64.base_addr, r64.rkey, FI_UINT64,
		       FI_SUM, &c.ctx));
	wait_done(&cp, 1);
	cr_assert_eq(w64[10], 40);
	cr_assert_eq(w64[9], 0);
	cr_assert_eq(w64[11], 0);
	fi_close(&rf.mr->fid);
	fi_close(&r64.mr->fid);
	fi_close(&r32.mr->fid);
	free(frag);
	free(w64);
	free(w32);
}
