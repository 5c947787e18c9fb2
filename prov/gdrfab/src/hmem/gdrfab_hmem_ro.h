/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Registrations of data buffers (the application's MRs, GPU memory, host
 * memory used without a descriptor) with PCIe relaxed ordering where the
 * device takes it (FI_GDRFAB_RELAXED_ORDERING). GPU memory behind a PCIe
 * switch reaches full bandwidth only when the NIC's writes may pass each
 * other; NCCL and UCX ask for it on the same grounds. The provider's own
 * bounce and control buffers keep strict ordering: they are small, and
 * some are polled by the CPU.
 */
#ifndef GDRFAB_HMEM_RO_H
#define GDRFAB_HMEM_RO_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "gdrfab_hmem.h"

/* One registration: a dma-buf one when fd >= 0 (offset into it, iova the
 * address the keys answer to), else ibv_reg_mr of [iova, iova + len). */
struct gdrfab_data_reg {
	struct ibv_pd *pd;
	uint64_t iova;
	size_t len;
	int access;
	int fd;
	uint64_t offset;
};

/* The access bit FI_GDRFAB_RELAXED_ORDERING adds on h's device now:
 * IBV_ACCESS_RELAXED_ORDERING, or 0 (off, or the device refused it). */
int gdrfab_hmem_ro_access(struct gdrfab_hmem_domain *h);

/* Registers a with relaxed ordering added as gdrfab_hmem_ro_access says.
 * Older rdma-core or kernels refuse the bit they do not know (EINVAL,
 * EOPNOTSUPP) where newer ones drop it silently: on such a refusal it
 * registers once more without the bit and, when that works, remembers
 * for the domain that the device refuses it (logged once: at info under
 * auto, as a warning under on). NULL with errno set when the
 * registration fails anyway. */
struct ibv_mr *gdrfab_hmem_reg_data(struct gdrfab_hmem_domain *h,
				    const struct gdrfab_data_reg *a);
/* The same on rail (0 to h->nrails - 1) of a rail-set domain, whose
 * device's refusal is remembered for that rail alone; a->pd is the
 * rail's. */
struct ibv_mr *gdrfab_hmem_reg_data_rail(struct gdrfab_hmem_domain *h,
					 size_t rail,
					 const struct gdrfab_data_reg *a);

#endif /* GDRFAB_HMEM_RO_H */
