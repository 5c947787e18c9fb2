/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The counters (gdrfab_stats.h): the table printed and read back, sums,
 * the versioned copy an application gets, the error kinds, file names;
 * then, on the fake verbs device (proto_fixture.h), what endpoints and
 * their domain count for eager and rendezvous messages and for a send the
 * NIC gives up on, read through fi_open_ops, and the file
 * FI_GDRFAB_STATS=path writes when they close.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_ext_gdrfab.h>

#include "fake_verbs.h"
#include "gdrfab_params.h"
#include "gdrfab_stats_fmt.h"
#include "proto_fixture.h"

#define A 0
#define B 1

/* Every counter a different value, and three peers, one in other. */
static void sample(struct gdrfab_stats *s)
{
	memset(s, 0, sizeof(*s));
	for (unsigned i = 0; i < GDRFAB_STAT_COUNT; i++)
		s->c[i] = 1000 + i;
	s->c[GDRFAB_STAT_gpu_path] = 2;
	gdrfab_stat_peer_tx(s, 3, 64);
	gdrfab_stat_peer_tx(s, 3, 64);
	gdrfab_stat_peer_rx(s, 0, 8);
	gdrfab_stat_peer_error(s, 0);
	/* 67's row is 3's (67 mod 64): it counts in other. */
	gdrfab_stat_peer_tx(s, 67, 100);
}

struct got {
	char scope[32];
	struct fi_gdrfab_stats s;
	int n;
};

static void keep(const char *scope, const struct fi_gdrfab_stats *s, void *arg)
{
	struct got *g = arg;

	snprintf(g->scope, sizeof(g->scope), "%s", scope);
	g->s = *s;
	g->n++;
}

Test(stats, the_peer_table_keeps_a_row_per_fi_addr_and_other_for_the_rest)
{
	static struct gdrfab_stats s;
	static struct fi_gdrfab_stats e;

	sample(&s);
	gdrfab_stats_export(&s, &e);
	cr_assert_eq(e.peer_count, 2);
	cr_assert_eq(e.peers[0].fi_addr, 0, "rows in fi_addr order");
	cr_assert_eq(e.peers[0].rx_msgs, 1);
	cr_assert_eq(e.peers[0].rx_bytes, 8);
	cr_assert_eq(e.peers[0].errors, 1);
	cr_assert_eq(e.peers[1].fi_addr, 3);
	cr_assert_eq(e.peers[1].tx_msgs, 2);
	cr_assert_eq(e.peers[1].tx_bytes, 128);
	cr_assert_eq(e.peer_other.fi_addr, FI_ADDR_NOTAVAIL);
	cr_assert_eq(e.peer_other.tx_msgs, 1);
	cr_assert_eq(e.peer_other.tx_bytes, 100);
	/* An address not in the AV never takes a row: it counts in other,
	 * and stays there when a peer takes the row it used. */
	gdrfab_stat_peer_tx(&s, FI_ADDR_NOTAVAIL, 1);
	gdrfab_stats_export(&s, &e);
	cr_assert_eq(e.peer_count, 2);
	cr_assert_eq(e.peer_other.tx_msgs, 2);
	gdrfab_stat_peer_rx(&s, 63, 5);
	gdrfab_stats_export(&s, &e);
	cr_assert_eq(e.peer_count, 3);
	cr_assert_eq(e.peers[2].fi_addr, 63);
	cr_assert_eq(e.peers[2].tx_msgs, 0, "not the unknown peer's send");
	cr_assert_eq(e.peers[2].rx_msgs, 1);
	cr_assert_eq(e.peer_other.tx_msgs, 2);
	cr_assert_eq(e.tx_eager_msgs, 1000);
	cr_assert_eq(e.endpoints, 1000 + GDRFAB_STAT_endpoints);
}

Test(stats, a_printed_table_reads_back_the_same)
{
	static struct gdrfab_stats s;
	static struct fi_gdrfab_stats e;
	static struct got g;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int line;

	sample(&s);
	gdrfab_stats_export(&s, &e);
	cr_assert_eq(gdrfab_stats_print(f, "domain rxe0 host=h pid=1", &e), 0);
	fclose(f);
	cr_assert(strstr(text, "gdrfab stats: domain rxe0 host=h pid=1\n"));
	cr_assert(strstr(text, "  tx_rndv_msgs"), "%s", text);
	cr_assert(strstr(text, "(nvidia-peermem)"), "gpu_path is named");
	f = fmemopen(text, len, "r");
	cr_assert_eq(gdrfab_stats_parse(f, keep, &g, &line), 1);
	fclose(f);
	cr_assert_str_eq(g.scope, "domain");
	for (unsigned i = 0; i < GDRFAB_STAT_COUNT; i++)
		cr_assert_eq(*gdrfab_stats_field(&g.s, i),
			     *gdrfab_stats_field(&e, i), "%s",
			     gdrfab_stats_name(i));
	cr_assert_eq(g.s.peer_count, 2);
	cr_assert_eq(memcmp(g.s.peers, e.peers, 2 * sizeof(e.peers[0])), 0);
	cr_assert_eq(g.s.peer_other.tx_bytes, 100);
	free(text);
}

Test(stats, a_malformed_table_is_refused_with_its_line)
{
	static struct got g;
	char bad[] = "gdrfab stats: endpoint x\n  counter value\n"
		     "  tx_eager_msgs 3\n  no_such_counter 4\nend\n";
	char cut[] = "gdrfab stats: endpoint x\n  tx_eager_msgs 3\n";
	FILE *f = fmemopen(bad, strlen(bad), "r");
	int line;

	cr_assert_eq(gdrfab_stats_parse(f, keep, &g, &line), -1);
	cr_assert_eq(line, 4);
	fclose(f);
	f = fmemopen(cut, strlen(cut), "r");
	cr_assert_eq(gdrfab_stats_parse(f, keep, &g, &line), -1,
		     "a table without its end");
	fclose(f);
	cr_assert_eq(g.n, 0);
}

Test(stats, sums_add_counters_and_merge_peers_by_fi_addr)
{
	static struct gdrfab_stats s;
	static struct fi_gdrfab_stats one, all;

	sample(&s);
	gdrfab_stats_export(&s, &one);
	memset(&all, 0, sizeof(all));
	gdrfab_stats_sum(&all, &one);
	gdrfab_stats_sum(&all, &one);
	cr_assert_eq(all.tx_eager_msgs, 2000);
	cr_assert_eq(all.err_other, 2 * (1000 + GDRFAB_STAT_err_other));
	cr_assert_eq(all.gpu_path, 2, "a path, not a count");
	cr_assert_eq(all.peer_count, 2);
	cr_assert_eq(all.peers[1].fi_addr, 3);
	cr_assert_eq(all.peers[1].tx_msgs, 4);
	cr_assert_eq(all.peer_other.tx_bytes, 200);
	/* A table full of peers sends newcomers to other. */
	memset(&all, 0, sizeof(all));
	for (uint64_t i = 0; i < FI_GDRFAB_STATS_PEERS; i++) {
		memset(&one, 0, sizeof(one));
		one.peer_count = 1;
		one.peers[0] = (struct fi_gdrfab_peer_stats){
			.fi_addr = 1000 - i, .tx_msgs = 1};
		gdrfab_stats_sum(&all, &one);
	}
	cr_assert_eq(all.peer_count, FI_GDRFAB_STATS_PEERS);
	cr_assert_eq(all.peers[0].fi_addr, 1000 - FI_GDRFAB_STATS_PEERS + 1);
	one.peers[0].fi_addr = 5;
	gdrfab_stats_sum(&all, &one);
	cr_assert_eq(all.peer_other.tx_msgs, 1);
}

Test(stats, a_reader_gets_what_its_size_holds)
{
	static struct gdrfab_stats s;
	static struct fi_gdrfab_stats all, out;

	sample(&s);
	gdrfab_stats_export(&s, &all);
	/* An older, smaller struct: three counters. */
	memset(&out, 0xab, sizeof(out));
	out.size = offsetof(struct fi_gdrfab_stats, tx_rndv_bytes);
	cr_assert_eq(gdrfab_stats_copy_out(&all, &out), 0);
	cr_assert_eq(out.size, offsetof(struct fi_gdrfab_stats, tx_rndv_bytes));
	cr_assert_eq(out.tx_rndv_msgs, all.tx_rndv_msgs);
	cr_assert_eq(out.tx_rndv_bytes, 0xababababababababull,
		     "nothing written past its size");
	/* A newer, larger one: told how much there is. */
	out.size = sizeof(out) + 64;
	cr_assert_eq(gdrfab_stats_copy_out(&all, &out), 0);
	cr_assert_eq(out.size, sizeof(out));
	cr_assert_eq(out.peers[1].tx_msgs, 2);
	out.size = 2;
	cr_assert_eq(gdrfab_stats_copy_out(&all, &out), -FI_EINVAL);
	cr_assert_eq(gdrfab_stats_copy_out(&all, NULL), -FI_EINVAL);
}

/* Two rails' counters, as a rail-set endpoint of "mlx5_0+mlx5_1" keeps
 * them. */
static void sample_rails(struct gdrfab_stats *s)
{
	static const char *const names[] = {"mlx5_0", "mlx5_1"};

	gdrfab_stats_rails_init(s, 2, names);
	gdrfab_stat_rail_piece(s, 0, 1 << 20);
	gdrfab_stat_rail_piece(s, 1, 1 << 20);
	gdrfab_stat_rail_piece(s, 1, 5);
	gdrfab_stat_rail_error(s, 1);
}

/* A rail-set endpoint's rails print as rows after the peers and read
 * back by name; one NIC's table has no rail row (as before rails). */
Test(stats, rail_rows_print_and_read_back)
{
	static struct gdrfab_stats s;
	static struct fi_gdrfab_stats e;
	static struct got g;
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int line;

	sample(&s);
	gdrfab_stats_rails_init(&s, 1, (const char *const[]){"mlx5_0"});
	gdrfab_stat_rail_error(&s, 0); /* no rails: not counted */
	gdrfab_stats_export(&s, &e);
	cr_assert_eq(e.rail_count, 0, "one NIC: no rails");
	cr_assert_eq(e.rails[0].errors, 0);
	f = open_memstream(&text, &len);
	cr_assert_eq(gdrfab_stats_print(f, "endpoint mlx5_0", &e), 0);
	fclose(f);
	cr_assert_null(strstr(text, "  rail"), "%s", text);
	free(text);

	sample_rails(&s);
	gdrfab_stats_export(&s, &e);
	cr_assert_eq(e.rail_count, 2);
	cr_assert_str_eq(e.rails[1].name, "mlx5_1");
	cr_assert_eq(e.rails[1].stripe_ops, 2);
	cr_assert_eq(e.rails[1].stripe_bytes, (1 << 20) + 5);
	cr_assert_eq(e.rails[1].errors, 1);
	f = open_memstream(&text, &len);
	cr_assert_eq(gdrfab_stats_print(f, "domain mlx5_0+mlx5_1", &e), 0);
	fclose(f);
	cr_assert(strstr(text, "  rail index nic"), "%s", text);
	f = fmemopen(text, len, "r");
	cr_assert_eq(gdrfab_stats_parse(f, keep, &g, &line), 1, "line %d",
		     line);
	fclose(f);
	cr_assert_eq(g.s.rail_count, 2);
	cr_assert_eq(memcmp(g.s.rails, e.rails, 2 * sizeof(e.rails[0])), 0);
	cr_assert_eq(g.s.peer_count, 2, "the peers still read");
	free(text);
}

/* Sums merge rails by NIC name: a domain's endpoints add up row by row,
 * another host's NICs get rows of their own, and once every row is
 * taken the last one holds the rest, named other. */
Test(stats, sums_merge_rails_by_nic_name)
{
	static struct gdrfab_stats s;
	static struct fi_gdrfab_stats one, all;

	sample_rails(&s);
	gdrfab_stats_export(&s, &one);
	memset(&all, 0, sizeof(all));
	gdrfab_stats_sum(&all, &one);
	gdrfab_stats_sum(&all, &one);
	cr_assert_eq(all.rail_count, 2);
	cr_assert_str_eq(all.rails[0].name, "mlx5_0");
	cr_assert_eq(all.rails[0].stripe_bytes, 2 << 20);
	cr_assert_eq(all.rails[1].errors, 2);
	/* Another host's rails, the second listed first. */
	memcpy(one.rails[0].name, "mlx5_1", 7);
	memcpy(one.rails[1].name, "rxe0", 5);
	gdrfab_stats_sum(&all, &one);
	cr_assert_eq(all.rail_count, 3);
	cr_assert_eq(all.rails[1].stripe_ops, 4 + 1);
	cr_assert_str_eq(all.rails[2].name, "rxe0");
	for (int i = 0; i < FI_GDRFAB_STATS_RAILS; i++) {
		snprintf(one.rails[0].name, sizeof(one.rails[0].name), "n%d",
			 i);
		one.rail_count = 1;
		gdrfab_stats_sum(&all, &one);
	}
	cr_assert_eq(all.rail_count, FI_GDRFAB_STATS_RAILS);
	cr_assert_str_eq(all.rails[FI_GDRFAB_STATS_RAILS - 1].name, "other");
}

Test(stats, error_completions_are_counted_by_kind)
{
	static struct gdrfab_stats s;

	memset(&s, 0, sizeof(s));
	gdrfab_stats_count_error(&s, FI_EIO, 12 /* RETRY_EXC_ERR */);
	gdrfab_stats_count_error(&s, FI_ETRUNC, 0);
	gdrfab_stats_count_error(&s, FI_ECANCELED, 0);
	gdrfab_stats_count_error(&s, FI_EHOSTUNREACH,
				 FI_GDRFAB_PROV_ERRNO_BASE + 1);
	gdrfab_stats_count_error(&s, FI_ETIMEDOUT, 0);
	gdrfab_stats_count_error(&s, FI_ENOMEM, 0);
	cr_assert_eq(s.c[GDRFAB_STAT_err_completions], 6);
	cr_assert_eq(s.c[GDRFAB_STAT_err_verbs], 1);
	cr_assert_eq(s.c[GDRFAB_STAT_err_truncated], 1);
	cr_assert_eq(s.c[GDRFAB_STAT_err_canceled], 1);
	cr_assert_eq(s.c[GDRFAB_STAT_err_unreachable], 1);
	cr_assert_eq(s.c[GDRFAB_STAT_err_timeout], 1);
	cr_assert_eq(s.c[GDRFAB_STAT_err_other], 1);
}

Test(stats, file_names_expand_host_and_pid)
{
	char out[64];

	cr_assert_eq(
		gdrfab_stats_path("/t/s.%h.%p", "n1", 42, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/t/s.n1.42");
	cr_assert_eq(gdrfab_stats_path("/t/s", "n1", 42, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/t/s.n1.42", "without %%p: .%%h.%%p added");
	cr_assert_eq(
		gdrfab_stats_path("/t/%p-100%%", "n1", 7, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/t/7-100%");
	cr_assert_eq(gdrfab_stats_path("/t/a-long-name.%p", "n1", 7, out, 12),
		     -1);
}

/* ---- on the fake device ---- */

static struct pf f;

#define RNDV_LEN (64u * 1024) /* past FI_GDRFAB_EAGER_MAX's default */

static void *ctx(int i)
{
	return (void *)(uintptr_t)(0x57a700 + i);
}

static void read_stats(struct fid *fid, struct fi_gdrfab_stats *out)
{
	struct fi_gdrfab_stats_ops *ops = NULL;

	cr_assert_eq(
		fi_open_ops(fid, FI_GDRFAB_STATS_OPS, 0, (void **)&ops, NULL),
		0);
	cr_assert_eq(ops->size, sizeof(*ops));
	memset(out, 0, sizeof(*out));
	out->size = sizeof(*out);
	cr_assert_eq(ops->read(fid, out), 0);
	cr_assert_eq(out->size, sizeof(*out));
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

/* n eager messages of len bytes, then m rendezvous, A to B, received. */
static void send_some(int n, size_t len, int m)
{
	static uint8_t out[RNDV_LEN], in[4][RNDV_LEN];

	cr_assert(n + m <= 4);
	for (int i = 0; i < n + m; i++) {
		size_t l = i < n ? len : RNDV_LEN;

		cr_assert_eq(fi_trecv(f.s[B].ep, in[i], l, NULL, f.s[B].peer,
				      0x100 + i, 0, ctx(i)),
			     0);
		cr_assert_eq(fi_tsend(f.s[A].ep, out, l, NULL, f.s[A].peer,
				      0x100 + i, ctx(10 + i)),
			     0);
	}
	cr_assert(pf_drive_until(&f, B, n + m, 3000), "all received");
	cr_assert(pf_drive_until(&f, A, n + m, 3000), "all sent");
	cr_assert_eq(f.s[A].n_err + f.s[B].n_err, 0);
}

Test(stats_proto, eager_and_rendezvous_messages_read_through_fi_open_ops,
     .timeout = 10)
{
	static struct fi_gdrfab_stats a, b, d;
	struct fi_gdrfab_stats_ops *ops;
	struct fi_gdrfab_mr_cache_ops *cache;
	struct fi_gdrfab_mr_cache_stats mc;

	pf_open(&f);
	send_some(3, 100, 1);
	read_stats(&f.s[A].ep->fid, &a);
	read_stats(&f.s[B].ep->fid, &b);
	read_stats(&f.domain->fid, &d);
	cr_assert_eq(a.tx_eager_msgs, 3);
	cr_assert_eq(a.tx_eager_bytes, 300);
	cr_assert_eq(a.tx_rndv_msgs, 1);
	cr_assert_eq(a.tx_rndv_bytes, RNDV_LEN);
	cr_assert_eq(a.rx_eager_msgs + a.rx_rndv_msgs, 0);
	cr_assert_eq(b.rx_eager_msgs, 3);
	cr_assert_eq(b.rx_eager_bytes, 300);
	cr_assert_eq(b.rx_rndv_msgs, 1);
	cr_assert_eq(b.rx_rndv_bytes, RNDV_LEN);
	cr_assert_eq(b.tx_eager_msgs + b.tx_rndv_msgs, 0);
	cr_assert_eq(a.conn_requested, 1);
	cr_assert_eq(a.conn_established, 1);
	cr_assert_eq(b.conn_accepted, 1);
	cr_assert_eq(b.conn_established, 1);
	cr_assert_eq(a.err_completions + b.err_completions, 0);
	cr_assert_eq(peer_of(&a, f.s[A].peer)->tx_msgs, 4);
	cr_assert_eq(peer_of(&a, f.s[A].peer)->tx_bytes, 300 + RNDV_LEN);
	cr_assert_eq(peer_of(&b, f.s[B].peer)->rx_msgs, 4);
	cr_assert_eq(a.endpoints, 1);
	cr_assert_eq(a.mr_cache_host_misses, 0, "the domain's alone");
	/* The domain: both endpoints, and its registration cache's own
	 * counters (the rendezvous source and target came without
	 * descriptors). */
	cr_assert_eq(d.endpoints, 2);
	cr_assert_eq(d.tx_eager_msgs, 3);
	cr_assert_eq(d.rx_rndv_bytes, RNDV_LEN);
	cr_assert_eq(d.conn_established, 2);
	cr_assert_eq(fi_open_ops(&f.domain->fid, FI_GDRFAB_MR_CACHE_OPS, 0,
				 (void **)&cache, NULL),
		     0);
	cr_assert_eq(cache->stats(&f.domain->fid, &mc), 0);
	cr_assert_eq(d.mr_cache_host_misses, mc.host_misses);
	cr_assert_eq(d.mr_cache_host_hits, mc.host_hits);
	cr_assert_eq(d.mr_cache_misses, mc.misses);
	/* Other names and flags are not these ops; nor a NULL read. */
	cr_assert_eq(fi_open_ops(&f.s[A].ep->fid, "gdrfab_stats_v0", 0,
				 (void **)&ops, NULL),
		     -FI_ENOSYS);
	cr_assert_eq(fi_open_ops(&f.domain->fid, FI_GDRFAB_STATS_OPS, 1,
				 (void **)&ops, NULL),
		     -FI_EINVAL);
	cr_assert_eq(fi_open_ops(&f.domain->fid, FI_GDRFAB_STATS_OPS, 0,
				 (void **)&ops, NULL),
		     0);
	cr_assert_eq(ops->read(&f.domain->fid, NULL), -FI_EINVAL);
	cr_assert_eq(ops->read(&f.s[A].cq->fid, &d), -FI_EINVAL);
	pf_close(&f);
}

Test(stats_proto, a_send_the_nic_gives_up_on_counts_an_error_for_its_peer,
     .timeout = 10)
{
	static struct fi_gdrfab_stats a;
	char out[64];

	pf_open(&f);
	send_some(1, 8, 0);
	f.s[A].n_ok = f.s[B].n_ok = 0;
	fake_verbs_hold(IBV_WR_SEND, true);
	cr_assert_eq(fi_tsend(f.s[A].ep, out, sizeof(out), NULL, f.s[A].peer,
			      0x66, ctx(1)),
		     0);
	pf_drive(&f, 0);
	cr_assert_eq(fake_verbs_fail(IBV_WR_SEND, IBV_WC_RETRY_EXC_ERR, false),
		     1);
	fake_verbs_hold(IBV_WR_SEND, false);
	cr_assert(pf_drive_until(&f, A, 1, 2000));
	pf_drive(&f, 20);
	cr_assert_eq(f.s[A].n_err, 1);
	read_stats(&f.s[A].ep->fid, &a);
	cr_assert_eq(a.err_completions, 1);
	cr_assert_eq(a.err_verbs, 1, "the NIC's status says why");
	cr_assert_eq(a.conn_failed, 1);
	/* The failed work completion and its connection's failure. */
	cr_assert_eq(peer_of(&a, f.s[A].peer)->errors, 2);
	cr_assert_eq(a.tx_eager_msgs, 2);
	pf_close(&f);
}

Test(stats_proto, closing_writes_the_tables_to_the_file_named, .timeout = 10)
{
	char dir[] = "/tmp/gdrfab-stats-XXXXXX", pattern[64], path[128];
	char host[256] = "unknown";
	static struct got g[3];
	struct got *t = g;
	FILE *in;
	int line;

	cr_assert(mkdtemp(dir));
	snprintf(pattern, sizeof(pattern), "%s/s.%%p", dir);
	gdrfab_params.stats = strdup(pattern);
	pf_open(&f);
	send_some(2, 16, 1);
	pf_close(&f);
	free(gdrfab_params.stats);
	gdrfab_params.stats = NULL;
	gethostname(host, sizeof(host));
	snprintf(path, sizeof(path), "%s/s.%ld", dir, (long)getpid());
	in = fopen(path, "r");
	cr_assert(in, "%s written", path);
	/* Two endpoints, then their domain, each one table. */
	for (int i = 0; i < 3; i++) {
		char one[8192];
		size_t n = 0;
		FILE *m;

		while (fgets(one + n, (int)(sizeof(one) - n), in)) {
			n += strlen(one + n);
			if (!strcmp(one + n - 4, "end\n"))
				break;
		}
		m = fmemopen(one, n, "r");
		cr_assert_eq(gdrfab_stats_parse(m, keep, t + i, &line), 1,
			     "table %d", i);
		fclose(m);
	}
	fclose(in);
	unlink(path);
	rmdir(dir);
	cr_assert_str_eq(g[0].scope, "endpoint");
	cr_assert_eq(g[0].s.tx_eager_msgs, 2);
	cr_assert_eq(g[0].s.tx_rndv_msgs, 1);
	cr_assert_str_eq(g[1].scope, "endpoint");
	cr_assert_eq(g[1].s.rx_eager_bytes, 32);
	cr_assert_str_eq(g[2].scope, "domain");
	cr_assert_eq(g[2].s.endpoints, 2);
	cr_assert_eq(g[2].s.tx_eager_msgs, 2);
	cr_assert_eq(g[2].s.rx_rndv_msgs, 1);
}
