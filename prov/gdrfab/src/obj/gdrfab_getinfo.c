/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_getinfo: one fi_info per active port of every RDMA device, then one
 * per rail set of more than one NIC (gdrfab_rail_info.h), filtered by
 * node/service/flags and the hints.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gdrfab.h"
#include "gdrfab_addr.h"
#include "gdrfab_info.h"
#include "gdrfab_ns.h"
#include "gdrfab_params.h"
#include "gdrfab_rail_info.h"
#include "gdrfab_topo.h"

/* FI_SOURCE with a node: the node names a port by its IP address (RoCE),
 * its GID text, its device name, or a gdrfab:// name; an
 * fi_sockaddr_in:// node by its IP address (the service is taken apart in
 * parse_node). */
static bool node_names_port(const char *node,
			    const struct gdrfab_port_desc *port)
{
	struct gdrfab_addr addr, here = {0};
	uint32_t want, have;

	if (!strcmp(node, port->link_address) || !strcmp(node, port->dev_name))
		return true;
	if (gdrfab_addr_from_str(node, &addr))
		return false;
	memcpy(here.gid, port->gid.raw, sizeof(here.gid));
	if (!addr.port_num)
		return gdrfab_addr_ipv4(&addr, &want) &&
		       gdrfab_addr_ipv4(&here, &have) && want == have;
	return !memcmp(addr.gid, port->gid.raw, sizeof(addr.gid)) &&
	       addr.port_num == port->port_num;
}

/* What node, service, flags and the hints' addresses asked for, worked
 * out once for every port. Addresses are held in gdrfab's own form and
 * handed out in the format asked (gdrfab_addr_export). */
struct request {
	const char *node;
	uint64_t flags;
	enum gdrfab_fmt fmt;
	uint32_t addr_format; /* what info->addr_format says */
	uint16_t src_service; /* FI_SOURCE (or no node): listen there */
	bool has_dest;	      /* an endpoint's name or a service address */
	struct gdrfab_addr dest;
};

static int set_addrs(struct fi_info *info, const struct request *rq)
{
	struct gdrfab_addr src = *(struct gdrfab_addr *)info->src_addr;
	int ret;

	if (rq->src_service)
		src.reserved = htonl(GDRFAB_ADDR_SVC_TAG | rq->src_service);
	free(info->src_addr);
	info->src_addr = NULL;
	info->addr_format = rq->addr_format;
	ret = gdrfab_addr_export_dup(rq->fmt, &src, &info->src_addr,
				     &info->src_addrlen);
	if (ret || !rq->has_dest)
		return ret;
	free(info->dest_addr);
	info->dest_addr = NULL;
	ret = gdrfab_addr_export_dup(rq->fmt, &rq->dest, &info->dest_addr,
				     &info->dest_addrlen);
	if (ret == -FI_EINVAL) {
		char text[128];

		gdrfab_addr_to_str(&rq->dest, text, sizeof(text));
		GDRFAB_INFO(
			FI_LOG_CORE,
			"%s is no socket address: use FI_ADDR_STR or gdrfab's own format for it\n",
			text);
		return -FI_ENODATA;
	}
	return ret;
}

/* The info for port, or with rail_name for the rail set whose rail 0 the
 * port is: the same but for the domain's name. */
static int info_for_request(uint32_t version, const struct request *rq,
			    const struct fi_info *hints,
			    const struct gdrfab_port_desc *port,
			    const char *rail_name, struct fi_info **out)
{
	const char *node = rq->node;
	struct fi_info *info;
	char why[256];
	int ret;

	*out = NULL;
	if (!port->active) {
		GDRFAB_INFO(FI_LOG_CORE, "%s port %u is not active: skipped\n",
			    port->dev_name, port->port_num);
		return 0;
	}
	if (node && (rq->flags & FI_SOURCE) && !node_names_port(node, port))
		return 0;
	info = gdrfab_info_for_port(port);
	if (!info)
		return -FI_ENOMEM;
	if (rail_name) {
		free(info->domain_attr->name);
		info->domain_attr->name = strdup(rail_name);
		if (!info->domain_attr->name) {
			fi_freeinfo(info);
			return -FI_ENOMEM;
		}
	}
	if (gdrfab_info_match(info, hints, version, why, sizeof(why))) {
		GDRFAB_INFO(FI_LOG_CORE, "%s port %u does not match: %s\n",
			    info->domain_attr->name, port->port_num, why);
		fi_freeinfo(info);
		return 0;
	}
	gdrfab_info_apply_hints(info, hints, version);
	ret = set_addrs(info, rq);
	if (ret) {
		fi_freeinfo(info);
		return ret == -FI_ENODATA ? 0 : ret;
	}
	*out = info;
	return 0;
}

static int parse_port(const char *service, uint16_t *port)
{
	char *end;
	unsigned long p;

	p = strtoul(service, &end, 10);
	if (!*service || *end || !p || p > 65535) {
		GDRFAB_WARN(FI_LOG_CORE,
			    "service \"%.32s\" is not a UDP port number\n",
			    service);
		return -FI_ENODATA;
	}
	*port = (uint16_t)p;
	return 0;
}

static bool is_addr_str(const char *node)
{
	return !strncmp(node, "gdrfab://", 9) ||
	       !strncasecmp(node, "fi_sockaddr_in://", 17);
}

/* A service is a UDP port. With FI_SOURCE (or no node) the endpoint will
 * answer name queries there; with a node, the endpoint answering at
 * node:service is the destination: its service address, asked for only
 * once it is inserted into an AV (no query leaves fi_getinfo). A node
 * may also be an address string (gdrfab:// or fi_sockaddr_in://). */
static int parse_node(struct request *rq, const char *service)
{
	struct gdrfab_addr a;
	char why[160];
	size_t used;

	if (rq->node && is_addr_str(rq->node)) {
		if (gdrfab_addr_import(GDRFAB_FMT_STR, rq->node, 0,
				       rq->flags & FI_SOURCE, &a, &used, why,
				       sizeof(why))) {
			GDRFAB_WARN(FI_LOG_CORE, "node: %s\n", why);
			return -FI_ENODATA;
		}
		if (rq->flags & FI_SOURCE) {
			rq->src_service = gdrfab_addr_service(&a);
		} else {
			rq->dest = a;
			rq->has_dest = true;
		}
		if (!service)
			return 0;
	}
	if (!service)
		return 0;
	if ((rq->flags & FI_SOURCE) || !rq->node)
		return parse_port(service, &rq->src_service);
	if (rq->has_dest)
		return 0; /* the address string says it all */
	if (gdrfab_ns_service_addr(rq->node, service, &rq->dest))
		return -FI_ENODATA;
	rq->has_dest = true;
	return 0;
}

/* The hints' format, and the addresses they carry, in gdrfab's form. */
static int parse_hints(struct request *rq, const struct fi_info *hints)
{
	struct gdrfab_addr a;
	char why[160];
	size_t used;

	rq->fmt = GDRFAB_FMT_NATIVE;
	rq->addr_format = FI_FORMAT_UNSPEC;
	if (!hints)
		return 0;
	rq->fmt = gdrfab_fmt_of(hints->addr_format);
	if (rq->fmt == GDRFAB_FMT_NONE) {
		GDRFAB_INFO(
			FI_LOG_CORE,
			"address format %s: gdrfab speaks its own, FI_ADDR_STR and FI_SOCKADDR_IN\n",
			fi_tostr(&hints->addr_format, FI_TYPE_ADDR_FORMAT));
		return -FI_ENODATA;
	}
	rq->addr_format =
		rq->fmt == GDRFAB_FMT_SIN ? FI_SOCKADDR_IN : hints->addr_format;
	if (hints->src_addr && !rq->src_service &&
	    !gdrfab_addr_import(rq->fmt, hints->src_addr, hints->src_addrlen,
				true, &a, &used, why, sizeof(why)))
		rq->src_service = gdrfab_addr_service(&a);
	if (hints->dest_addr && !rq->has_dest) {
		if (gdrfab_addr_import(rq->fmt, hints->dest_addr,
				       hints->dest_addrlen, false, &rq->dest,
				       &used, why, sizeof(why))) {
			GDRFAB_WARN(FI_LOG_CORE, "hints->dest_addr: %s\n", why);
			return -FI_ENODATA;
		}
		rq->has_dest = true;
	}
	return 0;
}

/* The rail-set domains, as a list of their own at *sets. Hints that name
 * a NIC want no set (and so cost no topology load); hints that name a set
 * get it when its NICs are up, as fi_domain would open it. */
static int rail_set_infos(uint32_t version, const struct request *rq,
			  const struct fi_info *hints,
			  const struct gdrfab_port_desc *ports, size_t nports,
			  struct fi_info **sets)
{
	const char *want =
		hints && hints->domain_attr ? hints->domain_attr->name : NULL;
	struct fi_info **tail = sets;
	struct gdrfab_rail_list *rails;
	int ret;

	if (want && !gdrfab_rail_name_is_set(want))
		return 0;
	rails = calloc(1, sizeof(*rails));
	if (!rails)
		return -FI_ENOMEM;
	ret = want ? gdrfab_rail_sets_named(want, ports, nports, rails)
		   : gdrfab_rail_sets_listed(gdrfab_params.rails, ports, nports,
					     rails);
	for (size_t s = 0; s < rails->count && !ret; s++) {
		const struct gdrfab_rail_set *set = &rails->set[s];
		const struct gdrfab_port_desc *rail0 =
			gdrfab_rail_port_of(set->nic[0], ports, nports);
		struct fi_info *one = NULL;

		ret = info_for_request(version, rq, hints, rail0, set->name,
				       &one);
		if (one) {
			*tail = one;
			tail = &one->next;
		}
	}
	free(rails);
	return ret;
}

/* Whether the rail set named set (a+b) has nic as its rail 0. */
static bool set_starts_with(const char *set, const char *nic)
{
	size_t n = strlen(nic);

	return !strncmp(set, nic, n) && set[n] == '+';
}

/* Whether the NIC named nic is one of the rails of a set in sets. */
static bool in_a_set(const char *nic, const struct fi_info *sets)
{
	size_t n = strlen(nic);

	for (; sets; sets = sets->next) {
		const char *p = sets->domain_attr->name;

		while (p) {
			if (!strncmp(p, nic, n) && (p[n] == '+' || !p[n]))
				return true;
			p = strchr(p, '+');
			if (p)
				p++;
		}
	}
	return false;
}

/* Drops from nics every entry of a NIC that one of sets holds. */
static struct fi_info *drop_set_members(struct fi_info *nics,
					const struct fi_info *sets)
{
	struct fi_info **pp = &nics;

	while (*pp) {
		struct fi_info *nic = *pp;

		if (!in_a_set(nic->domain_attr->name, sets)) {
			pp = &nic->next;
			continue;
		}
		*pp = nic->next;
		nic->next = NULL;
		fi_freeinfo(nic);
	}
	return nics;
}

/* When the user asked for rails (FI_GDRFAB_RAILS set), the rail sets
 * stand for their NICs: a NIC in a set is not listed alone (its name in
 * the hints still gets it), and the sets come first, ordered as their
 * rail 0s are (the topology's order: the GPU's nearest NIC first). An
 * MPI that takes the first entry stripes, and so does one that spreads
 * its ranks over the alike entries: Open MPI picks its package rank (an
 * unbound process's pid) modulo their count, so with each NIC listed
 * alone too most ranks took a NIC alone. Unset, the sets go after every
 * NIC, so that an application taking the first entry keeps the nearest
 * NIC alone (DESIGN.md, "Rails"). */
static struct fi_info *place_rail_sets(struct fi_info *nics,
				       struct fi_info *sets)
{
	struct fi_info *head = NULL, **tail = &head, **pp;

	if (!gdrfab_params.rails) {
		for (tail = &nics; *tail; tail = &(*tail)->next)
			;
		*tail = sets;
		return nics;
	}
	for (struct fi_info *nic = nics; nic; nic = nic->next) {
		for (pp = &sets; *pp;) {
			struct fi_info *set = *pp;

			if (!set_starts_with(set->domain_attr->name,
					     nic->domain_attr->name)) {
				pp = &set->next;
				continue;
			}
			*pp = set->next;
			set->next = NULL;
			*tail = set;
			tail = &set->next;
		}
	}
	*tail = sets; /* a set whose rail 0 has no entry of its own */
	while (*tail)
		tail = &(*tail)->next;
	*tail = drop_set_members(nics, head);
	return head;
}

int gdrfab_getinfo(uint32_t version, const char *node, const char *service,
		   uint64_t flags, const struct fi_info *hints,
		   struct fi_info **info)
{
	struct gdrfab_port_desc *ports;
	struct fi_info *head = NULL, **tail = &head, *sets = NULL;
	struct request rq = {.node = node, .flags = flags};
	int n, ret = 0;

	if (!info)
		return -FI_EINVAL;
	*info = NULL;
	ret = parse_node(&rq, service);
	if (!ret)
		ret = parse_hints(&rq, hints);
	if (ret)
		return ret;
	n = gdrfab_verbs_list_ports(&ports, false);
	if (n < 0)
		return n;
	for (int i = 0; i < n && !ret; i++) {
		struct fi_info *one;

		ret = info_for_request(version, &rq, hints, &ports[i], NULL,
				       &one);
		if (one) {
			*tail = one;
			tail = &one->next;
		}
	}
	if (!ret) {
		gdrfab_topo_order(&head);
		ret = rail_set_infos(version, &rq, hints, ports, (size_t)n,
				     &sets);
		head = place_rail_sets(head, sets);
	}
	free(ports);
	if (ret) {
		fi_freeinfo(head);
		return ret;
	}
	if (!head)
		return -FI_ENODATA;
	*info = head;
	return 0;
}
