/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Poll sets (fi_poll(3): fi_poll_open, fi_poll_add, fi_poll_del, fi_poll)
 * and wait sets (fi_wait_open, fi_wait) over gdrfab's CQs and counters.
 *
 * fi_poll progresses each member's endpoints, as a read of it would, and
 * returns the contexts of those with something to read: a CQ holding
 * completions or errors, a counter whose count or error count changed
 * since this poll set last reported it. A member cannot be closed while
 * it is in a set (fi_close says -FI_EBUSY); closing the set lets go of
 * its members.
 *
 * A wait set gathers the wait objects (eventfds) of the CQs and counters
 * opened with FI_WAIT_SET and it as their wait_set: fi_wait returns once
 * one of them has something to read, progressing their endpoints while
 * it sleeps (manual progress), and FI_GETWAIT gives an epoll fd over them.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "gdrfab.h"
#include "gdrfab_obj_common.h"
#include "gdrfab_objs.h"
#include "gdrfab_quarantine.h"

#define WAIT_PROGRESS_SLICE_MS 1

struct member {
	struct fid *fid;
	uint64_t seen; /* a counter's count + errors when last reported */
};

/* What a member has to read; a counter's events are counted against
 * *seen, which moves on when update is set. */
static bool member_ready(struct member *m, bool update)
{
	if (m->fid->fclass == FI_CLASS_CQ)
		return gdrfab_cq_ready(
			gdrfab_container_of(m->fid, struct gdrfab_cq, fid.fid));
	{
		uint64_t now = gdrfab_cntr_events(gdrfab_container_of(
			m->fid, struct gdrfab_cntr, fid.fid));
		bool changed = now != m->seen;

		if (update)
			m->seen = now;
		return changed;
	}
}

static int member_hold(struct fid *fid, int delta)
{
	if (fid->fclass == FI_CLASS_CQ)
		return atomic_fetch_add(
			&gdrfab_container_of(fid, struct gdrfab_cq, fid.fid)
				 ->ref,
			delta);
	return atomic_fetch_add(
		&gdrfab_container_of(fid, struct gdrfab_cntr, fid.fid)->ref,
		delta);
}

static int member_add(struct member **arr, size_t *cnt, size_t *cap,
		      struct fid *fid)
{
	for (size_t i = 0; i < *cnt; i++) {
		if ((*arr)[i].fid == fid)
			return -FI_EALREADY;
	}
	if (*cnt == *cap) {
		size_t n = *cap ? 2 * *cap : 8;
		struct member *grown = realloc(*arr, n * sizeof(*grown));

		if (!grown)
			return -FI_ENOMEM;
		*arr = grown;
		*cap = n;
	}
	(*arr)[*cnt].fid = fid;
	(*arr)[*cnt].seen = 0;
	if (fid->fclass == FI_CLASS_CNTR)
		(*arr)[*cnt].seen = gdrfab_cntr_events(
			gdrfab_container_of(fid, struct gdrfab_cntr, fid.fid));
	(*cnt)++;
	return 0;
}

static int member_del(struct member *arr, size_t *cnt, struct fid *fid)
{
	for (size_t i = 0; i < *cnt; i++) {
		if (arr[i].fid == fid) {
			arr[i] = arr[--*cnt];
			return 0;
		}
	}
	return -FI_ENOENT;
}

/* ---- poll sets ---- */

struct gdrfab_poll {
	struct fid_poll fid;
	struct gdrfab_domain *domain;
	struct gdrfab_lock lock;
	struct member *members;
	size_t cnt, cap;
	size_t next; /* where the next fi_poll starts: fairness */
};

/* A gdrfab CQ or counter of the domain. */
static bool pollable(struct gdrfab_domain *domain, struct fid *fid)
{
	if (!fid || gdrfab_fid_dead(fid))
		return false;
	if (gdrfab_is_cq(fid))
		return gdrfab_container_of(fid, struct gdrfab_cq, fid.fid)
			       ->domain == domain;
	if (gdrfab_is_cntr(fid))
		return gdrfab_container_of(fid, struct gdrfab_cntr, fid.fid)
			       ->domain == domain;
	return false;
}

static int poll_poll(struct fid_poll *fid, void **context, int count)
{
	struct gdrfab_poll *ps =
		gdrfab_container_of(fid, struct gdrfab_poll, fid);
	int found = 0;

	if (count < 0 || (count && !context)) {
		GDRFAB_WARN(FI_LOG_DOMAIN, "fi_poll: count %d, context %p\n",
			    count, (void *)context);
		return -FI_EINVAL;
	}
	gdrfab_lock_acquire(&ps->lock);
	for (size_t n = 0; n < ps->cnt && found < count; n++) {
		size_t i = (ps->next + n) % ps->cnt;

		if (member_ready(&ps->members[i], true))
			context[found++] = ps->members[i].fid->context;
	}
	if (ps->cnt)
		ps->next = (ps->next + 1) % ps->cnt;
	gdrfab_lock_release(&ps->lock);
	return found;
}

static int poll_add(struct fid_poll *fid, struct fid *event_fid, uint64_t flags)
{
	struct gdrfab_poll *ps =
		gdrfab_container_of(fid, struct gdrfab_poll, fid);
	int ret;

	if (flags) {
		GDRFAB_WARN(FI_LOG_DOMAIN, "fi_poll_add: flags 0x%llx\n",
			    (unsigned long long)flags);
		return -FI_EBADFLAGS;
	}
	if (!pollable(ps->domain, event_fid)) {
		GDRFAB_WARN(
			FI_LOG_DOMAIN,
			"fi_poll_add: not a CQ or counter of this domain\n");
		return -FI_EINVAL;
	}
	gdrfab_lock_acquire(&ps->lock);
	ret = member_add(&ps->members, &ps->cnt, &ps->cap, event_fid);
	if (!ret)
		member_hold(event_fid, 1);
	gdrfab_lock_release(&ps->lock);
	if (ret == -FI_EALREADY)
		GDRFAB_WARN(FI_LOG_DOMAIN, "fi_poll_add: already in the set\n");
	return ret;
}

static int poll_del(struct fid_poll *fid, struct fid *event_fid, uint64_t flags)
{
	struct gdrfab_poll *ps =
		gdrfab_container_of(fid, struct gdrfab_poll, fid);
	int ret;

	if (flags)
		return -FI_EBADFLAGS;
	if (!event_fid)
		return -FI_EINVAL;
	gdrfab_lock_acquire(&ps->lock);
	ret = member_del(ps->members, &ps->cnt, event_fid);
	if (!ret)
		member_hold(event_fid, -1);
	gdrfab_lock_release(&ps->lock);
	if (ret)
		GDRFAB_WARN(FI_LOG_DOMAIN, "fi_poll_del: not in the set\n");
	return ret;
}

static int poll_close(struct fid *fid)
{
	struct gdrfab_poll *ps =
		gdrfab_container_of(fid, struct gdrfab_poll, fid.fid);

	for (size_t i = 0; i < ps->cnt; i++)
		member_hold(ps->members[i].fid, -1);
	free(ps->members);
	ps->members = NULL;
	gdrfab_lock_fini(&ps->lock);
	atomic_fetch_sub(&ps->domain->ref, 1);
	gdrfab_fid_retire(&ps->fid.fid, ps);
	return 0;
}

static struct fi_ops poll_fi_ops =
	GDRFAB_FI_OPS(poll_close, gdrfab_nosys_bind, gdrfab_nosys_control);

static struct fi_ops_poll poll_ops = {
	.size = sizeof(struct fi_ops_poll),
	.poll = poll_poll,
	.poll_add = poll_add,
	.poll_del = poll_del,
};

int gdrfab_poll_open(struct fid_domain *domain_fid, struct fi_poll_attr *attr,
		     struct fid_poll **out)
{
	struct gdrfab_domain *domain;
	struct gdrfab_poll *ps;

	if (!gdrfab_fid_is(&domain_fid->fid, FI_CLASS_DOMAIN) || !out)
		return -FI_EINVAL;
	if (attr && attr->flags) {
		GDRFAB_WARN(FI_LOG_DOMAIN, "fi_poll_open: flags 0x%llx\n",
			    (unsigned long long)attr->flags);
		return -FI_EBADFLAGS;
	}
	domain = gdrfab_container_of(domain_fid, struct gdrfab_domain, fid);
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -FI_ENOMEM;
	ps->domain = domain;
	gdrfab_lock_init(&ps->lock, true);
	gdrfab_obj_init(&ps->fid.fid, FI_CLASS_POLL, NULL, &poll_fi_ops);
	ps->fid.ops = &poll_ops;
	atomic_fetch_add(&domain->ref, 1);
	*out = &ps->fid;
	return 0;
}

/* ---- wait sets ---- */

struct gdrfab_waitset {
	struct fid_wait fid;
	struct gdrfab_fabric *fabric;
	pthread_mutex_t lock;
	struct member *members;
	size_t cnt, cap;
	int epfd;	/* the members' eventfds, for FI_GETWAIT */
	atomic_int ref; /* members */
};

bool gdrfab_is_waitset(const struct fid *fid);

/* The eventfd behind a member. */
static int member_fd(const struct fid *fid)
{
	if (fid->fclass == FI_CLASS_CQ)
		return gdrfab_container_of(fid, struct gdrfab_cq, fid.fid)
			->wait.signal.fd;
	return gdrfab_container_of(fid, struct gdrfab_cntr, fid.fid)
		->wait.signal.fd;
}

static bool any_ready(struct gdrfab_waitset *ws, bool update)
{
	bool ready = false;

	pthread_mutex_lock(&ws->lock);
	for (size_t i = 0; i < ws->cnt; i++) {
		struct fid *fid = ws->members[i].fid;

		/* A counter's eventfd says "it moved", and stays readable:
		 * the count itself says whether it moved since. */
		if (fid->fclass == FI_CLASS_CNTR)
			gdrfab_signal_clear(
				&gdrfab_container_of(fid, struct gdrfab_cntr,
						     fid.fid)
					 ->wait.signal);
		ready |= member_ready(&ws->members[i], update);
	}
	pthread_mutex_unlock(&ws->lock);
	return ready;
}

static int wait_wait(struct fid_wait *fid, int timeout)
{
	struct gdrfab_waitset *ws =
		gdrfab_container_of(fid, struct gdrfab_waitset, fid);
	long long start = gdrfab_now_ms();

	for (;;) {
		struct pollfd pfd[64];
		nfds_t n = 0;
		int left;

		if (any_ready(ws, true))
			return 0;
		left = gdrfab_timeout_left(timeout, start);
		if (!left)
			return -FI_ETIMEDOUT;
		pthread_mutex_lock(&ws->lock);
		for (size_t i = 0; i < ws->cnt && n < 64; i++) {
			pfd[n].fd = member_fd(ws->members[i].fid);
			pfd[n++].events = POLLIN;
		}
		pthread_mutex_unlock(&ws->lock);
		/* Endpoints progress only when asked: wake often. */
		if (left < 0 || left > WAIT_PROGRESS_SLICE_MS)
			left = WAIT_PROGRESS_SLICE_MS;
		if (poll(pfd, n, left) < 0 && errno != EINTR)
			return -FI_EOTHER;
	}
}

int gdrfab_waitset_trywait(struct fid *fid)
{
	struct gdrfab_waitset *ws =
		gdrfab_container_of(fid, struct gdrfab_waitset, fid.fid);

	return any_ready(ws, false) ? -FI_EAGAIN : 0;
}

static int wait_control(struct fid *fid, int command, void *arg)
{
	struct gdrfab_waitset *ws =
		gdrfab_container_of(fid, struct gdrfab_waitset, fid.fid);

	return gdrfab_waitobj_control(ws->epfd, FI_WAIT_FD, command, arg);
}

static int wait_close(struct fid *fid)
{
	struct gdrfab_waitset *ws =
		gdrfab_container_of(fid, struct gdrfab_waitset, fid.fid);
	int ret = gdrfab_obj_busy(FI_LOG_FABRIC, "wait set", &ws->ref,
				  "CQs or counters still use it");

	if (ret)
		return ret;
	close(ws->epfd);
	free(ws->members);
	ws->members = NULL;
	pthread_mutex_destroy(&ws->lock);
	atomic_fetch_sub(&ws->fabric->ref, 1);
	gdrfab_fid_retire(&ws->fid.fid, ws);
	return 0;
}

static struct fi_ops wait_fi_ops =
	GDRFAB_FI_OPS(wait_close, gdrfab_nosys_bind, wait_control);

static struct fi_ops_wait wait_ops = {
	.size = sizeof(struct fi_ops_wait),
	.wait = wait_wait,
};

bool gdrfab_is_waitset(const struct fid *fid)
{
	return gdrfab_obj_is(fid, FI_CLASS_WAIT, &wait_fi_ops);
}

int gdrfab_waitset_join(struct fid_wait *wait, struct fid *member)
{
	struct gdrfab_waitset *ws;
	struct epoll_event ev = {.events = EPOLLIN};
	int ret;

	if (!wait || !gdrfab_is_waitset(&wait->fid)) {
		GDRFAB_WARN(FI_LOG_FABRIC,
			    "FI_WAIT_SET: wait_set is not a gdrfab wait set\n");
		return -FI_EINVAL;
	}
	ws = gdrfab_container_of(wait, struct gdrfab_waitset, fid);
	ev.data.ptr = member;
	pthread_mutex_lock(&ws->lock);
	ret = member_add(&ws->members, &ws->cnt, &ws->cap, member);
	if (!ret &&
	    epoll_ctl(ws->epfd, EPOLL_CTL_ADD, member_fd(member), &ev)) {
		member_del(ws->members, &ws->cnt, member);
		ret = gdrfab_errno_to_fi(errno);
	}
	if (!ret)
		atomic_fetch_add(&ws->ref, 1);
	pthread_mutex_unlock(&ws->lock);
	return ret;
}

void gdrfab_waitset_leave(struct fid_wait *wait, struct fid *member)
{
	struct gdrfab_waitset *ws =
		gdrfab_container_of(wait, struct gdrfab_waitset, fid);

	pthread_mutex_lock(&ws->lock);
	if (!member_del(ws->members, &ws->cnt, member)) {
		epoll_ctl(ws->epfd, EPOLL_CTL_DEL, member_fd(member), NULL);
		atomic_fetch_sub(&ws->ref, 1);
	}
	pthread_mutex_unlock(&ws->lock);
}

int gdrfab_wait_open(struct fid_fabric *fabric_fid, struct fi_wait_attr *attr,
		     struct fid_wait **out)
{
	struct gdrfab_waitset *ws;

	if (!gdrfab_fid_is(&fabric_fid->fid, FI_CLASS_FABRIC) || !out || !attr)
		return -FI_EINVAL;
	if (attr->flags) {
		GDRFAB_WARN(FI_LOG_FABRIC, "fi_wait_open: flags 0x%llx\n",
			    (unsigned long long)attr->flags);
		return -FI_EBADFLAGS;
	}
	if (attr->wait_obj != FI_WAIT_UNSPEC && attr->wait_obj != FI_WAIT_FD) {
		GDRFAB_WARN(
			FI_LOG_FABRIC,
			"fi_wait_open: wait object %s is not supported (FI_WAIT_FD is)\n",
			gdrfab_wait_obj_str(attr->wait_obj));
		return -FI_ENOSYS;
	}
	ws = calloc(1, sizeof(*ws));
	if (!ws)
		return -FI_ENOMEM;
	ws->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ws->epfd < 0) {
		free(ws);
		return -FI_EMFILE;
	}
	ws->fabric = gdrfab_container_of(fabric_fid, struct gdrfab_fabric, fid);
	pthread_mutex_init(&ws->lock, NULL);
	atomic_init(&ws->ref, 0);
	gdrfab_obj_init(&ws->fid.fid, FI_CLASS_WAIT, NULL, &wait_fi_ops);
	ws->fid.ops = &wait_ops;
	atomic_fetch_add(&ws->fabric->ref, 1);
	*out = &ws->fid;
	return 0;
}
