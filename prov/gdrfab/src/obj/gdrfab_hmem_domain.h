/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A domain's GPU memory, the object layer's side: the keys of its staged
 * MRs that peers may access (gdrfab_emu_mr.c). The rest is hmem's
 * (gdrfab_hmem.h, gdrfab_hmem_reg.h), set up by the domain at open with
 * what only the domain knows, the topology (gdrfab_domain.c).
 */
#ifndef GDRFAB_HMEM_DOMAIN_H
#define GDRFAB_HMEM_DOMAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "gdrfab_hmem.h"

struct gdrfab_domain;

struct gdrfab_mr;
/* Gives a staged MR with remote access its key; 0 or -FI_ENOSPC. */
int gdrfab_emu_mr_add(struct gdrfab_domain *domain, struct gdrfab_mr *mr,
		      uint64_t *key);
void gdrfab_emu_mr_remove(struct gdrfab_domain *domain, uint64_t key);
/* The MR behind the low 32 bits of a key, if it allows `access`
 * (FI_REMOTE_READ or FI_REMOTE_WRITE) to [addr, addr+len); else NULL and
 * *why says what is wrong. Closing an MR while peers still access it is
 * the application's error, as with any RMA target. */
struct gdrfab_mr *gdrfab_emu_mr_find(struct gdrfab_domain *domain,
				     uint32_t handle, uint64_t addr,
				     uint64_t len, uint64_t access,
				     const char **why);
void gdrfab_emu_mr_fini(struct gdrfab_domain *domain);

#endif /* GDRFAB_HMEM_DOMAIN_H */
