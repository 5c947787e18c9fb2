/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The clock of lat_parts and write_stamp: the time-stamp counter on x86,
 * where reading it costs a few instructions (in the TCG VM,
 * clock_gettime falls back to a system call that reads the emulated HPET,
 * over a microsecond); CLOCK_MONOTONIC elsewhere. lat_parts converts
 * ticks to microseconds against CLOCK_MONOTONIC over the whole run.
 */
#ifndef LAT_PARTS_CLOCK_H
#define LAT_PARTS_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t lat_parts_ticks(void)
{
	return __rdtsc();
}
#else
static inline uint64_t lat_parts_ticks(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif

#endif /* LAT_PARTS_CLOCK_H */
