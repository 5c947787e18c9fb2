/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Messages: the application's send and receive calls (gdrfab_msg.c), the
 * eager and rendezvous protocols and the receive side's matching,
 * unexpected messages and rendezvous READs (gdrfab_recv.c), and eager
 * sends posted at once without a request (gdrfab_send_inline.c).
 */
#ifndef GDRFAB_MSG_H
#define GDRFAB_MSG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>

#include "gdrfab_conn.h"
#include "gdrfab_req.h"
#include "gdrfab_wire.h"

/* An eager send posted at once, without a request (gdrfab_send_inline.c):
 * what its completion reports. */
struct gdrfab_itx {
	struct gdrfab_wr_ctx wr; /* GDRFAB_WR_ITX */
	bool silent;		 /* fi_inject*: the counter only */
	struct gdrfab_itx *next_free;
	struct gdrfab_conn *conn;   /* holds a reference while posted */
	struct gdrfab_txbuf *txbuf; /* the message, when not inline */
	void *context;
	uint64_t cq_flags, op_flags;
};

/* A message that arrived before its receive was posted. */
struct gdrfab_unexp {
	struct gdrfab_conn *conn;
	struct gdrfab_pkt_hdr hdr;
	struct gdrfab_rndv_seg seg[GDRFAB_MAX_IOV];
	/* An RNDV's keys on the sender's rails (GDRFAB_PKT_RAIL_KEYS):
	 * its segments' on every rail there may be (gdrfab_stripe.h). */
	uint32_t rail_keys[GDRFAB_MAX_IOV * (GDRFAB_CM_RAILS_MAX - 1)];
	uint8_t *payload; /* eager: a copy, or in held */
	/* No memory for a copy: the message keeps its receive buffer,
	 * reposted once the message is taken (FI_RM_ENABLED: nothing a
	 * peer sent is dropped; with the SRQ empty, senders retry). */
	struct gdrfab_rxbuf *held;
	bool claimed; /* FI_PEEK|FI_CLAIM: reserved for a context */
	struct gdrfab_list entry;
};

/* What the protocol needs from the object layer above it, registered by
 * the endpoint at gdrfab_proto_create: completions are reported, and the
 * AV and memory descriptors consulted, through these, never by calling
 * up. */

/* ---- matching and receive side (gdrfab_recv.c) ---- */
void gdrfab_recv_wc(struct gdrfab_proto *proto, struct gdrfab_rxbuf *rxbuf,
		    const struct ibv_wc *wc);
int gdrfab_recv_post(struct gdrfab_proto *proto, struct gdrfab_req *req,
		     uint64_t flags);
int gdrfab_recv_cancel(struct gdrfab_proto *proto, void *context);
/* fi_cancel of a send of this context that waits only for its delivery
 * ACK's FIN (gdrfab_msg.c): it ends with FI_ECANCELED. 0 or -FI_ENOENT. */
int gdrfab_send_cancel(struct gdrfab_proto *proto, void *context);
void gdrfab_recv_flush_all(struct gdrfab_proto *proto);

/* ---- the application's calls (gdrfab_msg.c, gdrfab_rma.c) ---- */
/* One iovec entry a data call may take: a buffer (or none, of zero
 * bytes) that does not wrap the address space, of at most room bytes
 * (what max_msg_size leaves after the entries before it). */
static inline bool gdrfab_iov_entry_ok(const struct iovec *v, size_t room)
{
	return (v->iov_base || !v->iov_len) &&
	       v->iov_len <= UINTPTR_MAX - (uintptr_t)v->iov_base &&
	       v->iov_len <= room;
}
/* gdrfab_check_iov for any count. */
int gdrfab_check_iovs(struct gdrfab_proto *proto, const struct iovec *iov,
		      size_t count, const char *call);
/* Checks common to every data call; 0 or the -FI_E* to return. The one
 * buffer of fi_send, fi_trecv and their kin is tested inline; anything
 * else, and every refusal, goes to gdrfab_check_iovs. */
static inline int gdrfab_check_iov(struct gdrfab_proto *proto,
				   const struct iovec *iov, size_t count,
				   const char *call)
{
	if (count == 1 && iov &&
	    gdrfab_iov_entry_ok(iov, proto->env.max_msg_size))
		return 0;
	return gdrfab_check_iovs(proto, iov, count, call);
}
/* The application's sends and receives (fi_ops_msg, fi_ops_tagged: the
 * object layer's wrappers pass the endpoint's protocol); silent: an
 * inject, no CQ entry. The return value of the API call. */
ssize_t gdrfab_proto_send(struct gdrfab_proto *proto, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t dest,
			  uint64_t tag, uint64_t data, uint64_t flags,
			  void *context, bool tagged, bool silent);
ssize_t gdrfab_proto_recv(struct gdrfab_proto *proto, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t src,
			  uint64_t tag, uint64_t ignore, uint64_t flags,
			  void *context, bool tagged);
/* The application's RMA (fi_ops_rma), op GDRFAB_OP_READ or _WRITE. */

struct gdrfab_inject_copy;
/* The start of a send or a write, once checked: GPU bytes that would be
 * copied with CUDA (copy_in) are copied now, before the endpoint's lock,
 * into copy->bounce (the call then goes as an inject, FI_INJECT in
 * *flags); then the lock is taken, the len bytes counted as copied or
 * not and *req made for the peer. On success the lock is held; on
 * failure it is not, and nothing is left to free. */
int gdrfab_tx_begin(struct gdrfab_proto *proto, bool copy_in,
		    const struct iovec **iov, void ***desc, size_t *count,
		    uint64_t *flags, struct gdrfab_inject_copy *copy,
		    size_t len, fi_addr_t peer, struct gdrfab_req **req);

/* Writes a rendezvous header (with a new cookie) into req->ctrl from
 * req->tag, data, len and rseg; the request then waits for a FIN. */
void gdrfab_rndv_header(struct gdrfab_proto *proto, struct gdrfab_req *req,
			uint16_t flags);
/* Builds a send request's message (inline, eager or rendezvous by size)
 * from req->tag and req->data; with GDRFAB_PKT_EMU_WRITE in flags, or
 * FI_DELIVERY_COMPLETE in req->op_flags (GDRFAB_PKT_DELIVERY_ACK), an
 * eager one also waits for the receiver's FIN. 0 or a negative FI_E*
 * code. */
int gdrfab_msg_prepare(struct gdrfab_proto *proto, struct gdrfab_req *req,
		       const struct iovec *iov, void **desc, size_t count,
		       uint16_t flags);

/* ---- eager sends posted at once (gdrfab_send_inline.c) ---- */
/* A send of one buffer, checked by the caller (gdrfab_proto_send). */
struct gdrfab_itx_args {
	const struct iovec *iov; /* one entry */
	void **desc;		 /* NULL, or its descriptor */
	fi_addr_t dest;
	uint64_t tag, data; /* data: 0 without FI_REMOTE_CQ_DATA */
	uint64_t flags;	    /* the application's */
	uint64_t cq_flags;  /* FI_SEND | FI_TAGGED or FI_MSG */
	uint16_t pkt_flags; /* GDRFAB_PKT_TAGGED, _CQ_DATA */
	void *context;
	bool silent;
};
/* The endpoint's slots (at fi_enable); 0 or -FI_ENOMEM. */
int gdrfab_itx_init(struct gdrfab_proto *proto, size_t count);
/* Posts the eager send at once when it may go so (takes the endpoint's
 * lock): true with *ret its result; false when it takes the request path
 * (nothing was done). */
bool gdrfab_itx_send(struct gdrfab_proto *proto,
		     const struct gdrfab_itx_args *a, ssize_t *ret);
/* Its work completion: the one end of a slot (report, connection). */
void gdrfab_itx_wc(struct gdrfab_proto *proto, struct gdrfab_itx *itx,
		   const struct ibv_wc *wc);

#endif /* GDRFAB_MSG_H */
