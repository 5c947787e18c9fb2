/* SPDX-License-Identifier: BSD-2-Clause */
/* Endpoint names: validation, text form and its parser. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_addr.h"

static struct gdrfab_addr sample(void)
{
	struct gdrfab_addr a = {
		.version = GDRFAB_ADDR_VERSION,
		.port_num = 1,
		.lid_be = htons(0x12),
		.qpn_be = htonl(0xabcdef),
		.ep_id_be = htonl(4000000000u),
	};

	inet_pton(AF_INET6, "::ffff:192.0.2.1", a.gid);
	return a;
}

TestSuite(addr, .timeout = 30);

Test(addr, text_round_trip)
{
	struct gdrfab_addr a = sample(), b;
	char text[128];
	size_t n = gdrfab_addr_to_str(&a, text, sizeof(text));

	cr_assert_str_eq(text, "gdrfab://::ffff:192.0.2.1/lid=18/qpn=11259375/"
			       "id=4000000000/port=1");
	cr_assert_eq(n, strlen(text));
	cr_assert_eq(gdrfab_addr_from_str(text, &b), 0);
	cr_assert(gdrfab_addr_equal(&a, &b));
}

Test(addr, to_str_reports_needed_length_when_truncated)
{
	struct gdrfab_addr a = sample();
	char small[10];
	char full[128];

	size_t need = gdrfab_addr_to_str(&a, small, sizeof(small));
	gdrfab_addr_to_str(&a, full, sizeof(full));
	cr_assert_eq(need, strlen(full));
	cr_assert_eq(strlen(small), sizeof(small) - 1);
}

Test(addr, parser_rejects_malformed_text)
{
	static const char *const bad[] = {
		NULL,
		"",
		"gdrfab:/::1/lid=0/qpn=1/id=1/port=1",
		"verbs://::1/lid=0/qpn=1/id=1/port=1",
		"gdrfab://not-a-gid/lid=0/qpn=1/id=1/port=1",
		"gdrfab://::1/lid=70000/qpn=1/id=1/port=1",
		"gdrfab://::1/lid=0/qpn=16777216/id=1/port=1",
		"gdrfab://::1/lid=0/qpn=1/id=4294967296/port=1",
		"gdrfab://::1/lid=0/qpn=1/id=1/port=0",
		"gdrfab://::1/lid=0/qpn=1/id=1/port=256",
		"gdrfab://::1/lid=0/qpn=1/id=1/port=1/extra",
		"gdrfab://::1/lid=0/qpn=1/id=1",
		"gdrfab://::1/qpn=1/lid=0/id=1/port=1",
		"gdrfab://::1/lid=-1/qpn=1/id=1/port=1",
		"gdrfab://::1/lid=0x/qpn=1/id=1/port=1",
		"gdrfab://::1/lid=0/qpn=1/id=1/port=1x",
	};
	struct gdrfab_addr a;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(gdrfab_addr_from_str(bad[i], &a), -FI_EINVAL,
			     "accepted \"%s\"", bad[i] ? bad[i] : "(null)");
}

Test(addr, parser_accepts_hex_fields)
{
	struct gdrfab_addr a;

	cr_assert_eq(
		gdrfab_addr_from_str(
			"gdrfab://fe80::1/lid=0x10/qpn=0x11/id=7/port=2", &a),
		0);
	cr_assert_eq(ntohs(a.lid_be), 16);
	cr_assert_eq(ntohl(a.qpn_be), 17);
	cr_assert_eq(a.port_num, 2);
	cr_assert_eq(a.gid[0], 0xfe);
}

Test(addr, validation)
{
	struct gdrfab_addr a = sample();
	char why[128];

	cr_assert_eq(gdrfab_addr_validate(&a, sizeof(a), why, sizeof(why)), 0);
	cr_assert_eq(gdrfab_addr_validate(NULL, sizeof(a), why, sizeof(why)),
		     -FI_EINVAL);
	cr_assert_eq(gdrfab_addr_validate(&a, sizeof(a) - 1, why, sizeof(why)),
		     -FI_EINVAL);
	cr_assert(strstr(why, "length"), "reason: %s", why);
	a.version = 2;
	cr_assert_eq(gdrfab_addr_validate(&a, sizeof(a), why, sizeof(why)),
		     -FI_EINVAL);
	cr_assert(strstr(why, "version"), "reason: %s", why);
	a = sample();
	a.port_num = 0;
	cr_assert_eq(gdrfab_addr_validate(&a, sizeof(a), why, sizeof(why)),
		     -FI_EINVAL);
	a = sample();
	a.reserved = 1;
	cr_assert_eq(gdrfab_addr_validate(&a, sizeof(a), why, sizeof(why)),
		     -FI_EINVAL);
}

/* A port's address (qpn 0) may carry the service its endpoint answers
 * name queries on; an endpoint name never does. */
Test(addr, a_service_rides_only_on_a_ports_address)
{
	struct gdrfab_addr a = sample();
	char why[128];

	a.qpn_be = 0;
	a.reserved = htonl(GDRFAB_ADDR_SVC_TAG | 47011);
	cr_assert_eq(gdrfab_addr_validate(&a, sizeof(a), why, sizeof(why)), 0,
		     "%s", why);
	cr_assert_eq(gdrfab_addr_service(&a), 47011);
	a.qpn_be = htonl(17); /* an endpoint's name */
	cr_assert_eq(gdrfab_addr_service(&a), 0);
	cr_assert_eq(gdrfab_addr_validate(&a, sizeof(a), why, sizeof(why)),
		     -FI_EINVAL);
	a.qpn_be = 0;
	a.reserved = htonl(0x12345678); /* no service tag */
	cr_assert_eq(gdrfab_addr_validate(&a, sizeof(a), why, sizeof(why)),
		     -FI_EINVAL);
}
