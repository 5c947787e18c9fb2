/* SPDX-License-Identifier: BSD-2-Clause */
/* The misuse suites' totals (misuse_tally.h). Criterion runs each test in
 * a child process, so counts travel through a file the runner made before
 * the first test (its name in the environment, which children inherit);
 * crashes and timeouts are what the runner's own stats say. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "misuse_tally.h"

#define TALLY_ENV "GDRFAB_MISUSE_TALLY"

unsigned misuse_cases;
static unsigned tests, crashed, hung;

static bool is_misuse(const struct criterion_test *t)
{
	return !strncmp(t->category, "misuse", strlen("misuse"));
}

void misuse_tally_flush(void)
{
	const char *path = getenv(TALLY_ENV);
	char line[32];
	int fd, n;

	if (!path || !misuse_cases)
		return;
	/* One short O_APPEND write per test: tests running in parallel
	 * never interleave their lines. */
	fd = open(path, O_WRONLY | O_APPEND);
	if (fd < 0)
		return;
	n = snprintf(line, sizeof(line), "%u\n", misuse_cases);
	if (write(fd, line, (size_t)n) != n)
		perror("misuse tally");
	close(fd);
}

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	char path[] = "/tmp/gdrfab-misuse-XXXXXX";
	int fd = mkstemp(path);

	(void)set;
	if (fd < 0)
		return;
	close(fd);
	setenv(TALLY_ENV, path, 1);
}

ReportHook(POST_TEST)(struct criterion_test_stats *stats)
{
	if (!is_misuse(stats->test))
		return;
	tests++;
	if (stats->timed_out)
		hung++;
	else if (stats->crashed)
		crashed++;
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
	const char *path = getenv(TALLY_ENV);
	unsigned long cases = 0, n;
	FILE *f = path ? fopen(path, "r") : NULL;

	(void)stats;
	while (f && fscanf(f, "%lu", &n) == 1)
		cases += n;
	if (f)
		fclose(f);
	if (path)
		unlink(path);
	if (tests)
		printf("misuse: %lu cases in %u tests, %u crashed, %u hung\n",
		       cases, tests, crashed, hung);
}
