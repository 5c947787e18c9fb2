/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The endpoints bound to a CQ or counter: reading either progresses them
 * (manual progress). Binding and reading may happen on different threads,
 * hence the read-write lock.
 */
#ifndef GDRFAB_EPLIST_H
#define GDRFAB_EPLIST_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct gdrfab_ep;

struct gdrfab_eplist {
	pthread_rwlock_t lock;
	struct gdrfab_ep **eps;
	size_t cnt;
	bool locked; /* see gdrfab_lock.h */
	/* The one endpoint when it is alone and nothing is locked (the
	 * application serialises every call: FI_THREAD_DOMAIN), else NULL:
	 * the common case, tested with one load by every read. */
	struct gdrfab_ep *solo;
};

void gdrfab_eplist_init(struct gdrfab_eplist *l, bool locked);
void gdrfab_eplist_fini(struct gdrfab_eplist *l);
/* Adds an endpoint once: 1 when added, 0 when already there, or
 * -FI_ENOMEM. */
int gdrfab_eplist_add(struct gdrfab_eplist *l, struct gdrfab_ep *ep);
/* Removes it: 1 when it was there, else 0. */
int gdrfab_eplist_del(struct gdrfab_eplist *l, struct gdrfab_ep *ep);
/* gdrfab_eplist_progress for any list. */
void gdrfab_eplist_progress_all(struct gdrfab_eplist *l,
				void (*progress)(struct gdrfab_ep *ep));
/* Calls progress on each endpoint: the owner (CQ, counter) hands down the
 * endpoint's progress, so that the list calls nothing of the endpoint.
 * Inline for the common CQ, one endpoint and no lock (l->solo): then
 * progress is called directly. */
static inline void
gdrfab_eplist_progress(struct gdrfab_eplist *l,
		       void (*progress)(struct gdrfab_ep *ep))
{
	if (l->solo)
		progress(l->solo);
	else
		gdrfab_eplist_progress_all(l, progress);
}

#endif /* GDRFAB_EPLIST_H */
