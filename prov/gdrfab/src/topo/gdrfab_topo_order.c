/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_getinfo's list, nearest NIC first for the GPU this process uses: the
 * one FI_GDRFAB_GPU names (index or PCI bus id), else the launcher's local
 * rank (Open MPI, MPICH/hydra, Slurm, PMIx) modulo the GPUs; FI_GDRFAB_NIC_MAP
 * ("GPU=NIC[,NIC];GPU=NIC...", exact names) overrides the choice. The
 * topology is loaded once per process.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_cuda_dev.h"
#include "gdrfab_params.h"
#include "gdrfab_topo.h"

static struct gdrfab_topo cached;
static bool cached_ok;
static pthread_once_t cached_once = PTHREAD_ONCE_INIT;

static void load_once(void)
{
	cached_ok = !gdrfab_topo_load(&cached, gdrfab_params.topo_file);
	if (cached_ok && cached.flat && cached.ngpu)
		GDRFAB_INFO(
			FI_LOG_CORE,
			"topology %s is flat (a VM?): GPU-NIC classes carry no information\n",
			cached.source);
}

void gdrfab_topo_cache_fini(void)
{
	if (cached_ok)
		gdrfab_topo_fini(&cached);
	cached_ok = false;
}

const struct gdrfab_topo *gdrfab_topo_get(void)
{
	pthread_once(&cached_once, load_once);
	return cached_ok ? &cached : NULL;
}

int gdrfab_topo_process_gpu(const struct gdrfab_topo *t, const char *gpu_param)
{
	static const char *const rank_vars[] = {
		"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
		"SLURM_LOCALID", "PMIX_LOCAL_RANK"};
	int g;

	if (!t->ngpu)
		return -1;
	if (gpu_param && *gpu_param) {
		g = gdrfab_topo_find_gpu(t, gpu_param);
		if (g < 0)
			GDRFAB_WARN(
				FI_LOG_CORE,
				"FI_GDRFAB_GPU=%s: no such GPU in the topology\n",
				gpu_param);
		return g;
	}
	for (size_t i = 0; i < sizeof(rank_vars) / sizeof(rank_vars[0]); i++) {
		const char *v = getenv(rank_vars[i]);
		char *end;
		long r;

		if (!v || !*v)
			continue;
		r = strtol(v, &end, 10);
		if (!*end && r >= 0)
			return (int)(r % (long)t->ngpu);
	}
	return -1;
}

/* The GPU of the calling thread's CUDA context comes first: it is the one
 * the process really uses. Then FI_GDRFAB_GPU, then the local rank. */
int gdrfab_topo_this_process_gpu(const struct gdrfab_topo *t)
{
	int dev = gdrfab_cuda_current_device();
	const struct gdrfab_cuda_dev *d = gdrfab_cuda_device(dev);
	int g;

	if (d && d->bus_id[0] &&
	    (g = gdrfab_topo_find_gpu(t, d->bus_id)) >= 0) {
		GDRFAB_INFO(
			FI_LOG_CORE,
			"this process's GPU: the current CUDA context's (device %d, %s)\n",
			dev, d->bus_id);
		return g;
	}
	return gdrfab_topo_process_gpu(t, gdrfab_params.gpu);
}

/* Position of a NIC name in the map's list for this GPU, or -1. */
static int map_position(const struct gdrfab_topo *t, int gpu, const char *map,
			const char *nic)
{
	const char *p = map;

	while (p && *p) {
		const char *eq = strchr(p, '='), *end = strchr(p, ';');
		char key[64];
		size_t klen;

		if (!eq || (end && end < eq))
			return -1;
		klen = GDRFAB_MIN((size_t)(eq - p), sizeof(key) - 1);
		memcpy(key, p, klen);
		key[klen] = '\0';
		if (gdrfab_topo_find_gpu(t, key) == gpu) {
			const char *q = eq + 1;
			int pos = 0;

			while (q && *q && (!end || q < end)) {
				size_t len = strcspn(q, ",;");

				if (len == strlen(nic) && !strncmp(q, nic, len))
					return pos;
				pos++;
				q += len;
				if (*q != ',')
					break;
				q++;
			}
			return -1;
		}
		p = end ? end + 1 : NULL;
	}
	return -1;
}

static int topo_nic_of(const struct gdrfab_topo *t, const struct fi_info *info)
{
	const struct fi_bus_attr *b = info->nic ? info->nic->bus_attr : NULL;

	for (size_t n = 0; n < t->nnic; n++) {
		const struct hwloc_pcidev_attr_s *a =
			&t->nic[n].obj->attr->pcidev;

		if (b && b->bus_type == FI_BUS_PCI) {
			if (a->domain == b->attr.pci.domain_id &&
			    a->bus == b->attr.pci.bus_id &&
			    a->dev == b->attr.pci.device_id &&
			    a->func == b->attr.pci.function_id)
				return (int)n;
		} else if (!strcmp(t->nic[n].name, info->domain_attr->name)) {
			return (int)n;
		}
	}
	return -1;
}

/* Smaller sorts first: mapped, then chosen, then by class; unknown
 * NICs last. */
static long sort_key(const struct gdrfab_topo *t, int gpu, const char *map,
		     const struct gdrfab_topo_choice *choice,
		     const struct fi_info *info)
{
	int n = topo_nic_of(t, info);
	int pos = map ? map_position(t, gpu, map, info->domain_attr->name) : -1;

	if (pos >= 0)
		return pos;
	if (n < 0)
		return 1000000;
	for (size_t i = 0; i < choice->count; i++) {
		if (choice->nic[i] == (size_t)n)
			return 1000 + (long)i;
	}
	return 10000 +
	       1000 * (long)gdrfab_topo_path(t, (size_t)gpu, (size_t)n) + n;
}

void gdrfab_topo_sort_infos(const struct gdrfab_topo *t, int gpu,
			    const char *nic_map, struct fi_info **head)
{
	struct gdrfab_topo_choice *choice;
	struct fi_info *sorted = NULL;

	if (!t || gpu < 0 || !*head || !(*head)->next)
		return;
	/* On the heap: fi_getinfo may run on several threads at once. */
	choice = calloc(t->ngpu, sizeof(*choice));
	if (!choice || gdrfab_topo_choose(t, choice)) {
		free(choice);
		return;
	}
	/* Insertion sort, stable: the list is a handful of ports. */
	while (*head) {
		struct fi_info *i = *head, **pos = &sorted;
		long k = sort_key(t, gpu, nic_map, &choice[gpu], i);

		*head = i->next;
		while (*pos &&
		       sort_key(t, gpu, nic_map, &choice[gpu], *pos) <= k)
			pos = &(*pos)->next;
		i->next = *pos;
		*pos = i;
	}
	*head = sorted;
	GDRFAB_INFO(FI_LOG_CORE, "GPU %s (%s): %s first (%s)\n",
		    t->gpu[gpu].name, t->gpu[gpu].busid,
		    sorted->domain_attr->name, choice[gpu].why);
	free(choice);
}

int gdrfab_topo_gdr_class(const struct fi_info *info, enum gdrfab_path *path,
			  char *desc, size_t len)
{
	const struct gdrfab_topo *t = gdrfab_topo_get();
	const struct gdrfab_cuda_dev *d0 = gdrfab_cuda_device(0);
	int gpu, nic;

	if (!t) {
		snprintf(desc, len, "no topology");
		return -FI_ENODATA;
	}
	gpu = gdrfab_topo_this_process_gpu(t);
	/* No context, parameter or rank yet: CUDA's device 0 is the one a
	 * context made later defaults to. */
	if (gpu < 0 && d0 && d0->bus_id[0])
		gpu = gdrfab_topo_find_gpu(t, d0->bus_id);
	nic = topo_nic_of(t, info);
	if (gpu < 0 || nic < 0) {
		snprintf(desc, len, "%s not in topology %s",
			 gpu < 0 ? "this process's GPU" : "the NIC", t->source);
		return -FI_ENODATA;
	}
	*path = gdrfab_topo_path(t, (size_t)gpu, (size_t)nic);
	snprintf(desc, len, "GPU %s (%s) to %s is %s%s", t->gpu[gpu].name,
		 t->gpu[gpu].busid, t->nic[nic].name, gdrfab_path_name(*path),
		 t->flat ? " in a flat topology (a VM?), which says nothing"
			 : "");
	return t->flat ? -FI_ENODATA : 0;
}

void gdrfab_topo_order(struct fi_info **head)
{
	const struct gdrfab_topo *t;

	if (!*head || !(*head)->next)
		return;
	t = gdrfab_topo_get();
	if (t)
		gdrfab_topo_sort_infos(t, gdrfab_topo_this_process_gpu(t),
				       gdrfab_params.nic_map, head);
}
