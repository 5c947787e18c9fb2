/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bandwidth: the client keeps a window of tagged sends (or RDMA writes) in
 * flight to the server, size by size. With -c the client fills its buffer
 * with a pattern per size and the server checks what arrived last (the
 * received message, or the target of the writes). Same invocation as
 * gdrfab_pingpong:
 *
 *   gdrfab_bw -d rxe0 [-m rma]              # server
 *   gdrfab_bw -d rxe1 [-m rma] 192.0.2.1    # client
 */
#include <stdio.h>

#include "ex_common.h"

static struct fi_context ctx[1024];

static ssize_t post_send(struct ex_ctx *c, size_t len, void *arg)
{
	int slot = (int)(uintptr_t)arg;

	if (c->o.mode == EX_RMA)
		return fi_write(c->objs.ep, c->buf, len, ex_desc(c), c->peer,
				c->peer_addr, c->peer_key, &ctx[slot]);
	return fi_tsend(c->objs.ep, c->buf, len, ex_desc(c), c->peer, 2,
			&ctx[slot]);
}

static ssize_t post_recv(struct ex_ctx *c, size_t len, void *arg)
{
	int slot = (int)(uintptr_t)arg;

	return fi_trecv(c->objs.ep, c->buf + c->buf_len / 2, len, ex_desc(c),
			c->peer, 2, 0, &ctx[slot]);
}

/* One window: the client sends it, the server (tagged) receives it. */
static int window(struct ex_ctx *c, size_t size)
{
	int done = 0;

	if (c->o.mode == EX_RMA && ex_is_server(c))
		return 0; /* RDMA writes need nothing of the target */
	for (int w = 0; w < c->o.window; w++) {
		if (ex_post(c, &done, ex_is_server(c) ? post_recv : post_send,
			    size, (void *)(uintptr_t)w))
			return -1;
	}
	return ex_wait(c, c->o.window - done);
}

int main(int argc, char **argv)
{
	struct ex_ctx c = {.sock = -1};

	ex_parse(argc, argv, &c.o,
		 "Streaming bandwidth of tagged messages or RDMA writes.");
	if (ex_setup(&c))
		return 1;
	if (!ex_is_server(&c))
		printf("# %s bandwidth over %s (%s), window %d\n"
		       "%10s %10s %12s %14s\n",
		       c.o.mode == EX_RMA ? "fi_write" : "tagged",
		       c.objs.info->fabric_attr->prov_name,
		       c.objs.info->domain_attr->name, c.o.window, "bytes",
		       "iters", "latency_us", "bandwidth_MB/s");
	for (int s = 0; s < c.o.nsizes; s++) {
		size_t size = c.o.sizes[s];
		int iters = ex_iters(&c, size, 20, 4);
		double t0;

		if (c.o.check && !ex_is_server(&c))
			ex_buf_fill(&c, 0, size, (unsigned)s + 1);
		ex_sync(&c);
		if (window(&c, size)) /* warm-up */
			return 1;
		ex_sync(&c);
		t0 = ex_now_us();
		for (int i = 0; i < iters; i++) {
			if (window(&c, size))
				return 1;
		}
		/* The server has everything once it says so. */
		ex_sync(&c);
		if (c.o.check && ex_is_server(&c) &&
		    !ex_buf_verify(&c, c.buf_len / 2, size, (unsigned)s + 1)) {
			fprintf(stderr, "data mismatch at size %zu\n", size);
			return 1;
		}
		if (!ex_is_server(&c)) {
			double us = ex_now_us() - t0;
			double ops = (double)iters * c.o.window;

			printf("%10zu %10d %12.2f %14.2f\n", size, iters,
			       us / ops, (double)size * ops / us);
			fflush(stdout);
		}
	}
	ex_teardown(&c);
	return 0;
}
