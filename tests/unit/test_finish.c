/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The one place a request ends (gdrfab_finish.c), without hardware: a
 * protocol with only a request slab and a recording report callback.
 * Requests here have no connection, no buffers and no staging, so that
 * what is checked is the queue itself: ended once, reported in order,
 * freed only by the drain.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_proto.h"
#include "gdrfab_req.h"

#define SLAB	    (GDRFAB_CTRL_RESERVE + 8)
#define MAX_REPORTS 16

static struct gdrfab_report reports[MAX_REPORTS];
static int nreports;

static void record(struct gdrfab_ep *ep, const struct gdrfab_report *r)
{
	(void)ep;
	cr_assert_lt(nreports, MAX_REPORTS);
	reports[nreports++] = *r;
}

static const struct gdrfab_proto_ops ops = {.report = record};

static struct gdrfab_proto *proto;

static void setup(void)
{
	proto = calloc(1, sizeof(*proto));
	cr_assert(proto);
	proto->ops = &ops;
	proto->reqs = calloc(SLAB, sizeof(*proto->reqs));
	cr_assert(proto->reqs);
	proto->req_cnt = SLAB;
	gdrfab_list_init(&proto->free_reqs);
	gdrfab_list_init(&proto->live);
	gdrfab_list_init(&proto->finished);
	for (size_t i = 0; i < SLAB; i++) {
		gdrfab_list_init(&proto->reqs[i].live);
		gdrfab_list_init(&proto->reqs[i].finish_entry);
		gdrfab_list_push_tail(&proto->free_reqs, &proto->reqs[i].entry);
	}
	proto->req_free_cnt = SLAB;
	nreports = 0;
}

static void teardown(void)
{
	free(proto->reqs);
	free(proto);
}

/* A send of the application's, as gdrfab_msg.c fills one. */
static struct gdrfab_req *a_send(void *context)
{
	struct gdrfab_req *req = gdrfab_req_alloc(proto, false);

	cr_assert(req);
	req->op = GDRFAB_OP_SEND;
	req->context = context;
	req->cq_flags = FI_SEND | FI_MSG;
	req->fully_posted = true;
	return req;
}

TestSuite(finish, .init = setup, .fini = teardown);

Test(finish, ending_reports_and_frees_only_at_the_drain)
{
	struct gdrfab_req *req = a_send((void *)0x1);

	gdrfab_req_finish(proto, req);
	cr_assert_eq(nreports, 0, "ending only queues");
	cr_assert_eq(proto->req_free_cnt, SLAB - 1, "not freed yet");
	gdrfab_req_drain(proto);
	cr_assert_eq(nreports, 1);
	cr_assert_eq(reports[0].kind, GDRFAB_REPORT_TX);
	cr_assert_eq(reports[0].context, (void *)0x1);
	cr_assert_eq(reports[0].flags, FI_SEND | FI_MSG);
	cr_assert_eq(proto->req_free_cnt, SLAB);
	cr_assert(gdrfab_list_empty(&proto->live));
}

/* The shape behind 7ddc0b9: a failed connection and the flushed work
 * request both end the same request. */
Test(finish, a_request_ended_twice_is_reported_and_freed_once)
{
	struct gdrfab_req *req = a_send((void *)0x2);

	gdrfab_req_fail(proto, req, FI_EHOSTUNREACH, 7);
	gdrfab_req_fail(proto, req, FI_ECANCELED, 5);
	gdrfab_req_finish(proto, req);
	gdrfab_req_drain(proto);
	cr_assert_eq(nreports, 1);
	cr_assert_eq(reports[0].kind, GDRFAB_REPORT_ERROR);
	cr_assert_not(reports[0].rx);
	cr_assert_eq(reports[0].err, FI_EHOSTUNREACH, "the first error sticks");
	cr_assert_eq(reports[0].prov_errno, 7);
	cr_assert_eq(proto->req_free_cnt, SLAB, "freed once, not twice");
	/* Nothing is left for a later drain. */
	gdrfab_req_drain(proto);
	cr_assert_eq(nreports, 1);
	cr_assert_eq(proto->req_free_cnt, SLAB);
}

Test(finish, a_request_with_work_outstanding_ends_at_its_completion)
{
	struct gdrfab_req *req = a_send((void *)0x3);

	req->wr_pending = 1;
	gdrfab_req_fail(proto, req, FI_EIO, 0);
	gdrfab_req_drain(proto);
	cr_assert_eq(nreports, 0, "its work request still counts");
	req->wr_pending = 0;
	gdrfab_req_finish(proto, req);
	gdrfab_req_drain(proto);
	cr_assert_eq(nreports, 1);
	cr_assert_eq(reports[0].err, FI_EIO);
}

Test(finish, reports_come_in_the_order_requests_ended)
{
	struct gdrfab_req *r[4];

	for (int i = 0; i < 4; i++)
		r[i] = a_send((void *)(uintptr_t)(0x10 + i));
	gdrfab_req_finish(proto, r[2]);
	gdrfab_req_finish(proto, r[0]);
	gdrfab_req_finish(proto, r[3]);
	gdrfab_req_finish(proto, r[1]);
	gdrfab_req_drain(proto);
	cr_assert_eq(nreports, 4);
	cr_assert_eq(reports[0].context, (void *)0x12);
	cr_assert_eq(reports[1].context, (void *)0x10);
	cr_assert_eq(reports[2].context, (void *)0x13);
	cr_assert_eq(reports[3].context, (void *)0x11);
}

Test(finish, a_multi_receive_reports_at_once_and_ends_with_its_last)
{
	struct gdrfab_req *recv = gdrfab_req_alloc(proto, false);

	recv->op = GDRFAB_OP_RECV;
	recv->context = (void *)0x20;
	gdrfab_req_report_rx(proto, recv, false, FI_RECV | FI_MSG, 10, NULL, 0,
			     0, FI_ADDR_NOTAVAIL);
	cr_assert_eq(nreports, 1, "a buffer that stays posted reports now");
	gdrfab_req_report_rx(proto, recv, true,
			     FI_RECV | FI_MSG | FI_MULTI_RECV, 20, NULL, 0, 0,
			     FI_ADDR_NOTAVAIL);
	cr_assert_eq(nreports, 1, "its last report waits for the drain");
	gdrfab_req_drain(proto);
	cr_assert_eq(nreports, 2);
	cr_assert_eq(reports[1].kind, GDRFAB_REPORT_RX);
	cr_assert_eq(reports[1].len, 20);
	cr_assert(reports[1].flags & FI_MULTI_RECV);
	cr_assert_eq(proto->req_free_cnt, SLAB);
}

Test(finish, a_rendezvous_read_frees_the_receive_it_filled)
{
	struct gdrfab_req *recv = gdrfab_req_alloc(proto, false);
	struct gdrfab_req *rd = gdrfab_req_alloc(proto, true);

	recv->op = GDRFAB_OP_RECV;
	rd->op = GDRFAB_OP_RNDV_READ;
	rd->parent = recv;
	rd->context = (void *)0x30;
	gdrfab_req_report_rx(proto, rd, true, FI_RECV | FI_TAGGED, 100, NULL, 0,
			     9, FI_ADDR_NOTAVAIL);
	gdrfab_req_drain(proto);
	cr_assert_eq(nreports, 1, "one report, for the receive's context");
	cr_assert_eq(reports[0].context, (void *)0x30);
	cr_assert_eq(reports[0].tag, 9);
	cr_assert_eq(proto->req_free_cnt, SLAB, "both freed");
}

/* An RMA whose event goes to the peer first completes when the event's
 * control request ends. */
Test(finish, an_rma_completes_after_its_event_is_sent)
{
	struct gdrfab_req *rma = a_send((void *)0x40);
	struct gdrfab_req *ev = gdrfab_req_alloc(proto, true);

	rma->op = GDRFAB_OP_WRITE;
	rma->cq_flags = FI_RMA | FI_WRITE;
	rma->event_sent = true; /* parked by send_event_first */
	ev->op = GDRFAB_OP_CTRL;
	ev->parent = rma;
	gdrfab_req_finish(proto, ev);
	gdrfab_req_drain(proto);
	cr_assert_eq(nreports, 1, "no report for the control message");
	cr_assert_eq(reports[0].kind, GDRFAB_REPORT_TX);
	cr_assert_eq(reports[0].context, (void *)0x40);
	cr_assert_eq(proto->req_free_cnt, SLAB);
}

Test(finish, nothing_is_reported_while_the_endpoint_closes)
{
	struct gdrfab_req *req = a_send((void *)0x50);

	proto->closing = true;
	gdrfab_req_finish(proto, req);
	gdrfab_req_drain(proto);
	cr_assert_eq(nreports, 0);
	cr_assert_eq(proto->req_free_cnt, SLAB, "but it is freed");
}
