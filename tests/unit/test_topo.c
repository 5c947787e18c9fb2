/* SPDX-License-Identifier: BSD-2-Clause */
/* Topology: classes and choices on real machines' hwloc exports (from
 * tests/topo/fixtures/real), and fi_info ordering for a GPU. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gdrfab.h"
#include "gdrfab_info.h"
#include "gdrfab_topo.h"
#include "port_fixture.h"

static struct gdrfab_topo t;

static void load(const char *name)
{
	const char *src = getenv("GDRFAB_SRCDIR");
	char path[1024];

	snprintf(path, sizeof(path), "%s/tests/topo/fixtures/real/%s.xml",
		 src ? src : "..", name);
	cr_assert_eq(gdrfab_topo_load(&t, path), 0, "%s: %s", path, t.error);
}

static void unload(void)
{
	gdrfab_topo_fini(&t);
}

TestSuite(topo, .fini = unload, .timeout = 30);

static int nic(const char *name)
{
	for (size_t n = 0; n < t.nnic; n++) {
		if (!strcmp(t.nic[n].name, name))
			return (int)n;
	}
	return -1;
}

Test(topo, p5_each_gpu_shares_a_switch_with_four_efa_and_ena_is_no_nic)
{
	load("aws-p5.48xlarge.nixl");
	cr_assert_eq(t.ngpu, 8);
	cr_assert_eq(t.nnic, 32, "EFA functions only, not ENA");
	cr_assert_not(t.flat);
	cr_assert_eq(gdrfab_topo_path(&t, 0, (size_t)nic("rdmap79s0")),
		     GDRFAB_PATH_PIX);
	cr_assert_eq(gdrfab_topo_path(&t, 0, (size_t)nic("rdmap96s0")),
		     GDRFAB_PATH_NODE);
	cr_assert_eq(gdrfab_topo_path(&t, 0, (size_t)nic("rdmap147s0")),
		     GDRFAB_PATH_SYS);
}

Test(topo, g4dn_chains_of_different_depths_classify_without_crashing)
{
	load("aws-g4dn.metal-8xT4.mpibind");
	cr_assert_eq(t.nnic, 1);
	cr_assert_str_eq(t.gpu[0].name, "cuda0");
	cr_assert_eq(gdrfab_topo_path(&t, 0, 0), GDRFAB_PATH_SYS);
	cr_assert_eq(gdrfab_topo_path(&t, 4, 0), GDRFAB_PATH_NODE);
}

Test(topo, virtual_machines_are_flat)
{
	static const char *const flat[] = {"aws-p4d.24xlarge.nixl",
					   "aws-g5.48xlarge.nixl",
					   "lent-h200-vm"};

	for (size_t i = 0; i < 3; i++) {
		load(flat[i]);
		cr_assert(t.flat, "%s", flat[i]);
		unload();
	}
	load("juwels-booster-4xA100.psmgmt-jwb0004");
	cr_assert_not(t.flat);
}

Test(topo, gpus_are_found_by_bus_id_index_or_name)
{
	load("juwels-booster-4xA100.psmgmt-jwb0004");
	cr_assert_eq(gdrfab_topo_find_gpu(&t, "0000:c4:00.0"), 3);
	cr_assert_eq(gdrfab_topo_find_gpu(&t, "C4:00.0"), 3);
	cr_assert_eq(gdrfab_topo_find_gpu(&t, "1"), 1);
	cr_assert_eq(gdrfab_topo_find_gpu(&t, "gpu2"), 2);
	cr_assert_eq(gdrfab_topo_find_gpu(&t, "4"), -1);
	cr_assert_eq(gdrfab_topo_find_gpu(&t, "0000:c4:00.1"), -1);
}

Test(topo, process_gpu_from_parameter_or_local_rank)
{
	load("juwels-booster-4xA100.psmgmt-jwb0004");
	unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
	unsetenv("MPI_LOCALRANKID");
	unsetenv("PMIX_LOCAL_RANK");
	setenv("SLURM_LOCALID", "5", 1);
	cr_assert_eq(gdrfab_topo_process_gpu(&t, NULL), 1, "5 mod 4");
	cr_assert_eq(gdrfab_topo_process_gpu(&t, "0000:84:00.0"), 2);
	cr_assert_eq(gdrfab_topo_process_gpu(&t, "nope"), -1);
	unsetenv("SLURM_LOCALID");
	cr_assert_eq(gdrfab_topo_process_gpu(&t, NULL), -1);
}

/* fi_infos for juwels' four HCAs, in name order. */
static struct fi_info *juwels_infos(void)
{
	static const struct {
		const char *name;
		uint8_t bus;
	} hca[] = {{"mlx5_0", 0x04},
		   {"mlx5_1", 0x43},
		   {"mlx5_2", 0x83},
		   {"mlx5_3", 0xc3}};
	struct fi_info *head = NULL, **tail = &head;

	for (size_t i = 0; i < 4; i++) {
		struct gdrfab_port_desc p = fixture_ib_port();

		snprintf(p.dev_name, sizeof(p.dev_name), "%s", hca[i].name);
		p.pci.bus = hca[i].bus;
		p.pci.function = 0;
		*tail = gdrfab_info_for_port(&p);
		tail = &(*tail)->next;
	}
	return head;
}

Test(topo, fi_info_lists_the_gpus_nearest_nic_first)
{
	struct fi_info *head = juwels_infos();

	load("juwels-booster-4xA100.psmgmt-jwb0004");
	gdrfab_topo_sort_infos(&t, 2, NULL, &head);
	cr_assert_str_eq(head->domain_attr->name, "mlx5_2",
			 "GPU 84:00.0 shares a switch with mlx5_2 (83:00.0)");
	cr_assert_str_eq(head->next->domain_attr->name, "mlx5_0",
			 "the others by class, then bus id");
	cr_assert_str_eq(head->next->next->next->domain_attr->name, "mlx5_3");
	fi_freeinfo(head);
}

Test(topo, nic_map_overrides_the_choice)
{
	struct fi_info *head = juwels_infos();

	load("juwels-booster-4xA100.psmgmt-jwb0004");
	gdrfab_topo_sort_infos(&t, 2, "0=mlx5_3;2=mlx5_1,mlx5_0", &head);
	cr_assert_str_eq(head->domain_attr->name, "mlx5_1");
	cr_assert_str_eq(head->next->domain_attr->name, "mlx5_0");
	cr_assert_str_eq(head->next->next->domain_attr->name, "mlx5_2");
	fi_freeinfo(head);
	head = juwels_infos();
	/* Exact names: mlx5_ is not a prefix of anything. */
	gdrfab_topo_sort_infos(&t, 0, "0=mlx5_", &head);
	cr_assert_str_eq(head->domain_attr->name, "mlx5_0");
	fi_freeinfo(head);
}

/* A topology hwloc cannot read or parse is an error naming the file and the
 * reason, never an abort, and the struct is safe to finalise afterwards. */
Test(topo, a_missing_file_is_an_error_naming_it)
{
	cr_assert_eq(gdrfab_topo_load(&t, "/nonexistent/topo.xml"), -FI_ENOENT);
	cr_assert(strstr(t.error, "/nonexistent/topo.xml"), "%s", t.error);
	cr_assert(strstr(t.error, "No such file"), "%s", t.error);
	cr_assert_null(t.topo);
}

Test(topo, an_unparsable_file_is_an_error_naming_it)
{
	char path[] = "/tmp/gdrfab-topo-XXXXXX";
	int fd = mkstemp(path);
	static const char junk[] = "<?xml version=\"1.0\"?>\n<topology>\n";

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, junk, sizeof(junk) - 1),
		     (ssize_t)sizeof(junk) - 1);
	close(fd);
	cr_assert_eq(gdrfab_topo_load(&t, path), -FI_EINVAL);
	unlink(path);
	cr_assert(strstr(t.error, path), "%s", t.error);
	cr_assert(strstr(t.error, "cannot parse"), "%s", t.error);
	cr_assert_null(t.topo);
	/* A second load after the failure works. */
	load("lent-h200-vm");
	cr_assert_eq(t.ngpu, 1);
}

/* Real exports often carry XML comments, which only hwloc's libxml2
 * plugin (libhwloc-plugins) accepts: install-deps must bring it. */
Test(topo, an_export_with_xml_comments_loads)
{
	load("aws-g5.48xlarge.nixl");
	cr_assert_eq(t.ngpu, 8);
}
