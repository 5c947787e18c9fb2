/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fid_eq: a queue of events. gdrfab's RDM endpoints raise no connection
 * events and report their errors on CQs, so the EQ carries only what the
 * application writes (fi_eq_write); fi_eq_readerr finds nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_obj_common.h"
#include "gdrfab_objs.h"
#include "gdrfab_quarantine.h"
#include "gdrfab_strerror.h"

static void eq_push(struct gdrfab_eq *eq, struct gdrfab_eq_event *ev)
{
	pthread_mutex_lock(&eq->lock);
	if (eq->tail)
		eq->tail->next = ev;
	else
		eq->head = ev;
	eq->tail = ev;
	gdrfab_signal_raise(&eq->wait.signal);
	pthread_mutex_unlock(&eq->lock);
}

/* Unlinks the head; the caller holds the lock. */
static void eq_pop_locked(struct gdrfab_eq *eq)
{
	eq->head = eq->head->next;
	if (!eq->head) {
		eq->tail = NULL;
		gdrfab_signal_clear(&eq->wait.signal);
	}
}

static ssize_t eq_read(struct fid_eq *eq_fid, uint32_t *event, void *buf,
		       size_t len, uint64_t flags)
{
	struct gdrfab_eq *eq =
		gdrfab_container_of(eq_fid, struct gdrfab_eq, fid);
	struct gdrfab_eq_event *ev;
	ssize_t ret;

	if (flags & ~(uint64_t)FI_PEEK)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&eq->lock);
	ev = eq->head;
	if (!ev) {
		ret = -FI_EAGAIN;
	} else if (len < ev->len || (!buf && ev->len)) {
		ret = -FI_ETOOSMALL;
	} else {
		if (event)
			*event = ev->event;
		if (ev->len)
			memcpy(buf, ev->data, ev->len);
		ret = (ssize_t)ev->len;
		if (!(flags & FI_PEEK)) {
			eq_pop_locked(eq);
			free(ev);
		}
	}
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static ssize_t eq_readerr(struct fid_eq *eq_fid, struct fi_eq_err_entry *buf,
			  uint64_t flags)
{
	(void)eq_fid;
	if (!buf)
		return -FI_EINVAL;
	if (flags & ~(uint64_t)FI_PEEK)
		return -FI_EBADFLAGS;
	return -FI_EAGAIN;
}

static struct gdrfab_eq_event *new_event(uint32_t event, const void *buf,
					 size_t len)
{
	struct gdrfab_eq_event *ev = calloc(1, sizeof(*ev) + len);

	if (!ev)
		return NULL;
	ev->event = event;
	ev->len = len;
	if (len)
		memcpy(ev->data, buf, len);
	return ev;
}

/* fi_eq_write: flags are reserved (fi_eq(3)), so they are ignored. */
static ssize_t eq_write(struct fid_eq *eq_fid, uint32_t event, const void *buf,
			size_t len, uint64_t flags)
{
	struct gdrfab_eq *eq =
		gdrfab_container_of(eq_fid, struct gdrfab_eq, fid);
	struct gdrfab_eq_event *ev;

	(void)flags;
	if (!buf && len) {
		GDRFAB_WARN(FI_LOG_EQ,
			    "fi_eq_write: NULL buffer of %zu bytes\n", len);
		return -FI_EINVAL;
	}
	ev = new_event(event, buf, len);
	if (!ev)
		return -FI_ENOMEM;
	eq_push(eq, ev);
	return (ssize_t)len;
}

static ssize_t eq_sread(struct fid_eq *eq_fid, uint32_t *event, void *buf,
			size_t len, int timeout, uint64_t flags)
{
	struct gdrfab_eq *eq =
		gdrfab_container_of(eq_fid, struct gdrfab_eq, fid);
	long long start = gdrfab_now_ms();

	if (eq->wait.signal.fd < 0) {
		GDRFAB_WARN(FI_LOG_EQ,
			    "fi_eq_sread on an EQ opened with FI_WAIT_NONE\n");
		return -FI_ENOSYS;
	}
	for (;;) {
		ssize_t ret = eq_read(eq_fid, event, buf, len, flags);

		if (ret != -FI_EAGAIN)
			return ret;
		/* Nothing to progress: EQ events come from the application,
		 * whose writes raise the eventfd. */
		ret = gdrfab_waitobj_sleep(&eq->wait, false, timeout, start);
		if (ret == -FI_ETIMEDOUT)
			return -FI_EAGAIN;
		if (ret)
			return ret;
	}
}

static const char *eq_strerror(struct fid_eq *eq, int prov_errno,
			       const void *err_data, char *buf, size_t len)
{
	(void)eq, (void)err_data;
	return gdrfab_prov_strerror(prov_errno, buf, len);
}

int gdrfab_eq_trywait(struct gdrfab_eq *eq)
{
	bool pending;

	if (eq->wait.signal.fd < 0)
		return -FI_EINVAL;
	pthread_mutex_lock(&eq->lock);
	pending = eq->head != NULL;
	pthread_mutex_unlock(&eq->lock);
	return pending ? -FI_EAGAIN : 0;
}

static int eq_control(struct fid *fid, int command, void *arg)
{
	struct gdrfab_eq *eq =
		gdrfab_container_of(fid, struct gdrfab_eq, fid.fid);

	return gdrfab_waitobj_control(eq->wait.signal.fd, eq->wait.obj, command,
				      arg);
}

static int eq_close(struct fid *fid)
{
	struct gdrfab_eq *eq =
		gdrfab_container_of(fid, struct gdrfab_eq, fid.fid);
	int ret = gdrfab_obj_busy(FI_LOG_EQ, "eq", &eq->ref,
				  "endpoints are still bound to it");

	if (ret)
		return ret;
	while (eq->head) {
		struct gdrfab_eq_event *next = eq->head->next;

		free(eq->head);
		eq->head = next;
	}
	gdrfab_waitobj_close(&eq->wait, &eq->fid.fid);
	pthread_mutex_destroy(&eq->lock);
	atomic_fetch_sub(&eq->fabric->ref, 1);
	gdrfab_fid_retire(&eq->fid.fid, eq);
	return 0;
}

static struct fi_ops eq_fi_ops =
	GDRFAB_FI_OPS(eq_close, gdrfab_nosys_bind, eq_control);

static struct fi_ops_eq eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = eq_read,
	.readerr = eq_readerr,
	.write = eq_write,
	.sread = eq_sread,
	.strerror = eq_strerror,
};

int gdrfab_eq_open(struct fid_fabric *fabric_fid, struct fi_eq_attr *attr,
		   struct fid_eq **out, void *context)
{
	struct gdrfab_fabric *fabric;
	struct gdrfab_eq *eq;
	int ret;

	if (!gdrfab_fid_is(&fabric_fid->fid, FI_CLASS_FABRIC) || !attr || !out)
		return -FI_EINVAL;
	/* Not FI_WAIT_SET nor FI_WAIT_YIELD: nothing but the application
	 * fills an EQ, so there is no progress to wait for. */
	ret = gdrfab_waitobj_check(FI_LOG_EQ, "fi_eq_open", attr->wait_obj,
				   NULL, GDRFAB_WAITOBJ_BASIC);
	if (ret)
		return ret;
	ret = gdrfab_obj_flags(FI_LOG_EQ, "fi_eq_open", attr->flags, FI_WRITE);
	if (ret)
		return ret;
	fabric = gdrfab_container_of(fabric_fid, struct gdrfab_fabric, fid);
	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	eq->fabric = fabric;
	ret = gdrfab_waitobj_open(&eq->wait, attr->wait_obj, NULL,
				  &eq->fid.fid);
	if (ret) {
		free(eq);
		return ret;
	}
	pthread_mutex_init(&eq->lock, NULL);
	atomic_init(&eq->ref, 0);
	gdrfab_obj_init(&eq->fid.fid, FI_CLASS_EQ, context, &eq_fi_ops);
	eq->fid.ops = &eq_ops;
	atomic_fetch_add(&fabric->ref, 1);
	*out = &eq->fid;
	return 0;
}
