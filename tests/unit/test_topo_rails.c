/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Rail sets (gdrfab_topo_rails.h): FI_GDRFAB_RAILS parsed into a cap or
 * named sets, with its errors; and the exact set each GPU of the saved
 * topologies gets (tests/topo/fixtures), as a user of that machine would
 * expect it: every NIC tied nearest, capped.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gdrfab.h"
#include "gdrfab_topo.h"
#include "gdrfab_topo_rails.h"

static struct gdrfab_topo t;
static struct gdrfab_topo_choice choice[GDRFAB_TOPO_MAX_DEVS];
static struct gdrfab_rails_spec spec;
static char err[512];
static bool loaded;

/* name: a file of tests/topo/fixtures/real, or of tests/topo/fixtures. */
static void load(const char *name)
{
	const char *src = getenv("GDRFAB_SRCDIR");
	char path[1024];

	snprintf(path, sizeof(path), "%s/tests/topo/fixtures/real/%s.xml",
		 src ? src : "..", name);
	if (access(path, R_OK))
		snprintf(path, sizeof(path), "%s/tests/topo/fixtures/%s.xml",
			 src ? src : "..", name);
	cr_assert_eq(gdrfab_topo_load(&t, path), 0, "%s: %s", path, t.error);
	loaded = true;
	cr_assert_eq(gdrfab_topo_choose(&t, choice), 0);
}

static void unload(void)
{
	if (loaded)
		gdrfab_topo_fini(&t);
	loaded = false;
}

TestSuite(rails, .fini = unload, .timeout = 30);

/* GPU g's rail set's name under FI_GDRFAB_RAILS=value. */
static const char *rails_of(size_t g, const char *value)
{
	static struct gdrfab_rail_set r;

	cr_assert_eq(
		gdrfab_rails_parse(value, NULL, 0, &spec, err, sizeof(err)), 0,
		"%s", err);
	gdrfab_topo_rails(&t, &choice[g], g, &spec, &r);
	cr_assert_eq(r.name[0] != '\0', r.count != 0);
	return r.name;
}

/* ---- the variable ---- */

Test(rails, counts_and_all)
{
	static const struct {
		const char *value;
		size_t limit;
	} ok[] = {
		{NULL, GDRFAB_RAILS_DEFAULT},
		{"", GDRFAB_RAILS_DEFAULT},
		{"all", GDRFAB_RAILS_MAX},
		{"ALL", GDRFAB_RAILS_MAX},
		{"1", 1},
		{"3", 3},
		{"8", 8},
	};

	cr_assert_eq(GDRFAB_RAILS_DEFAULT, 4);
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		cr_expect_eq(gdrfab_rails_parse(ok[i].value, NULL, 0, &spec,
						err, sizeof(err)),
			     0, "%s", err);
		cr_expect_eq(spec.limit, ok[i].limit, "\"%s\": %zu",
			     ok[i].value ? ok[i].value : "(unset)", spec.limit);
		cr_expect_eq(spec.nsets, 0);
	}
}

Test(rails, named_sets_parse_exactly)
{
	static const char *const known[] = {"rxe0", "rxe1", "rxe2", "rxe3"};

	cr_assert_eq(gdrfab_rails_parse("rxe0+rxe2,rxe1+rxe3", known, 4, &spec,
					err, sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(spec.limit, 0);
	cr_assert_eq(spec.nsets, 2);
	cr_assert_eq(spec.count[0], 2);
	cr_assert_eq(spec.count[1], 2);
	cr_assert_str_eq(spec.nic[0][0], "rxe0");
	cr_assert_str_eq(spec.nic[0][1], "rxe2");
	cr_assert_str_eq(spec.nic[1][0], "rxe1");
	cr_assert_str_eq(spec.nic[1][1], "rxe3");
	/* One set of one NIC, and names taken on trust without a list. */
	cr_assert_eq(
		gdrfab_rails_parse("mlx5_7", NULL, 0, &spec, err, sizeof(err)),
		0);
	cr_assert_eq(spec.nsets, 1);
	cr_assert_eq(spec.count[0], 1);
	cr_assert_str_eq(spec.nic[0][0], "mlx5_7");
}

static void refused(const char *value, const char *why)
{
	static const char *const known[] = {
		"rxe0", "rxe1", "rxe2", "rxe3", "a0", "a1", "a2",
		"a3",	"a4",	"a5",	"a6",	"a7", "a8"};

	cr_expect_eq(gdrfab_rails_parse(value, known,
					sizeof(known) / sizeof(known[0]), &spec,
					err, sizeof(err)),
		     -FI_EINVAL, "accepted \"%s\"", value);
	cr_expect(strstr(err, why), "\"%s\": \"%s\" lacks \"%s\"", value, err,
		  why);
	cr_expect(!strncmp(err, "FI_GDRFAB_RAILS: ", 17), "%s", err);
	cr_expect_eq(spec.nsets, 0, "a refused value leaves no set");
	cr_expect_eq(spec.limit, 0);
}

Test(rails, bad_values_are_refused_with_their_reason)
{
	char many[256] = "", sets[256] = "", longname[80];

	refused("0", "a count of rails is 1 to 8");
	refused("9", "a count of rails is 1 to 8");
	refused("00001", "a count of rails is 1 to 8");
	refused("rxe9", "set 1 names rxe9, which is no RDMA NIC here "
			"(those are: rxe0 rxe1");
	refused("rxe0+rxe1,rxe2+rxe9", "set 2 names rxe9");
	refused("rxe0+rxe1,rxe1+rxe2",
		"rxe1 is in set 1 and set 2: a NIC is a rail of one set only");
	refused("rxe0+rxe0", "set 1 names rxe0 twice");
	refused(",", "set 1 is empty");
	refused(",rxe0", "set 1 is empty");
	refused("rxe0,", "set 2 is empty");
	refused("rxe0,,rxe1", "set 2 is empty");
	refused("+rxe0", "set 1 has an empty NIC name");
	refused("rxe0+", "set 1 has an empty NIC name");
	refused("rxe0++rxe1", "set 1 has an empty NIC name");
	refused("rxe0,rxe1+,rxe2", "set 2 has an empty NIC name");
	/* Nine NICs in one set, seventeen sets. */
	snprintf(many, sizeof(many), "a0+a1+a2+a3+a4+a5+a6+a7+a8");
	refused(many, "set 1 has more than 8 NICs");
	for (int i = 0; i < 17; i++)
		snprintf(sets + strlen(sets), sizeof(sets) - strlen(sets),
			 "%sn%d", i ? "," : "", i);
	cr_expect_eq(gdrfab_rails_parse(sets, NULL, 0, &spec, err, sizeof(err)),
		     -FI_EINVAL);
	cr_expect(strstr(err, "more than 16 rail sets"), "%s", err);
	memset(longname, 'x', 64);
	longname[64] = '\0';
	cr_expect_eq(
		gdrfab_rails_parse(longname, NULL, 0, &spec, err, sizeof(err)),
		-FI_EINVAL);
	cr_expect(strstr(err, "a NIC name of 64 characters"), "%s", err);
}

/* ---- rail sets of real machines ---- */

Test(rails, p5_every_gpu_stripes_over_its_four_pix_efa)
{
	static const char *const want[8] = {
		"rdmap79s0+rdmap80s0+rdmap81s0+rdmap82s0",
		"rdmap96s0+rdmap97s0+rdmap98s0+rdmap99s0",
		"rdmap113s0+rdmap114s0+rdmap115s0+rdmap116s0",
		"rdmap130s0+rdmap131s0+rdmap132s0+rdmap133s0",
		"rdmap147s0+rdmap148s0+rdmap149s0+rdmap150s0",
		"rdmap164s0+rdmap165s0+rdmap166s0+rdmap167s0",
		"rdmap181s0+rdmap182s0+rdmap183s0+rdmap184s0",
		"rdmap198s0+rdmap199s0+rdmap200s0+rdmap201s0",
	};

	load("aws-p5.48xlarge.nixl");
	cr_assert_eq(t.ngpu, 8);
	for (size_t g = 0; g < 8; g++) {
		cr_expect_str_eq(rails_of(g, NULL), want[g], "gpu%zu", g);
		cr_expect_str_eq(rails_of(g, "all"), want[g], "gpu%zu", g);
	}
	/* A cap keeps the first in bus-id order (each EFA its own card). */
	cr_expect_str_eq(rails_of(3, "2"), "rdmap130s0+rdmap131s0");
	cr_expect_str_eq(rails_of(3, "1"), "rdmap130s0");
}

Test(rails, juwels_one_pix_hca_per_gpu_is_one_rail)
{
	static const char *const want[4] = {"mlx5_0", "mlx5_1", "mlx5_2",
					    "mlx5_3"};

	load("juwels-booster-4xA100.psmgmt-jwb0004");
	cr_assert_eq(t.ngpu, 4);
	for (size_t g = 0; g < 4; g++)
		cr_expect_str_eq(rails_of(g, NULL), want[g], "gpu%zu", g);
}

Test(rails, shared_nics_give_one_rail_each)
{
	/* p4d: two GPUs per EFA, g5: eight GPUs on one EFA. */
	load("aws-p4d.24xlarge.nixl");
	cr_expect_str_eq(rails_of(0, NULL), "rdmap16s27");
	cr_expect_str_eq(rails_of(1, NULL), "rdmap16s27");
	cr_expect_str_eq(rails_of(5, NULL), "rdmap144s27");
	unload();
	load("aws-g5.48xlarge.nixl");
	for (size_t g = 0; g < t.ngpu; g++)
		cr_expect_str_eq(rails_of(g, "all"), "rdmap0s21", "gpu%zu", g);
}

Test(rails, a_gpu_without_nic_has_no_rail)
{
	load("lent-h200-vm");
	cr_assert_eq(t.ngpu, 1);
	cr_expect_str_eq(rails_of(0, NULL), "");
}

Test(rails, dual_port_card_ports_are_two_rails)
{
	load("corner-dual-port");
	cr_expect_str_eq(rails_of(0, NULL), "mlx5_0+mlx5_1");
	cr_expect_str_eq(rails_of(1, NULL), "mlx5_2");
}

/* Ties over two dual-port cards: a cap of 2 takes one port of each card
 * before two ports of one (they would share one PCIe link). The
 * adapters and names are all the rail code reads of a topology. */
Test(rails, a_cap_spreads_over_cards_first)
{
	static struct gdrfab_topo two_cards;
	struct gdrfab_topo_choice c = {.count = 4, .nic = {0, 1, 2, 3}};
	struct gdrfab_rail_set r;

	for (size_t n = 0; n < 4; n++) {
		snprintf(two_cards.nic[n].name, sizeof(two_cards.nic[n].name),
			 "mlx5_%zu", n);
		two_cards.nic[n].adapter = (unsigned)(n / 2);
	}
	two_cards.nnic = 4;
	two_cards.ngpu = 1;
	cr_assert_eq(gdrfab_rails_parse("2", NULL, 0, &spec, err, sizeof(err)),
		     0);
	gdrfab_topo_rails(&two_cards, &c, 0, &spec, &r);
	cr_expect_str_eq(r.name, "mlx5_0+mlx5_2");
	cr_assert_eq(gdrfab_rails_parse("3", NULL, 0, &spec, err, sizeof(err)),
		     0);
	gdrfab_topo_rails(&two_cards, &c, 0, &spec, &r);
	cr_expect_str_eq(r.name, "mlx5_0+mlx5_1+mlx5_2");
	gdrfab_topo_rails(&two_cards, &c, 0,
			  &(struct gdrfab_rails_spec){.limit = 4}, &r);
	cr_expect_str_eq(r.name, "mlx5_0+mlx5_1+mlx5_2+mlx5_3");
	cr_expect_eq(r.count, 4);
}

/* ---- named sets on the VM's topology ---- */

Test(rails, named_sets_follow_the_gpus_nearest_nic)
{
	/* vm-rxe: gpu0's nearest is rxe1, gpu1's rxe0. */
	load("vm-rxe");
	cr_expect_str_eq(rails_of(0, "rxe0+rxe2,rxe1+rxe3"), "rxe1+rxe3");
	cr_expect_str_eq(rails_of(1, "rxe0+rxe2,rxe1+rxe3"), "rxe0+rxe2");
	/* A GPU whose nearest NIC is in no set: GPU modulo the sets. */
	cr_expect_str_eq(rails_of(0, "rxe2,rxe3"), "rxe2");
	cr_expect_str_eq(rails_of(1, "rxe2,rxe3"), "rxe3");
}

Test(rails, named_sets_where_hwloc_sees_no_nic)
{
	load("lent-h200-vm");
	cr_expect_str_eq(rails_of(0, "rxe0+rxe2,rxe1+rxe3"), "rxe0+rxe2");
}
