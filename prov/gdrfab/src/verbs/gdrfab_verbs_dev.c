/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device and port discovery through rdma-core, completed from sysfs (PCI
 * address, driver) and the netdev's addresses (RoCE fabric names).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gdrfab.h"
#include "gdrfab_params.h"
#include "gdrfab_verbs.h"
#include "gdrfab_verbs_ops.h"

#define SYSFS_IB "/sys/class/infiniband"
/* rdma_rxe reports this vendor id (it has no PCI device to read one from). */
#define RXE_VENDOR_ID 0xffffff

uint64_t gdrfab_verbs_port_speed(uint8_t active_width, uint16_t active_speed)
{
	uint64_t lanes, lane_mbps;

	switch (active_width) {
	case 1: lanes = 1; break;
	case 2: lanes = 4; break;
	case 4: lanes = 8; break;
	case 8: lanes = 12; break;
	case 16: lanes = 2; break;
	default: return 0;
	}
	switch (active_speed) {
	case 1: lane_mbps = 2500; break;     /* SDR */
	case 2: lane_mbps = 5000; break;     /* DDR */
	case 4:				     /* QDR */
	case 8: lane_mbps = 10000; break;    /* FDR10 */
	case 16: lane_mbps = 14000; break;   /* FDR */
	case 32: lane_mbps = 25000; break;   /* EDR */
	case 64: lane_mbps = 50000; break;   /* HDR */
	case 128: lane_mbps = 100000; break; /* NDR */
	case 256: lane_mbps = 200000; break; /* XDR */
	default: return 0;
	}
	return lanes * lane_mbps * 1000000ULL;
}

int gdrfab_parse_pci_addr(const char *text, struct gdrfab_pci_addr *pci)
{
	unsigned dom, bus, dev, fn;
	char tail;

	memset(pci, 0, sizeof(*pci));
	if (sscanf(text, "%4x:%2x:%2x.%1x%c", &dom, &bus, &dev, &fn, &tail) !=
		    4 ||
	    dev > 31 || fn > 7)
		return -FI_EINVAL;
	pci->valid = true;
	pci->domain = (uint16_t)dom;
	pci->bus = (uint8_t)bus;
	pci->device = (uint8_t)dev;
	pci->function = (uint8_t)fn;
	return 0;
}

void gdrfab_roce_fabric_name(char *buf, size_t len, uint32_t ipv4_be,
			     unsigned prefix_len)
{
	uint32_t mask =
		prefix_len ? ~0u << (32 - GDRFAB_MIN(prefix_len, 32)) : 0;
	struct in_addr net = {.s_addr = htonl(ntohl(ipv4_be) & mask)};
	char text[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &net, text, sizeof(text));
	snprintf(buf, len, "RoCE-%s/%u", text, prefix_len);
}

/* Copies a string, truncating it to the destination's size. */
static void set_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

static void read_sysfs_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* PCI address and kernel driver from /sys/class/infiniband/DEV/device. */
static void read_sysfs_identity(struct gdrfab_port_desc *port)
{
	char path[PATH_MAX], target[PATH_MAX];
	ssize_t n;
	const char *base;

	snprintf(path, sizeof(path), SYSFS_IB "/%s/device", port->dev_name);
	if (realpath(path, target)) {
		base = strrchr(target, '/');
		gdrfab_parse_pci_addr(base ? base + 1 : target, &port->pci);
	}
	snprintf(path, sizeof(path), SYSFS_IB "/%s/device/driver",
		 port->dev_name);
	n = readlink(path, target, sizeof(target) - 1);
	if (n > 0) {
		target[n] = '\0';
		base = strrchr(target, '/');
		set_str(port->driver, sizeof(port->driver),
			base ? base + 1 : target);
	} else if (port->vendor_id == RXE_VENDOR_ID) {
		set_str(port->driver, sizeof(port->driver), "rdma_rxe");
	} else {
		set_str(port->driver, sizeof(port->driver), "unknown");
	}
	snprintf(path, sizeof(path), SYSFS_IB "/%s/fw_ver", port->dev_name);
	read_sysfs_line(path, port->fw_ver, sizeof(port->fw_ver));
}

static bool gid_is_ipv4_mapped(const union ibv_gid *gid)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0,    0,
					   0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(gid->raw, prefix, sizeof(prefix));
}

static bool gid_is_link_local(const union ibv_gid *gid)
{
	return gid->raw[0] == 0xfe && (gid->raw[1] & 0xc0) == 0x80;
}

/* Lower is better: RoCE v2 IPv4, v2 IPv6, v2 link-local, then v1. */
static int gid_rank(const struct ibv_gid_entry *e)
{
	int rank = e->gid_type == IBV_GID_TYPE_ROCE_V2 ? 0 : 3;

	if (gid_is_ipv4_mapped(&e->gid))
		return rank;
	return rank + (gid_is_link_local(&e->gid) ? 2 : 1);
}

/* The prefix length of an address on a netdev, from getifaddrs. */
static int netdev_prefix_len(const char *netdev, int family, const void *addr)
{
	struct ifaddrs *ifa_list, *ifa;
	int len = -1;

	if (getifaddrs(&ifa_list))
		return -1;
	for (ifa = ifa_list; ifa && len < 0; ifa = ifa->ifa_next) {
		const uint8_t *mask;
		size_t bytes;

		if (!ifa->ifa_addr || !ifa->ifa_netmask ||
		    ifa->ifa_addr->sa_family != family ||
		    strcmp(ifa->ifa_name, netdev))
			continue;
		if (family == AF_INET) {
			struct sockaddr_in *sin = (void *)ifa->ifa_addr;

			if (memcmp(&sin->sin_addr, addr, 4))
				continue;
			mask = (void *)&((struct sockaddr_in *)ifa->ifa_netmask)
				       ->sin_addr;
			bytes = 4;
		} else {
			struct sockaddr_in6 *sin6 = (void *)ifa->ifa_addr;

			if (memcmp(&sin6->sin6_addr, addr, 16))
				continue;
			mask = (void *)&(
				       (struct sockaddr_in6 *)ifa->ifa_netmask)
				       ->sin6_addr;
			bytes = 16;
		}
		len = 0;
		for (size_t i = 0; i < bytes; i++)
			len += __builtin_popcount(mask[i]);
	}
	freeifaddrs(ifa_list);
	return len;
}

static void describe_roce_address(struct gdrfab_port_desc *port)
{
	char text[INET6_ADDRSTRLEN];
	int plen;

	if (gid_is_ipv4_mapped(&port->gid)) {
		uint32_t ip;

		memcpy(&ip, &port->gid.raw[12], 4);
		inet_ntop(AF_INET, &ip, text, sizeof(text));
		snprintf(port->link_address, sizeof(port->link_address), "%s",
			 text);
		plen = netdev_prefix_len(port->netdev, AF_INET, &ip);
		gdrfab_roce_fabric_name(port->fabric_name,
					sizeof(port->fabric_name), ip,
					plen < 0 ? 32 : (unsigned)plen);
		return;
	}
	inet_ntop(AF_INET6, port->gid.raw, text, sizeof(text));
	snprintf(port->link_address, sizeof(port->link_address), "%s", text);
	if (gid_is_link_local(&port->gid)) {
		/* Link-local GIDs carry no subnet: every such port of one
		 * L2 segment is one fabric; name it after the prefix. */
		snprintf(port->fabric_name, sizeof(port->fabric_name),
			 "RoCE-fe80::/64");
		return;
	}
	plen = netdev_prefix_len(port->netdev, AF_INET6, port->gid.raw);
	if (plen < 0)
		plen = 64;
	{
		uint8_t net[16];

		for (int i = 0; i < 16; i++) {
			int bits = GDRFAB_MAX(0, GDRFAB_MIN(8, plen - 8 * i));

			net[i] = port->gid.raw[i] & (uint8_t)(0xff00 >> bits);
		}
		inet_ntop(AF_INET6, net, text, sizeof(text));
	}
	snprintf(port->fabric_name, sizeof(port->fabric_name), "RoCE-%s/%d",
		 text, plen);
}

static int choose_roce_gid(struct ibv_context *ctx,
			   struct gdrfab_port_desc *port, size_t table_len)
{
	struct ibv_gid_entry *entries;
	ssize_t n;
	int best = -1, best_rank = 1 << 30;

	/* ibv_query_gid_table returns the valid entries of every port of
	 * the device: room for all of them. */
	entries = calloc(table_len, sizeof(*entries));
	if (!entries)
		return -FI_ENOMEM;
	n = ibv_query_gid_table(ctx, entries, table_len, 0);
	for (ssize_t i = 0; i < n; i++) {
		struct ibv_gid_entry *e = &entries[i];
		int rank;

		if (e->port_num != port->port_num ||
		    e->gid_type == IBV_GID_TYPE_IB)
			continue;
		if (gdrfab_params.gid_index >= 0) {
			if ((int)e->gid_index != gdrfab_params.gid_index)
				continue;
			rank = 0;
		} else {
			rank = gid_rank(e);
		}
		if (rank < best_rank) {
			best_rank = rank;
			best = (int)i;
		}
	}
	if (best < 0) {
		free(entries);
		if (gdrfab_params.gid_index >= 0)
			GDRFAB_WARN(
				FI_LOG_CORE,
				"%s port %u has no RoCE GID at FI_GDRFAB_GID_INDEX=%d: port skipped\n",
				port->dev_name, port->port_num,
				gdrfab_params.gid_index);
		return -FI_ENODATA;
	}
	port->gid = entries[best].gid;
	port->gid_index = (int)entries[best].gid_index;
	if (!if_indextoname(entries[best].ndev_ifindex, port->netdev))
		port->netdev[0] = '\0';
	free(entries);
	describe_roce_address(port);
	return 0;
}

static int describe_ib_address(struct ibv_context *ctx,
			       struct gdrfab_port_desc *port)
{
	char text[INET6_ADDRSTRLEN];

	if (ibv_query_gid(ctx, port->port_num, 0, &port->gid))
		return -FI_ENODATA;
	port->gid_index = 0;
	snprintf(port->fabric_name, sizeof(port->fabric_name), "IB-0x%016llx",
		 (unsigned long long)be64toh(port->gid.global.subnet_prefix));
	inet_ntop(AF_INET6, port->gid.raw, text, sizeof(text));
	snprintf(port->link_address, sizeof(port->link_address), "%s", text);
	return 0;
}

static int describe_port(struct ibv_context *ctx,
			 const struct ibv_device_attr *dev_attr,
			 struct gdrfab_port_desc *port)
{
	struct ibv_port_attr attr;

	if (ibv_query_port(ctx, port->port_num, &attr))
		return -FI_ENODATA;
	port->active = attr.state == IBV_PORT_ACTIVE;
	port->lid = attr.lid;
	port->active_mtu = 128u << attr.active_mtu;
	port->speed =
		gdrfab_verbs_port_speed(attr.active_width, attr.active_speed);
	port->max_msg_sz = attr.max_msg_sz;
	port->max_qp_wr = dev_attr->max_qp_wr;
	port->max_sge = dev_attr->max_sge;
	port->max_cqe = dev_attr->max_cqe;
	port->max_cq = dev_attr->max_cq;
	port->max_qp = dev_attr->max_qp;
	port->max_mr = dev_attr->max_mr;
	port->max_mr_size = dev_attr->max_mr_size;
	port->vendor_id = dev_attr->vendor_id;
	port->vendor_part_id = dev_attr->vendor_part_id;
	port->hw_ver = dev_attr->hw_ver;
	read_sysfs_identity(port);
	if (attr.link_layer == IBV_LINK_LAYER_ETHERNET) {
		port->link_layer = GDRFAB_LINK_ETHERNET;
		return choose_roce_gid(ctx, port,
				       (size_t)attr.gid_tbl_len *
					       dev_attr->phys_port_cnt);
	}
	port->link_layer = GDRFAB_LINK_IB;
	return describe_ib_address(ctx, port);
}

struct ibv_context *gdrfab_verbs_open_device(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n;

	list = gdrfab_vops->get_device_list(&n);
	if (!list)
		return NULL;
	for (int i = 0; i < n && !ctx; i++) {
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = gdrfab_vops->open_device(list[i]);
	}
	gdrfab_vops->free_device_list(list);
	if (!ctx && !errno)
		errno = ENODEV;
	return ctx;
}

static int append_device_ports(struct ibv_device *dev,
			       struct gdrfab_port_desc **ports, int *count)
{
	struct ibv_device_attr dev_attr;
	struct ibv_context *ctx;
	const char *name = ibv_get_device_name(dev);
	struct gdrfab_port_desc *grown;

	if (dev->transport_type != IBV_TRANSPORT_IB) {
		GDRFAB_INFO(FI_LOG_CORE,
			    "%s: not InfiniBand or RoCE (iWARP?): skipped\n",
			    name);
		return 0;
	}
	ctx = ibv_open_device(dev);
	if (!ctx) {
		GDRFAB_WARN(FI_LOG_CORE, "%s: ibv_open_device: %s: skipped\n",
			    name, strerror(errno));
		return 0;
	}
	if (ibv_query_device(ctx, &dev_attr)) {
		GDRFAB_WARN(FI_LOG_CORE, "%s: ibv_query_device failed\n", name);
		ibv_close_device(ctx);
		return 0;
	}
	grown = realloc(*ports,
			sizeof(**ports) *
				(size_t)(*count + dev_attr.phys_port_cnt));
	if (!grown) {
		ibv_close_device(ctx);
		return -FI_ENOMEM;
	}
	*ports = grown;
	for (uint8_t p = 1; p <= dev_attr.phys_port_cnt; p++) {
		struct gdrfab_port_desc *port = &(*ports)[*count];

		memset(port, 0, sizeof(*port));
		snprintf(port->dev_name, sizeof(port->dev_name), "%s", name);
		port->port_num = p;
		if (describe_port(ctx, &dev_attr, port)) {
			GDRFAB_INFO(FI_LOG_CORE,
				    "%s port %u: no usable address: skipped\n",
				    name, p);
			continue;
		}
		(*count)++;
	}
	ibv_close_device(ctx);
	return 0;
}

int gdrfab_verbs_discover_ports(struct gdrfab_port_desc **ports)
{
	struct ibv_device **list;
	int n, count = 0, ret = 0;

	*ports = NULL;
	list = ibv_get_device_list(&n);
	if (!list) {
		GDRFAB_INFO(FI_LOG_CORE, "no RDMA devices: %s\n",
			    strerror(errno));
		return 0;
	}
	for (int i = 0; i < n && !ret; i++) {
		if (!gdrfab_device_selected(&gdrfab_params,
					    ibv_get_device_name(list[i])))
			continue;
		ret = append_device_ports(list[i], ports, &count);
	}
	ibv_free_device_list(list);
	if (ret) {
		free(*ports);
		*ports = NULL;
		return ret;
	}
	return count;
}
