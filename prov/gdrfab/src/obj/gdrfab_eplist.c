/* SPDX-License-Identifier: BSD-2-Clause */
/* Endpoints bound to a CQ or counter. */
#include <stdlib.h>

#include "gdrfab.h"
#include "gdrfab_eplist.h"

void gdrfab_eplist_init(struct gdrfab_eplist *l, bool locked)
{
	pthread_rwlock_init(&l->lock, NULL);
	l->locked = locked;
	l->eps = NULL;
	l->cnt = 0;
	l->solo = NULL;
}

/* Under the list's write lock (or the application's promise). */
static void set_solo(struct gdrfab_eplist *l)
{
	l->solo = !l->locked && l->cnt == 1 ? l->eps[0] : NULL;
}

void gdrfab_eplist_fini(struct gdrfab_eplist *l)
{
	pthread_rwlock_destroy(&l->lock);
	free(l->eps);
	l->eps = NULL;
}

int gdrfab_eplist_add(struct gdrfab_eplist *l, struct gdrfab_ep *ep)
{
	struct gdrfab_ep **eps;
	int ret = 1;

	pthread_rwlock_wrlock(&l->lock);
	for (size_t i = 0; i < l->cnt; i++) {
		if (l->eps[i] == ep) {
			ret = 0; /* bound for several events: listed once */
			goto out;
		}
	}
	eps = realloc(l->eps, (l->cnt + 1) * sizeof(*eps));
	if (!eps) {
		ret = -FI_ENOMEM;
		goto out;
	}
	eps[l->cnt++] = ep;
	l->eps = eps;
	set_solo(l);
out:
	pthread_rwlock_unlock(&l->lock);
	return ret;
}

int gdrfab_eplist_del(struct gdrfab_eplist *l, struct gdrfab_ep *ep)
{
	int found = 0;

	pthread_rwlock_wrlock(&l->lock);
	for (size_t i = 0; i < l->cnt && !found; i++) {
		if (l->eps[i] == ep) {
			l->eps[i] = l->eps[--l->cnt];
			found = 1;
		}
	}
	set_solo(l);
	pthread_rwlock_unlock(&l->lock);
	return found;
}

void gdrfab_eplist_progress_all(struct gdrfab_eplist *l,
				void (*progress)(struct gdrfab_ep *ep))
{
	if (l->locked)
		pthread_rwlock_rdlock(&l->lock);
	for (size_t i = 0; i < l->cnt; i++)
		progress(l->eps[i]);
	if (l->locked)
		pthread_rwlock_unlock(&l->lock);
}
