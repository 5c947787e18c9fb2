/* SPDX-License-Identifier: BSD-2-Clause */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vm_helpers.h"

void require_vm(void)
{
	if (access("/sys/class/infiniband/rxe0", F_OK) ||
	    access("/sys/class/infiniband/rxe1", F_OK))
		cr_skip_test("no rxe0/rxe1: run inside tests/vm/runner/vm-run");
}

struct fi_info *gdrfab_hints(void)
{
	struct fi_info *hints = fi_allocinfo();

	cr_assert_not_null(hints);
	hints->fabric_attr->prov_name = strdup("gdrfab");
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY |
				      FI_MR_ENDPOINT | FI_MR_HMEM;
	return hints;
}

struct fi_info *gdrfab_getinfo_hints(struct fi_info *hints, uint64_t flags,
				     const char *node, int *ret)
{
	struct fi_info *info = NULL;
	int r = fi_getinfo(TEST_VERSION, node, NULL, flags, hints, &info);

	fi_freeinfo(hints);
	if (ret)
		*ret = r;
	return r ? NULL : info;
}

struct fi_info *gdrfab_info_for(const char *device)
{
	struct fi_info *hints = gdrfab_hints(), *info;
	int ret;

	hints->domain_attr->name = strdup(device);
	info = gdrfab_getinfo_hints(hints, 0, NULL, &ret);
	cr_assert_not_null(info, "fi_getinfo(gdrfab, %s): %s", device,
			   fi_strerror(-ret));
	cr_assert_null(info->next, "one port per rxe device");
	return info;
}

void test_domain_open(struct test_domain *t, const char *device)
{
	int ret;

	memset(t, 0, sizeof(*t));
	t->info = gdrfab_info_for(device);
	ret = fi_fabric(t->info->fabric_attr, &t->fabric, NULL);
	cr_assert_eq(ret, 0, "fi_fabric: %s", fi_strerror(-ret));
	ret = fi_domain(t->fabric, t->info, &t->domain, NULL);
	cr_assert_eq(ret, 0, "fi_domain: %s", fi_strerror(-ret));
}

void test_domain_close(struct test_domain *t)
{
	if (t->domain)
		cr_assert_eq(fi_close(&t->domain->fid), 0);
	if (t->fabric)
		cr_assert_eq(fi_close(&t->fabric->fid), 0);
	fi_freeinfo(t->info);
	memset(t, 0, sizeof(*t));
}

void test_ep_open(struct test_domain *t, struct test_ep *e,
		  enum fi_av_type av_type)
{
	struct fi_av_attr av_attr = {.type = av_type};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};

	cr_assert_eq(fi_av_open(t->domain, &av_attr, &e->av, NULL), 0);
	cr_assert_eq(fi_cq_open(t->domain, &cq_attr, &e->cq, NULL), 0);
	cr_assert_eq(fi_endpoint(t->domain, t->info, &e->ep, NULL), 0);
	cr_assert_eq(fi_ep_bind(e->ep, &e->av->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(fi_enable(e->ep), 0);
}

void test_ep_close(struct test_ep *e)
{
	cr_assert_eq(fi_close(&e->ep->fid), 0);
	cr_assert_eq(fi_close(&e->cq->fid), 0);
	cr_assert_eq(fi_close(&e->av->fid), 0);
}

struct test_domain vm_rxe0;

void vm_rxe0_open(void)
{
	require_vm();
	test_domain_open(&vm_rxe0, "rxe0");
}

void vm_rxe0_close(void)
{
	test_domain_close(&vm_rxe0);
}
