/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An atomic's fetched values into its result buffers, as one of the
 * request's last steps (gdrfab_finish.c). The values wait in the
 * request's own memory: a NIC atomic's in its control area, where the NIC
 * wrote them; a message-borne atomic's in its bounce buffer, copied there
 * from the ATOMIC_RESP (the peer's answer proves the NIC is done reading
 * the request out of it, and the receive buffer goes back to the SRQ at
 * once). Host result buffers are written at once. GPU ones go through a
 * staging buffer drained by the pipeline's asynchronous copies, whose
 * events progress polls (gdrfab_stage_pipe.c): the request is parked, and
 * its finishing comes back here when they end. Nothing waits for a copy.
 * Without CUDA permitted there is no way into GPU memory here: the
 * pipeline refuses it (logged) and the atomic ends in an error.
 */
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_proto.h"

/* Where the fetched values wait, or NULL. */
static const uint8_t *held(const struct gdrfab_req *req)
{
	if (req->op == GDRFAB_OP_NIC_ATOMIC)
		return req->ctrl;
	return req->txbuf ? req->txbuf->data : NULL;
}

int gdrfab_atomic_result_keep(struct gdrfab_proto *proto,
			      struct gdrfab_req *req, const void *src,
			      size_t len)
{
	if (!len)
		return 0;
	if (!req->txbuf || len > proto->txbuf_size) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "no room for an atomic's %zu fetched bytes\n", len);
		return -FI_EIO;
	}
	memcpy(req->txbuf->data, src, len);
	return 0;
}

int gdrfab_atomic_result_step(struct gdrfab_proto *proto,
			      struct gdrfab_req *req)
{
	size_t len;
	const uint8_t *src;
	int ret;

	if (req->staged) {
		/* Back from the copies (or their first pass). */
		if (!gdrfab_stage_drain(proto, req, req->stage_len))
			return -FI_EINPROGRESS;
		return req->stage_err ? -req->stage_err : 0;
	}
	len = gdrfab_iov_len(req->iov, req->iov_count);
	src = held(req);
	if (!len)
		return 0;
	if (!src)
		return -FI_EIO;
	/* No GPU memory, CUDA asked once per entry: the copy trusts it. */
	if (!gdrfab_iov_gpu(proto, req->iov, req->desc, req->iov_count))
		return gdrfab_scatter_host(proto, req->iov, req->desc,
					   req->iov_count, 0, src, len, true);
	/* The staging buffer takes the place of the request's iovec (the
	 * result buffers move to gpu_iov): nothing reads them after. */
	ret = gdrfab_stage_setup(proto, req, req->iov, req->desc,
				 req->iov_count, 0, false);
	if (ret)
		return ret;
	memcpy(req->stage, src, len);
	if (!gdrfab_stage_drain(proto, req, len))
		return -FI_EINPROGRESS;
	return req->stage_err ? -req->stage_err : 0;
}
