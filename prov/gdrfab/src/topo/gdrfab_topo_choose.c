/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Which NIC(s) each GPU uses: those of its best path class; among them not
 * one far slower than the fastest (it would not be a rail); for NODE and
 * SYS the same package first; then GPUs that share a set of equally near
 * adapters split it fairly (contiguous blocks when there are at least as
 * many adapters as GPUs, round-robin otherwise), the ports or functions of
 * one adapter counting as one NIC; ties go by PCI bus id (both lists are in
 * bus-id order).
 */
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
		snprintf(ch->why, sizeof(ch->why),
			 "%s; %zu adapter(s) of that class shared by %zu "
			 "GPU(s): this GPU's share is %s %zu-%zu",
			 gdrfab_path_name(c->path), c->nadapters, peers,
			 c->nadapters >= peers ? "block" : "round-robin slot",
			 first, last - 1);
	}
	free(cand);
	return 0;
}
