/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The code the object layer's fids share (gdrfab_obj_common.h): each
 * object file keeps only what is its own.
 */
#include <sched.h>

#include "gdrfab.h"
#include "gdrfab_obj_common.h"
#include "gdrfab_objs.h"
#include "gdrfab_quarantine.h"

/* While endpoints are bound, a blocking call wakes at least this often to
 * progress them. */
#define WAIT_PROGRESS_SLICE_MS 1

void gdrfab_obj_init(struct fid *fid, size_t fclass, void *context,
		     struct fi_ops *ops)
{
	fid->fclass = fclass;
	fid->context = context;
	fid->ops = ops;
}

bool gdrfab_obj_is(const struct fid *fid, size_t fclass,
		   const struct fi_ops *ops)
{
	return fid && !gdrfab_fid_dead(fid) && fid->fclass == fclass &&
	       fid->ops == ops;
}

int gdrfab_obj_busy(int subsys, const char *what, atomic_int *ref,
		    const char *users)
{
	int n = atomic_load(ref);

	if (!n)
		return 0;
	GDRFAB_WARN(subsys, "fi_close(%s): %d %s\n", what, n, users);
	return -FI_EBUSY;
}

int gdrfab_obj_flags(int subsys, const char *call, uint64_t flags,
		     uint64_t allowed)
{
	if (!(flags & ~allowed))
		return 0;
	GDRFAB_WARN(subsys, "%s: unsupported flags 0x%llx\n", call,
		    (unsigned long long)flags);
	return -FI_EBADFLAGS;
}

int gdrfab_obj_attach_ep(struct gdrfab_eplist *eps, atomic_int *ref,
			 struct gdrfab_ep *ep)
{
	int ret = gdrfab_eplist_add(eps, ep);

	if (ret < 0)
		return ret;
	if (ret)
		atomic_fetch_add(ref, 1);
	return 0;
}

void gdrfab_obj_detach_ep(struct gdrfab_eplist *eps, atomic_int *ref,
			  struct gdrfab_ep *ep)
{
	if (gdrfab_eplist_del(eps, ep))
		atomic_fetch_sub(ref, 1);
}

int gdrfab_waitobj_check(int subsys, const char *call, enum fi_wait_obj obj,
			 const struct fid_wait *set, unsigned accepted)
{
	switch (obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
	case FI_WAIT_YIELD:
	case FI_WAIT_SET:
	case FI_WAIT_MUTEX_COND:
		if (!(accepted & GDRFAB_WAITOBJ_BIT(obj))) {
			GDRFAB_WARN(
				subsys,
				"%s: wait object %s is not supported (use FI_WAIT_FD)\n",
				call, gdrfab_wait_obj_str(obj));
			return -FI_ENOSYS;
		}
		if (obj == FI_WAIT_SET &&
		    !gdrfab_is_waitset(set ? &set->fid : NULL)) {
			GDRFAB_WARN(
				subsys,
				"%s: FI_WAIT_SET without a gdrfab wait set\n",
				call);
			return -FI_EINVAL;
		}
		return 0;
	default:
		GDRFAB_WARN(subsys, "%s: unknown wait object %d\n", call, obj);
		return -FI_EINVAL;
	}
}

int gdrfab_waitobj_open(struct gdrfab_waitobj *w, enum fi_wait_obj obj,
			struct fid_wait *set, struct fid *member)
{
	int ret;

	w->obj = obj == FI_WAIT_UNSPEC ? FI_WAIT_FD : obj;
	w->set = NULL;
	w->signal.fd = -1;
	/* A wait set waits on its members' eventfds. */
	if (w->obj != FI_WAIT_FD && w->obj != FI_WAIT_SET)
		return 0;
	ret = gdrfab_signal_init(&w->signal);
	if (ret || w->obj != FI_WAIT_SET)
		return ret;
	ret = gdrfab_waitset_join(set, member);
	if (ret) {
		gdrfab_signal_fini(&w->signal);
		return ret;
	}
	w->set = set;
	return 0;
}

void gdrfab_waitobj_close(struct gdrfab_waitobj *w, struct fid *member)
{
	if (w->set)
		gdrfab_waitset_leave(w->set, member);
	w->set = NULL;
	gdrfab_signal_fini(&w->signal);
}

int gdrfab_waitobj_control(int fd, enum fi_wait_obj obj, int command, void *arg)
{
	if (!arg)
		return -FI_EINVAL;
	switch (command) {
	case FI_GETWAIT:
		if (fd < 0)
			return -FI_ENODATA;
		*(int *)arg = fd;
		return 0;
	case FI_GETWAITOBJ: *(enum fi_wait_obj *)arg = obj; return 0;
	default: return -FI_ENOSYS;
	}
}

int gdrfab_waitobj_sleep(struct gdrfab_waitobj *w, bool progress,
			 int timeout_ms, long long start_ms)
{
	int left = gdrfab_timeout_left(timeout_ms, start_ms);
	int ret;

	if (!left)
		return -FI_ETIMEDOUT;
	if (w->obj == FI_WAIT_YIELD) {
		sched_yield();
		return 0;
	}
	if (progress && (left < 0 || left > WAIT_PROGRESS_SLICE_MS))
		left = WAIT_PROGRESS_SLICE_MS;
	ret = gdrfab_signal_wait(&w->signal, left);
	return ret == -FI_EAGAIN ? 0 : ret;
}
