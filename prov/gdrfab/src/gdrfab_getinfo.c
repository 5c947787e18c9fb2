/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_getinfo: one fi_info per active port of every RDMA device, filtered by
 * node/service/flags and the hints.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_addr.h"
#include "gdrfab_info.h"
#include "gdrfab_ns.h"
#include "gdrfab_topo.h"

/* FI_SOURCE with a node: the node names a port by its IP address (RoCE),
 * its GID text, its device name, or a gdrfab:// name. */
static bool node_names_port(const char *node,
			    const struct gdrfab_port_desc *port)
{
	struct gdrfab_addr addr;

	if (!strcmp(node, port->link_address) || !strcmp(node, port->dev_name))
		return true;
	if (!gdrfab_addr_from_str(node, &addr))
		return !memcmp(addr.gid, port->gid.raw, sizeof(addr.gid)) &&
		       addr.port_num == port->port_num;
	return false;
}

/* Without FI_SOURCE, a node in gdrfab:// form is the destination. Other
 * nodes (host names, IP addresses) cannot be resolved to an RDM endpoint
 * name: the application exchanges names itself, so they are ignored. */
static int set_dest_addr(struct fi_info *info, const char *node)
{
	struct gdrfab_addr *addr;

	if (strncmp(node, "gdrfab://", 9)) {
		GDRFAB_INFO(FI_LOG_CORE,
			    "node \"%s\" is not a gdrfab:// name: no "
			    "destination address set\n",
			    node);
		return 0;
	}
	addr = malloc(sizeof(*addr));
	if (!addr)
		return -FI_ENOMEM;
	if (gdrfab_addr_from_str(node, addr)) {
		free(addr);
		GDRFAB_WARN(FI_LOG_CORE,
			    "node \"%s\" is not a valid gdrfab "
			    "name\n",
			    node);
		return -FI_ENODATA;
	}
	info->dest_addr = addr;
	info->dest_addrlen = sizeof(*addr);
	return 0;
}

/* What node and service asked for, worked out once for every port. */
struct request {
	const char *node;
	uint64_t flags;
	uint16_t src_service; /* FI_SOURCE (or no node): listen there */
	bool dest_resolved;   /* node:service answered with dest */
	struct gdrfab_addr dest;
};

static int set_resolved_dest(struct fi_info *info, const struct gdrfab_addr *a)
{
	info->dest_addr = malloc(sizeof(*a));
	if (!info->dest_addr)
		return -FI_ENOMEM;
	memcpy(info->dest_addr, a, sizeof(*a));
	info->dest_addrlen = sizeof(*a);
	return 0;
}

static int info_for_request(uint32_t version, const struct request *rq,
			    const struct fi_info *hints,
			    const struct gdrfab_port_desc *port,
			    struct fi_info **out)
{
	const char *node = rq->node;
	uint64_t flags = rq->flags;
	struct fi_info *info;
	char why[256];
	int ret;

	*out = NULL;
	if (!port->active) {
		GDRFAB_INFO(FI_LOG_CORE, "%s port %u is not active: skipped\n",
			    port->dev_name, port->port_num);
		return 0;
	}
	if (node && (flags & FI_SOURCE) && !node_names_port(node, port))
		return 0;
	info = gdrfab_info_for_port(port);
	if (!info)
		return -FI_ENOMEM;
	if (gdrfab_info_match(info, hints, version, why, sizeof(why))) {
		GDRFAB_INFO(FI_LOG_CORE, "%s port %u does not match: %s\n",
			    port->dev_name, port->port_num, why);
		fi_freeinfo(info);
		return 0;
	}
	gdrfab_info_apply_hints(info, hints, version);
	if (rq->src_service && info->src_addr)
		((struct gdrfab_addr *)info->src_addr)->reserved =
			htonl(GDRFAB_ADDR_SVC_TAG | rq->src_service);
	if (rq->dest_resolved) {
		ret = set_resolved_dest(info, &rq->dest);
		if (ret) {
			fi_freeinfo(info);
			return ret;
		}
	} else if (node && !(flags & FI_SOURCE)) {
		ret = set_dest_addr(info, node);
		if (ret) {
			fi_freeinfo(info);
			return ret;
		}
	}
	if (hints && hints->dest_addr && !info->dest_addr) {
		char reason[128];

		if (gdrfab_addr_validate(hints->dest_addr, hints->dest_addrlen,
					 reason, sizeof(reason))) {
			GDRFAB_WARN(FI_LOG_CORE, "hints->dest_addr: %s\n",
				    reason);
			fi_freeinfo(info);
			return -FI_ENODATA;
		}
		info->dest_addr = malloc(hints->dest_addrlen);
		if (!info->dest_addr) {
			fi_freeinfo(info);
			return -FI_ENOMEM;
		}
		memcpy(info->dest_addr, hints->dest_addr, hints->dest_addrlen);
		info->dest_addrlen = hints->dest_addrlen;
	}
	*out = info;
	return 0;
}

/* A service is a UDP port. With FI_SOURCE (or no node) the endpoint will
 * answer name queries there; with a node that is no gdrfab:// name, the
 * endpoint answering at node:service is the destination. */
static int parse_service(struct request *rq, const char *service)
{
	char *end;
	unsigned long port;

	if (!service)
		return 0;
	port = strtoul(service, &end, 10);
	if (!*service || *end || !port || port > 65535) {
		GDRFAB_WARN(FI_LOG_CORE,
			    "service \"%s\" is not a UDP port number\n",
			    service);
		return -FI_ENODATA;
	}
	if ((rq->flags & FI_SOURCE) || !rq->node) {
		rq->src_service = (uint16_t)port;
		return 0;
	}
	if (!strncmp(rq->node, "gdrfab://", 9))
		return 0; /* the name itself */
	if (gdrfab_ns_resolve(rq->node, service, &rq->dest))
		return -FI_ENODATA;
	rq->dest_resolved = true;
	return 0;
}

int gdrfab_getinfo(uint32_t version, const char *node, const char *service,
		   uint64_t flags, const struct fi_info *hints,
		   struct fi_info **info)
{
	struct gdrfab_port_desc *ports;
	struct fi_info *head = NULL, **tail = &head;
	struct request rq = {.node = node, .flags = flags};
	int n, ret = 0;

	if (!info)
		return -FI_EINVAL;
	*info = NULL;
	ret = parse_service(&rq, service);
	if (ret)
		return ret;
	n = gdrfab_verbs_list_ports(&ports);
	if (n < 0)
		return n;
	for (int i = 0; i < n && !ret; i++) {
		struct fi_info *one;

		ret = info_for_request(version, &rq, hints, &ports[i], &one);
		if (one) {
			*tail = one;
			tail = &one->next;
		}
	}
	free(ports);
	if (ret) {
		fi_freeinfo(head);
		return ret;
	}
	if (!head)
		return -FI_ENODATA;
	gdrfab_topo_order(&head);
	*info = head;
	return 0;
}
