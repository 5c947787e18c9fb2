/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a misbehaving peer puts on the wire: headers with lengths that do
 * not match, unknown types and flags, impossible rendezvous segments, FINs
 * for messages never sent, and malformed connection messages. The
 * receiver must drop each (logging why) and keep working.
 *
 * This binary links gdrfab's code directly (not through libfabric's
 * loader) so that it can reach an established connection's queue pair and
 * post raw bytes on it.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include "gdrfab.h"
#include "gdrfab_info.h"
#include "gdrfab_objs.h"
#include "gdrfab_proto.h"
#include "gdrfab_ud.h"

struct wep {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t peer;
};

static struct wep a, b;

static void wep_open(struct wep *w, const char *dev)
{
	struct fi_info *hints = fi_allocinfo(), *all, *i;
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};

	hints->domain_attr->mr_mode = GDRFAB_MR_MODE;
	cr_assert_eq(
		gdrfab_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &all),
		0);
	for (i = all; i && strcmp(i->domain_attr->name, dev); i = i->next)
		;
	cr_assert_not_null(i);
	w->info = fi_dupinfo(i);
	fi_freeinfo(all);
	fi_freeinfo(hints);
	cr_assert_eq(gdrfab_fabric_open(w->info->fabric_attr, &w->fabric, NULL),
		     0);
	cr_assert_eq(fi_domain(w->fabric, w->info, &w->domain, NULL), 0);
	cr_assert_eq(fi_av_open(w->domain, &av_attr, &w->av, NULL), 0);
	cr_assert_eq(fi_cq_open(w->domain, &cq_attr, &w->cq, NULL), 0);
	cr_assert_eq(fi_endpoint(w->domain, w->info, &w->ep, NULL), 0);
	cr_assert_eq(fi_ep_bind(w->ep, &w->av->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(w->ep, &w->cq->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(fi_enable(w->ep), 0);
}

static void wep_close(struct wep *w)
{
	fi_close(&w->ep->fid);
	fi_close(&w->cq->fid);
	fi_close(&w->av->fid);
	fi_close(&w->domain->fid);
	fi_close(&w->fabric->fid);
	fi_freeinfo(w->info);
}

static struct gdrfab_ep *gep(struct wep *w)
{
	return gdrfab_container_of(w->ep, struct gdrfab_ep, fid);
}

/* Reads one entry from w's CQ, progressing both; 1, 0 on timeout. */
static int poll_one(struct wep *w, struct fi_cq_tagged_entry *e, int ms)
{
	for (int i = 0; i < ms * 10; i++) {
		if (fi_cq_read(w->cq, e, 1) == 1)
			return 1;
		fi_cq_read(a.cq, NULL, 0);
		fi_cq_read(b.cq, NULL, 0);
		usleep(100);
	}
	return 0;
}

static void setup(void)
{
	size_t len = FI_GDRFAB_ADDR_LEN;
	uint8_t na[32], nb[32];
	char msg[8] = "hello", got[8];
	struct fi_cq_tagged_entry e;

	struct fi_info *none = NULL;

	if (access("/sys/class/infiniband/rxe0", F_OK))
		cr_skip_test("no rxe0/rxe1: run inside tests/vm/vm-run");
	/* Initialise libfabric's logging, at warning level, for the log
	 * checks below. */
	setenv("FI_LOG_LEVEL", "warn", 1);
	fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &none);
	fi_freeinfo(none);
	wep_open(&a, "rxe0");
	wep_open(&b, "rxe1");
	fi_getname(&a.ep->fid, na, &len);
	fi_getname(&b.ep->fid, nb, &len);
	fi_av_insert(a.av, nb, 1, &a.peer, 0, NULL);
	fi_av_insert(b.av, na, 1, &b.peer, 0, NULL);
	/* Establish the connection with one good message. */
	cr_assert_eq(fi_recv(b.ep, got, 8, NULL, FI_ADDR_UNSPEC, NULL), 0);
	cr_assert_eq(fi_send(a.ep, msg, 6, NULL, a.peer, NULL), 0);
	cr_assert(poll_one(&b, &e, 20000));
	cr_assert(poll_one(&a, &e, 20000));
}

static void teardown(void)
{
	wep_close(&b);
	wep_close(&a);
}

TestSuite(wire, .init = setup, .fini = teardown, .timeout = 120);

/* Posts raw bytes on a's connection to b. */
static void raw_send(const void *bytes, size_t len)
{
	struct gdrfab_proto *proto = gep(&a)->proto;
	struct gdrfab_conn *conn =
		gdrfab_list_entry(proto->conns.next, struct gdrfab_conn, entry);
	static uint8_t buf[4096];
	struct ibv_mr *mr;
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = (uint32_t)len};
	struct ibv_send_wr wr = {.sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED};
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	cr_assert_eq(conn->state, GDRFAB_CONN_CONNECTED);
	memcpy(buf, bytes, len);
	mr = ibv_reg_mr(proto->pd, buf, sizeof(buf), 0);
	cr_assert_not_null(mr);
	sge.lkey = mr->lkey;
	/* Sent outside gdrfab's accounting: wait for it here. */
	cr_assert_eq(ibv_post_send(conn->qp, &wr, &bad), 0);
	conn->sq_avail--;
	while (ibv_poll_cq(proto->cq, 1, &wc) == 0)
		fi_cq_read(b.cq, NULL, 0);
	conn->sq_avail++;
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	ibv_dereg_mr(mr);
}

static struct gdrfab_pkt_hdr good_header(size_t payload)
{
	struct gdrfab_pkt_hdr h = {.version = GDRFAB_WIRE_VERSION,
				   .type = GDRFAB_PKT_EAGER,
				   .size = payload};

	return h;
}

/* After the bad messages, b must deliver exactly the good one. */
static void expect_only_good_message(void)
{
	char got[64], msg[8] = "after";
	struct fi_cq_tagged_entry e;

	cr_assert_eq(fi_recv(b.ep, got, sizeof(got), NULL, FI_ADDR_UNSPEC, got),
		     0);
	cr_assert_eq(fi_send(a.ep, msg, 6, NULL, a.peer, NULL), 0);
	cr_assert(poll_one(&b, &e, 20000), "b stopped receiving");
	cr_assert_eq(e.len, 6, "a malformed message was delivered (%zu bytes)",
		     e.len);
	cr_assert_str_eq(got, "after");
	cr_assert(poll_one(&a, &e, 20000));
	cr_assert_eq(poll_one(&b, &e, 100), 0, "more was delivered");
}

Test(wire, eager_lengths_that_do_not_match_are_dropped)
{
	uint8_t pkt[256];
	struct gdrfab_pkt_hdr h = good_header(1000); /* only 100 follow */

	memcpy(pkt, &h, sizeof(h));
	raw_send(pkt, sizeof(h) + 100);
	h = good_header(0);
	raw_send(&h, sizeof(h) - 1); /* shorter than a header */
	raw_send(pkt, 3);
	expect_only_good_message();
}

/* Runs fn with stderr going to a file; returns what was written. */
static char *capture_stderr(void (*fn)(void))
{
	static char text[8192];
	FILE *f = tmpfile();
	int saved = dup(2);
	size_t n;

	fflush(stderr);
	dup2(fileno(f), 2);
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

static void send_unknown_type(void)
{
	struct gdrfab_pkt_hdr h = good_header(0);

	h.type = 77;
	raw_send(&h, sizeof(h));
	expect_only_good_message();
}

Test(wire, a_dropped_message_is_logged_with_its_cause)
{
	char *log = capture_stderr(send_unknown_type);

	cr_assert(strstr(log, "dropped: unknown message type"), "log: %s", log);
	cr_assert(strstr(log, "gdrfab://"), "the log names the peer: %s", log);
}

static void send_a_flood(void)
{
	struct gdrfab_pkt_hdr h = good_header(0);

	h.type = 77;
	for (int i = 0; i < 300; i++)
		raw_send(&h, sizeof(h));
	expect_only_good_message();
}

/* A flood of bad packets is no flood of log lines: a burst a second,
 * then a count of what was left out. */
Test(wire, a_flood_of_bad_messages_logs_a_few_lines)
{
	char *log = capture_stderr(send_a_flood);
	int lines = 0;

	for (char *p = log; (p = strstr(p, "dropped: unknown")); p++)
		lines++;
	cr_assert_geq(lines, 1, "log: %s", log);
	cr_assert_leq(lines, 3 * GDRFAB_RATELIMIT_BURST,
		      "%d lines for 300 bad messages", lines);
}

Test(wire, unknown_types_versions_and_flags_are_dropped)
{
	struct gdrfab_pkt_hdr h = good_header(0);

	h.type = 77;
	raw_send(&h, sizeof(h));
	h = good_header(0);
	h.version = 9;
	raw_send(&h, sizeof(h));
	h = good_header(0);
	h.flags = 0x8000;
	raw_send(&h, sizeof(h));
	expect_only_good_message();
}

Test(wire, impossible_rendezvous_segments_are_dropped)
{
	uint8_t pkt[512];
	struct gdrfab_pkt_hdr h = good_header(0);
	struct gdrfab_rndv_seg seg[8];

	memset(seg, 0, sizeof(seg));
	h.type = GDRFAB_PKT_RNDV;
	/* 99 segments announced, 1 sent. */
	h.seg_count = 99;
	h.size = 10;
	seg[0].len = 10;
	memcpy(pkt, &h, sizeof(h));
	memcpy(pkt + sizeof(h), seg, sizeof(seg[0]));
	raw_send(pkt, sizeof(h) + sizeof(seg[0]));
	/* Segments that do not add up to the size. */
	h.seg_count = 2;
	h.size = 1000;
	seg[0].len = 10;
	seg[1].len = 10;
	memcpy(pkt, &h, sizeof(h));
	memcpy(pkt + sizeof(h), seg, 2 * sizeof(seg[0]));
	raw_send(pkt, sizeof(h) + 2 * sizeof(seg[0]));
	/* A segment that wraps around the address space. */
	h.seg_count = 1;
	h.size = 4096;
	seg[0].addr = UINT64_MAX - 100;
	seg[0].len = 4096;
	memcpy(pkt, &h, sizeof(h));
	memcpy(pkt + sizeof(h), seg, sizeof(seg[0]));
	raw_send(pkt, sizeof(h) + sizeof(seg[0]));
	expect_only_good_message();
}

Test(wire, fin_for_a_message_never_sent_is_ignored)
{
	struct gdrfab_pkt_hdr h = good_header(0);

	h.type = GDRFAB_PKT_FIN;
	h.msg_id = 123456;
	raw_send(&h, sizeof(h));
	h.size = 5; /* and a malformed one */
	raw_send(&h, sizeof(h));
	expect_only_good_message();
}

Test(wire, malformed_connection_messages_are_dropped)
{
	struct gdrfab_proto *proto = gep(&a)->proto;
	struct gdrfab_cm_msg good, bad;
	size_t len = sizeof(good.dst);

	/* Straight into b's handler, as the UD receive path calls it. */
	memset(&good, 0, sizeof(good));
	good.version = GDRFAB_WIRE_VERSION;
	good.type = GDRFAB_CM_REQ;
	good.mtu = IBV_MTU_1024;
	good.qpn = 1234;
	good.src = gep(&a)->name;
	fi_getname(&b.ep->fid, &good.dst, &len);
	bad = good;
	bad.version = 3;
	gdrfab_conn_handle_cm(gep(&b)->proto, &bad, sizeof(bad));
	bad = good;
	bad.type = 9;
	gdrfab_conn_handle_cm(gep(&b)->proto, &bad, sizeof(bad));
	bad = good;
	bad.mtu = 99;
	gdrfab_conn_handle_cm(gep(&b)->proto, &bad, sizeof(bad));
	bad = good;
	bad.qpn = 1u << 25;
	gdrfab_conn_handle_cm(gep(&b)->proto, &bad, sizeof(bad));
	bad = good;
	bad.src.version = 0;
	gdrfab_conn_handle_cm(gep(&b)->proto, &bad, sizeof(bad));
	gdrfab_conn_handle_cm(gep(&b)->proto, &good, sizeof(good) - 1);
	/* Addressed to another endpoint (an earlier one with b's QP). */
	bad = good;
	bad.dst.ep_id_be ^= 1;
	gdrfab_conn_handle_cm(gep(&b)->proto, &bad, sizeof(bad));
	(void)proto;
	/* None of them disturbed the existing connection. */
	expect_only_good_message();
}

Test(wire, bad_emulated_rma_headers_are_dropped_or_refused)
{
	uint8_t pkt[256];
	struct gdrfab_pkt_hdr h = good_header(0);
	struct gdrfab_rndv_seg seg = {.len = 0};

	/* Flags that cannot go together, or on that type. */
	h.flags = GDRFAB_PKT_EMU_WRITE | GDRFAB_PKT_TAGGED;
	raw_send(&h, sizeof(h));
	h.flags = GDRFAB_PKT_EMU_WRITE | GDRFAB_PKT_EMU_READ;
	raw_send(&h, sizeof(h));
	h.flags = GDRFAB_PKT_EMU_READ; /* a read is a rendezvous header */
	raw_send(&h, sizeof(h));
	/* Well formed, but no such key here: refused with a FIN (that a,
	 * which never sent it, ignores), never delivered as a message. */
	h = good_header(4);
	h.flags = GDRFAB_PKT_EMU_WRITE;
	h.data = 0x1234ULL << 32;
	h.msg_id = 777;
	memcpy(pkt, &h, sizeof(h));
	memcpy(pkt + sizeof(h), "evil", 4);
	raw_send(pkt, sizeof(h) + 4);
	h = good_header(0);
	h.type = GDRFAB_PKT_RNDV;
	h.flags = GDRFAB_PKT_EMU_READ;
	h.seg_count = 1;
	h.msg_id = 778;
	memcpy(pkt, &h, sizeof(h));
	memcpy(pkt + sizeof(h), &seg, sizeof(seg));
	raw_send(pkt, sizeof(h) + sizeof(seg));
	/* A FIN whose status is no FI_E* code. */
	h = good_header(0);
	h.type = GDRFAB_PKT_FIN;
	h.data = 99999;
	raw_send(&h, sizeof(h));
	expect_only_good_message();
}
