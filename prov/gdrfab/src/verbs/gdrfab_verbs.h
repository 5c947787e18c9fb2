/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Transport layer (verbs): what gdrfab knows of each RDMA port, read from
 * rdma-core and sysfs. The description is plain data so that the layers
 * above (fi_info building, NIC attributes) can be tested without hardware.
 */
#ifndef GDRFAB_VERBS_H
#define GDRFAB_VERBS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#define GDRFAB_NAME_MAX 64

enum gdrfab_link_layer {
	GDRFAB_LINK_IB,
	GDRFAB_LINK_ETHERNET,
};

struct gdrfab_pci_addr {
	bool valid;
	uint16_t domain;
	uint8_t bus, device, function;
};

struct gdrfab_port_desc {
	char dev_name[GDRFAB_NAME_MAX]; /* "mlx5_0", "rxe0" */
	uint8_t port_num;
	enum gdrfab_link_layer link_layer;
	bool active;
	/* Addressing: the GID this port is reached by, and its LID (IB). */
	union ibv_gid gid;
	int gid_index;
	uint16_t lid;
	/* The fabric this port belongs to: "IB-0x<subnet prefix>" or
	 * "RoCE-<IP network>/<prefix length>". */
	char fabric_name[GDRFAB_NAME_MAX];
	char netdev[GDRFAB_NAME_MAX];	    /* RoCE: the GID's netdev */
	char link_address[GDRFAB_NAME_MAX]; /* IP (RoCE) or GID (IB) text */
	uint32_t active_mtu;		    /* bytes */
	uint64_t speed;			    /* bits per second */
	uint32_t max_msg_sz;
	/* Device identity, from ibv_query_device and sysfs. */
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	uint32_t hw_ver;
	char fw_ver[GDRFAB_NAME_MAX];
	char driver[GDRFAB_NAME_MAX];
	struct gdrfab_pci_addr pci;
	/* Device limits that size every verbs resource. */
	int max_qp_wr;
	int max_sge;
	int max_cqe;
	int max_cq;
	int max_qp;
	int max_mr;
	uint64_t max_mr_size;
};

/* Describes every port of every RDMA device that the FI_GDRFAB_DEVICE
 * filter lets through (active or not: the caller decides). Returns the
 * number of ports (0 when there is no device) with *ports malloc()ed, or a
 * negative FI_E* code. Opens every device and reads its GID table. */
int gdrfab_verbs_discover_ports(struct gdrfab_port_desc **ports);

/* The same, from a cache that fi_getinfo reads: a discovery is reused for
 * FI_GDRFAB_DISCOVERY_TTL_MS (0: never), so that the many fi_getinfo calls
 * of one application start cost one discovery. The cache is dropped when
 * it is older, when fresh is set (fi_domain: the port it opens is
 * described as it is now, and the cache refreshed), and by
 * gdrfab_verbs_ports_invalidate. A failed discovery is never cached. */
int gdrfab_verbs_list_ports(struct gdrfab_port_desc **ports, bool fresh);
void gdrfab_verbs_ports_invalidate(void);
void gdrfab_verbs_ports_fini(void);

/* The cache itself, with the discovery and the clock passed in (for the
 * unit tests). */
struct gdrfab_port_cache {
	pthread_mutex_t lock;
	struct gdrfab_port_desc *ports; /* NULL: empty */
	int count;
	long long taken_ms;
	unsigned long discoveries; /* how many were made */
};
#define GDRFAB_PORT_CACHE_INIT                                                 \
	{                                                                      \
		.lock = PTHREAD_MUTEX_INITIALIZER                              \
	}
typedef int (*gdrfab_discover_fn)(struct gdrfab_port_desc **ports);
int gdrfab_port_cache_get(struct gdrfab_port_cache *cache, int ttl_ms,
			  long long now_ms, bool fresh,
			  gdrfab_discover_fn discover,
			  struct gdrfab_port_desc **ports);
void gdrfab_port_cache_drop(struct gdrfab_port_cache *cache);

/* Converts ibv_port_attr's width and speed codes to bits per second. */
uint64_t gdrfab_verbs_port_speed(uint8_t active_width, uint16_t active_speed);

/* Parses "DDDD:BB:DD.F" (a PCI address as sysfs names it). */
int gdrfab_parse_pci_addr(const char *text, struct gdrfab_pci_addr *pci);

/* Builds the fabric name for an IPv4 network: "RoCE-a.b.c.d/len". */
void gdrfab_roce_fabric_name(char *buf, size_t len, uint32_t ipv4_be,
			     unsigned prefix_len);

/* Opens the named device; NULL (errno set) when it is gone. */
struct ibv_context *gdrfab_verbs_open_device(const char *name);

#endif /* GDRFAB_VERBS_H */
