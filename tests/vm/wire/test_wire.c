/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a misbehaving peer puts on the wire: headers with lengths that do
 * not match, unknown types and flags (a delivery ACK where no FIN can
 * answer it), impossible rendezvous segments, FINs
 * for messages never sent, malformed rail keys (striped RMA), malformed
 * rails resets (a rail taken back) and malformed connection messages. The
 * receiver must drop each (logging why) and keep working.
 *
 * This binary links gdrfab's code directly (not through libfabric's
 * loader) so that it can reach an established connection's queue pair and
 * post raw bytes on it.
 */
#include <criterion/criterion.h>
#include <string.h>

#include <rdma/fi_tagged.h>

#include "gdrfab_atomic.h"
#include "gdrfab_lock.h"
#include "wire_helpers.h"

TestSuite(wire, .init = wire_setup, .fini = wire_teardown, .timeout = 120);

static struct gdrfab_pkt_hdr good_header(size_t payload)
{
	struct gdrfab_pkt_hdr h = {.version = GDRFAB_WIRE_VERSION,
				   .type = GDRFAB_PKT_EAGER,
				   .size = payload};

	return h;
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

/* The delivery ACK flag (GDRFAB_PKT_DELIVERY_ACK) where no FIN can
 * answer it: with emulated-RMA flags (which have their own FIN), on a
 * FIN and on a NOP. Each is dropped, saying why. */
static void send_misplaced_delivery_acks(void)
{
	struct gdrfab_pkt_hdr h = good_header(0);

	h.flags = GDRFAB_PKT_DELIVERY_ACK | GDRFAB_PKT_EMU_WRITE;
	h.msg_id = 1;
	raw_send(&h, sizeof(h));
	h = good_header(0);
	h.type = GDRFAB_PKT_FIN;
	h.flags = GDRFAB_PKT_DELIVERY_ACK;
	raw_send(&h, sizeof(h));
	h.type = GDRFAB_PKT_NOP;
	raw_send(&h, sizeof(h));
	expect_only_good_message();
}

Test(wire, a_delivery_ack_on_a_message_that_is_not_plain_is_dropped)
{
	char *log = capture_stderr(send_misplaced_delivery_acks);

	cr_assert(strstr(log, "dropped: a delivery ACK on a message that is "
			      "not a plain one"),
		  "log: %s", log);
}

/* Rail keys (striped RMA, GDRFAB_PKT_RAIL_KEYS_*) from a peer: a request
 * carrying keys, flags or a tag, an answer whose length is not its count
 * of keys, or with more keys than a pair has rails beyond rail 0: each
 * dropped, saying why. A well-formed request for a key unknown here
 * (answered with no keys) and an answer nobody asked for (ignored)
 * change nothing. */
static void send_bad_rail_keys(void)
{
	uint8_t pkt[sizeof(struct gdrfab_pkt_hdr) + 4 * GDRFAB_CM_RAILS_MAX] = {
		0};
	struct gdrfab_pkt_hdr h = good_header(0);

	h.type = GDRFAB_PKT_RAIL_KEYS_REQ;
	h.seg_count = 1;
	memcpy(pkt, &h, sizeof(h));
	raw_send(pkt, sizeof(h) + 4);
	h.seg_count = 0;
	h.flags = GDRFAB_PKT_TAGGED;
	raw_send(&h, sizeof(h));
	h.flags = 0;
	h.tag = 5;
	raw_send(&h, sizeof(h));
	h = good_header(0);
	h.type = GDRFAB_PKT_RAIL_KEYS_REP;
	h.seg_count = 2;
	memcpy(pkt, &h, sizeof(h));
	raw_send(pkt, sizeof(h) + 4);
	h.seg_count = GDRFAB_CM_RAILS_MAX;
	memcpy(pkt, &h, sizeof(h));
	raw_send(pkt, sizeof(h) + 4 * GDRFAB_CM_RAILS_MAX);
	h.seg_count = 1;
	h.data = 12345;
	memcpy(pkt, &h, sizeof(h));
	raw_send(pkt, sizeof(h) + 4);
	h = good_header(0);
	h.type = GDRFAB_PKT_RAIL_KEYS_REQ;
	h.data = (2ULL << 32) | 7ULL << 34 | 1;
	raw_send(&h, sizeof(h));
	expect_only_good_message();
}

Test(wire, malformed_rail_keys_are_dropped)
{
	char *log = capture_stderr(send_bad_rail_keys);
	int lines = 0;

	for (char *p = log; (p = strstr(p, "dropped: bad rail keys message"));
	     p++)
		lines++;
	cr_assert_eq(lines, 5, "log: %s", log);
}

/* Rails taken back (GDRFAB_PKT_RAILS_RESET) from a peer: flags, an
 * unknown step, no rails after the header, a count of none or more
 * than a pair may have, rails whose length is not their count's, a QP
 * of 0: each dropped, saying why (nine lines in all, under the rate
 * limit). A well-formed offer to a connection without rails (a NIC
 * alone, as here) is ignored, said; nothing changes. */
static void send_bad_rails_reset(void)
{
	uint8_t pkt[sizeof(struct gdrfab_pkt_hdr) +
		    sizeof(struct gdrfab_cm_rails)] = {0};
	struct gdrfab_cm_rails *t =
		(void *)(pkt + sizeof(struct gdrfab_pkt_hdr));
	size_t one = offsetof(struct gdrfab_cm_rails, rail) +
		     sizeof(struct gdrfab_cm_rail);
	struct gdrfab_pkt_hdr h = good_header(0);

	h.type = GDRFAB_PKT_RAILS_RESET;
	h.data = GDRFAB_RAILS_OFFER;
	t->count = 1;
	t->rail[0].qpn = 0x123;
	t->rail[0].port_num = 1;
	t->rail[0].mtu = IBV_MTU_1024;
	h.flags = GDRFAB_PKT_TAGGED; /* bad rails reset */
	memcpy(pkt, &h, sizeof(h));
	raw_send(pkt, sizeof(h) + one);
	h.flags = 0;
	h.data = 3; /* bad rails reset */
	memcpy(pkt, &h, sizeof(h));
	raw_send(pkt, sizeof(h) + one);
	h.data = GDRFAB_RAILS_ACCEPT;
	memcpy(pkt, &h, sizeof(h));
	raw_send(pkt, sizeof(h));	    /* wrong length */
	raw_send(pkt, sizeof(h) + one + 4); /* wrong length */
	t->count = 0;			    /* bad rail count */
	raw_send(pkt, sizeof(h) + one);
	t->count = GDRFAB_CM_RAILS_MAX; /* bad rail count */
	raw_send(pkt, sizeof(pkt));
	t->count = 1;
	t->rail[0].qpn = 0; /* bad rail QP */
	raw_send(pkt, sizeof(h) + one);
	t->rail[0].qpn = 0x123;
	h.data = GDRFAB_RAILS_OFFER;
	memcpy(pkt, &h, sizeof(h));
	raw_send(pkt, sizeof(h) + one); /* no rails here: ignored */
	expect_only_good_message();
}

Test(wire, malformed_rails_reset_is_dropped)
{
	char *log = capture_stderr(send_bad_rails_reset);
	const char *why[] = {"bad rails reset", "wrong length",
			     "bad rail count", "bad rail QP"};
	const int want[] = {2, 2, 2, 1};

	for (size_t i = 0; i < sizeof(why) / sizeof(why[0]); i++) {
		char key[64];
		int lines = 0;

		snprintf(key, sizeof(key), "dropped: %s (type %d", why[i],
			 GDRFAB_PKT_RAILS_RESET);
		for (char *p = log; (p = strstr(p, key)); p++)
			lines++;
		cr_expect_eq(lines, want[i], "%s: log: %s", why[i], log);
	}
	cr_assert(strstr(log, "rails reset from "), "log: %s", log);
	cr_assert(strstr(log, "ignored: 1 rails, ours 0"), "log: %s", log);
}

/* RMA events (FI_RMA_EVENT) with no count, an unknown kind, flags or
 * bytes after them are dropped; a well-formed one to an endpoint that
 * counts no remote access changes nothing. */
Test(wire, malformed_rma_events_are_dropped)
{
	uint8_t pkt[128];
	struct gdrfab_pkt_hdr h = good_header(0);

	h.type = GDRFAB_PKT_RMA_EVENT;
	h.data = GDRFAB_RMA_EVENT_WRITE;
	raw_send(&h, sizeof(h)); /* size 0: no count */
	h.size = 1ULL << 40;
	raw_send(&h, sizeof(h));
	h.size = 1;
	h.data = 3;
	raw_send(&h, sizeof(h));
	h.data = GDRFAB_RMA_EVENT_READ;
	h.flags = GDRFAB_PKT_TAGGED;
	raw_send(&h, sizeof(h));
	h.flags = 0;
	memset(pkt, 0, sizeof(pkt));
	memcpy(pkt, &h, sizeof(h));
	raw_send(pkt, sizeof(h) + 8);
	raw_send(&h, sizeof(h)); /* well-formed, unasked */
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

/* b's end of the connection (the one a's raw bytes arrive on). */
static struct gdrfab_conn *b_conn(void)
{
	return gdrfab_list_entry(gep(&b)->proto->conns.next, struct gdrfab_conn,
				 entry);
}

/* b holds no last header, as on a connection whose first message is a
 * repeat (which of a's headers make it forget is the rule's unit test,
 * proto/the_header_memo_follows_one_rule). */
static void b_forgets_the_header(void)
{
	gdrfab_lock_acquire(gep(&b)->proto->env.lock);
	b_conn()->rx_memo.valid = false;
	gdrfab_lock_release(gep(&b)->proto->env.lock);
}

static void send_bad_repeats(void)
{
	b_forgets_the_header();
	raw_send_imm("evil", 4, GDRFAB_IMM_REPEAT);
	raw_send_imm("evil", 4, 0x12345678);
	/* Past the immediates gdrfab knows (GDRFAB_IMM_SEG is
	 * GDRFAB_IMM_REPEAT + 1, a continuation, which fails the connection
	 * when no segmented message is under way: seg/ in the unit tests). */
	raw_send_imm("", 0, GDRFAB_IMM_SEG + 1);
	expect_only_good_message();
}

/* A repeat with nothing to repeat, and immediates that are no repeat,
 * are dropped with their causes logged. */
Test(wire, repeats_without_a_header_and_unknown_immediates_are_dropped)
{
	char *log = capture_stderr(send_bad_repeats);

	cr_assert(strstr(log, "dropped: a repeated header with no header"),
		  "log: %s", log);
	cr_assert(strstr(log, "dropped: unknown immediate data"), "log: %s",
		  log);
}

/* A repeat takes the last full header's tag and its own length; one
 * longer than the eager limit is dropped. */
Test(wire, a_repeat_carries_the_last_full_header)
{
	uint8_t pkt[16384];
	struct gdrfab_pkt_hdr h = good_header(3);
	size_t eager_max = gep(&b)->proto->eager_max;
	char got[2][64];
	struct fi_cq_tagged_entry e;

	for (int i = 0; i < 2; i++)
		cr_assert_eq(fi_trecv(b.objs.ep, got[i], sizeof(got[i]), NULL,
				      FI_ADDR_UNSPEC, 0x77, 0, NULL),
			     0);
	h.flags = GDRFAB_PKT_TAGGED;
	h.tag = 0x77;
	memcpy(pkt, &h, sizeof(h));
	memcpy(pkt + sizeof(h), "one", 3);
	raw_send(pkt, sizeof(h) + 3);
	raw_send_imm("second", 6, GDRFAB_IMM_REPEAT);
	memset(pkt, 'x', sizeof(pkt));
	raw_send_imm(pkt, eager_max + 8, GDRFAB_IMM_REPEAT);
	cr_assert(poll_one(&b, &e, 20000));
	cr_assert_eq(e.tag, 0x77);
	cr_assert_eq(e.len, 3);
	cr_assert_eq(memcmp(got[0], "one", 3), 0);
	cr_assert(poll_one(&b, &e, 20000));
	cr_assert_eq(e.tag, 0x77);
	cr_assert_eq(e.len, 6);
	cr_assert_eq(memcmp(got[1], "second", 6), 0);
	cr_assert(e.flags & FI_TAGGED);
	/* The oversized repeat went nowhere; a's next message, after raw
	 * bytes it did not count, carries its header. */
	expect_only_good_message();
}

/* Over the API: a message whose tag and CQ data are the last one's goes
 * without its header, any other with it; each arrives as it was sent. */
Test(wire, messages_of_one_tag_go_as_repeats)
{
	static char big[4096], rbuf[7][4096];
	struct {
		uint64_t tag, data;
		size_t len;
		bool with_data;
	} m[7] = {
		{5, 0, 10, false}, {5, 0, 4096, false}, {6, 0, 0, false},
		{6, 0, 0, false},  {6, 99, 7, true},	{6, 99, 4096, true},
		{5, 0, 1, false},
	};
	struct fi_cq_tagged_entry e;

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7);
	for (int i = 0; i < 7; i++)
		cr_assert_eq(fi_trecv(b.objs.ep, rbuf[i], sizeof(rbuf[i]), NULL,
				      FI_ADDR_UNSPEC, 0, 0xff, NULL),
			     0);
	for (int i = 0; i < 7; i++) {
		ssize_t ret = m[i].with_data
				      ? fi_tsenddata(a.objs.ep, big, m[i].len,
						     NULL, m[i].data, a.peer,
						     m[i].tag, NULL)
				      : fi_tsend(a.objs.ep, big, m[i].len, NULL,
						 a.peer, m[i].tag, NULL);

		cr_assert_eq(ret, 0, "send %d: %zd", i, ret);
		cr_assert(poll_one(&a, &e, 20000));
		cr_assert(poll_one(&b, &e, 20000), "message %d", i);
		cr_assert_eq(e.tag, i == 1 ? 0x55 : m[i].tag,
			     "message %d: tag %#lx", i, (unsigned long)e.tag);
		cr_assert_eq(e.len, m[i].len, "message %d", i);
		cr_assert_eq(!!(e.flags & FI_REMOTE_CQ_DATA), m[i].with_data);
		if (m[i].with_data)
			cr_assert_eq(e.data, m[i].data);
		cr_assert_eq(memcmp(rbuf[i], big, m[i].len), 0, "message %d",
			     i);
		if (i == 0) {
			/* Whether the next went as a repeat: b's memo now
			 * says another tag, which only a repeat takes. */
			b_conn()->rx_memo.tag = 0x55;
		}
		if (i == 1) /* it was (the tag checked above) */
			b_conn()->rx_memo.tag = 5;
	}
	cr_assert(b_conn()->rx_memo.valid);
	cr_assert_eq(b_conn()->rx_memo.tag, 5);
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
	fi_getname(&b.objs.ep->fid, &good.dst, &len);
	bad = good;
	bad.version = GDRFAB_WIRE_VERSION + 1;
	gdrfab_conn_handle_cm(gep(&b)->proto, &bad, sizeof(bad));
	bad = good;
	bad.version = GDRFAB_WIRE_VERSION - 1; /* no delivery ACKs */
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

/* Atomic requests a hostile peer may send: each is refused with a log
 * line (and an answer a drops, having asked nothing), never applied out of
 * range; b's memory beyond its MR stays as it was. */
static uint64_t *atomic_mem;
static uint64_t atomic_key;

static size_t atomic_req(uint8_t *pkt, uint64_t addr, uint32_t count,
			 uint8_t op, uint8_t dt, size_t operand_bytes)
{
	struct gdrfab_pkt_hdr h = good_header(0);
	struct gdrfab_atomic_wire w = {.key = atomic_key,
				       .count = count,
				       .op = op,
				       .datatype = dt,
				       .kind = GDRFAB_ATOMIC_WRITE};

	h.type = GDRFAB_PKT_ATOMIC;
	h.tag = addr;
	h.msg_id = 4242;
	h.size = sizeof(w) + operand_bytes;
	memcpy(pkt, &h, sizeof(h));
	memcpy(pkt + sizeof(h), &w, sizeof(w));
	memset(pkt + sizeof(h) + sizeof(w), 1, operand_bytes);
	return sizeof(h) + sizeof(w) + operand_bytes;
}

static void send_bad_atomics(void)
{
	uint8_t pkt[1024];
	uintptr_t base = (uintptr_t)atomic_mem;
	struct gdrfab_atomic_wire *w =
		(void *)(pkt + sizeof(struct gdrfab_pkt_hdr));
	size_t n;

	/* A count far beyond the operands sent. */
	n = atomic_req(pkt, base, 100000000, FI_SUM, FI_UINT64, 8);
	raw_send(pkt, n);
	/* One element past the registration (8 elements). */
	raw_send(pkt, atomic_req(pkt, base + 64, 1, FI_SUM, FI_UINT64, 8));
	/* Two elements of which the second is past it. */
	raw_send(pkt, atomic_req(pkt, base + 56, 2, FI_SUM, FI_UINT64, 16));
	/* An address below it, wrapping around. */
	raw_send(pkt,
		 atomic_req(pkt, UINT64_MAX - 7, 2, FI_SUM, FI_UINT64, 16));
	/* Unknown op, datatype, kind; a misaligned target; a wrong key. */
	raw_send(pkt, atomic_req(pkt, base, 1, 99, FI_UINT64, 8));
	raw_send(pkt, atomic_req(pkt, base, 1, FI_SUM, 77, 8));
	n = atomic_req(pkt, base, 1, FI_SUM, FI_UINT64, 8);
	w->kind = 9;
	raw_send(pkt, n);
	raw_send(pkt, atomic_req(pkt, base + 3, 1, FI_SUM, FI_UINT64, 8));
	n = atomic_req(pkt, base, 1, FI_SUM, FI_UINT64, 8);
	w->key ^= 0x1234;
	raw_send(pkt, n);
	/* Shorter than its own header says, and shorter than a request. */
	n = atomic_req(pkt, base, 1, FI_SUM, FI_UINT64, 8);
	raw_send(pkt, n - 4);
	raw_send(pkt, sizeof(struct gdrfab_pkt_hdr) + 4);
	/* An answer to an atomic nobody asked for. */
	{
		struct gdrfab_pkt_hdr h = good_header(8);

		h.type = GDRFAB_PKT_ATOMIC_RESP;
		h.msg_id = 99999;
		memcpy(pkt, &h, sizeof(h));
		raw_send(pkt, sizeof(h) + 8);
	}
	expect_only_good_message();
}

Test(wire, malformed_atomic_requests_are_refused_and_logged)
{
	struct fid_mr *mr;
	char *log;
	uint8_t pkt[256];

	atomic_mem = calloc(16, sizeof(uint64_t));
	for (int i = 0; i < 16; i++)
		atomic_mem[i] = 1000 + (uint64_t)i;
	cr_assert_eq(fi_mr_reg(b.objs.domain, atomic_mem, 64,
			       FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
			       NULL),
		     0);
	atomic_key = fi_mr_key(mr);
	log = capture_stderr(send_bad_atomics);
	cr_assert(strstr(log, "range outside the registration"), "log: %s",
		  log);
	cr_assert(strstr(log, "not supported on this datatype"), "log: %s",
		  log);
	cr_assert(strstr(log, "not aligned"), "log: %s", log);
	cr_assert(strstr(log, "unknown or closed key"), "log: %s", log);
	cr_assert(strstr(log, "bad element count"), "log: %s", log);
	cr_assert(strstr(log, "answer for unknown atomic"), "log: %s", log);
	for (int i = 0; i < 16; i++)
		cr_assert_eq(atomic_mem[i], 1000 + (uint64_t)i,
			     "element %d changed", i);
	/* A good one is applied. */
	raw_send(pkt, atomic_req(pkt, (uintptr_t)&atomic_mem[7], 1, FI_SUM,
				 FI_UINT64, 8));
	expect_only_good_message();
	cr_assert_eq(atomic_mem[7], 1007 + 0x0101010101010101ULL);
	cr_assert_eq(fi_close(&mr->fid), 0);
	free(atomic_mem);
}
