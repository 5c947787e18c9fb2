/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The real entries of the verbs seam (gdrfab_verbs_ops.h). Most are the
 * libibverbs functions themselves; those that libibverbs defines inline
 * or as macros get a one-line function here, which the compiler turns
 * into a tail call of the driver's entry.
 */
#include "gdrfab_verbs_ops.h"
#include "gdrfab_verbs.h"

static struct ibv_mr *real_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
				  int access)
{
	return ibv_reg_mr(pd, addr, len, access);
}

static int real_query_device(struct ibv_context *ctx,
			     struct ibv_device_attr *attr)
{
	return ibv_query_device(ctx, attr);
}

static int real_query_port(struct ibv_context *ctx, uint8_t port,
			   struct ibv_port_attr *attr)
{
	return ibv_query_port(ctx, port, attr);
}

static int real_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad)
{
	return qp->context->ops.post_send(qp, wr, bad);
}

static int real_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad)
{
	return qp->context->ops.post_recv(qp, wr, bad);
}

static int real_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad)
{
	return srq->context->ops.post_srq_recv(srq, wr, bad);
}

static int real_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	return cq->context->ops.poll_cq(cq, n, wc);
}

/* What ibv_poll_cq calls: a CQ's context and its ops never change. */
static gdrfab_poll_cq_fn real_poll_cq_fn(struct ibv_cq *cq)
{
	return cq->context->ops.poll_cq;
}

const struct gdrfab_verbs_ops gdrfab_verbs_real = {
	.get_device_list = ibv_get_device_list,
	.free_device_list = ibv_free_device_list,
	.open_device = ibv_open_device,
	.close_device = ibv_close_device,
	.query_device = real_query_device,
	.query_port = real_query_port,
	.discover_ports = gdrfab_verbs_discover_ports,
	.alloc_pd = ibv_alloc_pd,
	.dealloc_pd = ibv_dealloc_pd,
	.get_async_event = ibv_get_async_event,
	.ack_async_event = ibv_ack_async_event,
	.create_cq = ibv_create_cq,
	.destroy_cq = ibv_destroy_cq,
	.create_qp = ibv_create_qp,
	.modify_qp = ibv_modify_qp,
	.query_qp = ibv_query_qp,
	.destroy_qp = ibv_destroy_qp,
	.create_srq = ibv_create_srq,
	.destroy_srq = ibv_destroy_srq,
	.create_ah = ibv_create_ah,
	.destroy_ah = ibv_destroy_ah,
	.reg_mr = real_reg_mr,
	.reg_dmabuf_mr = ibv_reg_dmabuf_mr,
	.dereg_mr = ibv_dereg_mr,
	.post_send = real_post_send,
	.post_recv = real_post_recv,
	.post_srq_recv = real_post_srq_recv,
	.poll_cq = real_poll_cq,
	.poll_cq_fn = real_poll_cq_fn,
};

const struct gdrfab_verbs_ops *gdrfab_vops = &gdrfab_verbs_real;

const struct gdrfab_verbs_ops *
gdrfab_verbs_ops_set(const struct gdrfab_verbs_ops *ops)
{
	const struct gdrfab_verbs_ops *old = gdrfab_vops;

	gdrfab_vops = ops ? ops : &gdrfab_verbs_real;
	return old;
}
