/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Locks that cost nothing when the application promised not to need them:
 * with FI_THREAD_DOMAIN it serialises all access to a domain's objects, so
 * their locks are skipped on the data path (every poll would otherwise pay
 * several atomic operations).
 */
#ifndef GDRFAB_LOCK_H
#define GDRFAB_LOCK_H

#include <pthread.h>
#include <stdbool.h>

struct gdrfab_lock {
	pthread_mutex_t mutex;
	bool enabled;
};

static inline void gdrfab_lock_init(struct gdrfab_lock *l, bool enabled)
{
	pthread_mutex_init(&l->mutex, NULL);
	l->enabled = enabled;
}

static inline void gdrfab_lock_fini(struct gdrfab_lock *l)
{
	pthread_mutex_destroy(&l->mutex);
}

static inline void gdrfab_lock_acquire(struct gdrfab_lock *l)
{
	if (l->enabled)
		pthread_mutex_lock(&l->mutex);
}

static inline void gdrfab_lock_release(struct gdrfab_lock *l)
{
	if (l->enabled)
		pthread_mutex_unlock(&l->mutex);
}

#endif /* GDRFAB_LOCK_H */
