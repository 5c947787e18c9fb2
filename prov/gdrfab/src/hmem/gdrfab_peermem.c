/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Whether the kernel can register GPU memory through ibv_reg_mr: a
 * peer-memory client (nvidia-peermem, or the older nv_peer_mem) has to be
 * loaded into an RDMA stack that has the peer-memory API (MLNX_OFED, or a
 * kernel carrying it). Checked where each leaves a trace.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gdrfab.h"
#include "gdrfab_cuda.h"

static bool memory_peers_listed(void)
{
	DIR *d = opendir("/sys/kernel/mm/memory_peers");
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while (!found && (e = readdir(d))) {
		char path[512];

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path),
			 "/sys/kernel/mm/memory_peers/%s/version", e->d_name);
		found = access(path, R_OK) == 0;
	}
	closedir(d);
	return found;
}

static bool kallsyms_has_peer_client(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, " ib_register_peer_memory_client") != NULL;
	fclose(f);
	return found;
}

bool gdrfab_peermem_loaded(const char **evidence)
{
	const char *why = NULL;

	if (memory_peers_listed())
		why = "/sys/kernel/mm/memory_peers/*/version";
	else if (access("/sys/module/nvidia_peermem", F_OK) == 0)
		why = "/sys/module/nvidia_peermem";
	else if (access("/sys/module/nv_peer_mem", F_OK) == 0)
		why = "/sys/module/nv_peer_mem";
	else if (kallsyms_has_peer_client())
		why = "ib_register_peer_memory_client in /proc/kallsyms";
	if (evidence)
		*evidence =
			why ? why
			    : "no nvidia-peermem or nv_peer_mem module loaded";
	return why != NULL;
}
