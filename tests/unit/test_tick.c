/* SPDX-License-Identifier: BSD-2-Clause */
/* The progress clock (util/gdrfab_tick.h): read for real only when it may
 * have moved, never behind the coarse clock by more than its own step. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <time.h>

#include "gdrfab_signal.h"
#include "gdrfab_tick.h"

/* Calls the gated clock as a polling loop does for span_ms and checks its
 * contract on each answer: never ahead of the coarse clock, and an answer
 * from the gate (no read) only while the counter says less than the
 * measured ms has passed since the last read. It is not held to the
 * coarse clock's time: on a loaded VM that clock's ticks come late and it
 * catches up in jumps (seen: 8 ms in 0.2 ms of the counter), which no
 * gate can see coming. Returns how many calls read the clock for real. */
static long poll_for(struct gdrfab_tick *t, long long span_ms, long *calls)
{
	long long end = gdrfab_tick_ms() + span_ms;
	long reads = 0;

	*calls = 0;
	for (;;) {
		uint64_t c = gdrfab_cycles();
		long long got = gdrfab_tick_now(t);
		long long after = gdrfab_tick_ms();

		++*calls;
		cr_assert_leq(got, after, "the gate is ahead of the clock");
		if (t->calls == 0) {
			reads++;
			cr_assert_eq(got, t->now_ms);
		} else {
			cr_assert_lt(c, t->next_cycles,
				     "answered from the gate past its ms");
			cr_assert_lt(t->calls, GDRFAB_TICK_MAX_CALLS);
		}
		if (after >= end)
			return reads;
	}
}

/* The counter's cycles in a ms, against CLOCK_MONOTONIC over span_ms. */
static double cycles_per_ms(long long span_ms)
{
	struct timespec a, b;
	uint64_t c0, c1;

	clock_gettime(CLOCK_MONOTONIC, &a);
	c0 = gdrfab_cycles();
	do {
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000 +
			 (b.tv_nsec - a.tv_nsec) / 1000000 <
		 span_ms);
	c1 = gdrfab_cycles();
	return (double)(c1 - c0) /
	       ((b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6);
}

Test(tick, a_zeroed_clock_reads_the_time_at_once)
{
	struct gdrfab_tick t = {0};
	long long before = gdrfab_tick_ms();
	long long got = gdrfab_tick_now(&t);

	cr_assert_geq(got, before);
	cr_assert_leq(got, gdrfab_tick_ms());
	cr_assert_eq(t.calls, 0, "that call read the clock");
}

Test(tick, never_more_than_256_calls_between_reads)
{
	struct gdrfab_tick t = {0};

	for (int i = 0; i < 100000; i++) {
		gdrfab_tick_now(&t);
		cr_assert_lt(t.calls, GDRFAB_TICK_MAX_CALLS);
	}
}

Test(tick, follows_the_clock_and_skips_most_reads_once_measured)
{
	struct gdrfab_tick t = {0};
	long calls, reads;

	/* The counter's rate needs 32 ms of the clock to be measured. */
	poll_for(&t, 80, &calls);
	reads = poll_for(&t, 40, &calls);
#if defined(__x86_64__) || defined(__aarch64__)
	cr_assert_gt(t.cycles_per_read, 0, "the rate was never measured");
	{
		/* The gate's ms is a ms (within the coarse clock's step over
		 * the 32 ms it is measured on), not the 8 ms seen when a
		 * descheduled thread paired a count with a later time. */
		double ref = cycles_per_ms(50);

		cr_assert(t.cycles_per_read > ref / 2 &&
				  t.cycles_per_read < ref * 2,
			  "a ms of the gate is %lu cycles, of the clock %.0f",
			  (unsigned long)t.cycles_per_read, ref);
	}
	/* A ms a read: about 40 in 40 ms, wherever the loop
	 * runs; the calls are many more (here, and far more natively). */
	cr_assert_lt(reads, calls / 2, "%ld reads in %ld calls", reads, calls);
#endif
	cr_log_info("%ld of %ld calls read the clock", reads, calls);
}

Test(tick, a_counter_that_goes_back_measures_again)
{
	struct gdrfab_tick t = {0};
	long calls;

	poll_for(&t, 20, &calls);
	/* As if the thread had moved to a CPU whose counter is behind. */
	t.base_cycles = UINT64_MAX;
	t.next_cycles = 0;
	gdrfab_tick_now(&t);
	cr_assert_eq(t.cycles_per_read, 0, "not measured again");
	poll_for(&t, 10, &calls);
}
