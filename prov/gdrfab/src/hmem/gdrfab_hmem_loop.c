/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The domain's loopback protection domain and the GPU registrations in it.
 * An endpoint that may not call CUDA (FI_OPT_CUDA_API_PERMITTED=false)
 * moves eager bytes from host bounce memory into GPU memory with an RDMA
 * WRITE over a QP connected to itself (gdrfab_loop_copy.c). That
 * WRITE needs a remote key for the GPU buffer; made in the domain's own PD,
 * a peer guessing it could write there too. In a PD no peer's QP belongs
 * to, the key opens nothing to the network.
 */
#include <errno.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_hmem.h"
#include "gdrfab_mr_cache.h"
#include "gdrfab_verbs_ops.h"

#define LOOP_ACCESS                                                            \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                    \
	 IBV_ACCESS_REMOTE_READ)

struct ibv_pd *gdrfab_hmem_loop_pd(struct gdrfab_hmem_domain *h)
{
	struct ibv_pd *pd;

	pthread_mutex_lock(&h->loop_lock);
	if (!h->loop_pd) {
		h->loop_pd = gdrfab_vops->alloc_pd(h->ctx);
		if (!h->loop_pd)
			GDRFAB_WARN(
				FI_LOG_DOMAIN,
				"ibv_alloc_pd for the loopback copies: %s\n",
				strerror(errno));
	}
	pd = h->loop_pd;
	pthread_mutex_unlock(&h->loop_lock);
	return pd;
}

/* The same pages the MR's registration covers, in the loopback PD: a
 * dma-buf registration again from the fd the cache kept, else ibv_reg_mr
 * on the device address (peermem pins it, without CUDA). */
static struct ibv_mr *register_again(struct gdrfab_mr_desc *mr,
				     struct ibv_pd *pd)
{
	const struct gdrfab_reg *r = mr->reg;
	uintptr_t base = (uintptr_t)mr->base;

	if (r && r->dmabuf_fd >= 0)
		return gdrfab_vops->reg_dmabuf_mr(
			pd, r->dmabuf_off + (base - r->start), mr->len, base,
			r->dmabuf_fd, LOOP_ACCESS);
	return gdrfab_vops->reg_mr(pd, mr->base, mr->len, LOOP_ACCESS);
}

struct ibv_mr *gdrfab_hmem_loop_mr(struct gdrfab_mr_desc *mr)
{
	struct gdrfab_hmem_domain *h = mr->hmem;
	struct ibv_pd *pd;
	struct ibv_mr *lmr;

	/* Set once, under the lock, and cleared only when the MR closes
	 * (no data call may use it after that): read without the lock. */
	lmr = __atomic_load_n(&mr->loop_mr, __ATOMIC_ACQUIRE);
	if (lmr)
		return lmr;
	pd = gdrfab_hmem_loop_pd(h);
	if (!pd)
		return NULL;
	pthread_mutex_lock(&h->loop_lock);
	lmr = mr->loop_mr;
	if (!lmr && mr->ibv_mr) {
		lmr = register_again(mr, pd);
		if (!lmr)
			GDRFAB_WARN(
				FI_LOG_MR,
				"registering GPU memory %p+%zu for loopback copies: %s\n",
				mr->base, mr->len, strerror(errno));
		__atomic_store_n(&mr->loop_mr, lmr, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&h->loop_lock);
	return lmr;
}

void gdrfab_hmem_loop_mr_release(struct gdrfab_mr_desc *mr)
{
	struct gdrfab_hmem_domain *h = mr->hmem;
	struct ibv_mr *lmr;
	int err;

	pthread_mutex_lock(&h->loop_lock);
	lmr = mr->loop_mr;
	mr->loop_mr = NULL;
	pthread_mutex_unlock(&h->loop_lock);
	if (lmr && (err = gdrfab_vops->dereg_mr(lmr)))
		GDRFAB_WARN(FI_LOG_MR, "ibv_dereg_mr (loopback): %s\n",
			    strerror(err));
}

void gdrfab_hmem_loop_fini(struct gdrfab_hmem_domain *h)
{
	int err;

	if (h->loop_pd && (err = gdrfab_vops->dealloc_pd(h->loop_pd)))
		GDRFAB_WARN(FI_LOG_DOMAIN, "ibv_dealloc_pd (loopback): %s\n",
			    strerror(err));
	h->loop_pd = NULL;
	pthread_mutex_destroy(&h->loop_lock);
}
