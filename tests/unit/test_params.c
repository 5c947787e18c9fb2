/* SPDX-License-Identifier: BSD-2-Clause */
/* FI_GDRFAB_* parsing: device filter lists and queue sizes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_params.h"

static struct gdrfab_params params;

static void reset(void)
{
	memset(&params, 0, sizeof(params));
}

static void clear(void)
{
	gdrfab_parse_device_filter(&params, NULL);
}

TestSuite(params, .init = reset, .fini = clear, .timeout = 30);

Test(params, empty_filter_selects_every_device)
{
	cr_assert_eq(gdrfab_parse_device_filter(&params, ""), 0);
	cr_assert_eq(params.device_filter_cnt, 0);
	cr_assert(gdrfab_device_selected(&params, "mlx5_0"));
	cr_assert(gdrfab_device_selected(&params, "rxe0"));
}

Test(params, filter_matches_exact_names_only)
{
	cr_assert_eq(gdrfab_parse_device_filter(&params, "mlx5_1,rxe0"), 0);
	cr_assert_eq(params.device_filter_cnt, 2);
	cr_assert(gdrfab_device_selected(&params, "mlx5_1"));
	cr_assert(gdrfab_device_selected(&params, "rxe0"));
	/* Names are not prefixes: mlx5_1 must not select mlx5_10. */
	cr_assert_not(gdrfab_device_selected(&params, "mlx5_10"));
	cr_assert_not(gdrfab_device_selected(&params, "mlx5_"));
	cr_assert_not(gdrfab_device_selected(&params, "rxe1"));
}

Test(params, malformed_lists_leave_the_filter_empty)
{
	static const char *const bad[] = {",", "a,", ",a", "a,,b"};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(gdrfab_parse_device_filter(&params, bad[i]),
			     -FI_EINVAL, "accepted \"%s\"", bad[i]);
		cr_expect_eq(params.device_filter_cnt, 0);
	}
}

Test(params, overlong_name_and_too_many_names_are_rejected)
{
	char list[4096];
	size_t off = 0;

	memset(list, 'x', 64);
	list[64] = '\0';
	cr_assert_eq(gdrfab_parse_device_filter(&params, list), -FI_EINVAL);
	list[63] = '\0';
	cr_assert_eq(gdrfab_parse_device_filter(&params, list), 0);
	for (int i = 0; i <= GDRFAB_MAX_DEVICE_FILTER; i++)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%sd%d",
					i ? "," : "", i);
	cr_assert_eq(gdrfab_parse_device_filter(&params, list), -FI_EINVAL);
	cr_assert_eq(params.device_filter_cnt, 0);
}

Test(params, a_new_list_replaces_the_old_one)
{
	cr_assert_eq(gdrfab_parse_device_filter(&params, "a,b"), 0);
	cr_assert_eq(gdrfab_parse_device_filter(&params, "c"), 0);
	cr_assert_eq(params.device_filter_cnt, 1);
	cr_assert_not(gdrfab_device_selected(&params, "a"));
	cr_assert(gdrfab_device_selected(&params, "c"));
}

Test(params, queue_sizes_out_of_range_fall_back_to_the_default)
{
	cr_assert_eq(gdrfab_param_size("FI_GDRFAB_TX_SIZE", 256, 1024), 256);
	cr_assert_eq(gdrfab_param_size("FI_GDRFAB_TX_SIZE", 1, 1024), 1);
	cr_assert_eq(gdrfab_param_size("FI_GDRFAB_TX_SIZE", 0, 1024), 1024);
	cr_assert_eq(gdrfab_param_size("FI_GDRFAB_TX_SIZE", -5, 1024), 1024);
	cr_assert_eq(gdrfab_param_size("FI_GDRFAB_TX_SIZE", 1 << 24, 1024),
		     1 << 24);
	cr_assert_eq(
		gdrfab_param_size("FI_GDRFAB_TX_SIZE", (1 << 24) + 1, 1024),
		1024);
}
