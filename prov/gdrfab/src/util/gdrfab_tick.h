/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The millisecond clock of a progress loop, read for real only when it may
 * have moved. A polling loop calls progress millions of times a second and
 * each call wants the time (its timers, its events' timestamps); reading
 * the coarse clock costs about 25 instructions through the vDSO, an empty
 * poll's largest share after the NIC's own. The CPU's cycle counter (one
 * instruction) says when a millisecond has passed since the last read
 * (no shorter: the coarse clock itself moves in steps of 1-4 ms, and the
 * shortest timer progress runs is 20 ms; under valgrind a quarter ms came
 * every few dozen calls, a tenth of an empty poll's instructions); its
 * rate is measured against the clock as it runs, never assumed. Until
 * measured, where no counter exists, or if it stalls, the clock is read
 * as before: at the latest every GDRFAB_TICK_MAX_CALLS calls. One owner
 * (an endpoint's progress, under its lock).
 */
#ifndef GDRFAB_TICK_H
#define GDRFAB_TICK_H

#include <stdbool.h>
#include <stdint.h>

#define GDRFAB_TICK_MAX_CALLS 256

struct gdrfab_tick {
	long long now_ms;	  /* the clock at its last read */
	uint64_t next_cycles;	  /* read it again from this count on */
	uint64_t cycles_per_read; /* a ms of cycles; 0: unknown */
	uint64_t base_cycles;	  /* the rate's measurement: its start */
	long long base_ms;
	unsigned calls; /* since the last read */
};

/* The cycle counter, or 0 where there is none. */
static inline uint64_t gdrfab_cycles(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
	uint64_t v;

	__asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	return 0;
#endif
}

/* Reads the clock (gdrfab_tick_ms) and measures the counter's rate. A
 * zeroed struct gdrfab_tick is ready: its first use reads the clock. */
long long gdrfab_tick_read(struct gdrfab_tick *t);

/* Whether the counter says the clock cannot have moved, without counting
 * the call: for a caller that counts its calls itself and hands them over
 * with gdrfab_tick_count before its next gdrfab_tick_now (progress's quick
 * path, which would otherwise pay a store per empty poll for it). */
static inline bool gdrfab_tick_quick(const struct gdrfab_tick *t)
{
	return gdrfab_cycles() < t->next_cycles;
}

/* The same, counting the call: whether the clock cannot have moved since
 * its last read, so that t->now_ms is the time. */
static inline bool gdrfab_tick_still(struct gdrfab_tick *t)
{
	return ++t->calls < GDRFAB_TICK_MAX_CALLS && gdrfab_tick_quick(t);
}

/* Counts n calls made through gdrfab_tick_quick, so that the bound of
 * GDRFAB_TICK_MAX_CALLS calls between reads holds for them too. */
static inline void gdrfab_tick_count(struct gdrfab_tick *t, unsigned n)
{
	t->calls += n;
}

/* The time in ms, read for real when it may have moved. */
static inline long long gdrfab_tick_now(struct gdrfab_tick *t)
{
	return gdrfab_tick_still(t) ? t->now_ms : gdrfab_tick_read(t);
}

#endif /* GDRFAB_TICK_H */
