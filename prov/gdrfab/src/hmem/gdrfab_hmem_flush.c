/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Visibility of RDMA writes into GPU memory before their completion is
 * reported (GPUDirect RDMA guide, "Synchronization and Memory Ordering").
 * A GPU that orders remote writes for its owner needs nothing; otherwise
 * cuFlushGPUDirectRDMAWrites, or, where that is not available (or CUDA
 * calls are not wanted), an RDMA READ of GPU memory through the same NIC:
 * the NIC's PCIe read cannot pass its earlier posted writes.
 *
 * This file chooses the method and keeps what the READ needs to know; the
 * READ itself is a step of the request, posted and completed from
 * progress (proto/gdrfab_flush.c), on a QP the endpoint makes when it is
 * enabled (gdrfab_hmem_loop_qp).
 */
#include <errno.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_hmem.h"
#include "gdrfab_params.h"
#include "gdrfab_rc.h"
#include "gdrfab_verbs_ops.h"

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

struct ibv_qp *gdrfab_hmem_loop_qp(const struct gdrfab_addr *port_addr,
				   uint8_t port_num, int gid_index,
				   struct ibv_pd *pd, struct ibv_cq *cq,
				   int sq_depth, int max_sge)
{
	struct gdrfab_rc_params p = {
		.pd = pd,
		.cq = cq,
		.port_num = port_num,
		.gid_index = gid_index,
		.roce = !port_addr->lid_be,
		.sq_depth = sq_depth,
		.max_sge = max_sge,
		.max_rd_atomic = 1,
		.max_dest_rd_atomic = 1,
		.timeout = 14,
	};
	struct gdrfab_addr self = *port_addr;
	struct ibv_qp *qp = gdrfab_rc_create(&p, NULL);
	int err;

	if (!qp)
		return NULL;
	err = gdrfab_rc_connect(qp, &p, &self, qp->qp_num, 0, 0, IBV_MTU_1024);
	if (err) {
		GDRFAB_WARN(FI_LOG_DOMAIN, "loopback QP to itself: %s\n",
			    strerror(err));
		gdrfab_vops->destroy_qp(qp);
		return NULL;
	}
	return qp;
}

bool gdrfab_hmem_flush_may_read(bool cuda_ok)
{
	int n = gdrfab_cuda_device_count();

	if (gdrfab_params.cuda_flush == GDRFAB_FLUSH_READ)
		return true;
	for (int i = 0; i < n; i++) {
		if (gdrfab_hmem_flush_method(i, cuda_ok) == GDRFAB_FLUSH_READ)
			return true;
	}
	return false;
}

void gdrfab_hmem_track_remote_write(struct gdrfab_hmem_domain *h,
				    const void *owner, int device, void *addr,
				    uint32_t rkey, bool add)
{
	/* rw_lock: the rw_* fields only; a leaf lock (nothing is called
	 * under it), taken from MR registration and close. */
	pthread_mutex_lock(&h->rw_lock);
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
	pthread_mutex_unlock(&h->rw_lock);
}

bool gdrfab_hmem_remote_write_target(struct gdrfab_hmem_domain *h, bool cuda_ok,
				     struct gdrfab_hmem_rw_target *t)
{
	if (!atomic_load(&h->rw_count))
		return false;
	/* rw_lock (a leaf, under the endpoint's lock here): a consistent
	 * copy of the newest region, read outside it. */
	pthread_mutex_lock(&h->rw_lock);
	t->device = h->rw_device;
	t->addr = h->rw_owner ? h->rw_addr : NULL;
	t->rkey = h->rw_rkey;
	pthread_mutex_unlock(&h->rw_lock);
	/* With the newest region closed, a CUDA flush still works (it
	 * needs no address); a READ has nothing left to read. */
	return t->addr || gdrfab_hmem_flush_method(t->device, cuda_ok) ==
				  GDRFAB_FLUSH_CUDA;
}
