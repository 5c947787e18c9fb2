/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gdrfab_stat: sums the counter tables that FI_GDRFAB_STATS=path wrote
 * (one file per process) into one table for the job.
 *
 *   gdrfab_stat [-e] FILE...
 *
 * Each process prints a table per endpoint and per domain when they
 * close; a domain's already holds its endpoints', so the domain tables are
 * summed. A file without any (its process never closed its domain) gives
 * its endpoint tables instead, and the tool says so; -e sums the endpoint
 * tables of every file. Peers are summed by fi_addr, which names the same
 * process in every file when all processes inserted their peers in the
 * same order (as MPI does, by rank).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gdrfab_stats_fmt.h"

struct file_sum {
	struct fi_gdrfab_stats domains, endpoints;
	int n_domains, n_endpoints;
};

static void take(const char *scope, const struct fi_gdrfab_stats *s, void *arg)
{
	struct file_sum *f = arg;

	if (!strcmp(scope, "domain")) {
		gdrfab_stats_sum(&f->domains, s);
		f->n_domains++;
	} else if (!strcmp(scope, "endpoint")) {
		gdrfab_stats_sum(&f->endpoints, s);
		f->n_endpoints++;
	}
}

static void clear(struct fi_gdrfab_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	s->peer_other.fi_addr = FI_ADDR_NOTAVAIL;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: gdrfab_stat [-e] FILE...\n"
		"Sums the tables FI_GDRFAB_STATS=path wrote (domain tables;\n"
		"-e: endpoint tables) into one.\n");
	return 2;
}

int main(int argc, char **argv)
{
	static struct file_sum f;
	static struct fi_gdrfab_stats job;
	bool endpoints = false;
	int opt, files = 0, tables = 0;
	char title[64];

	while ((opt = getopt(argc, argv, "eh")) != -1) {
		if (opt == 'e')
			endpoints = true;
		else
			return usage();
	}
	if (optind >= argc)
		return usage();
	clear(&job);
	for (int i = optind; i < argc; i++) {
		FILE *in = strcmp(argv[i], "-") ? fopen(argv[i], "r") : stdin;
		int line, n;

		if (!in) {
			fprintf(stderr, "gdrfab_stat: %s: cannot open\n",
				argv[i]);
			return 1;
		}
		clear(&f.domains);
		clear(&f.endpoints);
		f.n_domains = f.n_endpoints = 0;
		n = gdrfab_stats_parse(in, take, &f, &line);
		if (in != stdin)
			fclose(in);
		if (n < 0) {
			fprintf(stderr,
				"gdrfab_stat: %s:%d: not a gdrfab stats table\n",
				argv[i], line);
			return 1;
		}
		files++;
		if (!endpoints && f.n_domains) {
			gdrfab_stats_sum(&job, &f.domains);
			tables += f.n_domains;
			continue;
		}
		if (!endpoints && f.n_endpoints)
			fprintf(stderr,
				"gdrfab_stat: %s: no domain table (its domain was not closed): its %d endpoint tables are summed instead\n",
				argv[i], f.n_endpoints);
		gdrfab_stats_sum(&job, &f.endpoints);
		tables += f.n_endpoints;
	}
	snprintf(title, sizeof(title), "job files=%d tables=%d", files, tables);
	return gdrfab_stats_print(stdout, title, &job) ? 1 : 0;
}
