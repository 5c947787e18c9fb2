/* SPDX-License-Identifier: BSD-2-Clause */
/* The port discovery cache: repeated fi_getinfo calls reuse one discovery
 * for its time to live; fi_domain and failures never see a stale one. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "gdrfab.h"
#include "gdrfab_verbs.h"
#include "port_fixture.h"

static int discovered, fail_next, ports_now = 1;

static int fake_discover(struct gdrfab_port_desc **ports)
{
	discovered++;
	*ports = NULL;
	if (fail_next) {
		fail_next = 0;
		return -FI_ENOMEM;
	}
	if (!ports_now)
		return 0;
	*ports = calloc((size_t)ports_now, sizeof(**ports));
	for (int i = 0; i < ports_now; i++) {
		(*ports)[i] = fixture_rxe_port();
		(*ports)[i].port_num = (uint8_t)(i + 1);
	}
	return ports_now;
}

static struct gdrfab_port_cache cache = GDRFAB_PORT_CACHE_INIT;

static void reset(void)
{
	discovered = fail_next = 0;
	ports_now = 1;
	gdrfab_port_cache_drop(&cache);
}

TestSuite(port_cache, .init = reset, .fini = reset);

static int get(int ttl, long long now, bool fresh)
{
	struct gdrfab_port_desc *ports;
	int n = gdrfab_port_cache_get(&cache, ttl, now, fresh, fake_discover,
				      &ports);

	if (n > 0)
		cr_assert_str_eq(ports[0].dev_name, "rxe0");
	free(ports);
	return n;
}

Test(port_cache, reused_within_its_time_to_live)
{
	cr_assert_eq(get(1000, 5000, false), 1);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(get(1000, 5000 + i * 9, false), 1);
	cr_assert_eq(discovered, 1, "one discovery for 101 calls");
	cr_assert_eq(get(1000, 6000, false), 1);
	cr_assert_eq(discovered, 2, "a second later it is rediscovered");
}

Test(port_cache, changes_show_once_the_cache_expires)
{
	cr_assert_eq(get(1000, 0, false), 1);
	ports_now = 2; /* a port came up */
	cr_assert_eq(get(1000, 999, false), 1);
	cr_assert_eq(get(1000, 1000, false), 2);
	ports_now = 0; /* the device went away */
	cr_assert_eq(get(1000, 2500, false), 0);
	cr_assert_eq(get(1000, 2600, false), 0, "no device is an answer too");
	cr_assert_eq(discovered, 3);
}

Test(port_cache, fresh_and_invalidated_lookups_rediscover)
{
	cr_assert_eq(get(1000, 0, false), 1);
	cr_assert_eq(get(1000, 1, true), 1);
	cr_assert_eq(discovered, 2, "fi_domain looks afresh");
	cr_assert_eq(get(1000, 2, false), 1);
	cr_assert_eq(discovered, 2, "and refreshes the cache for getinfo");
	gdrfab_port_cache_drop(&cache);
	cr_assert_eq(get(1000, 3, false), 1);
	cr_assert_eq(discovered, 3);
}

Test(port_cache, failures_and_a_zero_ttl_are_never_kept)
{
	fail_next = 1;
	cr_assert_eq(get(1000, 0, false), -FI_ENOMEM);
	cr_assert_eq(get(1000, 1, false), 1, "the failure was not cached");
	cr_assert_eq(discovered, 2);
	cr_assert_eq(get(0, 2, false), 1);
	cr_assert_eq(get(0, 2, false), 1);
	cr_assert_eq(discovered, 4, "FI_GDRFAB_DISCOVERY_TTL_MS=0");
	/* A clock that went backwards (another thread's reading) is no
	 * reason to trust the cache. */
	cr_assert_eq(get(1000, 100, false), 1);
	cr_assert_eq(get(1000, 50, false), 1);
	cr_assert_eq(discovered, 6);
}
