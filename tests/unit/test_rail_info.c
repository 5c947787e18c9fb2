/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Rail-set domains in fi_getinfo (gdrfab_rail_info.h), on the fake verbs
 * with two devices: without FI_GDRFAB_RAILS (and no GPU in the topology)
 * no new entry; with named sets one entry per set of more than one NIC,
 * before every NIC alone, named by its NICs and addressed by rail 0's
 * port; the domain's name in the hints selects it; a value that does not
 * parse, or a set with a NIC that is not there, lists none. fi_domain on
 * a rail set opens every NIC of it, rail 0 the first, and refuses a name
 * that is no set of the devices there with -FI_EINVAL.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "fake_verbs.h"
#include "gdrfab.h"
#include "gdrfab_addr.h"
#include "gdrfab_host_cache.h"
#include "gdrfab_info.h"
#include "gdrfab_objs.h"
#include "gdrfab_params.h"
#include "gdrfab_rail_info.h"

static void setup(void)
{
	fake_verbs_install();
	fake_verbs_set_devices(2);
}

static void teardown(void)
{
	free(gdrfab_params.rails);
	gdrfab_params.rails = NULL;
	fake_verbs_uninstall();
}

TestSuite(rail_info, .init = setup, .fini = teardown);

static void set_rails(const char *value)
{
	free(gdrfab_params.rails);
	gdrfab_params.rails = value ? strdup(value) : NULL;
}

/* fi_getinfo's domain names, joined with ' ', for one assertion. */
static void names(const char *domain, char *out, size_t len)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	size_t off = 0;

	cr_assert(hints);
	hints->ep_attr->type = FI_EP_RDM;
	if (domain)
		hints->domain_attr->name = strdup(domain);
	out[0] = '\0';
	if (gdrfab_getinfo(gdrfab_api_version, NULL, NULL, 0, hints, &info)) {
		snprintf(out, len, "(none)");
		fi_freeinfo(hints);
		return;
	}
	for (struct fi_info *i = info; i; i = i->next)
		off += (size_t)snprintf(out + off, len - off, "%s%s",
					off ? " " : "", i->domain_attr->name);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

Test(rail_info, unset_lists_no_rail_set)
{
	char got[256];

	names(NULL, got, sizeof(got));
	cr_expect_str_eq(got, "fake0 fake1");
	set_rails("2"); /* a cap: no GPU here, so no set */
	names(NULL, got, sizeof(got));
	cr_expect_str_eq(got, "fake0 fake1");
	set_rails("fake0,fake1"); /* sets of one NIC each */
	names(NULL, got, sizeof(got));
	cr_expect_str_eq(got, "fake0 fake1");
}

/* Asked for (FI_GDRFAB_RAILS set), the sets stand for their NICs, so
 * that an MPI taking the first entry, or spreading its ranks over the
 * entries, stripes: the sets first, in the order of their rail 0s, and
 * after them only the NICs no set holds. A NIC of a set named in the
 * hints is still listed. */
Test(rail_info, named_sets_listed_instead_of_their_nics)
{
	char got[256];

	set_rails("fake1+fake0");
	names(NULL, got, sizeof(got));
	cr_expect_str_eq(got, "fake1+fake0");
	names("fake0", got, sizeof(got));
	cr_expect_str_eq(got, "fake0");
	fake_verbs_set_devices(4);
	set_rails("fake2+fake3,fake0+fake1");
	names(NULL, got, sizeof(got));
	cr_expect_str_eq(got, "fake0+fake1 fake2+fake3");
	set_rails("fake3+fake1");
	names(NULL, got, sizeof(got));
	cr_expect_str_eq(got, "fake3+fake1 fake0 fake2");
	names("fake1", got, sizeof(got));
	cr_expect_str_eq(got, "fake1");
}

Test(rail_info, name_in_hints_selects_the_set)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	struct gdrfab_addr *src;

	set_rails("fake0+fake1");
	cr_assert(hints);
	hints->domain_attr->name = strdup("fake0+fake1");
	cr_assert_eq(
		gdrfab_getinfo(gdrfab_api_version, NULL, NULL, 0, hints, &info),
		0);
	cr_assert_str_eq(info->domain_attr->name, "fake0+fake1");
	cr_expect_null(info->next, "only the rail set matches");
	/* Rail 0's port names the endpoints: 192.0.2.1, fake0's. */
	src = info->src_addr;
	cr_assert(src);
	cr_expect_eq(src->gid[15], 1);
	cr_expect_eq(src->port_num, 1);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

Test(rail_info, bad_value_lists_none)
{
	static const char *const bad[] = {"fake0+nic9", "fake0+fake0",
					  "fake0+",	"+fake1",
					  "0",		"fake0++fake1"};
	char got[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		set_rails(bad[i]);
		names(NULL, got, sizeof(got));
		cr_expect_str_eq(got, "fake0 fake1", "FI_GDRFAB_RAILS=%s",
				 bad[i]);
	}
	set_rails("fake0+fake1");
	names("fake0+fake2", got, sizeof(got));
	cr_expect_str_eq(got, "(none)");
}

Test(rail_info, set_of_name)
{
	struct gdrfab_port_desc ports[2];
	struct gdrfab_rail_set set;
	char err[256];

	memset(ports, 0, sizeof(ports));
	snprintf(ports[0].dev_name, sizeof(ports[0].dev_name), "mlx5_0");
	snprintf(ports[1].dev_name, sizeof(ports[1].dev_name), "mlx5_1");
	ports[0].active = ports[1].active = true;
	cr_assert_eq(gdrfab_rail_set_of_name("mlx5_1+mlx5_0", ports, 2, &set,
					     err, sizeof(err)),
		     0, "%s", err);
	cr_expect_eq(set.count, 2);
	cr_expect_str_eq(set.nic[0], "mlx5_1");
	cr_expect_str_eq(set.name, "mlx5_1+mlx5_0");
	cr_expect_eq(gdrfab_rail_set_of_name("mlx5_0+mlx5_9", ports, 2, &set,
					     err, sizeof(err)),
		     -FI_EINVAL);
	cr_expect(strstr(err, "mlx5_9"), "%s", err);
	cr_expect_null(strstr(err, "FI_GDRFAB_RAILS"), "%s", err);
	cr_expect_eq(gdrfab_rail_set_of_name("mlx5_0+mlx5_1,mlx5_2", ports, 2,
					     &set, err, sizeof(err)),
		     -FI_EINVAL);
	cr_expect_eq(gdrfab_rail_set_of_name("mlx5_0", ports, 2, &set, err,
					     sizeof(err)),
		     -FI_EINVAL);
	cr_expect_eq(gdrfab_rail_set_of_name("mlx5_0+mlx5_0", ports, 2, &set,
					     err, sizeof(err)),
		     -FI_EINVAL);
}

/* fi_domain on a name: the info fi_getinfo gave for it, renamed when the
 * name is not listed (a name an application wrote itself). */
static int open_domain(const char *name, struct fid_fabric **fabric,
		       struct fid_domain **domain)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	int ret;

	cr_assert(hints);
	hints->domain_attr->name = strdup("fake0");
	cr_assert_eq(
		gdrfab_getinfo(gdrfab_api_version, NULL, NULL, 0, hints, &info),
		0);
	free(info->domain_attr->name);
	info->domain_attr->name = strdup(name);
	cr_assert_eq(gdrfab_fabric_open(info->fabric_attr, fabric, NULL), 0);
	(*fabric)->api_version = gdrfab_api_version;
	ret = fi_domain(*fabric, info, domain, NULL);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return ret;
}

Test(rail_info, domain_opens_every_rail)
{
	struct fid_fabric *fabric;
	struct fid_domain *fid;
	struct gdrfab_domain *domain;

	cr_assert_eq(open_domain("fake1+fake0", &fabric, &fid), 0);
	domain = gdrfab_container_of(fid, struct gdrfab_domain, fid);
	cr_expect_eq(domain->rails.count, 2);
	cr_expect_str_eq(domain->rails.rail[0].name, "fake1");
	cr_expect_str_eq(domain->rails.rail[1].name, "fake0");
	/* Rail 0 (fake1, 192.0.2.2) names the domain's port. */
	cr_expect_eq(domain->port_addr.gid[15], 2);
	cr_expect_eq(domain->rails.rail[1].port_addr.gid[15], 1);
	cr_expect_eq(domain->rails.rail[0].pd, domain->pd);
	cr_expect_neq(domain->rails.rail[1].pd, NULL);
	cr_expect_str_eq(domain->rails.rail[1].pd->context->device->name,
			 "fake0");
	cr_expect_eq(fake_verbs_counts().ctx, 2);
	cr_expect_eq(fake_verbs_counts().pd, 2);
	cr_assert_eq(fi_close(&fid->fid), 0);
	cr_assert_eq(fi_close(&fabric->fid), 0);
	cr_expect_eq(fake_verbs_counts().ctx, 0);
	cr_expect_eq(fake_verbs_counts().pd, 0);
}

Test(rail_info, domain_of_one_nic_has_one_rail)
{
	struct fid_fabric *fabric;
	struct fid_domain *fid;
	struct gdrfab_domain *domain;

	cr_assert_eq(open_domain("fake0", &fabric, &fid), 0);
	domain = gdrfab_container_of(fid, struct gdrfab_domain, fid);
	cr_expect_eq(domain->rails.count, 1);
	cr_expect_eq(domain->rails.rail[0].ctx, domain->ctx);
	cr_expect_eq(fake_verbs_counts().ctx, 1);
	cr_assert_eq(fi_close(&fid->fid), 0);
	cr_assert_eq(fi_close(&fabric->fid), 0);
}

/* A rail-set name that does not parse is the application's error:
 * -FI_EINVAL (with a log line), nothing left open. */
Test(rail_info, bad_rail_set_name_is_einval)
{
	static const char *const bad[] = {
		"fake0+fake9", "fake0+fake0",	    "fake0+",
		"+fake1",      "fake0+fake1,fake2", "fake0++fake1"};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fid_fabric *fabric;
		struct fid_domain *fid = NULL;

		cr_expect_eq(open_domain(bad[i], &fabric, &fid), -FI_EINVAL,
			     "%s", bad[i]);
		cr_expect_null(fid);
		cr_assert_eq(fi_close(&fabric->fid), 0);
		cr_expect_eq(fake_verbs_counts().ctx, 0, "%s", bad[i]);
		cr_expect_eq(fake_verbs_counts().pd, 0, "%s", bad[i]);
	}
}

/* Memory registered in a rail-set domain is registered on every rail's PD
 * (one cache entry holding an MR per rail), its key rail 0's rkey in the
 * low 32 bits, tagged as a rail-set domain's (gdrfab_rail_key, for
 * striped RMA); closing it deregisters them all. */
Test(rail_info, mr_registers_on_every_rail)
{
	static char buf[8192];
	struct fid_fabric *fabric;
	struct fid_domain *fid;
	struct gdrfab_domain *domain;
	struct fid_mr *mr;
	struct gdrfab_mr *m;

	gdrfab_params.host_mr_cache = GDRFAB_HOST_CACHE_OFF;
	cr_assert_eq(open_domain("fake0+fake1", &fabric, &fid), 0);
	domain = gdrfab_container_of(fid, struct gdrfab_domain, fid);
	cr_assert_eq(fi_mr_reg(fid, buf, sizeof(buf),
			       FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SEND, 0, 0,
			       0, &mr, NULL),
		     0);
	m = gdrfab_container_of(mr, struct gdrfab_mr, fid);
	cr_assert(m->desc.reg);
	cr_expect_eq(m->desc.reg->mr->pd, domain->rails.rail[0].pd);
	cr_assert(m->desc.reg->more_mr[0]);
	cr_expect_eq(m->desc.reg->more_mr[0]->pd, domain->rails.rail[1].pd);
	cr_expect_eq(m->desc.reg->more_mr[0]->addr, (void *)buf);
	cr_expect_eq(m->desc.reg->more_mr[0]->length, sizeof(buf));
	cr_expect_null(m->desc.reg->more_mr[1]);
	cr_expect_eq((uint32_t)fi_mr_key(mr), m->desc.reg->mr->rkey);
	cr_expect(gdrfab_key_is_rail(fi_mr_key(mr)));
	cr_expect_eq(fake_verbs_counts().mr, 2);
	cr_assert_eq(fi_close(&mr->fid), 0);
	cr_expect_eq(fake_verbs_counts().mr, 0);
	cr_assert_eq(fi_close(&fid->fid), 0);
	cr_assert_eq(fi_close(&fabric->fid), 0);
}

Test(rail_info, mr_of_one_nic_registers_once)
{
	static char buf[8192];
	struct fid_fabric *fabric;
	struct fid_domain *fid;
	struct fid_mr *mr;
	struct gdrfab_mr *m;

	gdrfab_params.host_mr_cache = GDRFAB_HOST_CACHE_OFF;
	cr_assert_eq(open_domain("fake0", &fabric, &fid), 0);
	cr_assert_eq(fi_mr_reg(fid, buf, sizeof(buf),
			       FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SEND, 0, 0,
			       0, &mr, NULL),
		     0);
	m = gdrfab_container_of(mr, struct gdrfab_mr, fid);
	cr_expect_null(m->desc.reg->more_mr[0]);
	cr_expect_eq(fake_verbs_counts().mr, 1);
	cr_assert_eq(fi_close(&mr->fid), 0);
	cr_assert_eq(fi_close(&fid->fid), 0);
	cr_assert_eq(fi_close(&fabric->fid), 0);
}

/* A set the hints name is listed whatever FI_GDRFAB_RAILS says, as
 * fi_domain opens it; a NIC the hints name brings no set. */
Test(rail_info, set_named_in_hints_is_listed)
{
	char got[256];

	names("fake1+fake0", got, sizeof(got));
	cr_expect_str_eq(got, "fake1+fake0");
	set_rails("1");
	names("fake0+fake1", got, sizeof(got));
	cr_expect_str_eq(got, "fake0+fake1");
	set_rails("fake0+fake1");
	names("fake0", got, sizeof(got));
	cr_expect_str_eq(got, "fake0");
	names("fake0+fake0", got, sizeof(got));
	cr_expect_str_eq(got, "(none)");
}

/* With one device up, nothing is parsed or listed: a bad value says
 * nothing either (fi_getinfo does what it did). */
Test(rail_info, one_device_lists_nothing)
{
	char got[256];

	fake_verbs_set_devices(1);
	set_rails("fake0+fake1");
	names(NULL, got, sizeof(got));
	cr_expect_str_eq(got, "fake0");
	set_rails("fake0+nic9");
	names(NULL, got, sizeof(got));
	cr_expect_str_eq(got, "fake0");
}

/* FI_GDRFAB_RAILS and FI_GDRFAB_STRIPE_MIN as the provider reads them
 * when libfabric loads it. */
Test(rail_info, variables_read_at_start)
{
	setenv("FI_GDRFAB_RAILS", "rxe0+rxe2,rxe1+rxe3", 1);
	setenv("FI_GDRFAB_STRIPE_MIN", "1048576", 1);
	gdrfab_params_init();
	cr_assert_not_null(gdrfab_params.rails);
	cr_expect_str_eq(gdrfab_params.rails, "rxe0+rxe2,rxe1+rxe3");
	cr_expect_eq(gdrfab_params.stripe_min, 1 << 20);
	setenv("FI_GDRFAB_STRIPE_MIN", "lots", 1);
	unsetenv("FI_GDRFAB_RAILS");
	gdrfab_params_init();
	cr_expect_null(gdrfab_params.rails);
	cr_expect_eq(gdrfab_params.stripe_min, 1 << 20,
		     "a bad value keeps the value before it");
	gdrfab_params_fini();
	gdrfab_params.stripe_min = GDRFAB_DEFAULT_STRIPE_MIN;
}

/* A NIC that is down when the sets are made is left out of its set,
 * which is named by the NICs left and listed while two are: one NIC of
 * three down leaves two rails, not one. A set named in the hints is as
 * named or not at all. */
Test(rail_info, a_nic_down_is_left_out_of_its_set)
{
	struct gdrfab_port_desc ports[4];
	struct gdrfab_rail_list *out = calloc(1, sizeof(*out));

	cr_assert(out);
	memset(ports, 0, sizeof(ports));
	for (int i = 0; i < 4; i++) {
		snprintf(ports[i].dev_name, sizeof(ports[i].dev_name),
			 "mlx5_%d", i);
		ports[i].active = i != 2;
	}
	cr_assert_eq(gdrfab_rail_sets_listed("mlx5_0+mlx5_2+mlx5_1,mlx5_3",
					     ports, 4, out),
		     0);
	cr_assert_eq(out->count, 1);
	cr_expect_eq(out->set[0].count, 2);
	cr_expect_str_eq(out->set[0].name, "mlx5_0+mlx5_1");
	cr_expect_str_eq(out->set[0].nic[1], "mlx5_1");
	cr_assert_eq(gdrfab_rail_sets_listed("mlx5_2+mlx5_3,mlx5_0+mlx5_1",
					     ports, 4, out),
		     0);
	cr_assert_eq(out->count, 1, "a set of one NIC left is listed");
	cr_expect_str_eq(out->set[0].name, "mlx5_0+mlx5_1");
	cr_assert_eq(
		gdrfab_rail_sets_named("mlx5_0+mlx5_2+mlx5_1", ports, 4, out),
		0);
	cr_expect_eq(out->count, 0, "a named set with a NIC down is listed");
	ports[2].active = true;
	cr_assert_eq(
		gdrfab_rail_sets_listed("mlx5_0+mlx5_2+mlx5_1", ports, 4, out),
		0);
	cr_expect_str_eq(out->set[0].name, "mlx5_0+mlx5_2+mlx5_1", "all up");
	free(out);
}
