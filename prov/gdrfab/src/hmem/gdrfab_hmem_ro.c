/* SPDX-License-Identifier: BSD-2-Clause */
/* Data registrations with relaxed ordering (gdrfab_hmem_ro.h). */
#include <errno.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_hmem_ro.h"
#include "gdrfab_params.h"
#include "gdrfab_verbs_ops.h"

static int ro_access(atomic_bool *refused)
{
	if (gdrfab_params.relaxed_ordering == GDRFAB_RELAXED_ORDERING_OFF ||
	    atomic_load_explicit(refused, memory_order_relaxed))
		return 0;
	return IBV_ACCESS_RELAXED_ORDERING;
}

int gdrfab_hmem_ro_access(struct gdrfab_hmem_domain *h)
{
	return ro_access(&h->ro_refused);
}

static struct ibv_mr *reg_once(const struct gdrfab_data_reg *a, int access)
{
	if (a->fd >= 0)
		return gdrfab_vops->reg_dmabuf_mr(a->pd, a->offset, a->len,
						  a->iova, a->fd, access);
	return gdrfab_vops->reg_mr(a->pd, (void *)(uintptr_t)a->iova, a->len,
				   access);
}

/* Several threads may fall back at once: the first to say so logs. */
static void note_refused(atomic_bool *refused, const char *name, int err)
{
	const char *mode =
		gdrfab_relaxed_ordering_names[gdrfab_params.relaxed_ordering];

	if (atomic_exchange(refused, true))
		return;
	if (gdrfab_params.relaxed_ordering == GDRFAB_RELAXED_ORDERING_ON)
		GDRFAB_WARN(
			FI_LOG_MR,
			"%s: the device refuses IBV_ACCESS_RELAXED_ORDERING (%s): data registrations go without it (FI_GDRFAB_RELAXED_ORDERING=%s)\n",
			name, strerror(err), mode);
	else
		GDRFAB_INFO(
			FI_LOG_MR,
			"%s: the device refuses IBV_ACCESS_RELAXED_ORDERING (%s): data registrations go without it (FI_GDRFAB_RELAXED_ORDERING=%s)\n",
			name, strerror(err), mode);
}

/* One device's registration, refused remembering that device's refusal. */
static struct ibv_mr *reg_data(atomic_bool *refused, const char *name,
			       const struct gdrfab_data_reg *a)
{
	int ro = ro_access(refused);
	struct ibv_mr *mr = reg_once(a, a->access | ro);
	int err;

	if (mr || !ro)
		return mr;
	err = errno;
	if (err != EINVAL && err != EOPNOTSUPP)
		return NULL;
	/* Was it the bit? Only a registration that then works says so:
	 * one that fails again failed for its own reason (a GPU range the
	 * kernel cannot pin is EINVAL too), and keeps that errno. */
	mr = reg_once(a, a->access);
	if (mr)
		note_refused(refused, name, err);
	return mr;
}

struct ibv_mr *gdrfab_hmem_reg_data(struct gdrfab_hmem_domain *h,
				    const struct gdrfab_data_reg *a)
{
	return reg_data(&h->ro_refused, h->name, a);
}

struct ibv_mr *gdrfab_hmem_reg_data_rail(struct gdrfab_hmem_domain *h,
					 size_t rail,
					 const struct gdrfab_data_reg *a)
{
	struct gdrfab_hmem_rail *r;

	if (!rail)
		return gdrfab_hmem_reg_data(h, a);
	r = &h->more_rails[rail - 1];
	return reg_data(&r->ro_refused, r->name, a);
}
