/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The address formats an application may choose (fi_info->addr_format):
 * gdrfab's own 32-byte names, their text (FI_ADDR_STR: "gdrfab://..." and
 * "fi_sockaddr_in://A.B.C.D:P", a char * per address), and IPv4 socket
 * addresses (FI_SOCKADDR, FI_SOCKADDR_IN: an endpoint is named by where
 * it answers name queries, and an AV resolves what is inserted). Each
 * round-trips through fi_getname, fi_av_insert, fi_av_lookup and
 * fi_av_straddr, and endpoints of different formats talk to each other
 * in one process.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vm_helpers.h"

static struct fi_info *info_fmt(const char *device, uint32_t fmt,
				const char *node, const char *service,
				uint64_t flags, int *ret)
{
	struct fi_info *hints = gdrfab_hints(), *info = NULL;

	hints->domain_attr->name = strdup(device);
	hints->addr_format = fmt;
	*ret = fi_getinfo(TEST_VERSION, node, service, flags, hints, &info);
	fi_freeinfo(hints);
	return *ret ? NULL : info;
}

static void open_fmt(struct test_domain *t, struct test_ep *e,
		     const char *device, uint32_t fmt)
{
	int ret;

	memset(t, 0, sizeof(*t));
	t->info = info_fmt(device, fmt, NULL, NULL, 0, &ret);
	cr_assert_not_null(t->info, "fi_getinfo(%s): %s", device,
			   fi_strerror(-ret));
	cr_assert_eq(fi_fabric(t->info->fabric_attr, &t->fabric, NULL), 0);
	cr_assert_eq(fi_domain(t->fabric, t->info, &t->domain, NULL), 0);
	test_ep_open(t, e, FI_AV_TABLE);
}

/* Progresses both endpoints until a's send to to and b's receive are
 * done; every byte checked. */
static void pass_message(struct test_ep *a, fi_addr_t to, struct test_ep *b,
			 const char *text)
{
	struct fi_cq_tagged_entry c;
	char buf[64] = {0};
	bool sent = false, got = false;
	int i;

	cr_assert_eq(
		fi_recv(b->ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, NULL),
		0);
	cr_assert_eq(fi_send(a->ep, text, strlen(text) + 1, NULL, to, NULL), 0);
	for (i = 0; i < 100000 && !(sent && got); i++) {
		if (fi_cq_read(a->cq, &c, 1) == 1)
			sent = true;
		if (fi_cq_read(b->cq, &c, 1) == 1)
			got = true;
		if (!(sent && got))
			usleep(100);
	}
	cr_assert(sent && got, "no message (sent %d, received %d)", sent, got);
	cr_assert_str_eq(buf, text);
}

TestSuite(formats, .timeout = 120);

Test(formats, addr_str_round_trips)
{
	struct test_domain t, n;
	struct test_ep e, ne;
	char name[128], got[128], shown[128];
	uint8_t native[32];
	const char *one[1] = {name};
	size_t len = sizeof(name), glen = sizeof(got), slen = sizeof(shown);
	fi_addr_t fa;

	require_vm();
	open_fmt(&t, &e, "rxe0", FI_ADDR_STR);
	cr_assert_eq(t.info->addr_format, FI_ADDR_STR);
	cr_assert_eq(strncmp(t.info->src_addr, "gdrfab://", 9), 0);
	cr_assert_eq(t.info->src_addrlen, strlen(t.info->src_addr) + 1);
	cr_assert_eq(fi_getname(&e.ep->fid, name, &len), 0);
	cr_assert_eq(len, strlen(name) + 1);
	cr_assert_eq(strncmp(name, "gdrfab://::ffff:192.0.2.1/", 26), 0, "%s",
		     name);
	cr_assert_eq(fi_av_insert(e.av, one, 1, &fa, 0, NULL), 1);
	cr_assert_eq(fi_av_lookup(e.av, fa, got, &glen), 0);
	cr_assert_str_eq(got, name);
	cr_assert_eq(glen, len);
	cr_assert_str_eq(fi_av_straddr(e.av, name, shown, &slen), name);
	/* The same name through a native endpoint's eyes: straddr of its
	 * 32 bytes is the text, and the text inserts as those bytes. */
	open_fmt(&n, &ne, "rxe1", FI_FORMAT_UNSPEC);
	len = sizeof(native);
	cr_assert_eq(fi_getname(&ne.ep->fid, native, &len), 0);
	slen = sizeof(shown);
	fi_av_straddr(ne.av, native, shown, &slen);
	one[0] = shown;
	cr_assert_eq(fi_av_insert(e.av, one, 1, &fa, 0, NULL), 1);
	cr_assert_eq(fi_av_insertsvc(ne.av, name, NULL, NULL, 0, NULL), 1,
		     "fi_av_insertsvc takes an address string as node");
	/* Both formats in one job: text to native and back. */
	pass_message(&e, fa, &ne, "to the native endpoint");
	pass_message(&ne, 0, &e, "back to the text one");
	/* Truncation says the size needed. */
	glen = 8;
	cr_assert_eq(fi_av_lookup(e.av, fa, got, &glen), 0);
	cr_assert_eq(glen, strlen(shown) + 1);
	test_ep_close(&ne);
	test_domain_close(&n);
	test_ep_close(&e);
	test_domain_close(&t);
}

Test(formats, addr_str_from_getinfo_and_malformed_strings)
{
	struct test_domain t;
	struct test_ep e;
	struct fi_info *info;
	const char *bad[4] = {"gdrfab://", "verbs://x", "fi_sockaddr_in://x:1",
			      "fi_sockaddr_in://192.0.2.2:47000"};
	fi_addr_t out[4];
	int ret, errs[4];

	require_vm();
	info = info_fmt("rxe0", FI_ADDR_STR, "192.0.2.2", "47000", 0, &ret);
	cr_assert_not_null(info, "fi_getinfo: %s", fi_strerror(-ret));
	cr_assert_str_eq(info->dest_addr, "fi_sockaddr_in://192.0.2.2:47000");
	fi_freeinfo(info);
	info = info_fmt("rxe0", FI_ADDR_STR, "fi_sockaddr_in://192.0.2.2:47001",
			NULL, 0, &ret);
	cr_assert_not_null(info, "fi_getinfo: %s", fi_strerror(-ret));
	cr_assert_str_eq(info->dest_addr, "fi_sockaddr_in://192.0.2.2:47001");
	fi_freeinfo(info);
	/* With FI_SOURCE and a service the port's text names it. */
	info = info_fmt("rxe1", FI_ADDR_STR, NULL, "47002", FI_SOURCE, &ret);
	cr_assert_not_null(info, "fi_getinfo: %s", fi_strerror(-ret));
	cr_assert_not_null(strstr(info->src_addr, "/svc=47002"), "%s",
			   (char *)info->src_addr);
	fi_freeinfo(info);
	open_fmt(&t, &e, "rxe0", FI_ADDR_STR);
	cr_assert_eq(fi_av_insert(e.av, bad, 4, out, FI_SYNC_ERR, errs), 1);
	cr_assert_eq(errs[0], FI_EINVAL);
	cr_assert_eq(errs[1], FI_EINVAL);
	cr_assert_eq(errs[2], FI_EINVAL);
	cr_assert_eq(errs[3], 0);
	test_ep_close(&e);
	test_domain_close(&t);
}

/* Two socket-address endpoints in one process: each names itself by
 * IP:port, inserts the other's, and the AV finds the names. */
Test(formats, socket_addresses_resolve_through_the_name_service)
{
	struct test_domain ta, tb;
	struct test_ep a, b;
	struct sockaddr_in na, nb, got;
	size_t len = sizeof(na);
	fi_addr_t a_to_b, b_to_a;
	char text[64];

	require_vm();
	open_fmt(&ta, &a, "rxe0", FI_SOCKADDR_IN);
	open_fmt(&tb, &b, "rxe1", FI_SOCKADDR_IN);
	cr_assert_eq(ta.info->addr_format, FI_SOCKADDR_IN);
	cr_assert_eq(ta.info->src_addrlen, sizeof(struct sockaddr_in));
	cr_assert_eq(fi_getname(&a.ep->fid, &na, &len), 0);
	cr_assert_eq(len, sizeof(na));
	cr_assert_eq(na.sin_family, AF_INET);
	cr_assert_neq(na.sin_port, 0, "a port of the kernel's choosing");
	cr_assert_str_eq(inet_ntoa(na.sin_addr), "192.0.2.1");
	len = sizeof(nb);
	cr_assert_eq(fi_getname(&b.ep->fid, &nb, &len), 0);
	cr_assert_eq(fi_av_insert(a.av, &nb, 1, &a_to_b, 0, NULL), 1);
	cr_assert_eq(fi_av_insert(b.av, &na, 1, &b_to_a, 0, NULL), 1);
	len = sizeof(got);
	cr_assert_eq(fi_av_lookup(a.av, a_to_b, &got, &len), 0);
	cr_assert_eq(memcmp(&got, &nb, sizeof(got)), 0);
	len = sizeof(text);
	fi_av_straddr(a.av, &nb, text, &len);
	cr_assert_eq(strncmp(text, "fi_sockaddr_in://192.0.2.2:", 27), 0, "%s",
		     text);
	pass_message(&a, a_to_b, &b, "over a resolved socket address");
	pass_message(&b, b_to_a, &a, "and back");
	test_ep_close(&b);
	test_domain_close(&tb);
	test_ep_close(&a);
	test_domain_close(&ta);
}

/* What fabtests' fi_av_test does: FI_SOCKADDR hints, a source address,
 * then inserts of a good address (port 9, nobody's) and a bad one (16 zero
 * bytes), one by one, as a vector, and with FI_SYNC_ERR. */
Test(formats, fabtests_av_test_inserts)
{
	struct fi_info *hints = gdrfab_hints(), *info = NULL;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fi_av_attr attr = {.type = FI_AV_MAP, .count = 32};
	struct sockaddr_in addrs[2] = {
		{.sin_family = AF_INET, .sin_port = htons(9)}};
	fi_addr_t fa[2];
	int errs[2];

	require_vm();
	hints->mode = ~0ULL;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->mr_mode = ~(FI_MR_BASIC | FI_MR_SCALABLE);
	hints->addr_format = FI_SOCKADDR;
	cr_assert_eq(fi_getinfo(TEST_VERSION, "192.0.2.2", NULL, FI_SOURCE,
				hints, &info),
		     0);
	cr_assert(info->addr_format == FI_SOCKADDR_IN ||
		  info->addr_format == FI_SOCKADDR);
	cr_assert_str_eq(info->domain_attr->name, "rxe1");
	cr_assert_eq(fi_fabric(info->fabric_attr, &fabric, NULL), 0);
	cr_assert_eq(fi_domain(fabric, info, &domain, NULL), 0);
	inet_pton(AF_INET, "192.0.2.2", &addrs[0].sin_addr);
	for (int type = 0; type < 2; type++) {
		attr.type = type ? FI_AV_TABLE : FI_AV_MAP;
		cr_assert_eq(fi_av_open(domain, &attr, &av, NULL), 0);
		cr_assert_eq(fi_av_insert(av, &addrs[0], 1, fa, 0, NULL), 1);
		cr_assert_neq(fa[0], FI_ADDR_NOTAVAIL);
		cr_assert_eq(fi_av_insert(av, &addrs[1], 1, fa, 0, NULL), 0);
		cr_assert_eq(fa[0], FI_ADDR_NOTAVAIL);
		cr_assert_eq(fi_av_insert(av, addrs, 2, fa, 0, NULL), 1);
		cr_assert_neq(fa[0], FI_ADDR_NOTAVAIL);
		cr_assert_eq(fa[1], FI_ADDR_NOTAVAIL);
		cr_assert_eq(
			fi_av_insert(av, addrs, 2, NULL, FI_SYNC_ERR, errs), 1);
		cr_assert_eq(errs[0], 0);
		cr_assert_neq(errs[1], 0);
		cr_assert_eq(fi_close(&av->fid), 0);
	}
	cr_assert_eq(fi_close(&domain->fid), 0);
	cr_assert_eq(fi_close(&fabric->fid), 0);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}
