/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The endpoint options about GPU memory (fi_endpoint(3)):
 * FI_OPT_FI_HMEM_P2P and FI_OPT_CUDA_API_PERMITTED. The latter came with
 * libfabric 1.18; gdrfab knows its number so that it works when built
 * against 1.17 headers too.
 */
#include <stdbool.h>

#include "gdrfab.h"
#include "gdrfab_gpu.h"
#include "gdrfab_hmem.h"
#include "gdrfab_hmem_reg.h"
#include "gdrfab_objs.h"
#include "gdrfab_proto.h"

#ifndef FI_OPT_CUDA_API_PERMITTED
#define FI_OPT_CUDA_API_PERMITTED 10
#endif

static bool p2p_possible(const struct gdrfab_ep *ep)
{
	enum gdrfab_cuda_reg path = ep->domain->hmem.path;

	return path == GDRFAB_CUDA_REG_DMABUF ||
	       path == GDRFAB_CUDA_REG_PEERMEM;
}

bool gdrfab_ep_may_flush_by_read(const struct gdrfab_ep *ep)
{
	return (ep->info->caps & FI_HMEM) && p2p_possible(ep) &&
	       gdrfab_hmem_flush_may_read(ep->cuda_api_permitted);
}

static int set_p2p(struct gdrfab_ep *ep, int mode)
{
	switch (mode) {
	case FI_HMEM_P2P_REQUIRED:
		if (!p2p_possible(ep)) {
			GDRFAB_WARN(
				FI_LOG_EP_CTRL,
				"FI_HMEM_P2P_REQUIRED: this domain moves GPU memory through host buffers (%s)\n",
				gdrfab_cuda_reg_name(ep->domain->hmem.path));
			return -FI_EOPNOTSUPP;
		}
		break;
	case FI_HMEM_P2P_DISABLED:
		if (!ep->cuda_api_permitted) {
			GDRFAB_WARN(
				FI_LOG_EP_CTRL,
				"FI_HMEM_P2P_DISABLED: GPU memory would go through host buffers with CUDA copies, and FI_OPT_CUDA_API_PERMITTED is false on this endpoint\n");
			return -FI_EOPNOTSUPP;
		}
		break;
	case FI_HMEM_P2P_ENABLED:
	case FI_HMEM_P2P_PREFERRED: break;
	default:
		GDRFAB_WARN(FI_LOG_EP_CTRL,
			    "FI_OPT_FI_HMEM_P2P: unknown value %d\n", mode);
		return -FI_EINVAL;
	}
	ep->hmem_p2p = mode;
	if (ep->proto) /* its view, kept current */
		ep->proto->env.hmem_p2p = mode;
	return 0;
}

/* Whether the endpoint's data path may run without calling CUDA. It can
 * where the NIC reaches GPU memory (dma-buf or peermem): sends gather GPU
 * buffers by their registration, eager data lands in GPU memory by a
 * loopback RDMA WRITE (hmem/gdrfab_loop_copy.c), flushes are READs. Where GPU
 * memory is staged through host buffers, every GPU transfer is a CUDA
 * copy: refused. */
static int set_cuda_permitted(struct gdrfab_ep *ep, bool permitted)
{
	int ret = 0;

	if (ep->domain->hmem.path == GDRFAB_CUDA_REG_NONE) {
		GDRFAB_WARN(
			FI_LOG_EP_CTRL,
			"FI_OPT_CUDA_API_PERMITTED: no CUDA in this process\n");
		return -FI_EINVAL;
	}
	if (!permitted && (ep->info->caps & FI_HMEM)) {
		if (!p2p_possible(ep)) {
			GDRFAB_WARN(
				FI_LOG_EP_CTRL,
				"FI_OPT_CUDA_API_PERMITTED=false: this domain moves GPU memory through host buffers with CUDA copies (%s: no GPUDirect)\n",
				gdrfab_cuda_reg_name(ep->domain->hmem.path));
			return -FI_EOPNOTSUPP;
		}
		if (ep->hmem_p2p == FI_HMEM_P2P_DISABLED) {
			GDRFAB_WARN(
				FI_LOG_EP_CTRL,
				"FI_OPT_CUDA_API_PERMITTED=false: FI_HMEM_P2P_DISABLED stages this endpoint's GPU memory with CUDA copies\n");
			return -FI_EOPNOTSUPP;
		}
		/* Enabled already: the loopback QP is made now, not on
		 * the data path. ep->lock: the protocol state its QPs
		 * join (progress runs under it too); nothing here waits. */
		gdrfab_lock_acquire(&ep->lock);
		if (ep->proto)
			ret = gdrfab_loop_open(ep->proto);
		/* The flushes become READs: their QP as well. */
		if (!ret && ep->proto && gdrfab_hmem_flush_may_read(false))
			ret = gdrfab_loop_flush_open(ep->proto);
		gdrfab_lock_release(&ep->lock);
		if (ret)
			return ret;
	}
	ep->cuda_api_permitted = permitted;
	if (ep->proto) /* its view, kept current */
		ep->proto->env.cuda_api_permitted = permitted;
	return 0;
}

int gdrfab_ep_hmem_setopt(struct gdrfab_ep *ep, int optname, const void *optval,
			  size_t optlen)
{
	switch (optname) {
	case FI_OPT_FI_HMEM_P2P:
		if (!optval || optlen != sizeof(int))
			return -FI_EINVAL;
		return set_p2p(ep, *(const int *)optval);
	case FI_OPT_CUDA_API_PERMITTED:
		if (!optval || optlen != sizeof(bool))
			return -FI_EINVAL;
		return set_cuda_permitted(ep, *(const bool *)optval);
	default: return -FI_ENOPROTOOPT;
	}
}

int gdrfab_ep_hmem_getopt(struct gdrfab_ep *ep, int optname, void *optval,
			  size_t *optlen)
{
	switch (optname) {
	case FI_OPT_FI_HMEM_P2P:
		if (*optlen < sizeof(int))
			return -FI_ETOOSMALL;
		*(int *)optval = ep->hmem_p2p;
		*optlen = sizeof(int);
		return 0;
	case FI_OPT_CUDA_API_PERMITTED:
		if (*optlen < sizeof(bool))
			return -FI_ETOOSMALL;
		*(bool *)optval = ep->cuda_api_permitted;
		*optlen = sizeof(bool);
		return 0;
	default: return -FI_ENOPROTOOPT;
	}
}
