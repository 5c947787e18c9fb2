/* SPDX-License-Identifier: BSD-2-Clause */
/* FI_GDRFAB_STATS: the tables printed at close, and where they go. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gdrfab.h"
#include "gdrfab_params.h"
#include "gdrfab_stats_out.h"

static bool to_stderr(const char *v)
{
	return !strcmp(v, "1") || !strcmp(v, "stderr");
}

bool gdrfab_stats_wanted(void)
{
	const char *v = gdrfab_params.stats;

	return v && *v && strcmp(v, "0");
}

void gdrfab_stats_emit(const char *scope, const char *nic,
		       const struct fi_gdrfab_stats *s)
{
	const char *v = gdrfab_params.stats;
	char host[HOST_NAME_MAX + 1] = "unknown", title[512], path[PATH_MAX];
	FILE *f;

	if (!gdrfab_stats_wanted())
		return;
	if (gethostname(host, sizeof(host)))
		strcpy(host, "unknown");
	host[sizeof(host) - 1] = '\0';
	snprintf(title, sizeof(title), "%s %s host=%s pid=%ld", scope,
		 nic && *nic ? nic : "-", host, (long)getpid());
	if (to_stderr(v)) {
		gdrfab_stats_print(stderr, title, s);
		return;
	}
	if (gdrfab_stats_path(v, host, (long)getpid(), path, sizeof(path))) {
		GDRFAB_WARN(
			FI_LOG_CORE,
			"FI_GDRFAB_STATS=\"%s\": the file name is too long: no counters written\n",
			v);
		return;
	}
	f = fopen(path, "a");
	if (!f) {
		GDRFAB_WARN(
			FI_LOG_CORE,
			"FI_GDRFAB_STATS: cannot open %s: %s: no counters written\n",
			path, strerror(errno));
		return;
	}
	if (gdrfab_stats_print(f, title, s) | fclose(f))
		GDRFAB_WARN(FI_LOG_CORE,
			    "FI_GDRFAB_STATS: writing %s failed: %s\n", path,
			    strerror(errno));
}
