/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Visibility of RDMA writes into GPU memory before their completion is
 * reported (GPUDirect RDMA guide, "Synchronization and Memory Ordering").
 * A GPU that orders remote writes for its owner needs nothing; otherwise
 * cuFlushGPUDirectRDMAWrites, or, where that is not available (or CUDA
 * calls are not wanted), an RDMA READ of GPU memory through the same NIC:
 * the NIC's PCIe read cannot pass its earlier posted writes.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "gdrfab.h"
#include "gdrfab_hmem.h"
#include "gdrfab_objs.h"
#include "gdrfab_params.h"
#include "gdrfab_rc.h"

#define FLUSH_TIMEOUT_NS (2LL * 1000 * 1000 * 1000)

enum gdrfab_cuda_flush gdrfab_hmem_flush_method(int device, bool cuda_ok)
{
	const struct gdrfab_cuda_dev *d = gdrfab_cuda_device(device);
	enum gdrfab_cuda_flush m;

	if (gdrfab_params.cuda_flush != GDRFAB_FLUSH_AUTO)
		m = (enum gdrfab_cuda_flush)gdrfab_params.cuda_flush;
	else if (!d || d->writes_ordering >= GDRFAB_CUDA_ORDERING_OWNER)
		m = GDRFAB_FLUSH_NONE;
	else
		m = d->flush_supported ? GDRFAB_FLUSH_CUDA : GDRFAB_FLUSH_READ;
	/* An endpoint with FI_OPT_CUDA_API_PERMITTED=false: the READ does
	 * the same through the NIC, without CUDA. */
	return m == GDRFAB_FLUSH_CUDA && !cuda_ok ? GDRFAB_FLUSH_READ : m;
}

struct ibv_qp *gdrfab_hmem_loop_qp(struct gdrfab_domain *domain,
				   struct ibv_pd *pd, struct ibv_cq *cq,
				   int sq_depth, int max_sge)
{
	struct gdrfab_rc_params p = {
		.pd = pd,
		.cq = cq,
		.port_num = domain->port_num,
		.gid_index = domain->gid_index,
		.roce = !domain->port_addr.lid_be,
		.sq_depth = sq_depth,
		.max_sge = max_sge,
		.max_rd_atomic = 1,
		.max_dest_rd_atomic = 1,
		.timeout = 14,
	};
	struct gdrfab_addr self = domain->port_addr;
	struct ibv_qp *qp = gdrfab_rc_create(&p, NULL);
	int err;

	if (!qp)
		return NULL;
	err = gdrfab_rc_connect(qp, &p, &self, qp->qp_num, 0, 0, IBV_MTU_1024);
	if (err) {
		GDRFAB_WARN(FI_LOG_DOMAIN, "loopback QP to itself: %s\n",
			    strerror(err));
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

/* The loopback QP the flush READ uses, made on first need. */
static int flush_qp_setup(struct gdrfab_domain *domain)
{
	struct gdrfab_hmem_domain *h = &domain->hmem;

	/* Each piece is kept once made: a later attempt after a failure
	 * makes only what is missing. */
	if (!h->flush_cq)
		h->flush_cq = ibv_create_cq(domain->ctx, 2, NULL, NULL, 0);
	if (!h->flush_mr)
		h->flush_mr = ibv_reg_mr(domain->pd, &h->flush_buf,
					 sizeof(h->flush_buf),
					 IBV_ACCESS_LOCAL_WRITE);
	if (!h->flush_cq || !h->flush_mr)
		return -FI_ENOMEM;
	h->flush_qp =
		gdrfab_hmem_loop_qp(domain, domain->pd, h->flush_cq, 1, 1);
	return h->flush_qp ? 0 : -FI_EIO;
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int flush_read(struct gdrfab_domain *domain, void *addr, size_t len,
		      uint32_t rkey)
{
	struct gdrfab_hmem_domain *h = &domain->hmem;
	/* The last byte written: reading it orders all before it. */
	struct ibv_sge sge = {
		.addr = (uintptr_t)&h->flush_buf,
		.length = 1,
	};
	struct ibv_send_wr wr =
				   {
					   .sg_list = &sge,
					   .num_sge = 1,
					   .opcode = IBV_WR_RDMA_READ,
					   .send_flags = IBV_SEND_SIGNALED,
					   .wr.rdma = {.remote_addr =
							       (uintptr_t)addr +
							       len - 1,
						       .rkey = rkey},
				   },
			   *bad;
	struct ibv_wc wc;
	long long deadline;
	int n, ret = 0;

	pthread_mutex_lock(&h->flush_lock);
	if (!h->flush_qp && (ret = flush_qp_setup(domain)))
		goto out;
	sge.lkey = h->flush_mr->lkey;
	if ((errno = ibv_post_send(h->flush_qp, &wr, &bad))) {
		GDRFAB_WARN(FI_LOG_EP_DATA, "flush READ: %s\n",
			    strerror(errno));
		ret = -FI_EIO;
		goto out;
	}
	deadline = now_ns() + FLUSH_TIMEOUT_NS;
	while (!(n = ibv_poll_cq(h->flush_cq, 1, &wc)) && now_ns() < deadline)
		;
	if (n != 1 || wc.status != IBV_WC_SUCCESS) {
		GDRFAB_WARN(FI_LOG_EP_DATA, "flush READ did not complete: %s\n",
			    n == 1 ? ibv_wc_status_str(wc.status) : "timeout");
		ret = -FI_EIO;
		goto out;
	}
out:
	pthread_mutex_unlock(&h->flush_lock);
	return ret;
}

int gdrfab_hmem_flush(struct gdrfab_domain *domain, int device, void *addr,
		      size_t len, uint32_t rkey, bool cuda_ok)
{
	if (!len)
		return 0;
	switch (gdrfab_hmem_flush_method(device, cuda_ok)) {
	case GDRFAB_FLUSH_CUDA: return gdrfab_cuda_flush(device);
	case GDRFAB_FLUSH_READ: return flush_read(domain, addr, len, rkey);
	default: return 0;
	}
}

void gdrfab_hmem_track_remote_write(struct gdrfab_domain *domain,
				    const void *owner, int device, void *addr,
				    uint32_t rkey, bool add)
{
	struct gdrfab_hmem_domain *h = &domain->hmem;

	pthread_mutex_lock(&h->flush_lock);
	if (add) {
		h->rw_count++;
		h->rw_owner = owner;
		h->rw_device = device;
		h->rw_addr = addr;
		h->rw_rkey = rkey;
	} else {
		h->rw_count--;
		if (h->rw_owner == owner)
			h->rw_owner = NULL;
	}
	pthread_mutex_unlock(&h->flush_lock);
}

void gdrfab_hmem_flush_remote_writes(struct gdrfab_domain *domain, bool cuda_ok)
{
	struct gdrfab_hmem_domain *h = &domain->hmem;
	int device;
	void *addr;
	uint32_t rkey;

	if (!atomic_load(&h->rw_count))
		return;
	pthread_mutex_lock(&h->flush_lock);
	device = h->rw_device;
	addr = h->rw_addr;
	rkey = h->rw_rkey;
	if (!h->rw_owner)
		addr = NULL;
	pthread_mutex_unlock(&h->flush_lock);
	/* With the newest region closed, a CUDA flush still works (it
	 * needs no address); a READ has nothing left to read. */
	if (addr ||
	    gdrfab_hmem_flush_method(device, cuda_ok) == GDRFAB_FLUSH_CUDA)
		gdrfab_hmem_flush(domain, device, addr, 1, rkey, cuda_ok);
}
