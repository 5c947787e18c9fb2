/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The host registration cache over rxe: memory used without a descriptor
 * at rendezvous size is registered once and found again, and memory
 * unmapped and mapped again at the same address with other content is
 * never sent from, received into, written from or read into through the
 * old registration. Run with FI_GDRFAB_HOST_MR_CACHE=nomonitor, the
 * remapping tests fail: the stale registration is what they catch.
 */
#include <criterion/criterion.h>
#include <rdma/fi_ext_gdrfab.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "dp_helpers.h"

#define LEN (1u << 20) /* far above the eager limit: rendezvous */

static struct dp_ep *const p = dp_pair_eps;

TestSuite(host_cache, .init = dp_pair_setup, .fini = dp_pair_teardown,
	  .timeout = 240);

static struct fi_gdrfab_mr_cache_stats stats(struct dp_ep *e)
{
	struct fi_gdrfab_mr_cache_stats s;
	struct fi_gdrfab_mr_cache_ops *ops;
	int ret = fi_open_ops(&e->d.domain->fid, FI_GDRFAB_MR_CACHE_OPS, 0,
			      (void **)&ops, NULL);

	cr_assert_eq(ret, 0, "fi_open_ops: %s", fi_strerror(-ret));
	cr_assert_eq(ops->stats(&e->d.domain->fid, &s), 0);
	return s;
}

static void require_host_cache(struct dp_ep *e)
{
	if (!stats(e).host_cached)
		cr_skip_test(
			"no host registration cache in this process (FI_LOG_LEVEL=info says why)");
}

/* LEN bytes mapped (at `at` exactly, when given) and filled. */
static uint8_t *map_at(void *at, unsigned seed)
{
	uint8_t *b =
		mmap(at, LEN, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0);

	cr_assert_neq(b, MAP_FAILED);
	if (at)
		cr_assert_eq(b, at);
	if (seed)
		dp_fill(b, LEN, seed);
	return b;
}

/* Frees buf and maps the same address again with other content. */
static void remap(uint8_t *buf, unsigned seed)
{
	cr_assert_eq(munmap(buf, LEN), 0);
	map_at(buf, seed);
}

/* LEN bytes of tx (descriptor tx_desc) sent from 0 with tag, received at
 * 1 into rx (rx_desc); both completions reaped. */
static void transfer(uint8_t *rx, void *rx_desc, uint8_t *tx, void *tx_desc,
		     uint64_t tag)
{
	struct fi_cq_tagged_entry e;

	DP_POST(p, 2,
		fi_trecv(p[1].ep, rx, LEN, rx_desc, FI_ADDR_UNSPEC, tag, 0,
			 rx));
	DP_POST(p, 2,
		fi_tsend(p[0].ep, tx, LEN, tx_desc, p[0].peer[1], tag, tx));
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	dp_expect(p[0].txcq, &e, NULL, p, 2);
}

/* buf, sent without a descriptor from 0, arrives whole at 1. */
static void send_from(uint8_t *buf, unsigned seed)
{
	uint8_t *rx = dp_alloc(LEN);
	struct fid_mr *mr = dp_reg(&p[1], rx, LEN, FI_RECV);

	transfer(rx, fi_mr_desc(mr), buf, NULL, 7);
	cr_assert(
		dp_check(rx, LEN, seed),
		"the receiver got other bytes than the sender's memory holds now (a stale registration?)");
	fi_close(&mr->fid);
	free(rx);
}

/* A message from 0 lands, whole, in buf, received without a descriptor
 * at 1. */
static void recv_into(uint8_t *buf, unsigned seed)
{
	uint8_t *tx = dp_alloc(LEN);
	struct fid_mr *mr = dp_reg(&p[0], tx, LEN, FI_SEND);

	dp_fill(tx, LEN, seed);
	transfer(buf, NULL, tx, fi_mr_desc(mr), 8);
	cr_assert(
		dp_check(buf, LEN, seed),
		"the receive buffer does not hold the message (received into a stale registration?)");
	fi_close(&mr->fid);
	free(tx);
}

/* use(buf) with seed first, then again with seed second: the second use
 * of the same memory is a cache hit and no miss, as e counts them;
 * returns e's counts after it. */
static struct fi_gdrfab_mr_cache_stats
second_use_hits(struct dp_ep *e, void (*use)(uint8_t *, unsigned), uint8_t *buf,
		unsigned first, unsigned second, const char *what)
{
	struct fi_gdrfab_mr_cache_stats s0, s1;

	use(buf, first);
	s0 = stats(e);
	use(buf, second);
	s1 = stats(e);
	cr_assert_eq(s1.host_hits, s0.host_hits + 1,
		     "the second %s did not hit the cache", what);
	cr_assert_eq(s1.host_misses, s0.host_misses);
	return s1;
}

Test(host_cache, a_send_buffer_mapped_again_sends_its_new_content)
{
	struct fi_gdrfab_mr_cache_stats s1, s2;
	uint8_t *buf;

	require_host_cache(&p[0]);
	buf = map_at(NULL, 1);
	s1 = second_use_hits(&p[0], send_from, buf, 1, 1, "send");
	remap(buf, 2);
	send_from(buf, 2);
	s2 = stats(&p[0]);
	cr_assert_gt(s2.host_invalidated, s1.host_invalidated);
	cr_assert_eq(s2.host_misses, s1.host_misses + 1);
	munmap(buf, LEN);
}

Test(host_cache, a_receive_buffer_mapped_again_receives_into_new_memory)
{
	uint8_t *buf;

	require_host_cache(&p[1]);
	buf = map_at(NULL, 0);
	second_use_hits(&p[1], recv_into, buf, 3, 4, "receive");
	remap(buf, 0);
	recv_into(buf, 5);
	munmap(buf, LEN);
}

/* free() of a large malloc unmaps inside glibc; malloc maps it again. */
Test(host_cache, a_freed_and_reallocated_send_buffer)
{
	uint8_t *buf, *again;

	require_host_cache(&p[0]);
	buf = malloc(8 * LEN);
	cr_assert(buf);
	dp_fill(buf, LEN, 6);
	send_from(buf, 6);
	send_from(buf, 6);
	free(buf);
	again = malloc(8 * LEN);
	cr_assert(again);
	dp_fill(again, LEN, 7);
	send_from(again, 7);
	free(again);
}

/* fi_write (or fi_read) of LEN bytes between local at 0, without a
 * descriptor, and remote at 1 (key), waited for. */
static void rma(bool write, uint8_t *local, uint8_t *remote, uint64_t key)
{
	struct fi_cq_tagged_entry e;

	DP_POST(p, 2,
		write ? fi_write(p[0].ep, local, LEN, NULL, p[0].peer[1],
				 (uintptr_t)remote, key, local)
		      : fi_read(p[0].ep, local, LEN, NULL, p[0].peer[1],
				(uintptr_t)remote, key, local));
	dp_expect(p[0].txcq, &e, NULL, p, 2);
}

Test(host_cache, rma_from_and_into_memory_mapped_again)
{
	uint8_t *remote = dp_alloc(LEN), *local;
	struct fid_mr *rmr =
		dp_reg(&p[1], remote, LEN, FI_REMOTE_READ | FI_REMOTE_WRITE);
	struct fi_gdrfab_mr_cache_stats s0, s1;
	uint64_t key = fi_mr_key(rmr);

	require_host_cache(&p[0]);
	local = map_at(NULL, 8);
	for (unsigned seed = 8; seed <= 10; seed++) {
		s0 = stats(&p[0]);
		rma(true, local, remote, key);
		cr_assert(dp_check(remote, LEN, seed),
			  "fi_write sent stale bytes (seed %u)", seed);
		s1 = stats(&p[0]);
		if (seed == 9) /* the first write after a remap misses */
			cr_assert_eq(s1.host_misses, s0.host_misses + 1);
		if (seed == 8) {
			/* Again from the same memory: a hit. */
			rma(true, local, remote, key);
			cr_assert_eq(stats(&p[0]).host_hits, s1.host_hits + 1);
		}
		remap(local, seed + 1);
	}
	/* Reads into memory mapped again land in the new memory. */
	for (unsigned seed = 11; seed <= 12; seed++) {
		dp_fill(remote, LEN, seed);
		remap(local, 0);
		rma(false, local, remote, key);
		cr_assert(dp_check(local, LEN, seed),
			  "fi_read landed elsewhere (seed %u)", seed);
	}
	munmap(local, LEN);
	fi_close(&rmr->fid);
	free(remote);
}
