/* SPDX-License-Identifier: BSD-2-Clause */
/* The progress clock (util/gdrfab_tick.h): read for real only when it may
 * have moved, never behind the coarse clock by more than its own step. */
#include <criterion/criterion.h>

#include "gdrfab_signal.h"
#include "gdrfab_tick.h"

/* Calls the gated clock as a polling loop does for span_ms, checking each
 * answer against the coarse clock read just before and just after it;
 * returns how many calls read the clock for real. */
static long poll_for(struct gdrfab_tick *t, long long span_ms, long *calls)
{
	long long end = gdrfab_tick_ms() + span_ms;
	long reads = 0;

	*calls = 0;
	for (;;) {
		long long before = gdrfab_tick_ms();
		long long got = gdrfab_tick_now(t);
		long long after = gdrfab_tick_ms();

		reads += t->calls == 0;
		++*calls;
		/* A ms of cycles (give or take the rate's error) crosses
		 * one of the coarse clock's steps of 4 ms, or two of 1 ms,
		 * at most: never 5 ms behind. */
		cr_assert_leq(got, after, "the gate is ahead of the clock");
		cr_assert_geq(got + 5, before, "%lld ms behind the clock",
			      before - got);
		if (after >= end)
			return reads;
	}
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

	/* The counter's rate needs 16 ms of the clock to be measured. */
	poll_for(&t, 40, &calls);
	reads = poll_for(&t, 40, &calls);
#if defined(__x86_64__) || defined(__aarch64__)
	cr_assert_gt(t.cycles_per_read, 0, "the rate was never measured");
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
