/* SPDX-License-Identifier: BSD-2-Clause */
/* The gated progress clock (gdrfab_tick.h). */
#include "gdrfab_tick.h"
#include "gdrfab_signal.h"

/* The rate is measured over at least this long: the coarse clock moves
 * in steps of 1-4 ms, so a shorter span would be mostly its step. */
#define RATE_SPAN_MS 32

long long gdrfab_tick_read(struct gdrfab_tick *t)
{
	long long before = gdrfab_tick_ms();
	uint64_t c = gdrfab_cycles();
	long long ms = gdrfab_tick_ms();

	t->calls = 0;
	if (ms != before && t->base_cycles) {
		/* The clock moved around the counter's read: the thread may
		 * have been descheduled between them, and a count paired
		 * with a later time overstates the rate (seen on a loaded
		 * machine: the gate 8 ms behind). Not a sample; the gate
		 * still restarts from c. */
	} else if (!t->base_cycles || c <= t->base_cycles || ms < t->base_ms) {
		/* First read, or the counter went back (another CPU's):
		 * measure again from here, reading every call meanwhile.
		 * The time before the count's read: where they differ, an
		 * earlier start understates the rate, which only reads
		 * the clock sooner. */
		t->base_cycles = c;
		t->base_ms = before;
		t->cycles_per_read = 0;
	} else if (ms - t->base_ms >= RATE_SPAN_MS) {
		t->cycles_per_read =
			(c - t->base_cycles) / (uint64_t)(ms - t->base_ms);
		t->base_cycles = c;
		t->base_ms = ms;
	}
	t->now_ms = ms;
	t->next_cycles = c + t->cycles_per_read;
	return ms;
}
