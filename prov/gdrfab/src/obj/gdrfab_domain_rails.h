/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A domain's rails (issue 31): the NICs whose port it moves data on. A
 * domain of one NIC has one rail; a rail-set domain (gdrfab_rail_info.h)
 * one per NIC of its set, in the set's order. Rail 0 is the primary: the
 * domain's own verbs context, PD and port (struct gdrfab_domain), which
 * name its endpoints and carry their control path; rail[0] here is a
 * view of them, owned by the domain. Rails 1 and on are opened and owned
 * here: each its own device, PD and port.
 */
#ifndef GDRFAB_DOMAIN_RAILS_H
#define GDRFAB_DOMAIN_RAILS_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "gdrfab_addr.h"
#include "gdrfab_topo_rails.h"
#include "gdrfab_verbs.h"

struct gdrfab_domain_rail {
	char name[GDRFAB_RAIL_NIC_LEN]; /* the device's */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr dev_attr;
	uint8_t port_num;
	int gid_index;
	struct gdrfab_addr port_addr; /* the port's name (no endpoint) */
	enum ibv_mtu active_mtu;
	uint32_t max_msg_sz; /* per work request */
};

struct gdrfab_domain_rails {
	size_t count; /* 1 for a NIC alone */
	struct gdrfab_domain_rail rail[GDRFAB_RAILS_MAX];
};

/* Describes port p as a rail's port (number, GID index, address, MTU,
 * largest work request). */
void gdrfab_domain_rail_port(struct gdrfab_domain_rail *rail,
			     const struct gdrfab_port_desc *p);

/* Opens rails 1 to set->count - 1 of rails, whose rail 0 the caller has
 * filled: each NIC's first active port among ports, its device and a PD.
 * 0, or a negative FI_E* with a log line, nothing of them left open. */
int gdrfab_domain_rails_open(struct gdrfab_domain_rails *rails,
			     const struct gdrfab_rail_set *set,
			     const struct gdrfab_port_desc *ports,
			     size_t nports);
/* Closes rails 1 and on (rail 0 is the domain's to close). */
void gdrfab_domain_rails_close(struct gdrfab_domain_rails *rails);

#endif /* GDRFAB_DOMAIN_RAILS_H */
