/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where a round trip's time goes: gdrfab_pingpong's tagged round trip
 * (the client posts its receive, sends, and waits; the server waits,
 * sends back), with each side stamping its own steps. Each side prints
 * one line of medians over the round trips, in microseconds:
 *
 *   rtt    (client) one send's start to the next's
 *   trecv  the fi_trecv call
 *   send   a send's own time: fi_tsend's start to the write(2) that asks
 *          rxe's kernel driver to run it (stamped by write_stamp.so,
 *          LD_PRELOADed); the whole call where nothing was written
 *   write  that write: on rxe the kernel runs the delivery in it
 *   hit    the fi_cq_read that returned the receive's completion
 *   turn   the receive seen to the next send's start (the client's
 *          includes posting its next receive)
 *
 * send + hit + turn of both sides is what the provider and the program
 * spend on a round trip's critical path; the rest of rtt is the kernel's
 * two deliveries and the time polls take to see them (lat-parts.sh).
 *
 *   lat_parts -p PROV -d DEV -s SIZE -i ITERS [SERVER]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ex_common.h"
#include "lat_parts_clock.h"

/* From write_stamp.so when it is preloaded. */
extern volatile int write_stamp_armed __attribute__((weak));
extern volatile uint64_t write_stamp_in __attribute__((weak));
extern volatile uint64_t write_stamp_out __attribute__((weak));

enum {
	T_RECV,
	T_RECV_END,
	T_SEND,
	T_WRITE_IN,
	T_WRITE_OUT,
	T_HIT,
	T_SEEN,
	T_COUNT
};

static struct fi_context ctx[2]; /* [0] the send, [1] the receive */

static ssize_t post_send(struct ex_ctx *c, size_t len, void *arg)
{
	(void)arg;
	return fi_tsend(c->objs.ep, c->buf, len, ex_desc(c), c->peer, 1,
			&ctx[0]);
}

static ssize_t post_recv(struct ex_ctx *c, size_t len, void *arg)
{
	(void)arg;
	return fi_trecv(c->objs.ep, c->buf + c->buf_len / 2, len, ex_desc(c),
			c->peer, 1, 0, &ctx[1]);
}

/* Reads n completions; stamps the poll that returned the receive. */
static void wait_stamped(struct ex_ctx *c, int n, uint64_t *t)
{
	struct fi_cq_tagged_entry e[4];

	while (n > 0) {
		uint64_t start = lat_parts_ticks();
		ssize_t got = fi_cq_read(c->objs.cq, e, 4);

		if (got == -FI_EAGAIN)
			continue;
		if (got < 0) {
			fprintf(stderr, "lat_parts: fi_cq_read: %s\n",
				fi_strerror((int)-got));
			exit(1);
		}
		for (ssize_t i = 0; i < got; i++) {
			if (e[i].op_context == &ctx[1]) {
				t[T_HIT] = start;
				t[T_SEEN] = lat_parts_ticks();
			}
		}
		n -= (int)got;
	}
}

static int send_stamped(struct ex_ctx *c, size_t size, int *done, uint64_t *t)
{
	if (&write_stamp_armed)
		write_stamp_armed = 1;
	t[T_SEND] = lat_parts_ticks();
	if (ex_post(c, done, post_send, size, NULL))
		return -1;
	if (&write_stamp_armed && !write_stamp_armed) {
		t[T_WRITE_IN] = write_stamp_in;
		t[T_WRITE_OUT] = write_stamp_out;
	} else { /* no write: the call was all the send's own time */
		t[T_WRITE_IN] = t[T_WRITE_OUT] = lat_parts_ticks();
	}
	return 0;
}

static int round_trip(struct ex_ctx *c, size_t size, uint64_t *t)
{
	int done = 0;

	t[T_RECV] = lat_parts_ticks();
	if (ex_post(c, &done, post_recv, size, NULL))
		return -1;
	t[T_RECV_END] = lat_parts_ticks();
	if (!ex_is_server(c)) {
		if (send_stamped(c, size, &done, t))
			return -1;
		wait_stamped(c, 2 - done, t);
	} else {
		wait_stamped(c, 1 - done, t);
		done = 0;
		if (send_stamped(c, size, &done, t))
			return -1;
		wait_stamped(c, 1 - done, t);
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of from..to over the round trips, in microseconds; the
 * client's turn and rtt end in the next round trip (next = 1). */
static double median(uint64_t (*t)[T_COUNT], int n, int from, int to, int next,
		     double us_per_tick, double *tmp)
{
	int m = n - next;

	for (int i = 0; i < m; i++)
		tmp[i] = (double)(t[i + next][to] - t[i][from]) * us_per_tick;
	qsort(tmp, (size_t)m, sizeof(*tmp), cmp_double);
	return m > 0 ? tmp[m / 2] : 0;
}

int main(int argc, char **argv)
{
	struct ex_ctx c = {.sock = -1};
	uint64_t(*t)[T_COUNT], tick0, tick1;
	double us0, us1, us_per_tick, *tmp;
	int iters, warm, client;
	size_t size;

	ex_parse(argc, argv, &c.o,
		 "Where a tagged round trip's time goes, each side's steps.");
	if (ex_setup(&c))
		return 1;
	size = c.o.sizes[0];
	iters = c.o.iters > 1 ? c.o.iters : 2000;
	warm = iters / 10 + 1;
	client = !ex_is_server(&c);
	t = calloc((size_t)iters, sizeof(*t));
	tmp = calloc((size_t)iters, sizeof(*tmp));
	if (!t || !tmp)
		return 1;
	ex_sync(&c);
	for (int i = 0; i < warm; i++)
		if (round_trip(&c, size, t[0]))
			return 1;
	us0 = ex_now_us();
	tick0 = lat_parts_ticks();
	for (int i = 0; i < iters; i++)
		if (round_trip(&c, size, t[i]))
			return 1;
	tick1 = lat_parts_ticks();
	us1 = ex_now_us();
	us_per_tick = (us1 - us0) / (double)(tick1 - tick0);

	printf("parts %s %s %zu", client ? "client" : "server",
	       c.objs.info->fabric_attr->prov_name, size);
	if (client) {
		double med =
			median(t, iters, T_SEND, T_SEND, 1, us_per_tick, tmp);
		double sum = 0;
		int slow = 0;

		/* tmp holds the sorted round trips: their mean (what
		 * gdrfab_pingpong reports), the 90th percentile, and how many
		 * stalled (over 10x the median: rxe's deferred softirq). */
		for (int i = 0; i < iters - 1; i++) {
			sum += tmp[i];
			slow += tmp[i] > 10 * med;
		}
		printf(" rtt=%.2f mean=%.2f p90=%.2f stalls=%d", med,
		       sum / (iters - 1), tmp[(iters - 1) * 9 / 10], slow);
	}
	printf(" trecv=%.2f send=%.2f write=%.2f hit=%.2f turn=%.2f\n",
	       median(t, iters, T_RECV, T_RECV_END, 0, us_per_tick, tmp),
	       median(t, iters, T_SEND, T_WRITE_IN, 0, us_per_tick, tmp),
	       median(t, iters, T_WRITE_IN, T_WRITE_OUT, 0, us_per_tick, tmp),
	       median(t, iters, T_HIT, T_SEEN, 0, us_per_tick, tmp),
	       median(t, iters, T_SEEN, T_SEND, client, us_per_tick, tmp));
	fflush(stdout);
	free(t);
	free(tmp);
	ex_teardown(&c);
	return 0;
}
