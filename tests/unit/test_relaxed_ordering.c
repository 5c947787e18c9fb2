/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_GDRFAB_RELAXED_ORDERING: what a domain on the fake verbs device asks
 * of the device when the application registers memory (the bit under
 * auto and on, none under off), how it falls back where the device
 * refuses the bit and that it remembers the refusal, and how the variable
 * is read at start.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "fake_verbs.h"
#include "gdrfab.h"
#include "gdrfab_host_cache.h"
#include "gdrfab_info.h"
#include "gdrfab_objs.h"
#include "gdrfab_params.h"
#include "proto_fixture.h"

#define RO IBV_ACCESS_RELAXED_ORDERING

struct dom {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
};

static void dom_open(struct dom *d, int mode)
{
	memset(d, 0, sizeof(*d));
	fake_verbs_install();
	gdrfab_params.relaxed_ordering = mode;
	d->info = pf_fake_info(&d->fabric);
	cr_assert_eq(fi_domain(d->fabric, d->info, &d->domain, NULL), 0);
}

static void dom_close(struct dom *d)
{
	cr_assert_eq(fi_close(&d->domain->fid), 0);
	cr_assert_eq(fi_close(&d->fabric->fid), 0);
	fi_freeinfo(d->info);
	cr_expect_eq(fake_verbs_counts().mr, 0, "MRs left");
	fake_verbs_uninstall();
	gdrfab_params.relaxed_ordering = GDRFAB_RELAXED_ORDERING_AUTO;
}

/* Registers buf as an application would; returns the access flags the
 * device was asked for (-1: no registration). */
static int reg(struct dom *d, void *buf, struct fid_mr **mr)
{
	cr_assert_eq(
		fi_mr_reg(d->domain, buf, 4096, FI_RECV, 0, 0, 0, mr, NULL), 0);
	return fake_verbs_mr_access(buf);
}

static char buf[3][4096];

TestSuite(relaxed_ordering, .timeout = 30);

Test(relaxed_ordering, names_in_enum_order)
{
	cr_assert_str_eq(
		gdrfab_relaxed_ordering_names[GDRFAB_RELAXED_ORDERING_AUTO],
		"auto");
	cr_assert_str_eq(
		gdrfab_relaxed_ordering_names[GDRFAB_RELAXED_ORDERING_ON],
		"on");
	cr_assert_str_eq(
		gdrfab_relaxed_ordering_names[GDRFAB_RELAXED_ORDERING_OFF],
		"off");
	cr_assert_null(gdrfab_relaxed_ordering_names[3]);
	/* auto is the default of a process that never set it. */
	cr_assert_eq(gdrfab_params.relaxed_ordering,
		     GDRFAB_RELAXED_ORDERING_AUTO);
}

/* The variable as the provider reads it when libfabric loads it. */
static int read_at_start(const char *value)
{
	setenv("FI_GDRFAB_RELAXED_ORDERING", value, 1);
	gdrfab_params.relaxed_ordering = -1;
	gdrfab_params_init();
	return gdrfab_params.relaxed_ordering;
}

Test(relaxed_ordering, variable_read_at_start)
{
	cr_assert_eq(read_at_start("off"), GDRFAB_RELAXED_ORDERING_OFF);
	cr_assert_eq(read_at_start("ON"), GDRFAB_RELAXED_ORDERING_ON);
	cr_assert_eq(read_at_start("auto"), GDRFAB_RELAXED_ORDERING_AUTO);
	gdrfab_params_fini();
}

/* A value that is none of the names is refused with a warning naming
 * them, and the default stands (as for every enum variable). */
Test(relaxed_ordering, bad_values_are_refused)
{
	static const char *const bad[] = {"yes", "1", "relaxed", "of"};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(read_at_start(bad[i]),
			     GDRFAB_RELAXED_ORDERING_AUTO, "accepted \"%s\"",
			     bad[i]);
	gdrfab_params_fini();
}

Test(relaxed_ordering, data_mrs_ask_for_it_under_auto_and_on)
{
	int modes[] = {GDRFAB_RELAXED_ORDERING_AUTO,
		       GDRFAB_RELAXED_ORDERING_ON};

	for (size_t i = 0; i < 2; i++) {
		struct dom d;
		struct fid_mr *mr;
		int access;

		dom_open(&d, modes[i]);
		access = reg(&d, buf[0], &mr);
		cr_assert_neq(access, -1);
		cr_expect(access & RO, "mode %d: access 0x%x", modes[i],
			  access);
		cr_expect(access & IBV_ACCESS_LOCAL_WRITE);
		cr_expect_eq(fake_verbs_refusals(), 0);
		cr_assert_eq(fi_close(&mr->fid), 0);
		dom_close(&d);
	}
}

Test(relaxed_ordering, off_never_asks)
{
	struct dom d;
	struct fid_mr *mr;
	int access;

	dom_open(&d, GDRFAB_RELAXED_ORDERING_OFF);
	access = reg(&d, buf[0], &mr);
	cr_assert_neq(access, -1);
	cr_expect_not(access & RO, "access 0x%x", access);
	cr_expect(access & IBV_ACCESS_LOCAL_WRITE);
	cr_assert_eq(fi_close(&mr->fid), 0);
	dom_close(&d);
}

/* A device (older rdma-core or kernel) that refuses the bit: the
 * registration goes without it, and later ones no longer ask. */
static void falls_back(int mode, int err)
{
	struct dom d;
	struct fid_mr *mr[3];

	dom_open(&d, mode);
	fake_verbs_refuse_access(RO, err);
	for (int i = 0; i < 3; i++) {
		int access = reg(&d, buf[i], &mr[i]);

		cr_assert_neq(access, -1, "registration %d failed", i);
		cr_expect_not(access & RO, "registration %d: 0x%x", i, access);
		cr_expect(access & IBV_ACCESS_LOCAL_WRITE);
	}
	cr_expect_eq(fake_verbs_refusals(), 1,
		     "the refusal was not remembered: %d refusals",
		     fake_verbs_refusals());
	for (int i = 0; i < 3; i++)
		cr_assert_eq(fi_close(&mr[i]->fid), 0);
	dom_close(&d);
}

Test(relaxed_ordering, auto_falls_back_on_einval)
{
	falls_back(GDRFAB_RELAXED_ORDERING_AUTO, EINVAL);
}

Test(relaxed_ordering, auto_falls_back_on_eopnotsupp)
{
	falls_back(GDRFAB_RELAXED_ORDERING_AUTO, EOPNOTSUPP);
}

Test(relaxed_ordering, on_falls_back_too)
{
	falls_back(GDRFAB_RELAXED_ORDERING_ON, EINVAL);
}

/* A registration that fails without the bit too failed for its own
 * reason: the error is the application's, and the bit is asked again. */
Test(relaxed_ordering, other_failures_are_not_blamed_on_it)
{
	struct dom d;
	struct fid_mr *mr;

	dom_open(&d, GDRFAB_RELAXED_ORDERING_AUTO);
	fake_verbs_refuse_access(RO | IBV_ACCESS_LOCAL_WRITE, EINVAL);
	cr_assert_neq(
		fi_mr_reg(d.domain, buf[0], 4096, FI_RECV, 0, 0, 0, &mr, NULL),
		0);
	cr_expect_eq(fake_verbs_refusals(), 2, "asked %d times",
		     fake_verbs_refusals());
	fake_verbs_refuse_access(0, 0);
	cr_expect(reg(&d, buf[1], &mr) & RO);
	cr_assert_eq(fi_close(&mr->fid), 0);
	dom_close(&d);
}

/* Any other error is no sign of the bit: no second try. */
Test(relaxed_ordering, no_retry_on_other_errors)
{
	struct dom d;
	struct fid_mr *mr;

	dom_open(&d, GDRFAB_RELAXED_ORDERING_AUTO);
	fake_verbs_refuse_access(RO, EACCES);
	cr_assert_neq(
		fi_mr_reg(d.domain, buf[0], 4096, FI_RECV, 0, 0, 0, &mr, NULL),
		0);
	cr_expect_eq(fake_verbs_refusals(), 1);
	dom_close(&d);
}
