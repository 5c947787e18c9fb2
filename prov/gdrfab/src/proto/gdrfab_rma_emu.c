/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RMA to and from staged GPU memory: the target's NIC cannot reach it, so
 * its MR's key (GDRFAB_EMU_KEY) names a slot in the target domain's table
 * and the two data paths do the access between them, over the same RC
 * connection and the same eager and rendezvous machinery as messages:
 *
 *   fi_write: an EMU_WRITE message (eager, or rendezvous that the target
 *   reads into its staging buffer) lands in the target's GPU memory;
 *   fi_read: an EMU_READ rendezvous header names a host buffer of the
 *   initiator, which the target RDMA-WRITEs from its staging buffer.
 *
 * Either way the target checks the key, its access and the range, and
 * answers with a FIN carrying 0 or the error, so a refused access ends in
 * an error completion at the initiator as a NIC's would, and a completed
 * fi_write means the data is in GPU memory. The target's application sees
 * nothing but an fi_writedata's CQ data. Progress is manual at both ends,
 * as for messages. The initiator's side is gdrfab_emu_prepare
 * (gdrfab_rma.c); this file is the target's.
 */
#include <string.h>

#include <rdma/fi_rma.h>

#include "gdrfab.h"
#include "gdrfab_conn.h"
#include "gdrfab_gpu.h"
#include "gdrfab_hmem.h"
#include "gdrfab_proto.h"
#include "gdrfab_req.h"
#include "gdrfab_rma.h"

static struct gdrfab_req *target_req(struct gdrfab_proto *proto)
{
	struct gdrfab_req *req = gdrfab_req_alloc(proto, false);

	/* The initiator already holds its request: do not fail it for
	 * want of ours while the control reserve lasts. */
	return req ? req : gdrfab_req_alloc(proto, true);
}

static void refuse(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
		   const struct gdrfab_pkt_hdr *h, const char *why, int err)
{
	char peer[128];

	gdrfab_addr_to_str(&conn->peer, peer, sizeof(peer));
	GDRFAB_WARN(
		FI_LOG_EP_DATA,
		"emulated RMA %s of %llu bytes at 0x%llx (key 0x%llx) from %s refused: %s\n",
		(h->flags & GDRFAB_PKT_EMU_WRITE) ? "write" : "read",
		(unsigned long long)h->size, (unsigned long long)h->tag,
		(unsigned long long)(GDRFAB_EMU_KEY | h->data >> 32), peer,
		why);
	gdrfab_send_ctrl(proto, conn, GDRFAB_PKT_FIN, h->msg_id, (uint64_t)err);
}

struct gdrfab_req *gdrfab_emu_target_start(struct gdrfab_proto *proto,
					   struct gdrfab_conn *conn,
					   const struct gdrfab_pkt_hdr *h)
{
	bool write = h->flags & GDRFAB_PKT_EMU_WRITE;
	const char *why;
	struct gdrfab_mr_desc *mr = proto->ops->emu_mr_find(
		proto->env.domain, (uint32_t)(h->data >> 32), h->tag, h->size,
		write ? FI_REMOTE_WRITE : FI_REMOTE_READ, &why);
	struct gdrfab_req *req;
	struct iovec iov = {.iov_base = (void *)(uintptr_t)h->tag,
			    .iov_len = h->size};
	void *desc = mr;
	int ret;

	if (!mr) {
		refuse(proto, conn, h, why, FI_EACCES);
		return NULL;
	}
	req = target_req(proto);
	if (!req) {
		refuse(proto, conn, h, "no request left", FI_ENOMEM);
		return NULL;
	}
	gdrfab_emu_target_mark(req);
	req->msg_id = h->msg_id;
	if (write) {
		/* A receive that matched already: deliver() fills it. */
		req->op = GDRFAB_OP_RECV;
		req->iov[0] = iov;
		req->desc[0] = mr;
		req->iov_count = 1;
		req->len = h->size;
		return req;
	}
	/* A read: copy out of GPU memory, RDMA WRITE it to the initiator's
	 * segments; the FIN goes when the WRITE completes (gdrfab_post.c). */
	req->op = GDRFAB_OP_WRITE;
	req->conn = conn;
	conn->refs++;
	ret = gdrfab_stage_setup(proto, req, &iov, &desc, 1, 0, true);
	if (ret || !h->size) {
		gdrfab_emu_target_done(proto, conn, h->msg_id, false, 0, 0,
				       ret ? -ret : 0);
		gdrfab_req_free(proto, req);
		return NULL;
	}
	memcpy(req->rseg, h + 1, h->seg_count * sizeof(req->rseg[0]));
	req->rseg_count = h->seg_count;
	gdrfab_req_submit(req);
	return NULL;
}

/* The target's side of an emulated RMA ends in a FIN to the initiator; the
 * target's application hears nothing of it. */
static int emu_target_step(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	gdrfab_emu_target_done(proto, req->conn, req->msg_id, false, 0, 0,
			       req->error ? FI_EIO : 0);
	return 0;
}

void gdrfab_emu_target_mark(struct gdrfab_req *req)
{
	req->emu_target = true;
	gdrfab_req_add_step(req, GDRFAB_STEP_EMU_TARGET, emu_target_step);
}

void gdrfab_emu_target_done(struct gdrfab_proto *proto,
			    struct gdrfab_conn *conn, uint64_t msg_id,
			    bool cq_data, uint64_t data, size_t len, int err)
{
	if (err)
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "emulated RMA into staged GPU memory failed: %s\n",
			    fi_strerror(err));
	gdrfab_send_ctrl(proto, conn, GDRFAB_PKT_FIN, msg_id, (uint64_t)err);
	if (!err && cq_data)
		gdrfab_report_remote_data(
			proto, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
			len, (uint32_t)data, conn);
}
