/* SPDX-License-Identifier: BSD-2-Clause */
/* The counters (FI_GDRFAB_STATS_OPS) over soft-RoCE: eager and rendezvous
 * messages moved between rxe0 and rxe1, and what each endpoint and each
 * domain says it did, read through fi_open_ops. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_ext_gdrfab.h>

#include "dp_helpers.h"

TestSuite(stats, .init = dp_pair_setup, .fini = dp_pair_teardown,
	  .timeout = 120);

static void read_stats(struct fid *fid, struct fi_gdrfab_stats *out)
{
	struct fi_gdrfab_stats_ops *ops = NULL;
	int ret = fi_open_ops(fid, FI_GDRFAB_STATS_OPS, 0, (void **)&ops, NULL);

	cr_assert_eq(ret, 0, "fi_open_ops: %s", fi_strerror(-ret));
	memset(out, 0, sizeof(*out));
	out->size = sizeof(*out);
	cr_assert_eq(ops->read(fid, out), 0);
}

static const struct fi_gdrfab_peer_stats *
peer_of(const struct fi_gdrfab_stats *s, fi_addr_t a)
{
	for (uint64_t i = 0; i < s->peer_count; i++) {
		if (s->peers[i].fi_addr == a)
			return &s->peers[i];
	}
	cr_assert_fail("no row for fi_addr %llu", (unsigned long long)a);
	return NULL;
}

/* Eager up to FI_GDRFAB_SEG_MAX (16 KiB: one packet up to
 * FI_GDRFAB_EAGER_MAX's 8 KiB, segmented past it, both counted as eager),
 * rendezvous beyond. */
static const size_t sizes[] = {8, 1024, 8192, 8193, 16384, 65536, 1 << 20};
#define N_SIZES	 (sizeof(sizes) / sizeof(sizes[0]))
#define N_EAGER	 5
#define MAX_SIZE (1 << 20)

Test(stats, eager_and_rendezvous_messages_are_counted_as_sent)
{
	struct dp_ep *p = dp_pair_eps;
	static struct fi_gdrfab_stats a, b, da, db;
	uint8_t *src = dp_alloc(MAX_SIZE), *dst = dp_alloc(MAX_SIZE);
	struct fid_mr *smr = dp_reg(&p[0], src, MAX_SIZE, FI_SEND);
	struct fid_mr *dmr = dp_reg(&p[1], dst, MAX_SIZE, FI_RECV);
	uint64_t eager_bytes = 0, rndv_bytes = 0;
	struct fi_cq_tagged_entry e;

	for (size_t i = 0; i < N_SIZES; i++) {
		dp_fill(src, sizes[i], (unsigned)i);
		DP_POST(p, 2,
			fi_trecv(p[1].ep, dst, sizes[i], fi_mr_desc(dmr),
				 p[1].peer[0], 0x5000 + i, 0, NULL));
		DP_POST(p, 2,
			fi_tsend(p[0].ep, src, sizes[i], fi_mr_desc(smr),
				 p[0].peer[1], 0x5000 + i, NULL));
		dp_expect(p[1].rxcq, &e, NULL, p, 2);
		cr_assert_eq(e.len, sizes[i]);
		cr_assert(dp_check(dst, sizes[i], (unsigned)i));
		dp_expect(p[0].txcq, &e, NULL, p, 2);
		*(i < N_EAGER ? &eager_bytes : &rndv_bytes) += sizes[i];
	}
	read_stats(&p[0].ep->fid, &a);
	read_stats(&p[1].ep->fid, &b);
	read_stats(&p[0].d.domain->fid, &da);
	read_stats(&p[1].d.domain->fid, &db);
	cr_assert_eq(a.size, sizeof(a));
	cr_assert_eq(a.tx_eager_msgs, N_EAGER);
	cr_assert_eq(a.tx_eager_bytes, eager_bytes);
	cr_assert_eq(a.tx_rndv_msgs, N_SIZES - N_EAGER);
	cr_assert_eq(a.tx_rndv_bytes, rndv_bytes);
	cr_assert_eq(b.rx_eager_msgs, N_EAGER);
	cr_assert_eq(b.rx_eager_bytes, eager_bytes);
	cr_assert_eq(b.rx_rndv_msgs, N_SIZES - N_EAGER);
	cr_assert_eq(b.rx_rndv_bytes, rndv_bytes);
	cr_assert_eq(a.conn_established, 1);
	cr_assert_eq(b.conn_established, 1);
	cr_assert_eq(a.err_completions + b.err_completions, 0);
	cr_assert_eq(a.gpu_direct_ops + a.gpu_staged_ops + a.gpu_copied_ops, 0,
		     "host memory only");
	cr_assert_eq(peer_of(&a, p[0].peer[1])->tx_msgs, N_SIZES);
	cr_assert_eq(peer_of(&a, p[0].peer[1])->tx_bytes,
		     eager_bytes + rndv_bytes);
	cr_assert_eq(peer_of(&b, p[1].peer[0])->rx_msgs, N_SIZES);
	cr_assert_eq(peer_of(&b, p[1].peer[0])->rx_bytes,
		     eager_bytes + rndv_bytes);
	/* Each side's domain holds that one endpoint. */
	cr_assert_eq(da.endpoints, 1);
	cr_assert_eq(da.tx_rndv_bytes, rndv_bytes);
	cr_assert_eq(db.rx_eager_msgs, N_EAGER);
	fi_close(&smr->fid);
	fi_close(&dmr->fid);
	free(src);
	free(dst);
}
