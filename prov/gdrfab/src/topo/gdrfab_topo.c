/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Loading a topology and finding its GPUs and RDMA NICs by PCI bus id.
 * A NIC is a PCI function with an OpenFabrics OS device (plain Ethernet
 * functions, like AWS's ENA beside its EFA, have none); a GPU is an NVIDIA
 * display or 3D controller.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "gdrfab.h"
#include "gdrfab_topo.h"

#define PCI_VENDOR_NVIDIA      0x10de
#define PCI_BASE_CLASS_DISPLAY 0x03

static void busid(hwloc_obj_t o, char *buf, size_t len)
{
	snprintf(buf, len, "%04x:%02x:%02x.%01x", o->attr->pcidev.domain,
		 o->attr->pcidev.bus, o->attr->pcidev.dev,
		 o->attr->pcidev.func);
}

/* The name of the first OS device of a type under a PCI function. */
static const char *osdev_name(hwloc_obj_t pci, hwloc_obj_osdev_type_t type,
			      const char *prefix)
{
	for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
		if (c->type == HWLOC_OBJ_OS_DEVICE &&
		    c->attr->osdev.type == type && c->name &&
		    (!prefix || !strncmp(c->name, prefix, strlen(prefix))))
			return c->name;
	}
	return NULL;
}

/* An RDMA device whose ports hwloc reports (PortNState) but none of them
 * ACTIVE (4) carries no traffic: it is not a candidate. Without the
 * attribute (older hwloc, some XML exports) the NIC counts. */
static bool rdma_ports_down(hwloc_obj_t pci)
{
	bool any_state = false;

	for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
		if (c->type != HWLOC_OBJ_OS_DEVICE ||
		    c->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS)
			continue;
		for (unsigned i = 0; i < c->infos_count; i++) {
			const char *n = c->infos[i].name;
			size_t len = strlen(n);

			if (strncmp(n, "Port", 4) || len < 10 ||
			    strcmp(n + len - 5, "State"))
				continue;
			any_state = true;
			if (!strcmp(c->infos[i].value, "4"))
				return false;
		}
	}
	return any_state;
}

static bool is_nvidia_gpu(hwloc_obj_t o)
{
	return o->attr->pcidev.vendor_id == PCI_VENDOR_NVIDIA &&
	       (o->attr->pcidev.class_id >> 8) == PCI_BASE_CLASS_DISPLAY;
}

static void add(struct gdrfab_topo_dev *devs, size_t *n, hwloc_obj_t o,
		const char *name)
{
	struct gdrfab_topo_dev *d;

	if (*n == GDRFAB_TOPO_MAX_DEVS)
		return;
	d = &devs[(*n)++];
	memset(d, 0, sizeof(*d));
	d->obj = o;
	busid(o, d->busid, sizeof(d->busid));
	snprintf(d->name, sizeof(d->name), "%s", name ? name : "");
	d->link_gbs = o->attr->pcidev.linkspeed;
}

static int by_busid(const void *a, const void *b)
{
	return strcmp(((const struct gdrfab_topo_dev *)a)->busid,
		      ((const struct gdrfab_topo_dev *)b)->busid);
}

/* Functions of one card (same domain, bus and device: the bus id up to
 * the function) are one adapter. NICs are sorted by bus id. */
static void number_adapters(struct gdrfab_topo *t)
{
	unsigned next = 0;

	for (size_t i = 0; i < t->nnic; i++) {
		if (i && strncmp(t->nic[i].busid, t->nic[i - 1].busid, 10))
			next++;
		t->nic[i].adapter = next;
	}
}

/* Flat: no PCI-to-PCI bridge at all, or devices whose nearest CPU-side
 * object is the whole machine while it has several NUMA nodes. */
static bool is_flat(struct gdrfab_topo *t)
{
	hwloc_obj_t b = NULL;
	bool any_pci_bridge = false;
	int numa = hwloc_get_nbobjs_by_type(t->topo, HWLOC_OBJ_NUMANODE);

	while ((b = hwloc_get_next_bridge(t->topo, b))) {
		if (b->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI)
			any_pci_bridge = true;
	}
	if (!any_pci_bridge)
		return true;
	for (size_t i = 0; numa > 1 && i < t->ngpu + t->nnic; i++) {
		const struct gdrfab_topo_dev *d =
			i < t->ngpu ? &t->gpu[i] : &t->nic[i - t->ngpu];

		if (!hwloc_get_non_io_ancestor_obj(t->topo, d->obj)->parent)
			return true;
	}
	return false;
}

/* Records and logs why a load failed, and frees what it had. A file that
 * hwloc cannot parse may be fine: without its libxml2 plugin (Debian's
 * libhwloc-plugins) hwloc falls back to a minimal parser that refuses, for
 * one, the XML comments that many exports carry. */
static int load_failed(struct gdrfab_topo *t, const char *xml, const char *what,
		       int ret)
{
	int err = errno;

	snprintf(
		t->error, sizeof(t->error), "%s: %s (%s)%s",
		xml ? xml : "this machine", what, strerror(err ? err : EINVAL),
		xml && ret == -FI_EINVAL
			? "; if the file is valid, hwloc may lack its libxml2 plugin (Debian: libhwloc-plugins)"
			: "");
	GDRFAB_WARN(FI_LOG_CORE, "topology %s\n", t->error);
	if (t->topo)
		hwloc_topology_destroy(t->topo);
	t->topo = NULL;
	return ret;
}

int gdrfab_topo_load(struct gdrfab_topo *t, const char *xml)
{
	hwloc_obj_t o = NULL;
	size_t gpu_unnamed = 0;

	memset(t, 0, sizeof(*t));
	if (!xml)
		xml = getenv("FI_GDRFAB_TOPO_FILE");
	if (!xml)
		xml = getenv("HWLOC_XMLFILE");
	if (hwloc_topology_init(&t->topo)) {
		t->topo = NULL;
		return load_failed(t, xml, "hwloc_topology_init", -FI_ENOMEM);
	}
	hwloc_topology_set_io_types_filter(t->topo, HWLOC_TYPE_FILTER_KEEP_ALL);
	if (xml && access(xml, R_OK))
		return load_failed(t, xml, "cannot read the file", -FI_ENOENT);
	if (xml && hwloc_topology_set_xml(t->topo, xml))
		return load_failed(t, xml, "hwloc cannot parse it", -FI_EINVAL);
	if (hwloc_topology_load(t->topo))
		return load_failed(t, xml, "hwloc cannot parse it", -FI_EINVAL);
	snprintf(t->source, sizeof(t->source), "%s",
		 xml ? xml : "this machine");
	while ((o = hwloc_get_next_pcidev(t->topo, o))) {
		const char *rdma =
			osdev_name(o, HWLOC_OBJ_OSDEV_OPENFABRICS, NULL);

		if (rdma && rdma_ports_down(o))
			GDRFAB_INFO(FI_LOG_CORE,
				    "%s: no active port, not a candidate\n",
				    rdma);
		else if (rdma)
			add(t->nic, &t->nnic, o, rdma);
		else if (is_nvidia_gpu(o))
			add(t->gpu, &t->ngpu, o,
			    osdev_name(o, HWLOC_OBJ_OSDEV_COPROC, "cuda"));
	}
	qsort(t->gpu, t->ngpu, sizeof(t->gpu[0]), by_busid);
	qsort(t->nic, t->nnic, sizeof(t->nic[0]), by_busid);
	/* Without CUDA's names, GPUs are numbered in bus-id order (what
	 * CUDA_DEVICE_ORDER=PCI_BUS_ID gives). */
	for (size_t i = 0; i < t->ngpu; i++) {
		if (!t->gpu[i].name[0])
			snprintf(t->gpu[i].name, sizeof(t->gpu[i].name),
				 "gpu%zu", gpu_unnamed++);
	}
	number_adapters(t);
	t->flat = is_flat(t);
	return 0;
}

void gdrfab_topo_fini(struct gdrfab_topo *t)
{
	if (t->topo)
		hwloc_topology_destroy(t->topo);
	t->topo = NULL;
}

int gdrfab_topo_find_gpu(const struct gdrfab_topo *t, const char *id)
{
	char *end;
	long idx;

	for (size_t i = 0; i < t->ngpu; i++) {
		/* Bus ids may come without the domain ("3b:00.0"). */
		if (!strcasecmp(t->gpu[i].busid, id) ||
		    !strcasecmp(t->gpu[i].busid + 5, id) ||
		    !strcmp(t->gpu[i].name, id))
			return (int)i;
	}
	idx = strtol(id, &end, 10);
	if (*id && !*end && idx >= 0 && (size_t)idx < t->ngpu)
		return (int)idx;
	return -1;
}
