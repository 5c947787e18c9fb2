/* SPDX-License-Identifier: BSD-2-Clause */
/* A domain's rails beyond rail 0 (gdrfab_domain_rails.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_async.h"
#include "gdrfab_domain_rails.h"
#include "gdrfab_rail_info.h"
#include "gdrfab_verbs_ops.h"

void gdrfab_domain_rail_port(struct gdrfab_domain_rail *rail,
			     const struct gdrfab_port_desc *p)
{
	rail->port_num = p->port_num;
	rail->max_msg_sz = p->max_msg_sz;
	rail->active_mtu = p->active_mtu >= 4096   ? IBV_MTU_4096
			   : p->active_mtu >= 2048 ? IBV_MTU_2048
			   : p->active_mtu >= 1024 ? IBV_MTU_1024
			   : p->active_mtu >= 512  ? IBV_MTU_512
						   : IBV_MTU_256;
	rail->gid_index = p->gid_index;
	memset(&rail->port_addr, 0, sizeof(rail->port_addr));
	rail->port_addr.version = GDRFAB_ADDR_VERSION;
	rail->port_addr.port_num = p->port_num;
	rail->port_addr.lid_be = htons(p->lid);
	memcpy(rail->port_addr.gid, p->gid.raw, 16);
}

static void rail_close(struct gdrfab_domain_rail *rail)
{
	if (rail->pd && gdrfab_vops->dealloc_pd(rail->pd))
		GDRFAB_WARN(FI_LOG_DOMAIN, "ibv_dealloc_pd on %s: %s\n",
			    rail->name, strerror(errno));
	if (rail->ctx && gdrfab_vops->close_device(rail->ctx))
		GDRFAB_WARN(FI_LOG_DOMAIN, "ibv_close_device on %s: %s\n",
			    rail->name, strerror(errno));
	rail->pd = NULL;
	rail->ctx = NULL;
}

static int rail_open(struct gdrfab_domain_rail *rail, const char *dev,
		     const struct gdrfab_port_desc *ports, size_t nports)
{
	const struct gdrfab_port_desc *p =
		gdrfab_rail_port_of(dev, ports, nports);

	snprintf(rail->name, sizeof(rail->name), "%s", dev);
	if (!p) {
		GDRFAB_WARN(FI_LOG_DOMAIN,
			    "fi_domain: rail %s has no active port\n", dev);
		return -FI_ENODEV;
	}
	gdrfab_domain_rail_port(rail, p);
	rail->ctx = gdrfab_verbs_open_device(dev);
	if (!rail->ctx) {
		int ret = gdrfab_errno_to_fi(errno);

		GDRFAB_WARN(FI_LOG_DOMAIN,
			    "fi_domain: cannot open rail %s: %s\n", dev,
			    strerror(errno));
		return ret;
	}
	if (gdrfab_vops->query_device(rail->ctx, &rail->dev_attr)) {
		GDRFAB_WARN(FI_LOG_DOMAIN, "ibv_query_device on %s: %s\n", dev,
			    strerror(errno));
		return -FI_EOTHER;
	}
	rail->pd = gdrfab_vops->alloc_pd(rail->ctx);
	if (!rail->pd) {
		int ret = gdrfab_errno_to_fi(errno);

		GDRFAB_WARN(FI_LOG_DOMAIN, "ibv_alloc_pd on %s: %s\n", dev,
			    strerror(errno));
		return ret;
	}
	/* Its events are read without blocking, as rail 0's; a port event
	 * of another rail is not acted on yet (rail failure, DESIGN.md). */
	gdrfab_async_init(rail->ctx);
	return 0;
}

int gdrfab_domain_rails_open(struct gdrfab_domain_rails *rails,
			     const struct gdrfab_rail_set *set,
			     const struct gdrfab_port_desc *ports,
			     size_t nports)
{
	int ret = 0;

	rails->count = 1;
	for (size_t i = 1; i < set->count && !ret; i++) {
		ret = rail_open(&rails->rail[i], set->nic[i], ports, nports);
		rails->count = i + 1; /* a failed one holds what it opened */
	}
	if (ret) {
		gdrfab_domain_rails_close(rails);
		return ret;
	}
	GDRFAB_INFO(FI_LOG_DOMAIN, "%s: %zu rails, rail 0 %s\n", set->name,
		    rails->count, rails->rail[0].name);
	return 0;
}

void gdrfab_domain_rails_close(struct gdrfab_domain_rails *rails)
{
	for (size_t i = 1; i < rails->count; i++)
		rail_close(&rails->rail[i]);
	rails->count = 1;
}
