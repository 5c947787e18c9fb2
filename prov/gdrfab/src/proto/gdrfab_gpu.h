/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * GPU memory in the protocol: GPU buffers (gdrfab_stage.c), a request's
 * staging through host buffers (gdrfab_req_stage.c, over the pipeline of
 * hmem/gdrfab_stage.h), the flush step (gdrfab_flush.c), eager data
 * moved into GPU memory asynchronously (gdrfab_gpu_rx.c) and the steps
 * that do it without CUDA over hmem's loopback engine (gdrfab_req_loop.c).
 * These
 * end their asynchronous steps with gdrfab_req_resume and name nothing
 * above them.
 */
#ifndef GDRFAB_GPU_H
#define GDRFAB_GPU_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <infiniband/verbs.h>

#include "gdrfab_cuda.h"
#include "gdrfab_mr_desc.h"
#include "gdrfab_req.h"
#include "gdrfab_stage.h"

struct gdrfab_conn;
struct gdrfab_rxbuf;

/* ---- GPU buffers (gdrfab_stage.c) ---- */
/* The GPU device of a buffer (its descriptor, or CUDA's answer for one
 * given without), or -1 for host memory. */
int gdrfab_buf_device(struct gdrfab_proto *proto, const void *buf, void *desc);
/* Whether any non-empty entry is GPU memory (gdrfab_buf_device). */
bool gdrfab_iov_gpu(struct gdrfab_proto *proto, const struct iovec *iov,
		    void **desc, size_t count);
/* Copies n bytes into the iovec from offset off, each piece's descriptor
 * checked; host memory only: GPU memory is written by asynchronous steps,
 * and a piece of it found here is refused (-FI_EOPNOTSUPP, logged).
 * nodesc_host: the caller has just found every non-empty entry given
 * without a descriptor to be host memory (gdrfab_gpu_rx_wanted or
 * gdrfab_iov_gpu answered false for this iovec), so CUDA is not asked
 * about them again; false: each such piece is classified here. Pieces
 * with a descriptor are checked from it either way. 0 or -FI_E*. */
int gdrfab_scatter_host(struct gdrfab_proto *proto, const struct iovec *iov,
			void **desc, size_t count, size_t off,
			const uint8_t *src, size_t n, bool nodesc_host);
/* An inject's GPU bytes, copied into host memory before the endpoint's
 * lock is taken. The copy is synchronous because the API is (fi_inject*
 * returns with the buffer reusable), so it must not hold up progress on
 * other threads: the caller holds no lock. When there was GPU memory,
 * *iov, *desc and *count are replaced by one host buffer, c->host in
 * c->bounce, which the caller gives back with gdrfab_copy_in_done after
 * the post; without GPU memory nothing changes. 0, or -FI_E*. */
/* Whether a send (or an emulated write) of len bytes from these buffers
 * would be copied into a bounce buffer by the CPU or CUDA: an inject, or
 * an eager message the NIC does not gather. Such bytes are copied with
 * gdrfab_copy_in_unlocked before the endpoint's lock. */
bool gdrfab_send_copies(struct gdrfab_proto *proto, void **desc, size_t count,
			size_t len, uint64_t flags);
struct gdrfab_inject_copy {
	struct iovec host;
	uint8_t *bounce;
	bool spare; /* bounce is the endpoint's spare (copy_spare) */
};
int gdrfab_copy_in_unlocked(struct gdrfab_proto *proto,
			    const struct iovec **iov, void ***desc,
			    size_t *count, struct gdrfab_inject_copy *c);
/* Gives c's bounce buffer back (none: nothing); c->bounce is NULL after.
 * Any thread, with or without the endpoint's lock. */
void gdrfab_copy_in_done(struct gdrfab_proto *proto,
			 struct gdrfab_inject_copy *c);
bool gdrfab_iov_has_gpu(struct gdrfab_proto *proto, void **desc, size_t count);
/* Whether any of the buffers must go through host memory. */
bool gdrfab_iov_stages(struct gdrfab_proto *proto, void **desc, size_t count);
/* Points the request's local side at a registered host buffer of the
 * iovec's length, filled from it when fill; access adds remote reading
 * for rendezvous sources. */
int gdrfab_stage_setup(struct gdrfab_proto *proto, struct gdrfab_req *req,
		       const struct iovec *iov, void **desc, size_t count,
		       int access, bool fill);
/* Starts copying the first len staged bytes into the application's
 * buffers: true when they are there already (or the copy failed: see
 * req->stage.err); false while copies run, after which progress goes on
 * with the request (gdrfab_req_resume), with its stage job DRAINED. */
bool gdrfab_stage_drain(struct gdrfab_proto *proto, struct gdrfab_req *req,
			size_t len);
/* A last step (GDRFAB_STEP_STAGE_OUT): an fi_read into staged GPU memory
 * copied out of its staging buffer (-FI_EINPROGRESS until the copies
 * end); 0 for any other request. */
int gdrfab_stage_out_step(struct gdrfab_proto *proto, struct gdrfab_req *req);
/* A staged RDMA READ's work request ended: its bytes start copying into
 * the GPU. */
void gdrfab_stage_landed(struct gdrfab_proto *proto, struct gdrfab_req *req);
/* Whether a request must wait for its staging copies before posting
 * (more of) its data. */
static inline bool gdrfab_stage_blocks(const struct gdrfab_req *req)
{
	return gdrfab_stage_job_filling(&req->stage);
}
/* Completes staging copies (never waiting): from progress. */
void gdrfab_stage_progress(struct gdrfab_proto *proto);
void gdrfab_stage_free(struct gdrfab_proto *proto, struct gdrfab_req *req);

/* ---- the flush step (gdrfab_flush.c) ----
 * Data the NIC wrote into GPU memory is made visible to the GPU before the
 * completion that reports it: by cuFlushGPUDirectRDMAWrites (synchronous
 * by its API, no lock held), or by an RDMA READ of the last byte posted
 * on the endpoint's flush QP, whose work completion progress turns into
 * gdrfab_flush_done, which goes on with the request through its resume
 * function (gdrfab_req_resume: the GPU step's, the rendezvous READ's, or
 * its finishing). */
enum {
	GDRFAB_FLUSH_STEP_IDLE,
	GDRFAB_FLUSH_STEP_POSTED,
	GDRFAB_FLUSH_STEP_DONE,
};
/* Flushes the first len bytes the NIC wrote into these buffers of req: 0
 * (visible: host memory, no flush needed, or done), -FI_EINPROGRESS (a
 * READ is posted: the caller returns and is called again when it ended,
 * with its result answered here then), or -FI_E* (logged). */
int gdrfab_flush_step(struct gdrfab_proto *proto, struct gdrfab_req *req,
		      const struct iovec *iov, void **desc, size_t count,
		      size_t len);
/* A last step (GDRFAB_STEP_FLUSH): the flush of an fi_read into GPU
 * memory that was not staged, as gdrfab_flush_step; 0 for any other
 * request. */
int gdrfab_flush_read_step(struct gdrfab_proto *proto, struct gdrfab_req *req);
/* Starts the flush of device memory at addr (rkey from the domain's PD)
 * for req: 0, -FI_EINPROGRESS or -FI_E*, as gdrfab_flush_step. */
int gdrfab_flush_start(struct gdrfab_proto *proto, struct gdrfab_req *req,
		       int device, uint64_t addr, uint32_t rkey);
/* A flush READ ended (err FI_E* or 0): on with the request. */
void gdrfab_flush_done(struct gdrfab_proto *proto, struct gdrfab_req *req,
		       int err, int prov_errno);

/* ---- eager data into GPU memory, asynchronously (gdrfab_gpu_rx.c) ----
 * An eager message's bytes sit in host memory (a receive bounce buffer, or
 * an unexpected message's copy) and belong in a receive's GPU buffers. A
 * step (a request of op GDRFAB_OP_GPU_RX) moves them and completes the
 * receive when its own completion arrives in progress; nothing waits.
 * With CUDA permitted, the staging pipeline's asynchronous copies (their
 * events polled by progress; gdrfab.ko's CPU mapping for small ones);
 * without (FI_OPT_CUDA_API_PERMITTED=false), an RDMA WRITE over the
 * endpoint's loopback QP (gdrfab_req_loop.c). */
struct gdrfab_gpu_rx_args {
	struct gdrfab_req *recv;
	struct gdrfab_conn *conn;
	struct gdrfab_rxbuf *rxbuf; /* the source's bounce buffer, or NULL */
	const uint8_t *src;
	uint8_t **own; /* an unexpected copy the loopback may take over */
	size_t off, got, size;
	uint64_t cq_flags, tag, data;
	/* An emulated write's, or a delivery ACK's, for its FIN. */
	uint64_t msg_id;
	bool ack;  /* GDRFAB_PKT_DELIVERY_ACK: FIN the sender once done */
	bool done; /* the receive leaves its posted list */
};
/* Whether the receive's buffers take this path on this endpoint: a CUDA
 * descriptor, or with CUDA permitted a buffer CUDA calls device memory;
 * without CUDA, a descriptor the loopback QP can write. CUDA is asked at
 * most once per entry given without a descriptor; false also says that
 * every such non-empty entry is host memory, which the host copy then
 * takes as given (gdrfab_scatter_host's nodesc_host). */
bool gdrfab_gpu_rx_wanted(struct gdrfab_proto *proto, const struct iovec *iov,
			  void **desc, size_t count);
/* Starts the step; it completes the receive (cq_flags, tag, data, size;
 * truncated when got < size) and frees it when done, once the bytes are
 * in GPU memory, and then sends a delivery ACK's FIN (ack). 0, or -FI_E*
 * when nothing was started. */
int gdrfab_gpu_rx_start(struct gdrfab_proto *proto,
			const struct gdrfab_gpu_rx_args *a);
/* A peer's fi_writedata landed (wc): its completion is reported once
 * what it wrote into GPU memory is visible, now or from progress (a
 * GPU_RX step carries it while the flush READ runs). */
void gdrfab_flush_writedata(struct gdrfab_proto *proto,
			    struct gdrfab_conn *conn, const struct ibv_wc *wc);

/* The endpoint's loopback engine (hmem/gdrfab_stage.h) and its steps
 * (gdrfab_req_loop.c): eager bytes RDMA-written into GPU memory over a
 * QP of the endpoint connected to itself, in a protection domain of its
 * own (no peer's QP can use its keys), then one byte read back (a PCIe
 * read flushes the writes before it); and the flush READs. */
/* Makes the endpoint's loopback QP (idempotent). 0 or -FI_E*. */
int gdrfab_loop_open(struct gdrfab_proto *proto);
/* Makes the endpoint's flush QP (idempotent; at fi_enable, never on the
 * data path). 0 or -FI_E* (logged). */
int gdrfab_loop_flush_open(struct gdrfab_proto *proto);
void gdrfab_loop_close(struct gdrfab_proto *proto);
/* Whether a buffer's descriptor is GPU memory the NIC reaches. */
bool gdrfab_loop_gpu_desc(struct gdrfab_proto *proto, const void *desc);
/* Posts a step (from gdrfab_gpu_rx_step); 0 or -FI_E* (nothing posted:
 * the caller frees it). */
int gdrfab_loop_start(struct gdrfab_proto *proto, struct gdrfab_req *st,
		      const struct gdrfab_gpu_rx_args *a);
/* Goes on with the requests whose loopback copies or flush READs ended
 * (gdrfab_req_resume, gdrfab_flush_done). */
void gdrfab_loop_progress(struct gdrfab_proto *proto);
/* Frees what a loopback step holds (from gdrfab_req_free). */
void gdrfab_loop_req_free(struct gdrfab_proto *proto, struct gdrfab_req *req);

#endif /* GDRFAB_GPU_H */
