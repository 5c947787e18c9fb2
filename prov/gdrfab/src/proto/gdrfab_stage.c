/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * GPU buffers in the data path. Bytes the CPU must touch (eager payloads,
 * injects) are copied with CUDA, never with memcpy; GPU memory the NIC
 * does not reach (the staged path, or P2P disabled on the endpoint) goes
 * through pinned host buffers (gdrfab_req_stage.c); and data the NIC wrote
 * into GPU memory is flushed, where the GPU needs it, before the
 * completion that reports it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_endpoint.h>

#include "gdrfab.h"
#include "gdrfab_gpu.h"
#include "gdrfab_hmem.h"
#include "gdrfab_proto.h"
#include "gdrfab_req.h"
#include "gdrfab_stage.h"

/* The GPU device of a buffer: from its descriptor, or, for a buffer
 * passed without one (injects, receives), from CUDA once the application
 * has registered GPU memory. -1 for host memory. */
int gdrfab_buf_device(struct gdrfab_proto *proto, const void *buf, void *desc)
{
	return gdrfab_stage_buf_device(
		buf, desc,
		!desc && proto->env.cuda_api_permitted &&
			atomic_load(&proto->env.hmem->cuda_used));
}

/* A copy the CPU must make with CUDA not permitted. Even gdrfab.ko's
 * mapping asks CUDA for the buffer's ID first (its pins must not outlive
 * the allocation), so there is none: the eager paths move GPU data by
 * RDMA instead (gdrfab_msg.c's gather, gdrfab_loop_copy.c), and what is
 * left here (an FI_INJECT send, an atomic's operands, an eager message
 * into GPU memory the loopback QP cannot write) is refused. */
static int copy_without_cuda(size_t n, bool to_dev)
{
	GDRFAB_WARN(
		FI_LOG_EP_DATA,
		"a %zu-byte CPU copy %s GPU memory: CUDA is not permitted on this endpoint (FI_OPT_CUDA_API_PERMITTED=false)\n",
		n, to_dev ? "into" : "out of");
	return -FI_EOPNOTSUPP;
}

/* Copies n bytes out of a buffer that may be GPU memory (synchronous:
 * only where the API is, before the endpoint's lock). */
static int gdrfab_copy_from_buf(struct gdrfab_proto *proto, void *dst,
				const void *src, size_t n, void *desc)
{
	int dev = proto->ops->mr_check_desc(proto->env.domain, desc, src, n);

	if (dev)
		return dev;
	if (!n) /* fi_inject(ep, NULL, 0): nothing to read */
		return 0;
	dev = gdrfab_buf_device(proto, src, desc);
	if (dev < 0) {
		memcpy(dst, src, n);
		return 0;
	}
	if (!proto->env.cuda_api_permitted)
		return copy_without_cuda(n, false);
	return gdrfab_cuda_copy_to_host(dst, src, n, dev);
}

bool gdrfab_iov_gpu(struct gdrfab_proto *proto, const struct iovec *iov,
		    void **desc, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		if (iov[i].iov_len &&
		    gdrfab_buf_device(proto, iov[i].iov_base,
				      desc ? desc[i] : NULL) >= 0)
			return true;
	}
	return false;
}

int gdrfab_scatter_host(struct gdrfab_proto *proto, const struct iovec *iov,
			void **desc, size_t count, size_t off,
			const uint8_t *src, size_t n, bool nodesc_host)
{
	for (size_t i = 0; i < count && n; i++) {
		size_t l = iov[i].iov_len;
		uint8_t *dst = iov[i].iov_base;
		void *d = desc ? desc[i] : NULL;
		int ret;

		if (off >= l) {
			off -= l;
			continue;
		}
		l = GDRFAB_MIN(l - off, n);
		dst += off;
		ret = proto->ops->mr_check_desc(proto->env.domain, d, dst, l);
		if (ret)
			return ret;
		/* The safety net before memcpy: a descriptor says what
		 * its piece is at no cost; a piece without one costs a
		 * CUDA query, unless the caller's own classification of
		 * this iovec just said host memory. */
		if ((d || !nodesc_host) &&
		    gdrfab_buf_device(proto, dst, d) >= 0) {
			/* GPU memory is written by an asynchronous step
			 * (gdrfab_gpu_rx.c, gdrfab_atomic.c), never
			 * by a copy waited for in progress. */
			if (!proto->env.cuda_api_permitted)
				return copy_without_cuda(l, true);
			GDRFAB_WARN(
				FI_LOG_EP_DATA,
				"%zu bytes for GPU memory reached the host copy: refused (no synchronous copy in progress)\n",
				l);
			return -FI_EOPNOTSUPP;
		}
		memcpy(dst, src, l);
		src += l;
		n -= l;
		off = 0;
	}
	return 0;
}

bool gdrfab_iov_has_gpu(struct gdrfab_proto *proto, void **desc, size_t count)
{
	for (size_t i = 0; desc && i < count; i++) {
		/* A closed MR's descriptor is answered as GPU memory: the send
		 * is then not inlined (which would never read it) but copied
		 * or registered, and those paths refuse it. */
		if (!proto->ops->mr_desc_live(desc[i]) ||
		    gdrfab_mr_device(desc[i]) >= 0)
			return true;
	}
	return false;
}

/* Whether a request's GPU buffer (desc) goes through host bounce
 * buffers: its MR is staged, or the endpoint disabled P2P. */
static bool desc_stages(const struct gdrfab_proto *proto, const void *desc)
{
	const struct gdrfab_mr_desc *d = desc;

	return d && d->iface == FI_HMEM_CUDA &&
	       (d->staged || proto->env.hmem_p2p == FI_HMEM_P2P_DISABLED);
}

bool gdrfab_iov_stages(struct gdrfab_proto *proto, void **desc, size_t count)
{
	for (size_t i = 0; desc && i < count; i++) {
		if (desc_stages(proto, desc[i]))
			return true;
	}
	return false;
}

/* A bounce buffer for len bytes: the endpoint's spare when it is free and
 * large enough (issue 34: a thread sending from GPU memory again and
 * again takes it every time, no malloc or free per message; taken and
 * given back by an atomic exchange, since the copy runs before the
 * endpoint's lock), else one of its own. */
static uint8_t *bounce_get(struct gdrfab_proto *proto, size_t len, bool *spare)
{
	uint8_t *b;

	*spare = len <= proto->eager_max;
	if (!*spare)
		return malloc(len);
	b = __atomic_exchange_n(&proto->copy_spare, NULL, __ATOMIC_ACQUIRE);
	/* Another thread holds it (or none was made yet): one of the
	 * spare's size, which may become the spare when given back. */
	return b ? b : malloc(proto->eager_max);
}

void gdrfab_copy_in_done(struct gdrfab_proto *proto,
			 struct gdrfab_inject_copy *c)
{
	uint8_t *none = NULL;

	if (!c->bounce)
		return;
	if (!c->spare || !__atomic_compare_exchange_n(
				 &proto->copy_spare, &none, c->bounce, false,
				 __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		free(c->bounce);
	c->bounce = NULL;
}

int gdrfab_copy_in_unlocked(struct gdrfab_proto *proto,
			    const struct iovec **iovp, void ***descp,
			    size_t *countp, struct gdrfab_inject_copy *c)
{
	const struct iovec *iov = *iovp;
	void **desc = *descp;
	size_t count = *countp;
	size_t len = gdrfab_iov_len(iov, count), off = 0;
	int ret;

	c->bounce = NULL;
	if (!gdrfab_iov_gpu(proto, iov, desc, count))
		return 0;
	c->bounce = bounce_get(proto, len, &c->spare);
	if (!c->bounce)
		return -FI_ENOMEM;
	for (size_t i = 0; i < count; i++) {
		ret = gdrfab_copy_from_buf(proto, c->bounce + off,
					   iov[i].iov_base, iov[i].iov_len,
					   desc ? desc[i] : NULL);
		if (ret) {
			gdrfab_copy_in_done(proto, c);
			return ret;
		}
		off += iov[i].iov_len;
	}
	c->host.iov_base = c->bounce;
	c->host.iov_len = len;
	*iovp = &c->host;
	*descp = NULL;
	*countp = 1;
	return 0;
}
