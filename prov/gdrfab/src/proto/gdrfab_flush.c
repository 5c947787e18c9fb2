/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The flush step of a request: data the NIC wrote into GPU memory (a
 * rendezvous READ, an fi_read, a peer's fi_writedata) is visible to the
 * GPU before the completion that reports it (GPUDirect RDMA guide,
 * "Synchronization and Memory Ordering"; hmem/gdrfab_hmem_flush.c picks
 * the method). The READ method is asynchronous: its 1-byte READ is posted
 * on the endpoint's flush QP (the loopback engine, hmem/gdrfab_stage.h,
 * made at fi_enable), the caller returns, and progress calls the request's own
 * finishing function again when the READ's work completion arrives; that
 * call finds the flush done and goes on. Nothing waits, under a lock or
 * not. The CUDA method, cuFlushGPUDirectRDMAWrites, is synchronous by its
 * API; it runs without gdrfab's CUDA locks (hmem/gdrfab_cuda_copy.c).
 */
#include <arpa/inet.h>

#include "gdrfab.h"
#include "gdrfab_gpu.h"
#include "gdrfab_hmem.h"
#include "gdrfab_proto.h"
#include "gdrfab_req.h"
#include "gdrfab_stage.h"

int gdrfab_flush_start(struct gdrfab_proto *proto, struct gdrfab_req *req,
		       int device, uint64_t addr, uint32_t rkey)
{
	int ret;

	switch (gdrfab_hmem_flush_method(device,
					 proto->env.cuda_api_permitted)) {
	case GDRFAB_FLUSH_CUDA: return gdrfab_cuda_flush(device);
	case GDRFAB_FLUSH_READ: break;
	default: return 0;
	}
	if (!rkey) {
		GDRFAB_WARN(
			FI_LOG_EP_DATA,
			"GPU memory at %#llx has no key to read it back with: its writes cannot be flushed\n",
			(unsigned long long)addr);
		return -FI_EIO;
	}
	/* Off every list (a connection failing meanwhile must not finish
	 * it a second time): the flush queue may hold it. */
	gdrfab_list_remove(&req->entry);
	ret = gdrfab_loop_engine_flush(proto->loop, &req->loop_job, addr, rkey);
	if (ret)
		return ret;
	req->flush_state = GDRFAB_FLUSH_STEP_POSTED;
	return -FI_EINPROGRESS;
}

int gdrfab_flush_step(struct gdrfab_proto *proto, struct gdrfab_req *req,
		      const struct iovec *iov, void **desc, size_t count,
		      size_t len)
{
	struct gdrfab_mr_desc *mr;
	int last = -1;

	if (req->flush_state == GDRFAB_FLUSH_STEP_DONE)
		return req->flush_err ? -req->flush_err : 0;
	if (req->flush_state == GDRFAB_FLUSH_STEP_POSTED)
		return -FI_EINPROGRESS;
	/* The last GPU buffer the data reached: reading its last byte
	 * orders every write before it. */
	for (size_t i = 0, off = 0; desc && i < count && off < len; i++) {
		if (gdrfab_mr_device(desc[i]) >= 0 && iov[i].iov_len)
			last = (int)i;
		off += iov[i].iov_len;
	}
	if (last < 0)
		return 0;
	mr = desc[last];
	return gdrfab_flush_start(proto, req, mr->mem.device,
				  (uintptr_t)iov[last].iov_base +
					  iov[last].iov_len - 1,
				  mr->rndv_mr ? mr->rndv_mr->rkey : 0);
}

int gdrfab_flush_read_step(struct gdrfab_proto *proto, struct gdrfab_req *req)
{
	/* fi_read into GPU memory: the data must be there, and visible,
	 * before the completion says so. Its READ posted: back here from
	 * progress. */
	if (!gdrfab_req_reads_local(req) || req->staged || req->error ||
	    proto->closing || req->emu_target)
		return 0;
	return gdrfab_flush_step(proto, req, req->iov, req->desc,
				 req->iov_count, req->len);
}

void gdrfab_flush_done(struct gdrfab_proto *proto, struct gdrfab_req *req,
		       int err, int prov_errno)
{
	req->flush_state = GDRFAB_FLUSH_STEP_DONE;
	req->flush_err = err;
	/* The same finishing function the request came from: it finds
	 * the flush done and goes on to its completion. */
	if (req->op != GDRFAB_OP_GPU_RX && req->op != GDRFAB_OP_RNDV_READ &&
	    err && !req->error) {
		req->error = err;
		req->prov_errno = prov_errno;
	}
	gdrfab_req_resume(proto, req, err, prov_errno);
}
