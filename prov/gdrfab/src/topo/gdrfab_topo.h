/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Topology layer: where GPUs and RDMA NICs sit on the PCIe tree (hwloc),
 * the class of the path between each GPU and NIC, named as
 * `nvidia-smi topo -m` names them, and the NIC(s) each GPU should use.
 */
#ifndef GDRFAB_TOPO_H
#define GDRFAB_TOPO_H

#include <stdbool.h>
#include <stddef.h>

#include <hwloc.h>

/* Best first. */
enum gdrfab_path {
	GDRFAB_PATH_PIX,  /* at most one PCIe switch between them */
	GDRFAB_PATH_PXB,  /* several PCIe bridges, no host bridge */
	GDRFAB_PATH_PHB,  /* through a PCIe host bridge */
	GDRFAB_PATH_NODE, /* across host bridges within a NUMA node */
	GDRFAB_PATH_SYS,  /* across NUMA nodes */
};

#define GDRFAB_TOPO_MAX_DEVS 128

struct gdrfab_topo_dev {
	hwloc_obj_t obj;  /* the PCI function */
	char busid[16];	  /* "0000:3b:00.0" */
	char name[64];	  /* NIC: its RDMA device; GPU: cudaN or gpuN */
	unsigned adapter; /* NICs: functions of one card share it */
	float link_gbs;	  /* PCIe link bandwidth (GB/s), 0: unknown */
};

struct gdrfab_topo {
	hwloc_topology_t topo;
	struct gdrfab_topo_dev gpu[GDRFAB_TOPO_MAX_DEVS];
	struct gdrfab_topo_dev nic[GDRFAB_TOPO_MAX_DEVS];
	size_t ngpu, nnic;
	/* No PCIe bridge below the host bridges, or no NUMA locality: the
	 * classes then carry no information (VMs). */
	bool flat;
	char source[256]; /* the XML file, or "this machine" */
	char error[320];  /* why the last gdrfab_topo_load failed */
};

struct gdrfab_topo_choice {
	size_t nic[GDRFAB_TOPO_MAX_DEVS]; /* indexes into topo->nic */
	size_t count;
	enum gdrfab_path path;
	char why[256];
};

/* Loads a topology with I/O objects: from xml if given, else
 * FI_GDRFAB_TOPO_FILE or HWLOC_XMLFILE if set, else this machine. GPUs and
 * NICs are ordered by PCI bus id. 0, or a negative FI_E* code with the file
 * and hwloc's reason in t->error (also logged); t needs no fini then. */
int gdrfab_topo_load(struct gdrfab_topo *t, const char *xml);
void gdrfab_topo_fini(struct gdrfab_topo *t);
/* Frees the process's cached topology (gdrfab_topo_get) when libfabric
 * unloads the provider. */
void gdrfab_topo_cache_fini(void);

const char *gdrfab_path_name(enum gdrfab_path path);
enum gdrfab_path gdrfab_topo_path(const struct gdrfab_topo *t, size_t gpu,
				  size_t nic);

/* The NIC(s) every GPU should use (out has t->ngpu entries); 0 or
 * -FI_ENOMEM. */
int gdrfab_topo_choose(const struct gdrfab_topo *t,
		       struct gdrfab_topo_choice *out);

/* Finds a device by PCI bus id ("0000:3b:00.0", case-insensitive) or, for
 * GPUs, by index; -1 when absent. */
int gdrfab_topo_find_gpu(const struct gdrfab_topo *t, const char *id);

/* The process's topology, loaded once (FI_GDRFAB_TOPO_FILE, HWLOC_XMLFILE
 * or this machine); NULL when it cannot be loaded. */
const struct gdrfab_topo *gdrfab_topo_get(void);
/* This process's GPU: gpu_param (FI_GDRFAB_GPU) if set, else the local
 * rank modulo the GPUs; -1 when unknown. */
int gdrfab_topo_process_gpu(const struct gdrfab_topo *t, const char *gpu_param);
/* The GPU this process really uses: the calling thread's CUDA context's,
 * else gdrfab_topo_process_gpu with FI_GDRFAB_GPU; -1 when unknown. */
int gdrfab_topo_this_process_gpu(const struct gdrfab_topo *t);

struct fi_info;
/* Orders infos nearest-first for a GPU; nic_map is FI_GDRFAB_NIC_MAP. */
void gdrfab_topo_sort_infos(const struct gdrfab_topo *t, int gpu,
			    const char *nic_map, struct fi_info **head);
/* The same for this process, with its parameters. */
void gdrfab_topo_order(struct fi_info **head);
/* The path class between this process's GPU (as for the order, else CUDA
 * device 0) and a domain's NIC, for FI_GDRFAB_GDR_LEVEL. 0 with *path
 * set, or -FI_ENODATA when it is unknown or meaningless (no topology, GPU
 * or NIC not in it, flat topology); desc says which, either way. */
int gdrfab_topo_gdr_class(const struct fi_info *info, enum gdrfab_path *path,
			  char *desc, size_t len);

#endif /* GDRFAB_TOPO_H */
