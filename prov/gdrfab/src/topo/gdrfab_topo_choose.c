/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Which NIC(s) each GPU uses: those of its best path class; among them not
 * one far slower than the fastest (it would not be a rail); for NODE and
 * SYS the same package first, then the nearest NUMA node by the
 * topology's NUMA latency matrix where it has one; then GPUs that share a set
 * of equally near adapters split it fairly (contiguous blocks when there are at
 * least as many adapters as GPUs, round-robin otherwise), the ports or
 * functions of one adapter counting as one NIC; ties go by PCI bus id (both
 * lists are in bus-id order).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_topo.h"

/* A NIC whose link is under half the fastest candidate's is no rail. */
#define SLOW_LINK_RATIO 0.5f

struct candidates {
	enum gdrfab_path path;
	bool nic[GDRFAB_TOPO_MAX_DEVS];
	unsigned adapters[GDRFAB_TOPO_MAX_DEVS];
	size_t nadapters;
};

static hwloc_obj_t package_of(const struct gdrfab_topo *t, hwloc_obj_t o)
{
	return hwloc_get_ancestor_obj_by_type(
		t->topo, HWLOC_OBJ_PACKAGE,
		hwloc_get_non_io_ancestor_obj(t->topo, o));
}

/* The NUMA node an I/O device hangs from (the first, if several). */
static hwloc_obj_t numa_of(const struct gdrfab_topo *t, hwloc_obj_t o)
{
	hwloc_obj_t cpu = hwloc_get_non_io_ancestor_obj(t->topo, o);
	int first = cpu && cpu->nodeset ? hwloc_bitmap_first(cpu->nodeset) : -1;

	return first < 0 ? NULL
			 : hwloc_get_numanode_obj_by_os_index(t->topo,
							      (unsigned)first);
}

/* NUMA latency between a GPU's node and a NIC's, UINT64_MAX unknown. */
static uint64_t numa_latency(const struct gdrfab_topo *t,
			     struct hwloc_distances_s *d, hwloc_obj_t gpu,
			     hwloc_obj_t nic)
{
	hwloc_obj_t a = numa_of(t, gpu), b = numa_of(t, nic);
	hwloc_uint64_t ab, ba;

	if (!d || !a || !b ||
	    hwloc_distances_obj_pair_values(d, a, b, &ab, &ba))
		return UINT64_MAX;
	return ab;
}

/* Keeps, among NODE/SYS candidates, those of the nearest NUMA node. */
static void keep_nearest_numa(const struct gdrfab_topo *t, size_t g,
			      struct candidates *c)
{
	struct hwloc_distances_s *d = NULL;
	uint64_t lat[GDRFAB_TOPO_MAX_DEVS], best = UINT64_MAX;
	unsigned nr = 1;

	if (hwloc_distances_get_by_type(t->topo, HWLOC_OBJ_NUMANODE, &nr, &d,
					HWLOC_DISTANCES_KIND_MEANS_LATENCY,
					0) ||
	    !nr)
		return;
	for (size_t n = 0; n < t->nnic; n++) {
		lat[n] = c->nic[n] ? numa_latency(t, d, t->gpu[g].obj,
						  t->nic[n].obj)
				   : UINT64_MAX;
		if (lat[n] < best)
			best = lat[n];
	}
	hwloc_distances_release(t->topo, d);
	for (size_t n = 0; n < t->nnic && best != UINT64_MAX; n++)
		c->nic[n] = c->nic[n] && lat[n] == best;
}

static void find_candidates(const struct gdrfab_topo *t, size_t g,
			    struct candidates *c)
{
	float fastest = 0;
	bool same_package = false;

	memset(c, 0, sizeof(*c));
	c->path = GDRFAB_PATH_SYS;
	for (size_t n = 0; n < t->nnic; n++) {
		enum gdrfab_path p = gdrfab_topo_path(t, g, n);

		if (p < c->path)
			c->path = p;
	}
	for (size_t n = 0; n < t->nnic; n++) {
		c->nic[n] = gdrfab_topo_path(t, g, n) == c->path;
		if (c->nic[n] && t->nic[n].link_gbs > fastest)
			fastest = t->nic[n].link_gbs;
	}
	for (size_t n = 0; n < t->nnic; n++) {
		if (c->nic[n] && t->nic[n].link_gbs > 0 &&
		    t->nic[n].link_gbs < SLOW_LINK_RATIO * fastest)
			c->nic[n] = false;
	}
	if (c->path >= GDRFAB_PATH_NODE) {
		hwloc_obj_t pkg = package_of(t, t->gpu[g].obj);

		for (size_t n = 0; n < t->nnic && pkg; n++)
			same_package |= c->nic[n] &&
					package_of(t, t->nic[n].obj) == pkg;
		for (size_t n = 0; n < t->nnic && same_package; n++)
			c->nic[n] = c->nic[n] &&
				    package_of(t, t->nic[n].obj) == pkg;
		keep_nearest_numa(t, g, c);
	}
	for (size_t n = 0; n < t->nnic; n++) {
		if (c->nic[n] &&
		    (!c->nadapters ||
		     c->adapters[c->nadapters - 1] != t->nic[n].adapter))
			c->adapters[c->nadapters++] = t->nic[n].adapter;
	}
}

static bool same_set(const struct candidates *a, const struct candidates *b)
{
	return a->nadapters == b->nadapters &&
	       !memcmp(a->adapters, b->adapters,
		       a->nadapters * sizeof(a->adapters[0]));
}

int gdrfab_topo_choose(const struct gdrfab_topo *t,
		       struct gdrfab_topo_choice *out)
{
	/* On the heap: fi_getinfo may run on several threads at once. */
	struct candidates *cand = calloc(t->ngpu ? t->ngpu : 1, sizeof(*cand));

	if (!cand)
		return -FI_ENOMEM;
	for (size_t g = 0; g < t->ngpu; g++)
		find_candidates(t, g, &cand[g]);
	for (size_t g = 0; g < t->ngpu; g++) {
		const struct candidates *c = &cand[g];
		size_t rank = 0, peers = 0, first, last;
		struct gdrfab_topo_choice *ch = &out[g];

		memset(ch, 0, sizeof(*ch));
		ch->path = c->path;
		if (!c->nadapters) {
			snprintf(ch->why, sizeof(ch->why), "no RDMA NIC");
			continue;
		}
		/* This GPU's place among those sharing the same set. */
		for (size_t h = 0; h < t->ngpu; h++) {
			if (same_set(c, &cand[h])) {
				rank += h < g;
				peers++;
			}
		}
		if (c->nadapters >= peers) {
			first = rank * c->nadapters / peers;
			last = (rank + 1) * c->nadapters / peers;
		} else {
			first = rank % c->nadapters;
			last = first + 1;
		}
		for (size_t n = 0; n < t->nnic; n++) {
			for (size_t a = first; a < last; a++) {
				if (c->nic[n] &&
				    t->nic[n].adapter == c->adapters[a])
					ch->nic[ch->count++] = n;
			}
		}
		snprintf(
			ch->why, sizeof(ch->why),
			"%s; %zu adapter(s) of that class shared by %zu GPU(s): this GPU's share is %s %zu-%zu",
			gdrfab_path_name(c->path), c->nadapters, peers,
			c->nadapters >= peers ? "block" : "round-robin slot",
			first, last - 1);
	}
	free(cand);
	return 0;
}
