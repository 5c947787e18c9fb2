/* SPDX-License-Identifier: BSD-2-Clause */
/* Endpoint names: validation, text form and its parser. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <stdlib.h>
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

/* Every string of bad[] is refused with -FI_EINVAL. */
static void expect_all_refused(const char *const *bad, size_t n)
{
	struct gdrfab_addr a;

	for (size_t i = 0; i < n; i++)
		cr_expect_eq(gdrfab_addr_from_str(bad[i], &a), -FI_EINVAL,
			     "accepted \"%s\"", bad[i] ? bad[i] : "(null)");
}

Test(addr, text_round_trip)
{
	struct gdrfab_addr a = sample(), b;
	char text[128];
	size_t n = gdrfab_addr_to_str(&a, text, sizeof(text));

	cr_assert_str_eq(
		text,
		"gdrfab://::ffff:192.0.2.1/lid=18/qpn=11259375/id=4000000000/port=1");
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

	expect_all_refused(bad, sizeof(bad) / sizeof(bad[0]));
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

/* ---- service addresses and the address formats ---- */

static struct gdrfab_addr service(const char *ip, uint16_t port)
{
	struct gdrfab_addr a;
	struct in_addr in;

	inet_pton(AF_INET, ip, &in);
	gdrfab_addr_make_service(&a, in.s_addr, port);
	return a;
}

Test(addr, service_addresses_have_libfabrics_text)
{
	struct gdrfab_addr a = service("192.0.2.2", 9228), b;
	char why[128], text[128];

	cr_assert(gdrfab_addr_is_service(&a));
	cr_assert_eq(gdrfab_addr_service(&a), 9228);
	cr_assert_eq(gdrfab_addr_validate(&a, sizeof(a), why, sizeof(why)), 0);
	gdrfab_addr_to_str(&a, text, sizeof(text));
	cr_assert_str_eq(text, "fi_sockaddr_in://192.0.2.2:9228");
	cr_assert_eq(gdrfab_addr_from_str(text, &b), 0);
	cr_assert(gdrfab_addr_equal(&a, &b));
	cr_assert_eq(
		gdrfab_addr_from_str("FI_SOCKADDR_IN://192.0.2.2:9228", &b), 0,
		"the format name is case-insensitive, as libfabric's");
	cr_assert(!gdrfab_addr_is_service(&(struct gdrfab_addr){0}));
	a = sample();
	cr_assert(!gdrfab_addr_is_service(&a), "an endpoint's name");
}

Test(addr, a_ports_address_with_a_service_keeps_it_in_text)
{
	struct gdrfab_addr a = sample(), b;
	char text[160];

	a.qpn_be = 0;
	a.reserved = htonl(GDRFAB_ADDR_SVC_TAG | 9228);
	gdrfab_addr_to_str(&a, text, sizeof(text));
	cr_assert_str_eq(
		text,
		"gdrfab://::ffff:192.0.2.1/lid=18/qpn=0/id=4000000000/port=1/svc=9228");
	cr_assert_eq(gdrfab_addr_from_str(text, &b), 0);
	cr_assert(gdrfab_addr_equal(&a, &b));
	cr_assert_eq(gdrfab_addr_to_str(&a, NULL, 0), strlen(text));
	/* An endpoint's name carries no service. */
	cr_assert_eq(
		gdrfab_addr_from_str(
			"gdrfab://::1/lid=0/qpn=5/id=1/port=1/svc=9228", &b),
		-FI_EINVAL);
}

Test(addr, malformed_socket_address_strings_are_refused)
{
	static const char *const bad[] = {
		"fi_sockaddr_in://",
		"fi_sockaddr_in://192.0.2.2",
		"fi_sockaddr_in://192.0.2.2:",
		"fi_sockaddr_in://192.0.2.2:0",
		"fi_sockaddr_in://192.0.2.2:65536",
		"fi_sockaddr_in://192.0.2.2:-1",
		"fi_sockaddr_in://192.0.2.2:12x",
		"fi_sockaddr_in://0.0.0.0:9228",
		"fi_sockaddr_in://host:9228",
		"fi_sockaddr_in://[::1]:9228",
		"fi_sockaddr_in6://[::1]:9228",
		"fi_sockaddr_in://192.0.2.2:9228:1",
	};

	expect_all_refused(bad, sizeof(bad) / sizeof(bad[0]));
}

static int import(enum gdrfab_fmt fmt, const void *addr, size_t len, bool src,
		  struct gdrfab_addr *out, size_t *used)
{
	char why[160];

	return gdrfab_addr_import(fmt, addr, len, src, out, used, why,
				  sizeof(why));
}

Test(addr, formats_import_and_export_round_trip)
{
	struct gdrfab_addr name = sample(), svc = service("192.0.2.2", 47000),
			   got;
	char text[160];
	struct sockaddr_in sin;
	size_t used, len;

	cr_assert_eq(gdrfab_fmt_of(FI_FORMAT_UNSPEC), GDRFAB_FMT_NATIVE);
	cr_assert_eq(gdrfab_fmt_of(FI_ADDR_STR), GDRFAB_FMT_STR);
	cr_assert_eq(gdrfab_fmt_of(FI_SOCKADDR), GDRFAB_FMT_SIN);
	cr_assert_eq(gdrfab_fmt_of(FI_SOCKADDR_IN), GDRFAB_FMT_SIN);
	cr_assert_eq(gdrfab_fmt_of(FI_SOCKADDR_IN6), GDRFAB_FMT_NONE);
	/* Native: the bytes themselves. */
	cr_assert_eq(import(GDRFAB_FMT_NATIVE, &name, sizeof(name), false, &got,
			    &used),
		     0);
	cr_assert(gdrfab_addr_equal(&got, &name));
	cr_assert_eq(used, 32);
	/* Text: a name and a service address both. */
	len = sizeof(text);
	cr_assert_eq(gdrfab_addr_export(GDRFAB_FMT_STR, &name, text, &len), 0);
	cr_assert_eq(len, strlen(text) + 1);
	cr_assert_eq(import(GDRFAB_FMT_STR, text, 0, false, &got, &used), 0);
	cr_assert(gdrfab_addr_equal(&got, &name));
	cr_assert_eq(used, len);
	len = sizeof(text);
	cr_assert_eq(gdrfab_addr_export(GDRFAB_FMT_STR, &svc, text, &len), 0);
	cr_assert_eq(import(GDRFAB_FMT_STR, text, 0, false, &got, &used), 0);
	cr_assert(gdrfab_addr_equal(&got, &svc));
	/* Socket addresses: service addresses only. */
	len = sizeof(sin);
	cr_assert_eq(gdrfab_addr_export(GDRFAB_FMT_SIN, &svc, &sin, &len), 0);
	cr_assert_eq(len, sizeof(sin));
	cr_assert_eq(sin.sin_family, AF_INET);
	cr_assert_eq(ntohs(sin.sin_port), 47000);
	cr_assert_eq(
		import(GDRFAB_FMT_SIN, &sin, sizeof(sin), false, &got, &used),
		0);
	cr_assert(gdrfab_addr_equal(&got, &svc));
	cr_assert_eq(used, sizeof(sin));
	len = sizeof(sin);
	cr_assert_eq(gdrfab_addr_export(GDRFAB_FMT_SIN, &name, &sin, &len),
		     -FI_EINVAL, "an endpoint's name has no port to give");
	/* Too small a buffer: the size needed. */
	len = 4;
	cr_assert_eq(gdrfab_addr_export(GDRFAB_FMT_NATIVE, &name, text, &len),
		     -FI_ETOOSMALL);
	cr_assert_eq(len, 32);
	{
		void *dup;

		cr_assert_eq(gdrfab_addr_export_dup(GDRFAB_FMT_STR, &svc, &dup,
						    &len),
			     0);
		cr_assert_str_eq(dup, "fi_sockaddr_in://192.0.2.2:47000");
		cr_assert_eq(len, strlen(dup) + 1);
		free(dup);
	}
}

/* What fabtests' fi_av_test inserts: sockaddr_in of the good address and
 * port 9 ("discard"), and 16 zero bytes as the bad one. */
Test(addr, malformed_socket_addresses_are_refused)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(9)};
	struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6};
	struct gdrfab_addr got, port = sample();
	uint8_t zeros[16] = {0};
	size_t used;

	inet_pton(AF_INET, "192.0.2.2", &sin.sin_addr);
	cr_assert_eq(
		import(GDRFAB_FMT_SIN, &sin, sizeof(sin), false, &got, &used),
		0);
	cr_assert_eq(import(GDRFAB_FMT_SIN, zeros, sizeof(zeros), false, &got,
			    &used),
		     -FI_EINVAL);
	cr_assert_eq(used, 16, "the stride of an array of them");
	cr_assert_eq(
		import(GDRFAB_FMT_SIN, &sin6, sizeof(sin6), false, &got, &used),
		-FI_EINVAL);
	cr_assert_eq(used, sizeof(sin6));
	cr_assert_eq(import(GDRFAB_FMT_SIN, &sin, 8, false, &got, &used),
		     -FI_EINVAL, "too short");
	sin.sin_port = 0;
	cr_assert_eq(
		import(GDRFAB_FMT_SIN, &sin, sizeof(sin), false, &got, &used),
		-FI_EINVAL, "port 0 names no endpoint");
	cr_assert_eq(
		import(GDRFAB_FMT_SIN, &sin, sizeof(sin), true, &got, &used), 0,
		"but is a source address (any port)");
	inet_pton(AF_INET, "255.255.255.255", &sin.sin_addr);
	sin.sin_port = htons(9);
	cr_assert_eq(
		import(GDRFAB_FMT_SIN, &sin, sizeof(sin), false, &got, &used),
		-FI_EINVAL);
	inet_pton(AF_INET, "224.0.0.1", &sin.sin_addr);
	cr_assert_eq(
		import(GDRFAB_FMT_SIN, &sin, sizeof(sin), false, &got, &used),
		-FI_EINVAL);
	cr_assert_eq(import(GDRFAB_FMT_SIN, NULL, 16, false, &got, &used),
		     -FI_EINVAL);
	cr_assert_eq(import(GDRFAB_FMT_STR, "verbs://x", 0, false, &got, &used),
		     -FI_EINVAL);
	cr_assert_eq(
		import(GDRFAB_FMT_NONE, &sin, sizeof(sin), false, &got, &used),
		-FI_EINVAL);
	/* A port's address is no peer; with a service it stands for the
	 * endpoint answering there. */
	port.qpn_be = 0;
	cr_assert_eq(import(GDRFAB_FMT_NATIVE, &port, sizeof(port), false, &got,
			    &used),
		     -FI_EINVAL);
	cr_assert_eq(import(GDRFAB_FMT_NATIVE, &port, sizeof(port), true, &got,
			    &used),
		     0);
	port.reserved = htonl(GDRFAB_ADDR_SVC_TAG | 9228);
	cr_assert_eq(import(GDRFAB_FMT_NATIVE, &port, sizeof(port), false, &got,
			    &used),
		     0);
	cr_assert(gdrfab_addr_is_service(&got));
	cr_assert_eq(gdrfab_addr_service(&got), 9228);
}
