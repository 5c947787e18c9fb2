/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * GPU memory registration: which path a domain registers GPU memory by
 * (dma-buf, peermem or staged, chosen once at open and logged with its
 * reason), and the backend that makes and undoes its registrations, which
 * hmem hands to the domain's registration cache (mem/gdrfab_mr_cache.h).
 */
#ifndef GDRFAB_HMEM_REG_H
#define GDRFAB_HMEM_REG_H

#include <stdbool.h>

#include <infiniband/verbs.h>

#include "gdrfab_hmem.h"
#include "gdrfab_mr_cache.h"

/* What a domain hands hmem at open: its device and PD, its name for the
 * log, and its fi_info, whose NIC the topology places against the GPU
 * (for FI_GDRFAB_CUDA_REG=auto: is the GPU close enough for GPUDirect
 * RDMA, FI_GDRFAB_GDR_LEVEL; asked only when auto must choose; NULL for
 * "always"). */
struct gdrfab_hmem_reg_setup {
	struct ibv_context *verbs_ctx;
	struct ibv_pd *pd;
	const char *name;
	const struct fi_info *info;
	/* A rail-set domain's rails beyond rail 0 (the above): every data
	 * registration is made on each one's PD as well. 0 for a NIC alone;
	 * the names must outlive h. */
	size_t more_rails;
	struct ibv_pd *more_pd[GDRFAB_REG_RAILS_MAX - 1];
	const char *more_name[GDRFAB_REG_RAILS_MAX - 1];
};

/* Sets up h: its locks, its registration cache (whose backend is hmem's),
 * and its path (FI_GDRFAB_CUDA_REG; auto tries dma-buf, then peermem, then
 * staged; without CUDA the path is NONE). setup->name must outlive h. */
void gdrfab_hmem_reg_init(struct gdrfab_hmem_domain *h,
			  const struct gdrfab_hmem_reg_setup *setup);
/* Undoes gdrfab_hmem_reg_init, but for the emulated-access MR table
 * (emu_*), which its owner frees. */
void gdrfab_hmem_reg_fini(struct gdrfab_hmem_domain *h);
const char *gdrfab_cuda_reg_name(enum gdrfab_cuda_reg path);

/* Whether FI_HMEM can be offered on this machine, and why not. */
bool gdrfab_hmem_offered(const char **why);

#endif /* GDRFAB_HMEM_REG_H */
