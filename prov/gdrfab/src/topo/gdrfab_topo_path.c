/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The class of the PCIe path between a GPU and a NIC. The common ancestor
 * is found by walking parents, not with hwloc_get_common_ancestor_obj,
 * which crashes in hwloc 2.9 on I/O objects whose PCIe chains differ in
 * depth (AWS g4dn has such pairs).
 */
#include "gdrfab_topo.h"

const char *gdrfab_path_name(enum gdrfab_path path)
{
	static const char *const names[] = {"PIX", "PXB", "PHB", "NODE", "SYS"};

	return path <= GDRFAB_PATH_SYS ? names[path] : "?";
}

static hwloc_obj_t common_ancestor(hwloc_obj_t a, hwloc_obj_t b)
{
	for (hwloc_obj_t x = a; x; x = x->parent) {
		for (hwloc_obj_t y = b; y; y = y->parent) {
			if (x == y)
				return x;
		}
	}
	return NULL;
}

/* PCI bridges strictly between a device and one of its ancestors. */
static unsigned bridges_between(hwloc_obj_t dev, hwloc_obj_t ancestor)
{
	unsigned n = 0;

	for (hwloc_obj_t x = dev->parent; x && x != ancestor; x = x->parent)
		n += x->type == HWLOC_OBJ_BRIDGE;
	return n;
}

static enum gdrfab_path above_host_bridges(const struct gdrfab_topo *t,
					   hwloc_obj_t a, hwloc_obj_t b)
{
	hwloc_obj_t na = hwloc_get_non_io_ancestor_obj(t->topo, a);
	hwloc_obj_t nb = hwloc_get_non_io_ancestor_obj(t->topo, b);

	/* Same NUMA node(s) on the CPU side: NODE; otherwise SYS. A side
	 * attached to the whole machine (locality unknown) counts as far. */
	if (na->parent && nb->parent && na->nodeset && nb->nodeset &&
	    hwloc_bitmap_intersects(na->nodeset, nb->nodeset))
		return GDRFAB_PATH_NODE;
	return GDRFAB_PATH_SYS;
}

enum gdrfab_path gdrfab_topo_path(const struct gdrfab_topo *t, size_t gpu,
				  size_t nic)
{
	hwloc_obj_t a = t->gpu[gpu].obj, b = t->nic[nic].obj;
	hwloc_obj_t c = common_ancestor(a, b);

	if (!c)
		return GDRFAB_PATH_SYS;
	if (c->type == HWLOC_OBJ_PCI_DEVICE)
		return GDRFAB_PATH_PIX;
	if (c->type == HWLOC_OBJ_BRIDGE) {
		if (c->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST)
			return GDRFAB_PATH_PHB;
		/* Inside one switch each side has at most its downstream
		 * port below the common (upstream) bridge. */
		return bridges_between(a, c) <= 1 && bridges_between(b, c) <= 1
			       ? GDRFAB_PATH_PIX
			       : GDRFAB_PATH_PXB;
	}
	return above_host_bridges(t, a, b);
}
