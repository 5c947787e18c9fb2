/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Latency: a message (or an fi_writedata) goes to the peer and back, size
 * by size. Start the server, then the client with the server's host:
 *
 *   gdrfab_pingpong -d rxe0                 # server
 *   gdrfab_pingpong -d rxe1 192.0.2.1       # client
 *
 * -p picks another provider (e.g. "verbs;ofi_rxm") to compare.
 */
#include <stdio.h>
#include <string.h>

#include "ex_common.h"

static struct fi_context ctx[2];

static ssize_t post_send(struct ex_ctx *c, size_t len, void *arg)
{
	if (c->o.mode == EX_RMA)
		return fi_writedata(c->objs.ep, c->buf, len, ex_desc(c),
				    (uint64_t)(uintptr_t)arg & 0xffffffff,
				    c->peer, c->peer_addr, c->peer_key,
				    &ctx[0]);
	return fi_tsend(c->objs.ep, c->buf, len, ex_desc(c), c->peer, 1,
			&ctx[0]);
}

static ssize_t post_recv(struct ex_ctx *c, size_t len, void *arg)
{
	(void)arg;
	return fi_trecv(c->objs.ep, c->buf + c->buf_len / 2, len, ex_desc(c),
			c->peer, 1, 0, &ctx[1]);
}

/* One round trip; the client speaks first. */
static int round_trip(struct ex_ctx *c, size_t size, int iter)
{
	int done = 0;

	if (c->o.mode == EX_TAGGED && ex_post(c, &done, post_recv, size, NULL))
		return -1;
	if (!ex_is_server(c)) {
		if (c->o.check)
			ex_buf_fill(c, 0, size, (unsigned)iter);
		if (ex_post(c, &done, post_send, size, (void *)(uintptr_t)iter))
			return -1;
		ex_wait(c, 2 - done);
	} else {
		ex_wait(c, 1 - done);
		done = 0;
		if (c->o.check &&
		    !ex_buf_verify(c, c->buf_len / 2, size, (unsigned)iter)) {
			fprintf(stderr, "data mismatch at size %zu\n", size);
			return -1;
		}
		if (c->o.check)
			ex_buf_copy(c, 0, c->buf_len / 2, size);
		if (ex_post(c, &done, post_send, size, (void *)(uintptr_t)iter))
			return -1;
		ex_wait(c, 1 - done);
	}
	if (!ex_is_server(c) && c->o.check &&
	    !ex_buf_verify(c, c->buf_len / 2, size, (unsigned)iter)) {
		fprintf(stderr, "echo mismatch at size %zu\n", size);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ex_ctx c = {.sock = -1};

	ex_parse(argc, argv, &c.o,
		 "Round-trip latency of tagged messages or fi_writedata.");
	if (ex_setup(&c))
		return 1;
	if (!ex_is_server(&c))
		printf("# %s pingpong over %s (%s)\n%10s %10s %12s %14s\n",
		       c.o.mode == EX_RMA ? "fi_writedata" : "tagged",
		       c.objs.info->fabric_attr->prov_name,
		       c.objs.info->domain_attr->name, "bytes", "iters",
		       "latency_us", "bandwidth_MB/s");
	for (int s = 0; s < c.o.nsizes; s++) {
		size_t size = c.o.sizes[s];
		int iters = ex_iters(&c, size, 200, 50), warm = iters / 10 + 1;
		double t0 = 0;

		ex_sync(&c);
		for (int i = 0; i < warm + iters; i++) {
			if (i == warm)
				t0 = ex_now_us();
			if (round_trip(&c, size, i))
				return 1;
		}
		if (!ex_is_server(&c)) {
			double lat = (ex_now_us() - t0) / iters / 2;

			printf("%10zu %10d %12.2f %14.2f\n", size, iters, lat,
			       (double)size / lat);
			fflush(stdout);
		}
	}
	ex_teardown(&c);
	return 0;
}
