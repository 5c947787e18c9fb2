/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gdrfab_topo: the GPU x NIC matrix with path classes as nvidia-smi topo -m
 * prints them, then the NIC(s) gdrfab picks for each GPU and why, then
 * each GPU's rail set (the NICs it may stripe across).
 *
 *   gdrfab_topo [--xml FILE] [--json] [--gpu ID | --rank N] [--rails SPEC]
 *   gdrfab_topo --env --rank N   (shell assignments, for launch wrappers)
 *
 * ID is an index or a PCI bus id; N a launcher's local rank (GPU N modulo
 * the number of GPUs); SPEC as FI_GDRFAB_RAILS (N, all, or a+b,c+d), which
 * is read when --rails is not given.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdrfab_topo.h"
#include "gdrfab_topo_rails.h"

static void print_matrix(const struct gdrfab_topo *t)
{
	printf("%-8s", "");
	for (size_t n = 0; n < t->nnic; n++)
		printf(" %-10s", t->nic[n].name);
	printf("\n");
	for (size_t g = 0; g < t->ngpu; g++) {
		printf("%-8s", t->gpu[g].name);
		for (size_t n = 0; n < t->nnic; n++)
			printf(" %-10s",
			       gdrfab_path_name(gdrfab_topo_path(t, g, n)));
		printf("\n");
	}
}

static void print_choice(const struct gdrfab_topo *t, size_t g,
			 const struct gdrfab_topo_choice *c)
{
	printf("%s (%s):", t->gpu[g].name, t->gpu[g].busid);
	for (size_t i = 0; i < c->count; i++)
		printf(" %s", t->nic[c->nic[i]].name);
	printf("  [%s]\n", c->why);
}

static void print_rails(const struct gdrfab_topo *t, size_t g,
			const struct gdrfab_rail_set *r)
{
	printf("%s (%s): %s  [%zu rail(s): %s]\n", t->gpu[g].name,
	       t->gpu[g].busid, r->count ? r->name : "none", r->count, r->why);
}

static void print_json(const struct gdrfab_topo *t,
		       const struct gdrfab_topo_choice *c,
		       const struct gdrfab_rail_set *rails, int only)
{
	printf("{\"source\": \"%s\", \"flat\": %s,\n \"nics\": [", t->source,
	       t->flat ? "true" : "false");
	for (size_t n = 0; n < t->nnic; n++)
		printf("%s{\"name\": \"%s\", \"busid\": \"%s\", \"adapter\": %u, \"link_gbs\": %.2f}",
		       n ? ", " : "", t->nic[n].name, t->nic[n].busid,
		       t->nic[n].adapter, (double)t->nic[n].link_gbs);
	printf("],\n \"gpus\": [");
	for (size_t g = 0, first = 1; g < t->ngpu; g++) {
		if (only >= 0 && (size_t)only != g)
			continue;
		printf("%s\n  {\"name\": \"%s\", \"busid\": \"%s\", \"class\": \"%s\", \"paths\": {",
		       first ? "" : ",", t->gpu[g].name, t->gpu[g].busid,
		       c[g].count ? gdrfab_path_name(c[g].path) : "none");
		first = 0;
		for (size_t n = 0; n < t->nnic; n++)
			printf("%s\"%s\": \"%s\"", n ? ", " : "",
			       t->nic[n].name,
			       gdrfab_path_name(gdrfab_topo_path(t, g, n)));
		printf("}, \"nics\": [");
		for (size_t i = 0; i < c[g].count; i++)
			printf("%s\"%s\"", i ? ", " : "",
			       t->nic[c[g].nic[i]].name);
		printf("], \"why\": \"%s\", \"rails\": \"%s\"}", c[g].why,
		       rails[g].name);
	}
	printf("]}\n");
}

/* One GPU's answer as shell assignments (eval "$(gdrfab_topo --env ...)"). */
static int print_env(const struct gdrfab_topo *t,
		     const struct gdrfab_topo_choice *c,
		     const struct gdrfab_rail_set *rails, int g)
{
	if (g < 0) {
		fprintf(stderr, "--env needs --gpu or --rank (and a GPU)\n");
		return 1;
	}
	printf("GDRFAB_GPU_NAME=%s\nGDRFAB_GPU_BUSID=%s\nGDRFAB_PATH_CLASS=%s\n"
	       "GDRFAB_NICS=",
	       t->gpu[g].name, t->gpu[g].busid,
	       c[g].count ? gdrfab_path_name(c[g].path) : "none");
	for (size_t i = 0; i < c[g].count; i++)
		printf("%s%s", i ? "," : "", t->nic[c[g].nic[i]].name);
	printf("\nGDRFAB_RAILS=%s\n", rails[g].name);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"xml", required_argument, NULL, 'x'},
		{"json", no_argument, NULL, 'j'},
		{"gpu", required_argument, NULL, 'g'},
		{"rank", required_argument, NULL, 'r'},
		{"env", no_argument, NULL, 'e'},
		{"rails", required_argument, NULL, 'R'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static struct gdrfab_topo t;
	static struct gdrfab_topo_choice choice[GDRFAB_TOPO_MAX_DEVS];
	static struct gdrfab_rail_set rails[GDRFAB_TOPO_MAX_DEVS];
	static struct gdrfab_rails_spec spec;
	const char *known[GDRFAB_TOPO_MAX_DEVS];
	const char *xml = NULL, *gpu = NULL;
	const char *rails_value = getenv("FI_GDRFAB_RAILS");
	char err[512];
	int json = 0, env = 0, rank = -1, only = -1, op;

	while ((op = getopt_long(argc, argv, "x:jg:r:eh", opts, NULL)) != -1) {
		switch (op) {
		case 'x': xml = optarg; break;
		case 'e': env = 1; break;
		case 'j': json = 1; break;
		case 'g': gpu = optarg; break;
		case 'r': rank = atoi(optarg); break;
		case 'R': rails_value = optarg; break;
		default:
			fprintf(stderr,
				"usage: %s [--xml FILE] [--json | --env] [--gpu ID | --rank N] [--rails N|all|a+b,c+d]\n",
				argv[0]);
			return 2;
		}
	}
	if (gdrfab_topo_load(&t, xml)) {
		fprintf(stderr, "gdrfab_topo: cannot load the topology: %s\n",
			t.error);
		return 1;
	}
	if (gpu && (only = gdrfab_topo_find_gpu(&t, gpu)) < 0) {
		fprintf(stderr, "no GPU %s in this topology\n", gpu);
		return 1;
	}
	if (rank >= 0 && t.ngpu)
		only = rank % (int)t.ngpu;
	if (gdrfab_topo_choose(&t, choice)) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	/* Named NICs are checked against the topology's; one without any
	 * (a VM whose NICs hwloc cannot see) takes the names on trust. */
	for (size_t n = 0; n < t.nnic; n++)
		known[n] = t.nic[n].name;
	if (gdrfab_rails_parse(rails_value, t.nnic ? known : NULL, t.nnic,
			       &spec, err, sizeof(err))) {
		fprintf(stderr, "gdrfab_topo: %s\n", err);
		return 1;
	}
	for (size_t g = 0; g < t.ngpu; g++)
		gdrfab_topo_rails(&t, &choice[g], g, &spec, &rails[g]);
	if (env)
		return print_env(&t, choice, rails, only);
	if (json) {
		print_json(&t, choice, rails, only);
		return 0;
	}
	printf("topology: %s\n", t.source);
	if (t.flat)
		printf("warning: flat PCIe topology or unknown NUMA locality (a VM?): the classes carry no information; NICs are spread evenly\n");
	if (!t.ngpu) {
		printf("no NVIDIA GPU here; RDMA NICs:");
		for (size_t n = 0; n < t.nnic; n++)
			printf(" %s (%s)", t.nic[n].name, t.nic[n].busid);
		printf("%s\n", t.nnic ? "" : " none");
		return 0;
	}
	if (only < 0)
		print_matrix(&t);
	printf("\nNIC choice per GPU:\n");
	for (size_t g = 0; g < t.ngpu; g++) {
		if (only < 0 || (size_t)only == g)
			print_choice(&t, g, &choice[g]);
	}
	printf("\nRail set per GPU (FI_GDRFAB_RAILS=%s):\n",
	       rails_value && *rails_value ? rails_value : "unset");
	for (size_t g = 0; g < t.ngpu; g++) {
		if (only < 0 || (size_t)only == g)
			print_rails(&t, g, &rails[g]);
	}
	gdrfab_topo_fini(&t);
	return 0;
}
