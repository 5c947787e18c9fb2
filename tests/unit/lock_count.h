/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Counts how often chosen mutexes are locked: the unit test binary is
 * linked with --wrap=pthread_mutex_lock (as alloc_count.h's calls), so
 * every lock the provider's inline gdrfab_lock_acquire takes passes
 * through here. Counting is per thread, off until lock_count_start.
 */
#ifndef LOCK_COUNT_H
#define LOCK_COUNT_H

#include <pthread.h>

#define LOCK_COUNT_MAX 4

/* Starts counting this thread's locks of the n mutexes in m (at most
 * LOCK_COUNT_MAX) from zero. */
void lock_count_start(pthread_mutex_t *const m[], int n);
/* Stops counting; counts[i] holds how often m[i] was locked. */
void lock_count_stop(long counts[]);

#endif /* LOCK_COUNT_H */
