/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Striped RMA (gdrfab_stripe.h), on the fake verbs with two devices. A
 * rail-set domain's MR that peers may access has a key of its own (rail
 * 0's rkey tagged with a generation): two MRs of one buffer never share
 * one. The first RMA of at least FI_GDRFAB_STRIPE_MIN bytes to a (peer,
 * key) goes on rail 0 and asks the target for the key's other rkeys;
 * those after it go in one piece per rail: fi_write, fi_read and
 * fi_writedata at stripe_min - 1 (rail 0 alone), stripe_min, stripe_min
 * + 1 and a few MiB, byte for byte and nothing past them, one completion
 * each, the initiator's per-rail counters adding up to the bytes. An
 * fi_writedata's CQ data comes once, on rail 0's last piece, posted only
 * after the other rail's piece completed. A piece failed on rail 1 sends
 * the RMA again whole on rail 0: one success, the CQ data once, the
 * bytes whole; an RMA with a closed MR's
 * key one clean error, the memory untouched, and the pair then works
 * with the new MR's key. A NIC alone keeps its 32-bit keys and rail 0,
 * and so does a pair of a rail set and a NIC alone.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_ext_gdrfab.h>

#include "fake_verbs.h"
#include "gdrfab.h"
#include "gdrfab_conn.h"
#include "gdrfab_conn_rails.h"
#include "gdrfab_hmem.h"
#include "gdrfab_objs.h"
#include "gdrfab_params.h"
#include "gdrfab_proto.h"
#include "gdrfab_stripe.h"
#include "proto_fixture.h"

#define GUARD 4096

enum op { WRITE, READ, WRITEDATA };

static struct gdrfab_conn *conn_of(struct pf *f, int i)
{
	struct gdrfab_ep *ep =
		gdrfab_container_of(f->s[i].ep, struct gdrfab_ep, fid);

	cr_assert(!gdrfab_list_empty(&ep->proto->conns));
	return gdrfab_list_entry(ep->proto->conns.next, struct gdrfab_conn,
				 entry);
}

static void open_pair(struct pf *f, const char *const dom[2])
{
	pf_open_domains(f, 2, dom);
	pf_connect(f);
	pf_drive(f, 20);
}

static void open_two_rail_pair(struct pf *f)
{
	static const char *const dom[2] = {"fake0+fake1", "fake0+fake1"};

	open_pair(f, dom);
	cr_assert(conn_of(f, 0)->rails && conn_of(f, 0)->rails->up);
}

/* Side i's endpoint's striped bytes (and work requests) per rail. */
static void rail_counts(struct pf *f, int i, uint64_t bytes[2], uint64_t ops[2])
{
	static struct fi_gdrfab_stats s;

	pf_read_stats(f, i, &s);
	for (int r = 0; r < 2; r++) {
		bytes[r] = s.rails[r].stripe_bytes;
		if (ops)
			ops[r] = s.rails[r].stripe_ops;
	}
}

static ssize_t post(struct pf *f, enum op op, void *buf, size_t len, void *tgt,
		    uint64_t key, uint64_t data)
{
	switch (op) {
	case WRITE:
		return fi_write(f->s[0].ep, buf, len, NULL, f->s[0].peer,
				(uintptr_t)tgt, key, NULL);
	case READ:
		return fi_read(f->s[0].ep, buf, len, NULL, f->s[0].peer,
			       (uintptr_t)tgt, key, NULL);
	default:
		return fi_writedata(f->s[0].ep, buf, len, NULL, data,
				    f->s[0].peer, (uintptr_t)tgt, key, NULL);
	}
}

/* One RMA of side 0 driven to its one completion, no error; split: the
 * initiator's striped bytes per rail it added. */
static void rma(struct pf *f, enum op op, void *buf, size_t len, void *tgt,
		uint64_t key, uint64_t data, uint64_t split[2])
{
	uint64_t before[2], after[2];

	rail_counts(f, 0, before, NULL);
	cr_assert_eq(post(f, op, buf, len, tgt, key, data), 0);
	cr_assert(pf_drive_until(f, 0, 1, 5000), "op %d of %zu", op, len);
	if (op == WRITEDATA)
		cr_assert(pf_drive_until(f, 1, 1, 5000), "CQ data of %zu", len);
	pf_drive(f, 5);
	cr_assert_eq(f->s[0].n_err, 0, "op %d of %zu failed: %d", op, len,
		     f->s[0].n_err ? f->s[0].err[0].err : 0);
	cr_assert_eq(f->s[0].n_ok, 1, "op %d of %zu: one completion", op, len);
	rail_counts(f, 0, after, NULL);
	split[0] = after[0] - before[0];
	split[1] = after[1] - before[1];
}

/* The first large RMA to (peer, key): on rail 0, and it asks for the
 * key's rkeys; the answer is in when it returns. */
static void learn(struct pf *f, void *tgt, uint64_t key)
{
	size_t len = gdrfab_params.stripe_min;
	uint8_t *src = calloc(1, len);
	uint64_t split[2];

	cr_assert(src);
	rma(f, WRITE, src, len, tgt, key, 0, split);
	cr_expect_eq(split[0] + split[1], 0, "the first one striped");
	pf_drive(f, 10);
	f->s[0].n_ok = 0;
	free(src);
}

static bool zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i])
			return false;
	}
	return true;
}

/* At or above the threshold: on both rails. Below it, whole on one
 * rail, its turn; an fi_writedata on rail 0 alone (nothing counted). */
static void expect_split(size_t len, const uint64_t split[2], int op)
{
	if (len < gdrfab_params.stripe_min && op == WRITEDATA) {
		cr_expect_eq(split[0] + split[1], 0, "op %d: %zu striped", op,
			     len);
		return;
	}
	if (len < gdrfab_params.stripe_min) {
		cr_expect(split[0] == len ? !split[1]
					  : split[1] == len && !split[0],
			  "op %d: %zu not whole on one rail: %llu + %llu", op,
			  len, (unsigned long long)split[0],
			  (unsigned long long)split[1]);
		return;
	}
	cr_expect_eq(split[0] + split[1], len, "op %d: %zu: %llu + %llu", op,
		     len, (unsigned long long)split[0],
		     (unsigned long long)split[1]);
	cr_expect_gt(split[0], 0, "op %d: %zu: nothing on rail 0", op, len);
	cr_expect_gt(split[1], 0, "op %d: %zu: nothing on rail 1", op, len);
}

Test(rma_stripe, keys_name_one_mr_each)
{
	static const size_t len = 1 << 16;
	uint8_t *buf = calloc(1, len);
	struct fid_mr *a, *b, *local;
	struct pf f;

	cr_assert(buf);
	open_two_rail_pair(&f);
	cr_assert_eq(fi_mr_reg(f.side_domain[1], buf, len, FI_REMOTE_WRITE, 0,
			       0, 0, &a, NULL),
		     0);
	cr_assert_eq(fi_mr_reg(f.side_domain[1], buf, len, FI_REMOTE_WRITE, 0,
			       0, 0, &b, NULL),
		     0);
	cr_assert_eq(fi_mr_reg(f.side_domain[1], buf, len, FI_SEND, 0, 0, 0,
			       &local, NULL),
		     0);
	cr_expect(gdrfab_key_is_rail(fi_mr_key(a)));
	cr_expect(gdrfab_key_is_rail(fi_mr_key(b)));
	cr_expect_neq(fi_mr_key(a), fi_mr_key(b), "one key for two MRs");
	cr_expect_eq((uint32_t)fi_mr_key(a),
		     ((struct gdrfab_mr *)fi_mr_desc(a))->desc.ibv_mr->rkey,
		     "rail 0's rkey in the low 32 bits");
	cr_expect_leq(fi_mr_key(local), UINT32_MAX, "no peer access: as ever");
	cr_assert_eq(fi_close(&a->fid), 0);
	cr_assert_eq(fi_close(&b->fid), 0);
	cr_assert_eq(fi_close(&local->fid), 0);
	free(buf);
	pf_close(&f);
}

/* fi_write, fi_read and fi_writedata below, at and above the threshold
 * and at a few MiB: one rail below it, both rails from it, the bytes
 * exact and nothing written past them, one completion each and one CQ
 * data at the target. */
Test(rma_stripe, write_read_writedata_split_across_rails)
{
	const size_t min = gdrfab_params.stripe_min;
	const size_t sizes[] = {min - 1, min, min + 1, (3 << 20) + 12345};
	const size_t max = sizes[3];
	uint8_t *src = malloc(max + GUARD), *tgt = malloc(max + GUARD);
	uint8_t *back = malloc(max + GUARD);
	struct fid_mr *tmr;
	uint64_t key;
	struct pf f;

	cr_assert(src && tgt && back);
	open_two_rail_pair(&f);
	cr_assert_eq(fi_mr_reg(f.side_domain[1], tgt, max + GUARD,
			       FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &tmr,
			       NULL),
		     0);
	key = fi_mr_key(tmr);
	learn(&f, tgt, key);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len = sizes[i];
		unsigned seed = (unsigned)(len + i);
		uint64_t split[2];

		for (int op = WRITE; op <= WRITEDATA; op++) {
			uint8_t *dst = op == READ ? back : tgt;
			uint64_t data = 0x5a000000u + i * 4 + (unsigned)op;

			memset(tgt, 0, max + GUARD);
			memset(back, 0, max + GUARD);
			pf_fill(op == READ ? tgt : src, len, seed + op);
			f.s[0].n_ok = f.s[1].n_ok = 0;
			rma(&f, op, op == READ ? back : src, len, tgt, key,
			    data, split);
			cr_expect(pf_check(dst, len, seed + op),
				  "op %d: the bytes of %zu", op, len);
			cr_expect(zero(dst + len, GUARD),
				  "op %d: written past %zu", op, len);
			expect_split(len, split, op);
			if (op != WRITEDATA) {
				cr_expect_eq(f.s[1].n_ok, 0);
				continue;
			}
			cr_expect_eq(f.s[1].n_ok, 1, "%zu: CQ data once", len);
			cr_expect(f.s[1].ok[0].flags & FI_REMOTE_CQ_DATA);
			cr_expect_eq(f.s[1].ok[0].data, data & UINT32_MAX);
		}
	}
	cr_expect_eq(f.s[0].n_err + f.s[1].n_err, 0);
	cr_assert_eq(fi_close(&tmr->fid), 0);
	free(src);
	free(tgt);
	free(back);
	pf_close(&f);
}

/* A two-rail pair whose side 1 holds len bytes at tgt, registered for
 * remote writes (tmr), their rail keys learned by side 0, and whose side
 * 0 holds len bytes at src filled from seed. */
struct rma_pair {
	struct pf f;
	size_t len;
	uint8_t *src, *tgt;
	struct fid_mr *tmr;
};

static void rma_pair_open(struct rma_pair *p, size_t len, unsigned seed)
{
	p->len = len;
	p->src = malloc(len);
	p->tgt = calloc(1, len);
	cr_assert(p->src && p->tgt);
	pf_fill(p->src, len, seed);
	open_two_rail_pair(&p->f);
	cr_assert_eq(fi_mr_reg(p->f.side_domain[1], p->tgt, len,
			       FI_REMOTE_WRITE, 0, 0, 0, &p->tmr, NULL),
		     0);
	learn(&p->f, p->tgt, fi_mr_key(p->tmr));
}

static void rma_pair_close(struct rma_pair *p)
{
	cr_assert_eq(fi_close(&p->tmr->fid), 0);
	pf_close(&p->f);
	free(p->src);
	free(p->tgt);
}

/* Side 0's fi_write (or, with data, fi_writedata) of the whole buffer. */
static void rma_pair_write(struct rma_pair *p, bool with_data, uint64_t data)
{
	struct pf *f = &p->f;

	cr_assert_eq(with_data ? fi_writedata(f->s[0].ep, p->src, p->len, NULL,
					      data, f->s[0].peer,
					      (uintptr_t)p->tgt,
					      fi_mr_key(p->tmr), NULL)
			       : fi_write(f->s[0].ep, p->src, p->len, NULL,
					  f->s[0].peer, (uintptr_t)p->tgt,
					  fi_mr_key(p->tmr), NULL),
		     0);
}

/* The initiator's per-rail counters count the pieces: one work request
 * or more per rail, the bytes adding up, near even. */
Test(rma_stripe, rail_counters_count_the_pieces)
{
	uint64_t b0[2], o0[2], b1[2], o1[2], tb[2];
	struct rma_pair p;

	rma_pair_open(&p, 8 << 20, 3);
	rail_counts(&p.f, 0, b0, o0);
	rail_counts(&p.f, 1, tb, NULL);
	rma_pair_write(&p, false, 0);
	cr_assert(pf_drive_until(&p.f, 0, 1, 5000));
	cr_expect(pf_check(p.tgt, p.len, 3));
	rail_counts(&p.f, 0, b1, o1);
	cr_expect_eq(b1[0] - b0[0], p.len / 2);
	cr_expect_eq(b1[1] - b0[1], p.len / 2);
	cr_expect_geq(o1[0] - o0[0], 1);
	cr_expect_geq(o1[1] - o0[1], 1);
	rail_counts(&p.f, 1, b1, NULL);
	cr_expect_eq(b1[0] + b1[1], tb[0] + tb[1], "the target counts none");
	rma_pair_close(&p);
}

/* fi_writedata's CQ data rides on rail 0's last piece, posted only once
 * rail 1's piece completed: while rail 1's WRITE is held, nothing with
 * immediate data is posted and nothing is reported at either side. */
Test(rma_stripe, writedata_cq_data_after_every_piece)
{
	struct rma_pair p;

	rma_pair_open(&p, 1 << 20, 8);
	fake_verbs_hold(IBV_WR_RDMA_WRITE, true);
	rma_pair_write(&p, true, 77);
	pf_drive(&p.f, 20);
	cr_expect_eq(fake_verbs_waiting(IBV_WR_RDMA_WRITE), 1,
		     "rail 1's piece, rail 0's held behind it");
	cr_expect_eq(fake_verbs_waiting(IBV_WR_RDMA_WRITE_WITH_IMM), 0);
	cr_expect_eq(p.f.s[0].n_ok + p.f.s[1].n_ok, 0);
	fake_verbs_hold(IBV_WR_RDMA_WRITE, false);
	cr_assert(pf_drive_until(&p.f, 1, 1, 5000), "the CQ data");
	cr_assert(pf_drive_until(&p.f, 0, 1, 5000), "the completion");
	pf_drive(&p.f, 20);
	cr_expect_eq(p.f.s[1].n_ok, 1);
	cr_expect_eq(p.f.s[0].n_ok, 1);
	cr_expect_eq(p.f.s[0].n_err + p.f.s[1].n_err, 0);
	cr_expect_eq(p.f.s[1].ok[0].data, 77);
	cr_expect(pf_check(p.tgt, p.len, 8));
	rma_pair_close(&p);
}

/* A piece that fails on rail 1 while the connection stands takes the
 * rails out (gdrfab_stripe.h): what did not land goes again on rail 0
 * and the RMA is reported once, a success, its bytes whole at the
 * target. A write's rail 0 piece (the first half), which landed, is not
 * written again: rail 1's half alone is. An fi_writedata's rail 0 piece
 * is the last half and had not gone (it carries the CQ data, which waits
 * for rail 1's): the whole goes, the CQ data once, after every byte.
 * Either way 1.5 times the bytes were posted in all. */
static void failed_piece_goes_again(bool with_data)
{
	struct rma_pair p;
	long posted;

	rma_pair_open(&p, 1 << 20, 41);
	posted = fake_verbs_counts().rdma_bytes;
	fake_verbs_hold(IBV_WR_RDMA_WRITE, true);
	rma_pair_write(&p, with_data, 5);
	pf_drive(&p.f, 20);
	cr_assert_eq(fake_verbs_waiting(IBV_WR_RDMA_WRITE), with_data ? 1 : 2,
		     "rail 1's piece (and rail 0's but with CQ data)");
	fake_verbs_hold(IBV_WR_RDMA_WRITE, false);
	if (!with_data)
		cr_assert(fake_verbs_step(), "rail 0's piece");
	cr_assert_eq(
		fake_verbs_fail(IBV_WR_RDMA_WRITE, IBV_WC_RETRY_EXC_ERR, false),
		1, "rail 1's piece");
	cr_assert(pf_drive_until(&p.f, 0, 1, 5000));
	if (with_data)
		cr_assert(pf_drive_until(&p.f, 1, 1, 5000), "the CQ data");
	pf_drive(&p.f, 50);
	cr_expect_eq(p.f.s[0].n_ok, 1, "reported once");
	cr_expect_eq(p.f.s[0].n_err, 0);
	cr_expect_eq(p.f.s[1].n_ok, with_data ? 1 : 0, "CQ data once");
	cr_expect_eq(p.f.s[1].n_err, 0);
	cr_expect(pf_check(p.tgt, p.len, 41), "written whole");
	cr_expect_eq(fake_verbs_counts().rdma_bytes - posted,
		     (long)(p.len + p.len / 2),
		     "rail 1's half moved again, nothing more");
	rma_pair_close(&p);
}

Test(rma_stripe, failed_piece_goes_again_on_rail_0)
{
	failed_piece_goes_again(false);
}

Test(rma_stripe, failed_writedata_piece_cq_data_once)
{
	failed_piece_goes_again(true);
}

/* The key of an MR the target closed, its rkeys known to the initiator:
 * a striped write with it fails once, cleanly, and writes nothing; the
 * buffer registered again has a new key, which the pair then uses (on
 * rail 0 first, then striped). */
Test(rma_stripe, closed_target_mr_clean_error)
{
	struct rma_pair p;
	uint64_t old, split[2];
	struct pf *f = &p.f;

	rma_pair_open(&p, 1 << 20, 4);
	old = fi_mr_key(p.tmr);
	memset(p.tgt, 0, p.len);
	cr_assert_eq(fi_close(&p.tmr->fid), 0);
	cr_assert_eq(fi_write(f->s[0].ep, p.src, p.len, NULL, f->s[0].peer,
			      (uintptr_t)p.tgt, old, NULL),
		     0);
	cr_assert(pf_drive_until(f, 0, 1, 5000));
	pf_drive(f, 50);
	cr_expect_eq(f->s[0].n_ok, 0);
	cr_assert_eq(f->s[0].n_err, 1, "one error");
	cr_expect_gt(f->s[0].err[0].err, 0);
	cr_expect_lt(f->s[0].err[0].err, FI_ERRNO_MAX, "an FI_E* error: %d",
		     f->s[0].err[0].err);
	cr_expect(zero(p.tgt, p.len), "written through a closed MR's key");
	f->s[0].n_err = 0;
	cr_assert_eq(fi_mr_reg(f->side_domain[1], p.tgt, p.len, FI_REMOTE_WRITE,
			       0, 0, 0, &p.tmr, NULL),
		     0);
	cr_expect_neq(fi_mr_key(p.tmr), old, "a new MR, a new key");
	rma(f, WRITE, p.src, p.len, p.tgt, fi_mr_key(p.tmr), 0, split);
	cr_expect_eq(split[0] + split[1], 0, "the new key's first: rail 0");
	cr_expect(pf_check(p.tgt, p.len, 4));
	memset(p.tgt, 0, p.len);
	f->s[0].n_ok = 0;
	rma(f, WRITE, p.src, p.len, p.tgt, fi_mr_key(p.tmr), 0, split);
	cr_expect_eq(split[0] + split[1], p.len, "then striped");
	cr_expect(pf_check(p.tgt, p.len, 4));
	rma_pair_close(&p);
}

/* A target that will not have a key striped (here: one it never had)
 * answers with no rkeys: the initiator stays on rail 0 for that key. */
Test(rma_stripe, unknown_key_stays_on_rail0)
{
	const size_t len = 1 << 20;
	uint8_t *src = calloc(1, len), *tgt = calloc(1, len);
	struct fid_mr *tmr;
	uint64_t key;
	struct pf f;

	cr_assert(src && tgt);
	open_two_rail_pair(&f);
	cr_assert_eq(fi_mr_reg(f.side_domain[1], tgt, len, FI_REMOTE_WRITE, 0,
			       0, 0, &tmr, NULL),
		     0);
	/* The MR's rail 0 rkey under a generation no MR has: the NIC takes
	 * it on rail 0, the key table knows nothing of it. */
	key = gdrfab_rail_key((uint32_t)fi_mr_key(tmr), 12345);
	for (int i = 0; i < 3; i++) {
		uint64_t split[2];

		f.s[0].n_ok = 0;
		rma(&f, WRITE, src, len, tgt, key, 0, split);
		cr_expect_eq(split[0] + split[1], 0, "write %d striped", i);
	}
	cr_assert_eq(fi_close(&tmr->fid), 0);
	pf_close(&f);
	free(src);
	free(tgt);
}

/* A NIC alone: 32-bit keys and rail 0, as before. A rail set and a NIC
 * alone: each side's RMA to the other on rail 0, intact. */
static void rail0_only(struct pf *f, bool one_nic)
{
	const size_t len = 1 << 20;
	uint8_t *src = malloc(len), *tgt = calloc(1, len);
	struct fid_domain *d[2] = {
		f->side_domain[0] ? f->side_domain[0] : f->domain,
		f->side_domain[1] ? f->side_domain[1] : f->domain};

	cr_assert(src && tgt);
	for (int from = 0; from < 2; from++) {
		struct fid_mr *tmr;
		int to = 1 - from;

		cr_assert_eq(fi_mr_reg(d[to], tgt, len, FI_REMOTE_WRITE, 0, 0,
				       0, &tmr, NULL),
			     0);
		if (one_nic)
			cr_expect_leq(fi_mr_key(tmr), UINT32_MAX);
		for (int i = 0; i < 2; i++) {
			f->s[from].n_ok = 0;
			pf_fill(src, len, (unsigned)(from * 2 + i));
			cr_assert_eq(fi_write(f->s[from].ep, src, len, NULL,
					      f->s[from].peer, (uintptr_t)tgt,
					      fi_mr_key(tmr), NULL),
				     0);
			cr_assert(pf_drive_until(f, from, 1, 5000));
			cr_expect_eq(f->s[from].n_err, 0);
			cr_expect(pf_check(tgt, len, (unsigned)(from * 2 + i)));
		}
		cr_assert_eq(fi_close(&tmr->fid), 0);
	}
	for (int i = 0; i < 2; i++) {
		static struct fi_gdrfab_stats s;

		pf_read_stats(f, i, &s);
		for (uint32_t r = 0; r < s.rail_count; r++)
			cr_expect_eq(s.rails[r].stripe_bytes, 0);
	}
	free(src);
	free(tgt);
}

Test(rma_stripe, one_nic_unchanged)
{
	struct pf f;

	pf_open(&f);
	pf_connect(&f);
	rail0_only(&f, true);
	pf_close(&f);
}

Test(rma_stripe, rail_set_and_nic_alone_on_rail0)
{
	static const char *const dom[2] = {"fake0+fake1", "fake1"};
	struct pf f;

	open_pair(&f, dom);
	cr_assert_null(conn_of(&f, 0)->rails);
	rail0_only(&f, false);
	pf_close(&f);
}

/* Both sides learn the other's key at once, each asking while the other
 * asks: nothing waits for an answer, both first writes complete on rail
 * 0, both second ones are striped, all intact. */
Test(rma_stripe, both_sides_ask_at_once)
{
	const size_t len = 1 << 20;
	uint8_t *src[2], *tgt[2];
	struct fid_mr *tmr[2];
	uint64_t before[2][2];
	struct pf f;

	open_two_rail_pair(&f);
	for (int i = 0; i < 2; i++) {
		src[i] = malloc(len);
		tgt[i] = calloc(1, len);
		cr_assert(src[i] && tgt[i]);
		cr_assert_eq(fi_mr_reg(f.side_domain[i], tgt[i], len,
				       FI_REMOTE_WRITE, 0, 0, 0, &tmr[i], NULL),
			     0);
		rail_counts(&f, i, before[i], NULL);
	}
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 2; i++) {
			pf_fill(src[i], len, (unsigned)(round * 2 + i));
			f.s[i].n_ok = 0;
			cr_assert_eq(fi_write(f.s[i].ep, src[i], len, NULL,
					      f.s[i].peer,
					      (uintptr_t)tgt[1 - i],
					      fi_mr_key(tmr[1 - i]), NULL),
				     0);
		}
		cr_assert(pf_drive_until(&f, 0, 1, 5000));
		cr_assert(pf_drive_until(&f, 1, 1, 5000));
		pf_drive(&f, 10);
		for (int i = 0; i < 2; i++) {
			uint64_t now[2];

			cr_expect_eq(f.s[i].n_err, 0);
			cr_expect(pf_check(tgt[1 - i], len,
					   (unsigned)(round * 2 + i)));
			rail_counts(&f, i, now, NULL);
			cr_expect_eq(
				now[0] + now[1] - before[i][0] - before[i][1],
				round ? len : 0, "side %d round %d", i, round);
		}
	}
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(fi_close(&tmr[i]->fid), 0);
		free(src[i]);
		free(tgt[i]);
	}
	pf_close(&f);
}

/* FI_GDRFAB_STRIPE_MIN=0: an empty RMA has nothing to cut (its one work
 * request on rail 0, no piece counted), a byte and more are striped
 * once the key is known. */
Test(rma_stripe, stripe_min_0_leaves_empty_rma_whole)
{
	uint8_t src[64] = {1, 2, 3}, tgt[64] = {0};
	struct fid_mr *tmr;
	uint64_t split[2];
	struct pf f;

	gdrfab_params.stripe_min = 0;
	open_two_rail_pair(&f);
	cr_assert_eq(fi_mr_reg(f.side_domain[1], tgt, sizeof(tgt),
			       FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &tmr,
			       NULL),
		     0);
	for (int i = 0; i < 3; i++) {
		f.s[0].n_ok = 0;
		rma(&f, WRITE, src, 0, tgt, fi_mr_key(tmr), 0, split);
		cr_expect_eq(split[0] + split[1], 0, "empty write %d", i);
		f.s[0].n_ok = 0;
		rma(&f, READ, src + 32, 0, tgt, fi_mr_key(tmr), 0, split);
		cr_expect_eq(split[0] + split[1], 0, "empty read %d", i);
	}
	f.s[0].n_ok = 0;
	rma(&f, WRITE, src, 3, tgt, fi_mr_key(tmr), 0, split);
	pf_drive(&f, 10);
	f.s[0].n_ok = 0;
	rma(&f, WRITE, src, 3, tgt, fi_mr_key(tmr), 0, split);
	cr_expect_eq(split[0], 3, "3 bytes: one piece, rail 0's");
	cr_expect_eq(memcmp(tgt, src, 3), 0);
	cr_assert_eq(fi_close(&tmr->fid), 0);
	pf_close(&f);
	gdrfab_params.stripe_min = GDRFAB_DEFAULT_STRIPE_MIN;
}

/* Below the threshold, once the key's rkeys are known: an fi_write of
 * 16 KiB and more goes whole on one rail, the rails taking turns (reads
 * too: write_read_writedata_split_across_rails); smaller ones and
 * fi_writedata stay on rail 0 (not counted). */
Test(rma_stripe, below_the_threshold_rails_take_turns)
{
	const size_t len = 64 << 10;
	struct rma_pair p;
	uint64_t split[2], sum[2] = {0, 0};

	rma_pair_open(&p, 1 << 20, 51);
	for (size_t i = 0; i < 4; i++) {
		p.f.s[0].n_ok = 0;
		rma(&p.f, WRITE, p.src + i * len, len, p.tgt + i * len,
		    fi_mr_key(p.tmr), 0, split);
		cr_expect(split[0] == len ? !split[1]
					  : split[1] == len && !split[0],
			  "RMA %zu not whole on one rail: %llu + %llu", i,
			  (unsigned long long)split[0],
			  (unsigned long long)split[1]);
		sum[0] += split[0];
		sum[1] += split[1];
	}
	cr_expect_eq(sum[0], 2 * len, "rail 0's turns");
	cr_expect_eq(sum[1], 2 * len, "rail 1's turns");
	cr_expect(pf_check(p.tgt, 4 * len, 51));
	p.f.s[0].n_ok = 0;
	rma(&p.f, WRITE, p.src, GDRFAB_RAIL_TURN_MIN - 1, p.tgt,
	    fi_mr_key(p.tmr), 0, split);
	cr_expect_eq(split[0] + split[1], 0, "below 16 KiB on the rails");
	p.f.s[0].n_ok = p.f.s[1].n_ok = 0;
	rma(&p.f, WRITEDATA, p.src, len, p.tgt, fi_mr_key(p.tmr), 7, split);
	cr_expect_eq(split[0] + split[1], 0, "an fi_writedata on the rails");
	cr_expect_eq(p.f.s[1].ok[0].data, 7);
	rma_pair_close(&p);
}

/* Three rails: a striped fi_write of 1 MiB (pieces of 384, 384 and 256
 * KiB) whose rail 2 piece fails while rails 0 and 1 carry on: only that
 * piece is written again, cut over rails 0 and 1 (128 KiB each), and the
 * write is reported once, a success, its bytes whole at the target. */
Test(rma_stripe, three_rails_a_failed_piece_is_cut_over_the_rails_left)
{
	static const char *const dom[2] = {"fake0+fake1+fake2",
					   "fake0+fake1+fake2"};
	static struct fi_gdrfab_stats s;
	const size_t len = 1 << 20;
	uint8_t *src = malloc(len), *tgt = calloc(1, len);
	uint64_t b0[3], b1[3];
	struct fid_mr *tmr;
	long posted;
	struct pf f;

	cr_assert(src && tgt);
	pf_fill(src, len, 83);
	pf_open_domains(&f, 3, dom);
	pf_connect(&f);
	pf_drive(&f, 20);
	cr_assert(conn_of(&f, 0)->rails && conn_of(&f, 0)->rails->up);
	cr_assert_eq(conn_of(&f, 0)->rails->more, 2);
	cr_assert_eq(fi_mr_reg(f.side_domain[1], tgt, len, FI_REMOTE_WRITE, 0,
			       0, 0, &tmr, NULL),
		     0);
	learn(&f, tgt, fi_mr_key(tmr));
	pf_read_stats(&f, 0, &s);
	for (int r = 0; r < 3; r++)
		b0[r] = s.rails[r].stripe_bytes;
	posted = fake_verbs_counts().rdma_bytes;
	fake_verbs_hold(IBV_WR_RDMA_WRITE, true);
	cr_assert_eq(post(&f, WRITE, src, len, tgt, fi_mr_key(tmr), 0), 0);
	pf_drive(&f, 20);
	cr_assert_eq(fake_verbs_waiting(IBV_WR_RDMA_WRITE), 3,
		     "a piece a rail");
	fake_verbs_port_down(2, true); /* until the end: not taken back */
	fake_verbs_hold(IBV_WR_RDMA_WRITE, false);
	cr_assert_eq(
		fake_verbs_fail_on(2, IBV_WR_RDMA_WRITE, IBV_WC_RETRY_EXC_ERR),
		1, "rail 2's piece");
	cr_assert(pf_drive_until(&f, 0, 1, 5000));
	pf_drive(&f, 50);
	cr_expect_eq(f.s[0].n_ok, 1, "reported once");
	cr_expect_eq(f.s[0].n_err, 0);
	cr_expect(pf_check(tgt, len, 83), "written whole");
	cr_expect_eq(fake_verbs_counts().rdma_bytes - posted,
		     (long)(len + (256 << 10)),
		     "rail 2's piece moved again, nothing more");
	pf_read_stats(&f, 0, &s);
	for (int r = 0; r < 3; r++)
		b1[r] = s.rails[r].stripe_bytes - b0[r];
	cr_expect_eq(b1[0], (384 + 128) << 10, "rail 0: %llu",
		     (unsigned long long)b1[0]);
	cr_expect_eq(b1[1], (384 + 128) << 10, "rail 1: %llu",
		     (unsigned long long)b1[1]);
	cr_expect_eq(b1[2], 256 << 10, "rail 2: its piece, once");
	cr_expect_eq(conn_of(&f, 0)->rails->out, 1u << 2);
	cr_assert_eq(fi_close(&tmr->fid), 0);
	pf_close(&f);
	free(src);
	free(tgt);
}
