/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fid_cntr: completion and error counts. fi_cntr_wait progresses the bound
 * endpoints and sleeps on the counter's eventfd between checks.
 */
#include <stdlib.h>

#include "gdrfab.h"
#include "gdrfab_obj_common.h"
#include "gdrfab_objs.h"
#include "gdrfab_quarantine.h"

/* What a counter can be waited with. */
#define CNTR_WAIT_OBJS                                                         \
	(GDRFAB_WAITOBJ_BASIC | GDRFAB_WAITOBJ_BIT(FI_WAIT_YIELD) |            \
	 GDRFAB_WAITOBJ_BIT(FI_WAIT_SET))

static void progress_eps(struct gdrfab_cntr *cntr)
{
	gdrfab_eplist_progress(&cntr->eps, gdrfab_ep_progress);
}

static uint64_t cntr_read(struct fid_cntr *fid)
{
	struct gdrfab_cntr *cntr =
		gdrfab_container_of(fid, struct gdrfab_cntr, fid);

	progress_eps(cntr);
	return atomic_load(&cntr->value);
}

static uint64_t cntr_readerr(struct fid_cntr *fid)
{
	struct gdrfab_cntr *cntr =
		gdrfab_container_of(fid, struct gdrfab_cntr, fid);

	progress_eps(cntr);
	return atomic_load(&cntr->errors);
}

static int cntr_add(struct fid_cntr *fid, uint64_t value)
{
	struct gdrfab_cntr *cntr =
		gdrfab_container_of(fid, struct gdrfab_cntr, fid);

	atomic_fetch_add(&cntr->value, value);
	gdrfab_signal_raise(&cntr->wait.signal);
	return 0;
}

static int cntr_set(struct fid_cntr *fid, uint64_t value)
{
	struct gdrfab_cntr *cntr =
		gdrfab_container_of(fid, struct gdrfab_cntr, fid);

	atomic_store(&cntr->value, value);
	gdrfab_signal_raise(&cntr->wait.signal);
	return 0;
}

static int cntr_adderr(struct fid_cntr *fid, uint64_t value)
{
	struct gdrfab_cntr *cntr =
		gdrfab_container_of(fid, struct gdrfab_cntr, fid);

	atomic_fetch_add(&cntr->errors, value);
	gdrfab_signal_raise(&cntr->wait.signal);
	return 0;
}

static int cntr_seterr(struct fid_cntr *fid, uint64_t value)
{
	struct gdrfab_cntr *cntr =
		gdrfab_container_of(fid, struct gdrfab_cntr, fid);

	atomic_store(&cntr->errors, value);
	gdrfab_signal_raise(&cntr->wait.signal);
	return 0;
}

/* Returns 0 once the count reaches threshold, -FI_EAVAIL if an error was
 * counted meanwhile, -FI_ETIMEDOUT after timeout ms (-1: never). */
static int cntr_wait(struct fid_cntr *fid, uint64_t threshold, int timeout)
{
	struct gdrfab_cntr *cntr =
		gdrfab_container_of(fid, struct gdrfab_cntr, fid);
	uint64_t errors = atomic_load(&cntr->errors);
	long long start = gdrfab_now_ms();

	if (cntr->wait.obj == FI_WAIT_NONE) {
		GDRFAB_WARN(
			FI_LOG_CNTR,
			"fi_cntr_wait on a counter opened with FI_WAIT_NONE\n");
		return -FI_EINVAL;
	}
	for (;;) {
		progress_eps(cntr);
		if (atomic_load(&cntr->value) >= threshold)
			return 0;
		if (atomic_load(&cntr->errors) != errors)
			return -FI_EAVAIL;
		/* The counts say whether to return: a failed sleep only
		 * means checking them again. */
		if (gdrfab_waitobj_sleep(&cntr->wait, cntr->eps.cnt, timeout,
					 start) == -FI_ETIMEDOUT)
			return -FI_ETIMEDOUT;
		gdrfab_signal_clear(&cntr->wait.signal);
	}
}

uint64_t gdrfab_cntr_events(struct gdrfab_cntr *cntr)
{
	progress_eps(cntr);
	return atomic_load(&cntr->value) + atomic_load(&cntr->errors);
}

int gdrfab_cntr_trywait(struct gdrfab_cntr *cntr)
{
	if (cntr->wait.signal.fd < 0)
		return -FI_EINVAL;
	gdrfab_signal_clear(&cntr->wait.signal);
	return 0;
}

static int cntr_control(struct fid *fid, int command, void *arg)
{
	struct gdrfab_cntr *cntr =
		gdrfab_container_of(fid, struct gdrfab_cntr, fid.fid);

	return gdrfab_waitobj_control(cntr->wait.signal.fd, cntr->wait.obj,
				      command, arg);
}

static int cntr_close(struct fid *fid)
{
	struct gdrfab_cntr *cntr =
		gdrfab_container_of(fid, struct gdrfab_cntr, fid.fid);
	int ret = gdrfab_obj_busy(FI_LOG_CNTR, "cntr", &cntr->ref,
				  "endpoints are still bound to it");

	if (ret)
		return ret;
	gdrfab_waitobj_close(&cntr->wait, &cntr->fid.fid);
	gdrfab_eplist_fini(&cntr->eps);
	atomic_fetch_sub(&cntr->domain->ref, 1);
	gdrfab_fid_retire(&cntr->fid.fid, cntr);
	return 0;
}

int gdrfab_cntr_attach_ep(struct gdrfab_cntr *cntr, struct gdrfab_ep *ep)
{
	return gdrfab_obj_attach_ep(&cntr->eps, &cntr->ref, ep);
}

void gdrfab_cntr_detach_ep(struct gdrfab_cntr *cntr, struct gdrfab_ep *ep)
{
	gdrfab_obj_detach_ep(&cntr->eps, &cntr->ref, ep);
}

static struct fi_ops cntr_fi_ops =
	GDRFAB_FI_OPS(cntr_close, gdrfab_nosys_bind, cntr_control);

static struct fi_ops_cntr cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = cntr_read,
	.readerr = cntr_readerr,
	.add = cntr_add,
	.set = cntr_set,
	.wait = cntr_wait,
	.adderr = cntr_adderr,
	.seterr = cntr_seterr,
};

int gdrfab_cntr_open(struct fid_domain *domain_fid, struct fi_cntr_attr *attr,
		     struct fid_cntr **out, void *context)
{
	struct gdrfab_domain *domain;
	struct gdrfab_cntr *cntr;
	enum fi_wait_obj wait_obj;
	int ret;

	if (!gdrfab_fid_is(&domain_fid->fid, FI_CLASS_DOMAIN) || !out)
		return -FI_EINVAL;
	/* A NULL attr means the defaults (fi_cntr(3)). */
	wait_obj = attr ? attr->wait_obj : FI_WAIT_UNSPEC;
	if (attr && attr->events != FI_CNTR_EVENTS_COMP) {
		GDRFAB_WARN(
			FI_LOG_CNTR,
			"fi_cntr_open: only FI_CNTR_EVENTS_COMP is supported\n");
		return -FI_ENOSYS;
	}
	ret = gdrfab_obj_flags(FI_LOG_CNTR, "fi_cntr_open",
			       attr ? attr->flags : 0, 0);
	if (ret)
		return ret;
	ret = gdrfab_waitobj_check(FI_LOG_CNTR, "fi_cntr_open", wait_obj,
				   attr ? attr->wait_set : NULL,
				   CNTR_WAIT_OBJS);
	if (ret)
		return ret;
	domain = gdrfab_container_of(domain_fid, struct gdrfab_domain, fid);
	cntr = calloc(1, sizeof(*cntr));
	if (!cntr)
		return -FI_ENOMEM;
	cntr->domain = domain;
	atomic_init(&cntr->value, 0);
	atomic_init(&cntr->errors, 0);
	atomic_init(&cntr->ref, 0);
	gdrfab_eplist_init(&cntr->eps, gdrfab_domain_locks(domain));
	gdrfab_obj_init(&cntr->fid.fid, FI_CLASS_CNTR, context, &cntr_fi_ops);
	cntr->fid.ops = &cntr_ops;
	/* Last: a wait set may read the counter as soon as it joins. */
	ret = gdrfab_waitobj_open(&cntr->wait, wait_obj,
				  attr ? attr->wait_set : NULL, &cntr->fid.fid);
	if (ret) {
		gdrfab_eplist_fini(&cntr->eps);
		free(cntr);
		return ret;
	}
	atomic_fetch_add(&domain->ref, 1);
	*out = &cntr->fid;
	return 0;
}

bool gdrfab_is_cntr(const struct fid *fid)
{
	return gdrfab_obj_is(fid, FI_CLASS_CNTR, &cntr_fi_ops);
}
