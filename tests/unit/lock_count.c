/* SPDX-License-Identifier: BSD-2-Clause */
/* The counting hook of pthread_mutex_lock (lock_count.h). */
#include <stdbool.h>

#include "lock_count.h"

int __real_pthread_mutex_lock(pthread_mutex_t *m);
int __wrap_pthread_mutex_lock(pthread_mutex_t *m);

static _Thread_local bool on;
static _Thread_local int watched;
static _Thread_local pthread_mutex_t *watch[LOCK_COUNT_MAX];
static _Thread_local long count[LOCK_COUNT_MAX];

int __wrap_pthread_mutex_lock(pthread_mutex_t *m)
{
	for (int i = 0; on && i < watched; i++)
		count[i] += watch[i] == m;
	return __real_pthread_mutex_lock(m);
}

void lock_count_start(pthread_mutex_t *const m[], int n)
{
	watched = n < LOCK_COUNT_MAX ? n : LOCK_COUNT_MAX;
	for (int i = 0; i < watched; i++) {
		watch[i] = m[i];
		count[i] = 0;
	}
	on = true;
}

void lock_count_stop(long counts[])
{
	on = false;
	for (int i = 0; i < watched; i++)
		counts[i] = count[i];
}
