/* SPDX-License-Identifier: BSD-2-Clause */
/* Warnings a peer can trigger: a burst per second, then a count. */
#include <criterion/criterion.h>

#include "gdrfab_ratelimit.h"

Test(ratelimit, a_flood_prints_a_burst_then_says_how_many_were_left_out)
{
	struct gdrfab_ratelimit rl = {0};
	uint64_t left = 99;
	int printed = 0;

	for (int i = 0; i < 1000; i++)
		printed += gdrfab_ratelimit_ok(&rl, 5000, &left);
	cr_assert_eq(printed, GDRFAB_RATELIMIT_BURST);
	cr_assert_eq(left, 0, "the burst's lines left nothing out");
	/* Still the same second: nothing more. */
	cr_assert_not(gdrfab_ratelimit_ok(&rl, 5999, &left));
	/* The next second's first line counts what was left out. */
	cr_assert(gdrfab_ratelimit_ok(&rl, 6000, &left));
	cr_assert_eq(left, 1000 - GDRFAB_RATELIMIT_BURST + 1);
	cr_assert(gdrfab_ratelimit_ok(&rl, 6001, &left));
	cr_assert_eq(left, 0);
}
