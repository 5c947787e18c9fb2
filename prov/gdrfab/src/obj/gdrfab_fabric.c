/* SPDX-License-Identifier: BSD-2-Clause */
/* fid_fabric: names a fabric that gdrfab advertised; opens domains, EQs. */
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_info.h"
#include "gdrfab_obj_common.h"
#include "gdrfab_objs.h"
#include "gdrfab_quarantine.h"

static int fabric_close(struct fid *fid)
{
	struct gdrfab_fabric *fabric =
		gdrfab_container_of(fid, struct gdrfab_fabric, fid.fid);

	if (atomic_load(&fabric->ref)) {
		GDRFAB_WARN(FI_LOG_FABRIC,
			    "fabric %s still has %d open domains/EQs\n",
			    fabric->name, atomic_load(&fabric->ref));
		return -FI_EBUSY;
	}
	free(fabric->name);
	fabric->name = NULL;
	gdrfab_fid_retire(&fabric->fid.fid, fabric);
	return 0;
}

static int fabric_trywait(struct fid_fabric *fabric, struct fid **fids,
			  int count)
{
	(void)fabric;
	if (!fids || count < 0)
		return -FI_EINVAL;
	for (int i = 0; i < count; i++) {
		int ret;

		if (!fids[i])
			return -FI_EINVAL;
		if (gdrfab_fid_dead(fids[i]))
			return gdrfab_dead_call(fids[i], "fi_trywait");
		/* Nothing pending: safe to block on the object's fd. */
		switch (fids[i]->fclass) {
		case FI_CLASS_CQ:
			ret = gdrfab_cq_trywait(gdrfab_container_of(
				fids[i], struct gdrfab_cq, fid.fid));
			break;
		case FI_CLASS_EQ:
			ret = gdrfab_eq_trywait(gdrfab_container_of(
				fids[i], struct gdrfab_eq, fid.fid));
			break;
		case FI_CLASS_CNTR:
			ret = gdrfab_cntr_trywait(gdrfab_container_of(
				fids[i], struct gdrfab_cntr, fid.fid));
			break;
		case FI_CLASS_WAIT:
			if (!gdrfab_is_waitset(fids[i]))
				return -FI_EINVAL;
			ret = gdrfab_waitset_trywait(fids[i]);
			break;
		default:
			GDRFAB_WARN(
				FI_LOG_FABRIC,
				"fi_trywait: fid class %zu has no wait object\n",
				fids[i]->fclass);
			return -FI_EINVAL;
		}
		if (ret)
			return ret;
	}
	return 0;
}

static int no_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
			 struct fid_pep **pep, void *context)
{
	(void)fabric, (void)info, (void)pep, (void)context;
	GDRFAB_WARN(FI_LOG_FABRIC,
		    "passive endpoints: gdrfab is FI_EP_RDM only\n");
	return -FI_ENOSYS;
}

static struct fi_ops fabric_fi_ops =
	GDRFAB_FI_OPS(fabric_close, gdrfab_nosys_bind, gdrfab_nosys_control);

/* fi_domain2 with no flags is fi_domain; gdrfab has no domain flags
 * (FI_PEER is for peer providers). */
static int fabric_domain2(struct fid_fabric *fabric, struct fi_info *info,
			  struct fid_domain **domain, uint64_t flags,
			  void *context)
{
	int ret = gdrfab_nosys_flags("fi_domain2", flags);

	return ret ? ret : gdrfab_domain_open(fabric, info, domain, context);
}

static struct fi_ops_fabric fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = gdrfab_domain_open,
	.passive_ep = no_passive_ep,
	.eq_open = gdrfab_eq_open,
	.wait_open = gdrfab_wait_open,
	.trywait = fabric_trywait,
	.domain2 = fabric_domain2,
};

/* Only fabrics that fi_getinfo named can be opened. */
static bool fabric_exists(const char *name)
{
	struct fi_info *infos, *i;
	bool found = false;

	if (gdrfab_getinfo(gdrfab_api_version, NULL, NULL, 0, NULL, &infos))
		return false;
	for (i = infos; i && !found; i = i->next)
		found = !strcmp(i->fabric_attr->name, name);
	fi_freeinfo(infos);
	return found;
}

int gdrfab_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **out,
		       void *context)
{
	struct gdrfab_fabric *fabric;

	if (!attr || !attr->name || !out) {
		GDRFAB_WARN(FI_LOG_FABRIC, "fi_fabric: no fabric name given\n");
		return -FI_EINVAL;
	}
	if (!fabric_exists(attr->name)) {
		GDRFAB_WARN(
			FI_LOG_FABRIC,
			"fi_fabric: no active gdrfab port is on fabric %s\n",
			attr->name);
		return -FI_ENODATA;
	}
	fabric = calloc(1, sizeof(*fabric));
	if (!fabric)
		return -FI_ENOMEM;
	fabric->name = strdup(attr->name);
	if (!fabric->name) {
		free(fabric);
		return -FI_ENOMEM;
	}
	gdrfab_obj_init(&fabric->fid.fid, FI_CLASS_FABRIC, context,
			&fabric_fi_ops);
	fabric->fid.ops = &fabric_ops;
	atomic_init(&fabric->ref, 0);
	*out = &fabric->fid;
	return 0;
}
