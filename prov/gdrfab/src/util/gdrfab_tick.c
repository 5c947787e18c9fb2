/* SPDX-License-Identifier: BSD-2-Clause */
/* The gated progress clock (gdrfab_tick.h). */
#include "gdrfab_tick.h"
#include "gdrfab_signal.h"

/* The rate is measured over at least this long: the coarse clock moves
 * in steps of 1-4 ms, so a shorter span would be mostly its step. */
#define RATE_SPAN_MS 16

long long gdrfab_tick_read(struct gdrfab_tick *t)
{
	uint64_t c = gdrfab_cycles();
	long long ms = gdrfab_tick_ms();

	t->calls = 0;
	if (!t->base_cycles || c <= t->base_cycles || ms < t->base_ms) {
		/* First read, or the counter went back (another CPU's):
		 * measure again from here, reading every call meanwhile. */
		t->base_cycles = c;
		t->base_ms = ms;
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
