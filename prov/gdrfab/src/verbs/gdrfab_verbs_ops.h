/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verbs seam: every libibverbs call that the protocol (proto/) and the
 * transport (verbs/) make on a device, as one table of function pointers.
 * gdrfab_vops points at the real libibverbs calls; the unit tests point it
 * at an in-memory fake (tests/unit/fake_verbs.c) so that eager, rendezvous,
 * emulated RMA, connection races and peer failure run without hardware.
 *
 * The hot path (post_send, post_srq_recv, poll_cq) pays one load of the
 * table pointer and one indirect call, which the real entries turn into a
 * tail call of the driver's own function (as the inline ibv_post_send
 * would). Discovery (query_port, the GID table, sysfs) is not in the
 * table: discover_ports stands for all of it, so that the fake describes
 * its ports as plain data.
 */
#ifndef GDRFAB_VERBS_OPS_H
#define GDRFAB_VERBS_OPS_H

#include <infiniband/verbs.h>

typedef int (*gdrfab_poll_cq_fn)(struct ibv_cq *cq, int n, struct ibv_wc *wc);

struct gdrfab_port_desc;

struct gdrfab_verbs_ops {
	/* Devices and protection domains. */
	struct ibv_device **(*get_device_list)(int *num);
	void (*free_device_list)(struct ibv_device **list);
	struct ibv_context *(*open_device)(struct ibv_device *dev);
	int (*close_device)(struct ibv_context *ctx);
	int (*query_device)(struct ibv_context *ctx,
			    struct ibv_device_attr *attr);
	/* A port's state now: a lost rail's port is looked at until it is
	 * back (gdrfab_rail_back.h), off the data path. */
	int (*query_port)(struct ibv_context *ctx, uint8_t port,
			  struct ibv_port_attr *attr);
	/* gdrfab_verbs_discover_ports in production (gdrfab_verbs.h). */
	int (*discover_ports)(struct gdrfab_port_desc **ports);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
	int (*dealloc_pd)(struct ibv_pd *pd);
	int (*get_async_event)(struct ibv_context *ctx,
			       struct ibv_async_event *ev);
	void (*ack_async_event)(struct ibv_async_event *ev);
	/* Queues and address handles. */
	struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe,
				    void *cq_context,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	int (*destroy_cq)(struct ibv_cq *cq);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init);
	int (*destroy_qp)(struct ibv_qp *qp);
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *attr);
	int (*destroy_srq)(struct ibv_srq *srq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd,
				    struct ibv_ah_attr *attr);
	int (*destroy_ah)(struct ibv_ah *ah);
	/* Memory registration. */
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len,
				 int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset,
					size_t len, uint64_t iova, int fd,
					int access);
	int (*dereg_mr)(struct ibv_mr *mr);
	/* The data path. */
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad);
	int (*poll_cq)(struct ibv_cq *cq, int n, struct ibv_wc *wc);
	/* The function poll_cq ends in for this CQ (the driver's own), for
	 * the one caller that keeps it: progress's quick path, where the
	 * table's load and the real entry's are a tenth of an empty poll. */
	gdrfab_poll_cq_fn (*poll_cq_fn)(struct ibv_cq *cq);
};

/* The table in use: the real one unless a test installed another. Set
 * only while no domain is open (it is read without a lock). */
extern const struct gdrfab_verbs_ops *gdrfab_vops;
extern const struct gdrfab_verbs_ops gdrfab_verbs_real;

/* Installs a table (NULL: the real one); returns the one it replaces. */
const struct gdrfab_verbs_ops *
gdrfab_verbs_ops_set(const struct gdrfab_verbs_ops *ops);

#endif /* GDRFAB_VERBS_OPS_H */
