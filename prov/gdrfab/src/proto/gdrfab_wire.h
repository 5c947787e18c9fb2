/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gdrfab's wire format: the messages two endpoints exchange, on their RC
 * queue pairs (data and control) and on their UD queue pairs (connection
 * setup). Shared by the protocol and by the tests that speak it.
 *
 * Wire formats are little-endian (the byte order of every platform gdrfab
 * builds for) and are validated field by field on arrival: a peer is never
 * trusted with a length, a count or a cookie.
 */
#ifndef GDRFAB_WIRE_H
#define GDRFAB_WIRE_H

#include <stdint.h>

#include "gdrfab_addr.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "the wire format is little-endian");

/* Carried by every connection and data-path message; a peer of another
 * version is refused at connection time. 3: the ATOMIC and ATOMIC_RESP
 * messages (a version-2 peer would drop them as unknown types and the
 * initiator's atomics would never complete). 4: the repeated header
 * (GDRFAB_IMM_REPEAT, which a version-3 peer would not know). 5: the
 * delivery ACK (GDRFAB_PKT_DELIVERY_ACK: a version-4 receiver would drop
 * the flag as unknown, and the sender would wait for a FIN for ever).
 * Segmented eager messages (GDRFAB_PKT_SEG) need none: a peer announces
 * them in the connection messages (GDRFAB_CM_SEG_MASK), and one that
 * does not is never sent one. */
#define GDRFAB_WIRE_VERSION 5

/* ---- messages on RC queue pairs ---- */
enum gdrfab_pkt_type {
	GDRFAB_PKT_EAGER = 1,  /* header + payload */
	GDRFAB_PKT_RNDV = 2,   /* header + segments the receiver reads */
	GDRFAB_PKT_FIN = 3,    /* receiver -> sender: the data is in place */
	GDRFAB_PKT_NOP = 4,    /* keepalive: proves the peer still acks */
	GDRFAB_PKT_ATOMIC = 5, /* an atomic for the target to apply */
	GDRFAB_PKT_ATOMIC_RESP = 6, /* its status and fetched values */
	/* Initiator -> target, after RMA completed: "you were the target
	 * of size writes (data 1) or reads (data 2)", for the target's
	 * remote access counters (FI_RMA_EVENT). Sent only to peers that
	 * asked (GDRFAB_CM_F_RMA_EVENTS). */
	GDRFAB_PKT_RMA_EVENT = 7,
	/* The first packet of a segmented eager message (issue 34): the
	 * header, size the whole message's length (more than eager_max, at
	 * most the pair's seg_max), then its first bytes (at least one, at
	 * most eager_max); the rest follows in continuations (SENDs with
	 * immediate data GDRFAB_IMM_SEG) right after it on this queue pair,
	 * nothing else in between. Flags as an EAGER message's (never
	 * GDRFAB_PKT_EMU or GDRFAB_PKT_RAIL_KEYS). Sent only to a peer that
	 * announced a segment limit (GDRFAB_CM_SEG_MASK), so no version
	 * change: a peer of an earlier build announces none. */
	GDRFAB_PKT_SEG = 8,
	/* Striped RMA (issue 31, gdrfab_stripe.h): "which are your rkeys
	 * on rails 1 and on of the MR whose key is data?" (a
	 * GDRFAB_RAIL_KEY key; header alone, flags, seg_count and size 0),
	 * answered by a RAIL_KEYS_REP whose data is that key and whose
	 * seg_count rkeys (uint32_t, rail 1 first) follow the header: one
	 * per rail of the pair beyond rail 0, or none when the target has
	 * no such MR or will not have its RMA striped. Sent only to a peer
	 * whose rails are up, so no version change (a peer of the first
	 * rails build drops the request as unknown: the initiator then
	 * stays on rail 0). */
	GDRFAB_PKT_RAIL_KEYS_REQ = 9,
	GDRFAB_PKT_RAIL_KEYS_REP = 10,
	/* Taking lost rails back (issue 31, gdrfab_rail_back.h): the
	 * sender's rail QPs, reset, in a struct gdrfab_cm_rails after the
	 * header (its count rails, as in a REP); data GDRFAB_RAILS_OFFER
	 * ("mine are reset: reset and connect yours to them") or
	 * GDRFAB_RAILS_ACCEPT ("done, here are mine"), answered by the
	 * offerer's GDRFAB_PKT_NOP GDRFAB_NOP_RAILS_UP once it connected
	 * too. Flags, seg_count, tag, msg_id and size 0. Sent only to a peer
	 * that agreed on rails, so no version change (a peer of a build
	 * before it drops it as unknown: the pair keeps rail 0 alone, the
	 * offer sent again at most every 30 s). An unanswered OFFER goes
	 * again unchanged: its PSNs, not a sequence number, tell a copy. */
	GDRFAB_PKT_RAILS_RESET = 11,
};
#define GDRFAB_RAILS_OFFER  1
#define GDRFAB_RAILS_ACCEPT 2

#define GDRFAB_RMA_EVENT_WRITE 1
#define GDRFAB_RMA_EVENT_READ  2

#define GDRFAB_PKT_TAGGED  0x1 /* tagged message (fi_tsend) */
#define GDRFAB_PKT_CQ_DATA 0x2 /* data carries remote CQ data */
/* RMA into or out of the target's staged GPU memory, which its NIC cannot
 * reach (keys with GDRFAB_EMU_KEY): tag is the target address, data the
 * key's low 32 bits << 32 | the CQ data, msg_id the initiator's cookie,
 * answered by a FIN whose data is 0 or the FI_E* error. EMU_WRITE rides on
 * EAGER (payload) or RNDV (the target reads it); EMU_READ on RNDV, whose
 * segments say where the target writes the data. */
#define GDRFAB_PKT_EMU_WRITE 0x4
#define GDRFAB_PKT_EMU_READ  0x8
#define GDRFAB_PKT_EMU	     (GDRFAB_PKT_EMU_WRITE | GDRFAB_PKT_EMU_READ)
/* A message whose sender waits for its delivery (a send with
 * FI_DELIVERY_COMPLETE). On an EAGER one msg_id is the sender's cookie,
 * and the receiver answers with a FIN of that msg_id once the bytes are
 * in the matched receive's buffer (after any copy into GPU memory ended;
 * an unexpected message only once a receive took it): what a
 * rendezvous's FIN says, for one round trip of a small message instead
 * of the RNDV, READ and FIN. On an RNDV one it only changes what its FIN
 * carries. Either FIN's data is 0, or FI_ETRUNC when the buffer was too
 * small, or the FI_E* that failed the delivery (without the flag a
 * rendezvous's FIN carries 0). Never with GDRFAB_PKT_EMU (an emulated
 * write has its own FIN). */
#define GDRFAB_PKT_DELIVERY_ACK 0x10
/* An RNDV to a peer whose rails are up (GDRFAB_CM_F_RAILS, issue 31):
 * after its seg_count segments come seg_count * n rkeys (uint32_t), n the
 * rails beyond rail 0 (1 to GDRFAB_CM_RAILS_MAX - 1, told by the length):
 * segment s's rkey on rail r is at s * n + r - 1. The receiver may read
 * each of its pieces through the rail it goes on. Sent only to a peer
 * that agreed on rails, never with GDRFAB_PKT_EMU. */
#define GDRFAB_PKT_RAIL_KEYS 0x20

struct gdrfab_pkt_hdr {
	uint8_t version;
	uint8_t type;
	uint16_t flags;
	uint32_t seg_count; /* RNDV: segments that follow the header */
	uint64_t tag;
	uint64_t data;
	uint64_t size;	 /* message length */
	uint64_t msg_id; /* RNDV, FIN, DELIVERY_ACK: the sender's cookie */
};

/*
 * A repeated header. An EAGER message whose header, but for its size,
 * is the one the last full EAGER header on this queue pair carried goes
 * without it: a SEND with immediate data GDRFAB_IMM_REPEAT whose bytes
 * are the payload alone (its size is the receive's byte count). A stream
 * of messages with one tag then puts 40 bytes less on the wire per
 * message, and a payload of the path MTU (4 KiB) fits one packet instead
 * of two. Both ends keep what "the last full header" is by one rule
 * (gdrfab_memo_note): a plain EAGER header becomes it, one with
 * emulated-RMA flags forgets it, one with a delivery ACK (which carries a
 * msg_id, so it never goes as a repeat) and other messages leave it; RC
 * delivers a queue pair's messages in order, so the receiver applies the
 * rule to the same headers in the same order as the sender did. A repeat
 * with nothing to repeat, or any other immediate on a SEND, is dropped.
 */
#define GDRFAB_IMM_REPEAT 0x47440001u /* "GD", 1 */

/*
 * A continuation of a segmented eager message (GDRFAB_PKT_SEG): a SEND
 * with this immediate data whose bytes are the message's next bytes
 * alone (1 to eager_max of them), no header. RC delivers a queue pair's
 * messages in order and the sender posts a message's packets one after
 * the other with nothing between them, so the receiver appends each to
 * the one message it reassembles for that connection, at the offset the
 * bytes before it reached. A continuation without a message in
 * reassembly, or past its announced size, and any other message while
 * one is in reassembly, fail the connection.
 */
#define GDRFAB_IMM_SEG 0x47440002u /* "GD", 2 */

struct gdrfab_rndv_seg {
	uint64_t addr;
	uint64_t len;
	uint32_t rkey;
	uint32_t reserved;
};

/* iovecs one data call takes (fi_info's iov_limit), and so segments one
 * RNDV header carries. */
#define GDRFAB_IOV_LIMIT 4

/* An ATOMIC message: the header (tag: the target address, data: remote
 * CQ data, size: the bytes after the header, msg_id: the initiator's
 * cookie), then this, then the operands and the compare values (count
 * elements each, as gdrfab_atomic_operands says). Its ATOMIC_RESP carries
 * the status (0 or FI_E*) in data and the fetched values (size bytes). */
struct gdrfab_atomic_wire {
	uint64_t key;
	uint32_t count;
	uint8_t op;	  /* enum fi_op */
	uint8_t datatype; /* enum fi_datatype */
	uint8_t kind;	  /* enum gdrfab_atomic_kind */
	uint8_t reserved;
};

/* ---- connection setup on UD queue pairs ---- */
enum gdrfab_cm_type {
	GDRFAB_CM_REQ = 1, /* "connect your RC QP to mine" */
	GDRFAB_CM_REP = 2, /* "done; connect yours to mine" */
	GDRFAB_CM_RTU = 3, /* "connected: you may send" */
	GDRFAB_CM_REJ = 4, /* "your settings differ from mine": qpn echoes
			    * the refused REQ's, reject says which */
	/* "my endpoint is closing: release our connection" (qpn: the
	 * sender's QP of it). A peer of wire 4 without it drops it as an
	 * unknown type and finds the connection dead when it next uses
	 * it, or by its idle probe (FI_GDRFAB_IDLE_TIMEOUT_MS). */
	GDRFAB_CM_BYE = 5,
};

/* The sender counts RMA aimed at it (FI_RMA_EVENT): send it
 * GDRFAB_PKT_RMA_EVENT after each RMA to it. */
#define GDRFAB_CM_F_RMA_EVENTS 0x1
/* 0x2, 0x4: GDRFAB_CM_F_NIC_ATOMIC_* (gdrfab_atomic.h). */
/* Rails (issue 31), negotiated without a version change, so that a
 * single-rail peer of any build sees the messages it always saw. A REQ
 * from an endpoint of several rails sets the flag and says how many in
 * `rails` (a field earlier builds leave 0 and never read); a peer of
 * several rails answers with the flag on its REP followed by a struct
 * gdrfab_cm_rails trailer (its rails 1 and on, min(both) - 1 of them),
 * and the requester's RTU carries its own trailer. A peer of one rail,
 * or of a build before rails, answers a plain REP: the pair then uses
 * rail 0 alone. The acceptor connects its rails on the RTU and then
 * says so on rail 0 (GDRFAB_PKT_NOP, msg_id GDRFAB_NOP_RAILS_UP): the
 * requester posts on its rails only from then on, never into a QP the
 * acceptor has not connected yet. */
#define GDRFAB_CM_F_RAILS   0x8
#define GDRFAB_CM_RAILS_MAX 8 /* rails of a pair, rail 0 included */
#define GDRFAB_NOP_RAILS_UP 1

/* Segmented eager (issue 34), negotiated without a version change: the
 * high byte of cm_flags (bits earlier builds leave 0 and never read) is
 * the largest segmented eager message the sender takes, in units of
 * GDRFAB_SEG_UNIT (FI_GDRFAB_SEG_MAX / 4096; 0: none). Each side of a
 * pair sends GDRFAB_PKT_SEG messages only up to the smaller of the two
 * values, and only when it exceeds eager_max; so mixed settings
 * interoperate, and a peer of an earlier build is never sent one. */
#define GDRFAB_CM_SEG_SHIFT 8
#define GDRFAB_CM_SEG_MASK  0xff00

/* Settings both sides of a connection must share (REJ's reject). */
enum gdrfab_cm_reject {
	GDRFAB_REJECT_EAGER_MAX = 1, /* FI_GDRFAB_EAGER_MAX */
};

struct gdrfab_cm_msg {
	uint8_t version;
	uint8_t type;
	uint8_t mtu;	   /* enum ibv_mtu of the sender's port */
	uint8_t rd_atomic; /* READs the sender's QP answers at once */
	uint32_t qpn;	   /* the sender's RC QP for this pair */
	uint32_t psn;
	uint32_t eager_max; /* eager payload the sender's buffers hold */
	/* The sender endpoint's secret: a request may replace a live
	 * connection only with the nonce that connection was made with. */
	uint64_t nonce;
	uint16_t reject; /* REJ: enum gdrfab_cm_reject */
	/* The UDP port the sender's endpoint answers name queries on, at
	 * the IPv4 address of its GID (0: none): a receiver that holds that
	 * IP:port in its AV knows its name without asking. */
	uint16_t ns_port;
	uint16_t cm_flags; /* GDRFAB_CM_F_* of the sender */
	/* REQ with GDRFAB_CM_F_RAILS: the sender's rails (2 to
	 * GDRFAB_CM_RAILS_MAX); else 0 (earlier builds: reserved). */
	uint16_t rails;
	struct gdrfab_addr src; /* the sender's endpoint name */
	struct gdrfab_addr dst; /* the endpoint it means to reach */
};

/* One rail beyond rail 0 of a REP's or RTU's sender: its RC QP for the
 * pair and the port it is on. */
struct gdrfab_cm_rail {
	uint32_t qpn;
	uint32_t psn;
	uint8_t gid[16];
	uint16_t lid_be;
	uint8_t port_num;
	uint8_t mtu; /* enum ibv_mtu of the rail's port */
};

/* After a REP's or RTU's struct gdrfab_cm_msg when it has
 * GDRFAB_CM_F_RAILS: count rails, 4 + count * sizeof(rail[0]) bytes on
 * the wire. */
struct gdrfab_cm_rails {
	uint8_t count; /* rails beyond rail 0: 1 to GDRFAB_CM_RAILS_MAX - 1 */
	uint8_t reserved[3];
	struct gdrfab_cm_rail rail[GDRFAB_CM_RAILS_MAX - 1];
};

#endif /* GDRFAB_WIRE_H */
