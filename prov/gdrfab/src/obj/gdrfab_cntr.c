/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fid_cntr: completion and error counts. fi_cntr_wait progresses the bound
 * endpoints and sleeps on the counter's eventfd between checks.
 */
#include <sched.h>
#include <stdlib.h>

#include "gdrfab.h"
#include "gdrfab_objs.h"
#include "gdrfab_quarantine.h"

#define CNTR_PROGRESS_SLICE_MS 1

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
	gdrfab_signal_raise(&cntr->signal);
	return 0;
}

static int cntr_set(struct fid_cntr *fid, uint64_t value)
{
	struct gdrfab_cntr *cntr =
		gdrfab_container_of(fid, struct gdrfab_cntr, fid);

	atomic_store(&cntr->value, value);
	gdrfab_signal_raise(&cntr->signal);
	return 0;
}

static int cntr_adderr(struct fid_cntr *fid, uint64_t value)
{
	struct gdrfab_cntr *cntr =
		gdrfab_container_of(fid, struct gdrfab_cntr, fid);

	atomic_fetch_add(&cntr->errors, value);
	gdrfab_signal_raise(&cntr->signal);
	return 0;
}

static int cntr_seterr(struct fid_cntr *fid, uint64_t value)
{
	struct gdrfab_cntr *cntr =
		gdrfab_container_of(fid, struct gdrfab_cntr, fid);

	atomic_store(&cntr->errors, value);
	gdrfab_signal_raise(&cntr->signal);
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

	if (cntr->wait_obj == FI_WAIT_NONE) {
		GDRFAB_WARN(FI_LOG_CNTR, "fi_cntr_wait on a counter opened "
					 "with FI_WAIT_NONE\n");
		return -FI_EINVAL;
	}
	for (;;) {
		int left;

		progress_eps(cntr);
		if (atomic_load(&cntr->value) >= threshold)
			return 0;
		if (atomic_load(&cntr->errors) != errors)
			return -FI_EAVAIL;
		left = gdrfab_timeout_left(timeout, start);
		if (!left)
			return -FI_ETIMEDOUT;
		if (cntr->wait_obj == FI_WAIT_YIELD) {
			sched_yield();
			continue;
		}
		if (cntr->eps.cnt &&
		    (left < 0 || left > CNTR_PROGRESS_SLICE_MS))
			left = CNTR_PROGRESS_SLICE_MS;
		gdrfab_signal_wait(&cntr->signal, left);
		gdrfab_signal_clear(&cntr->signal);
	}
}

uint64_t gdrfab_cntr_events(struct gdrfab_cntr *cntr)
{
	progress_eps(cntr);
	return atomic_load(&cntr->value) + atomic_load(&cntr->errors);
}

int gdrfab_cntr_trywait(struct gdrfab_cntr *cntr)
{
	if (cntr->signal.fd < 0)
		return -FI_EINVAL;
	gdrfab_signal_clear(&cntr->signal);
	return 0;
}

static int cntr_control(struct fid *fid, int command, void *arg)
{
	struct gdrfab_cntr *cntr =
		gdrfab_container_of(fid, struct gdrfab_cntr, fid.fid);

	if (!arg)
		return -FI_EINVAL;
	switch (command) {
	case FI_GETWAIT:
		if (cntr->signal.fd < 0)
			return -FI_ENODATA;
		*(int *)arg = cntr->signal.fd;
		return 0;
	case FI_GETWAITOBJ: *(enum fi_wait_obj *)arg = cntr->wait_obj; return 0;
	default: return -FI_ENOSYS;
	}
}

static int cntr_close(struct fid *fid)
{
	struct gdrfab_cntr *cntr =
		gdrfab_container_of(fid, struct gdrfab_cntr, fid.fid);

	if (atomic_load(&cntr->ref)) {
		GDRFAB_WARN(FI_LOG_CNTR,
			    "fi_close(cntr): %d endpoints are "
			    "still bound to it\n",
			    atomic_load(&cntr->ref));
		return -FI_EBUSY;
	}
	if (cntr->wait_set)
		gdrfab_waitset_leave(cntr->wait_set, &cntr->fid.fid);
	gdrfab_signal_fini(&cntr->signal);
	gdrfab_eplist_fini(&cntr->eps);
	atomic_fetch_sub(&cntr->domain->ref, 1);
	gdrfab_fid_retire(&cntr->fid.fid, cntr);
	return 0;
}

int gdrfab_cntr_attach_ep(struct gdrfab_cntr *cntr, struct gdrfab_ep *ep)
{
	int ret = gdrfab_eplist_add(&cntr->eps, ep);

	if (ret < 0)
		return ret;
	if (ret)
		atomic_fetch_add(&cntr->ref, 1);
	return 0;
}

void gdrfab_cntr_detach_ep(struct gdrfab_cntr *cntr, struct gdrfab_ep *ep)
{
	if (gdrfab_eplist_del(&cntr->eps, ep))
		atomic_fetch_sub(&cntr->ref, 1);
}

static struct fi_ops cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cntr_close,
	.bind = gdrfab_nosys_bind,
	.control = cntr_control,
	.ops_open = gdrfab_nosys_ops_open,
	.tostr = gdrfab_nosys_tostr,
	.ops_set = gdrfab_nosys_ops_set,
};

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
		GDRFAB_WARN(FI_LOG_CNTR, "fi_cntr_open: only "
					 "FI_CNTR_EVENTS_COMP is supported\n");
		return -FI_ENOSYS;
	}
	if (attr && attr->flags) {
		GDRFAB_WARN(FI_LOG_CNTR,
			    "fi_cntr_open: unsupported flags "
			    "0x%llx\n",
			    (unsigned long long)attr->flags);
		return -FI_EBADFLAGS;
	}
	switch (wait_obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
	case FI_WAIT_YIELD: break;
	case FI_WAIT_SET:
		if (!gdrfab_is_waitset(attr->wait_set ? &attr->wait_set->fid
						      : NULL)) {
			GDRFAB_WARN(FI_LOG_CNTR, "fi_cntr_open: FI_WAIT_SET "
						 "without a gdrfab wait set\n");
			return -FI_EINVAL;
		}
		break;
	case FI_WAIT_MUTEX_COND:
		GDRFAB_WARN(FI_LOG_CNTR,
			    "fi_cntr_open: wait object %s is not "
			    "supported (use FI_WAIT_FD)\n",
			    gdrfab_wait_obj_str(wait_obj));
		return -FI_ENOSYS;
	default:
		GDRFAB_WARN(FI_LOG_CNTR,
			    "fi_cntr_open: unknown wait object "
			    "%d\n",
			    wait_obj);
		return -FI_EINVAL;
	}
	domain = gdrfab_container_of(domain_fid, struct gdrfab_domain, fid);
	cntr = calloc(1, sizeof(*cntr));
	if (!cntr)
		return -FI_ENOMEM;
	cntr->domain = domain;
	cntr->wait_obj = wait_obj == FI_WAIT_UNSPEC ? FI_WAIT_FD : wait_obj;
	cntr->signal.fd = -1;
	if ((cntr->wait_obj == FI_WAIT_FD || cntr->wait_obj == FI_WAIT_SET) &&
	    (ret = gdrfab_signal_init(&cntr->signal))) {
		free(cntr);
		return ret;
	}
	atomic_init(&cntr->value, 0);
	atomic_init(&cntr->errors, 0);
	atomic_init(&cntr->ref, 0);
	gdrfab_eplist_init(&cntr->eps, gdrfab_domain_locks(domain));
	cntr->fid.fid.fclass = FI_CLASS_CNTR;
	cntr->fid.fid.context = context;
	cntr->fid.fid.ops = &cntr_fi_ops;
	cntr->fid.ops = &cntr_ops;
	if (cntr->wait_obj == FI_WAIT_SET) {
		ret = gdrfab_waitset_join(attr->wait_set, &cntr->fid.fid);
		if (ret) {
			gdrfab_signal_fini(&cntr->signal);
			gdrfab_eplist_fini(&cntr->eps);
			free(cntr);
			return ret;
		}
		cntr->wait_set = attr->wait_set;
	}
	atomic_fetch_add(&domain->ref, 1);
	*out = &cntr->fid;
	return 0;
}

bool gdrfab_is_cntr(const struct fid *fid)
{
	return fid && !gdrfab_fid_dead(fid) && fid->fclass == FI_CLASS_CNTR &&
	       fid->ops == &cntr_fi_ops;
}
