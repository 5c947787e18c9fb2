/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Keys for staged GPU memory that peers may read or write. The NIC cannot
 * reach that memory, so there is no rkey to hand out: the key names a slot
 * of the domain's table instead, and an initiator that sees GDRFAB_EMU_KEY
 * asks the target's data path to do the access (proto/gdrfab_rma_emu.c).
 * A generation in the key makes a key of a closed MR miss, even once its
 * slot is reused.
 */
#include <stdlib.h>

#include <rdma/fi_domain.h>

#include "gdrfab.h"
#include "gdrfab_hmem.h"
#include "gdrfab_hmem_domain.h"
#include "gdrfab_objs.h"

#define SLOT(handle) ((handle)&0xffffu)
#define GEN(handle)  ((uint16_t)((handle) >> 16))

static int grow(struct gdrfab_hmem_domain *h)
{
	size_t cap = h->emu_cap ? h->emu_cap * 2 : 16;
	struct gdrfab_mr **mr;
	uint16_t *gen;

	if (cap > GDRFAB_EMU_MAX_MRS)
		return -FI_ENOSPC;
	mr = realloc(h->emu_mr, cap * sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	h->emu_mr = mr;
	gen = realloc(h->emu_gen, cap * sizeof(*gen));
	if (!gen)
		return -FI_ENOMEM;
	h->emu_gen = gen;
	for (size_t i = h->emu_cap; i < cap; i++) {
		mr[i] = NULL;
		gen[i] = 0;
	}
	h->emu_cap = cap;
	return 0;
}

int gdrfab_emu_mr_add(struct gdrfab_domain *domain, struct gdrfab_mr *mr,
		      uint64_t *key)
{
	struct gdrfab_hmem_domain *h = &domain->hmem;
	size_t i;
	int ret = 0;

	pthread_mutex_lock(&h->emu_lock);
	for (i = 0; i < h->emu_cap && h->emu_mr[i]; i++)
		;
	if (i == h->emu_cap)
		ret = grow(h);
	if (!ret) {
		h->emu_mr[i] = mr;
		*key = GDRFAB_EMU_KEY | (uint64_t)h->emu_gen[i] << 16 | i;
	}
	pthread_mutex_unlock(&h->emu_lock);
	if (ret)
		GDRFAB_WARN(
			FI_LOG_MR,
			"fi_mr_regattr: no key left for staged GPU memory with remote access (%d in use)\n",
			GDRFAB_EMU_MAX_MRS);
	return ret;
}

void gdrfab_emu_mr_remove(struct gdrfab_domain *domain, uint64_t key)
{
	struct gdrfab_hmem_domain *h = &domain->hmem;
	size_t i = SLOT(key);

	pthread_mutex_lock(&h->emu_lock);
	if (i < h->emu_cap) {
		h->emu_mr[i] = NULL;
		h->emu_gen[i]++;
	}
	pthread_mutex_unlock(&h->emu_lock);
}

struct gdrfab_mr *gdrfab_emu_mr_find(struct gdrfab_domain *domain,
				     uint32_t handle, uint64_t addr,
				     uint64_t len, uint64_t access,
				     const char **why)
{
	struct gdrfab_hmem_domain *h = &domain->hmem;
	struct gdrfab_mr *mr = NULL;
	size_t i = SLOT(handle);

	pthread_mutex_lock(&h->emu_lock);
	if (i < h->emu_cap && h->emu_gen[i] == GEN(handle))
		mr = h->emu_mr[i];
	pthread_mutex_unlock(&h->emu_lock);
	*why = NULL;
	if (!mr)
		*why = "unknown or closed key";
	else if (!(mr->access & access))
		*why = access == FI_REMOTE_READ ? "key does not allow reads"
						: "key does not allow writes";
	else if (addr < (uintptr_t)mr->desc.base || addr + len < addr ||
		 addr + len > (uintptr_t)mr->desc.base + mr->desc.len)
		*why = "range outside the registration";
	return *why ? NULL : mr;
}

void gdrfab_emu_mr_fini(struct gdrfab_domain *domain)
{
	struct gdrfab_hmem_domain *h = &domain->hmem;

	free(h->emu_mr);
	free(h->emu_gen);
	h->emu_mr = NULL;
	h->emu_gen = NULL;
	h->emu_cap = 0;
	pthread_mutex_destroy(&h->emu_lock);
}
