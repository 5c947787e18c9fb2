/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Checks every object's open makes: is the fid it is opened on alive and of
 * the right class, and does its domain want locks. Shared by av, cq, cntr,
 * eq, ep, mr and poll, so none of them calls another object's file for it.
 */
#include "gdrfab.h"
#include "gdrfab_objs.h"
#include "gdrfab_quarantine.h"

bool gdrfab_fid_is(const struct fid *fid, size_t fclass)
{
	if (gdrfab_fid_dead(fid)) {
		gdrfab_dead_call(fid, "opening an object on it");
		return false;
	}
	return fid && fid->fclass == fclass && fid->ops;
}

bool gdrfab_domain_locks(const struct gdrfab_domain *domain)
{
	return !domain->info || !domain->info->domain_attr ||
	       domain->info->domain_attr->threading != FI_THREAD_DOMAIN;
}
