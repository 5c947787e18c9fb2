/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RMA: the application's fi_read and fi_write (gdrfab_rma.c: native, or
 * emulated to staged GPU memory at the target), the target's side of the
 * emulated ones (gdrfab_rma_emu.c), and the RMA events a peer may count.
 */
#ifndef GDRFAB_RMA_H
#define GDRFAB_RMA_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>

#include "gdrfab_req.h"

struct gdrfab_conn;
struct gdrfab_pkt_hdr;

ssize_t gdrfab_proto_rma(struct gdrfab_proto *proto, enum gdrfab_op op,
			 const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t peer_addr, uint64_t raddr, uint64_t key,
			 uint64_t data, uint64_t flags, void *context,
			 bool silent);
/* A last step (GDRFAB_STEP_RMA_EVENT) of an RMA or atomic: the RMA event
 * a peer that counts them (FI_RMA_EVENT) is owed, sent before the
 * request's own completion (-FI_EINPROGRESS until its send ends). In
 * gdrfab_post.c, beside gdrfab_send_rma_events, for RMA and atomics. */
int gdrfab_rma_event_step(struct gdrfab_proto *proto, struct gdrfab_req *req);

/* ---- RMA to staged GPU memory ---- */
/* Initiator (gdrfab_rma.c): turns an RMA request whose key has
 * GDRFAB_EMU_KEY (set up by gdrfab_proto_rma: op, flags, data) into an
 * emulated one. 0 or -FI_E*. The target's side is gdrfab_rma_emu.c. */
int gdrfab_emu_prepare(struct gdrfab_proto *proto, struct gdrfab_req *req,
		       const struct iovec *iov, void **desc, size_t count,
		       uint64_t raddr, uint64_t key);
/* Target: an EMU_WRITE or EMU_READ arrived. Returns the receive an
 * EMU_WRITE's data lands in (for the caller to deliver), or NULL when
 * the request was refused or handled here. */
struct gdrfab_req *gdrfab_emu_target_start(struct gdrfab_proto *proto,
					   struct gdrfab_conn *conn,
					   const struct gdrfab_pkt_hdr *h);
/* Target: the access is done (err 0) or failed (FI_E*): FIN to the
 * initiator, and an fi_writedata's CQ data to the target's CQ. */
/* Target: makes req the target's side of an emulated RMA, whose last
 * step (GDRFAB_STEP_EMU_TARGET) is the FIN to the initiator. */
void gdrfab_emu_target_mark(struct gdrfab_req *req);
void gdrfab_emu_target_done(struct gdrfab_proto *proto,
			    struct gdrfab_conn *conn, uint64_t msg_id,
			    bool cq_data, uint64_t data, size_t len, int err);

#endif /* GDRFAB_RMA_H */
