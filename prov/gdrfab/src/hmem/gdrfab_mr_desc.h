/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a memory descriptor (the desc of the application's data calls)
 * tells the layers under the object layer: its registrations and what
 * kind of memory it is. The object layer's MR (struct gdrfab_mr) starts
 * with one, so a desc is read here as a struct gdrfab_mr_desc without the
 * MR's own type: no indirection, no call up. Which desc is a live MR is
 * still the object layer's answer (gdrfab_proto_ops.mr_check_desc).
 */
#ifndef GDRFAB_MR_DESC_H
#define GDRFAB_MR_DESC_H

#include <stdbool.h>
#include <stddef.h>

#include <infiniband/verbs.h>
#include <rdma/fi_domain.h>

#include "gdrfab_cuda.h"

struct gdrfab_reg;
struct gdrfab_hmem_domain;

struct gdrfab_mr_desc {
	struct ibv_mr *ibv_mr;
	/* What a peer reads a rendezvous message from: ibv_mr when the
	 * application allowed FI_REMOTE_READ, else a second registration
	 * whose rkey only gdrfab's own protocol ever hands out, so that
	 * fi_mr_key() never grants more than the application asked. */
	struct ibv_mr *rndv_mr;
	struct gdrfab_reg *reg, *rndv_reg; /* what ibv_mr, rndv_mr are in */
	enum fi_hmem_iface iface;
	struct gdrfab_cuda_ptr mem; /* FI_HMEM_CUDA: what the buffer is */
	/* GPU memory the NIC does not reach: the data path copies it
	 * through host bounce buffers. */
	bool staged;
	/* The registered range. */
	void *base;
	size_t len;
	/* GPU memory registered again in the domain's loopback PD, for
	 * endpoints without CUDA calls (gdrfab_hmem_loop.c); NULL until
	 * one needs it. hmem: the domain's GPU memory, whose loopback PD
	 * and lock that takes. */
	struct ibv_mr *loop_mr;
	struct gdrfab_hmem_domain *hmem;
};

/* The GPU device of a descriptor's memory, or -1 for host memory (and a
 * NULL desc). */
static inline int gdrfab_mr_device(const void *desc)
{
	const struct gdrfab_mr_desc *d = desc;

	return d && d->iface == FI_HMEM_CUDA ? d->mem.device : -1;
}

#endif /* GDRFAB_MR_DESC_H */
