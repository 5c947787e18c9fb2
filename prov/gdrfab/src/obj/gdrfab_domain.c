/* SPDX-License-Identifier: BSD-2-Clause */
/* fid_domain: one RDMA device port, its verbs context and protection domain;
 * for a rail set (gdrfab_rail_info.h), its first NIC's, and the other
 * NICs' as its further rails (gdrfab_domain_rails.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_async.h"
#include "gdrfab_atomic.h"
#include "gdrfab_domain_rails.h"
#include "gdrfab_hmem_domain.h"
#include "gdrfab_hmem_reg.h"
#include "gdrfab_info.h"
#include "gdrfab_obj_common.h"
#include "gdrfab_objs.h"
#include "gdrfab_params.h"
#include "gdrfab_quarantine.h"
#include "gdrfab_rail_info.h"
#include "gdrfab_verbs_ops.h"

/* FI_GDRFAB_GDR_LEVEL, for CUDA_REG=auto: GPUDirect RDMA only up to that
 * class between this process's GPU and the NIC (PXB by default, as NCCL:
 * through a host bridge, reads especially are slow or fail). An unknown
 * class (no topology, a flat VM) does not stop it. */
static void hmem_domain_init(struct gdrfab_domain *domain)
{
	struct gdrfab_hmem_reg_setup setup = {
		.verbs_ctx = domain->ctx,
		.pd = domain->pd,
		.name = domain->info->domain_attr->name,
		.info = domain->info,
		.more_rails = domain->rails.count - 1,
	};

	for (size_t i = 1; i < domain->rails.count; i++) {
		setup.more_pd[i - 1] = domain->rails.rail[i].pd;
		setup.more_name[i - 1] = domain->rails.rail[i].name;
	}
	gdrfab_hmem_reg_init(&domain->hmem, &setup);
}

static void hmem_domain_fini(struct gdrfab_domain *domain)
{
	gdrfab_emu_mr_fini(domain);
	gdrfab_hmem_reg_fini(&domain->hmem);
}

static int domain_close(struct fid *fid)
{
	struct gdrfab_domain *domain =
		gdrfab_container_of(fid, struct gdrfab_domain, fid.fid);

	if (atomic_load(&domain->ref)) {
		GDRFAB_WARN(
			FI_LOG_DOMAIN,
			"domain %s still has %d open objects (AVs, CQs, counters, MRs, endpoints)\n",
			domain->info->domain_attr->name,
			atomic_load(&domain->ref));
		return -FI_EBUSY;
	}
	/* Printed while its registration cache can still be read. */
	gdrfab_domain_stats_fini(domain);
	hmem_domain_fini(domain);
	gdrfab_mr_keys_fini(domain);
	gdrfab_ah_cache_fini(&domain->ah_cache);
	gdrfab_domain_rails_close(&domain->rails);
	if (domain->pd && gdrfab_vops->dealloc_pd(domain->pd))
		GDRFAB_WARN(FI_LOG_DOMAIN, "ibv_dealloc_pd: %s\n",
			    strerror(errno));
	if (domain->ctx && gdrfab_vops->close_device(domain->ctx))
		GDRFAB_WARN(FI_LOG_DOMAIN, "ibv_close_device: %s\n",
			    strerror(errno));
	atomic_fetch_sub(&domain->fabric->ref, 1);
	fi_freeinfo(domain->info);
	domain->info = NULL;
	gdrfab_fid_retire(&domain->fid.fid, domain);
	return 0;
}

static int domain_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid, (void)bfid, (void)flags;
	GDRFAB_WARN(
		FI_LOG_DOMAIN,
		"fi_domain_bind: asynchronous memory registration (an EQ on the domain) is not supported\n");
	return -FI_ENOSYS;
}

static int nosys_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			     struct fid_ep **sep, void *context)
{
	(void)domain, (void)info, (void)sep, (void)context;
	GDRFAB_WARN(FI_LOG_DOMAIN, "scalable endpoints are not supported\n");
	return -FI_ENOSYS;
}

static int nosys_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr,
			 struct fid_stx **stx, void *context)
{
	(void)domain, (void)attr, (void)stx, (void)context;
	GDRFAB_WARN(FI_LOG_DOMAIN,
		    "shared transmit contexts are not supported\n");
	return -FI_ENOSYS;
}

static int nosys_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr,
			 struct fid_ep **rx_ep, void *context)
{
	(void)domain, (void)attr, (void)rx_ep, (void)context;
	GDRFAB_WARN(FI_LOG_DOMAIN,
		    "shared receive contexts are not supported\n");
	return -FI_ENOSYS;
}

static int nosys_query_collective(struct fid_domain *domain,
				  enum fi_collective_op coll,
				  struct fi_collective_attr *attr,
				  uint64_t flags)
{
	(void)domain, (void)coll, (void)attr, (void)flags;
	return -FI_ENOSYS;
}

static int domain_endpoint2(struct fid_domain *domain, struct fi_info *info,
			    struct fid_ep **ep, uint64_t flags, void *context)
{
	int ret = gdrfab_nosys_flags("fi_endpoint2", flags);

	return ret ? ret : gdrfab_endpoint_open(domain, info, ep, context);
}

static int cache_stats(struct fid *fid, struct fi_gdrfab_mr_cache_stats *out)
{
	struct gdrfab_domain *domain;

	if (!gdrfab_fid_is(fid, FI_CLASS_DOMAIN) || !out)
		return -FI_EINVAL;
	domain = gdrfab_container_of(fid, struct gdrfab_domain, fid.fid);
	gdrfab_mr_cache_stats(&domain->hmem.cache, out);
	return 0;
}

static struct fi_gdrfab_mr_cache_ops cache_ops = {
	.size = sizeof(struct fi_gdrfab_mr_cache_ops),
	.stats = cache_stats,
};

/* Whether this domain's MRs accept the NIC's atomics, and so tell peers
 * (FI_GDRFAB_NIC_ATOMICS, the device's atomic_cap). */
static void nic_atomics_init(struct gdrfab_domain *domain)
{
	enum ibv_atomic_cap cap = domain->dev_attr.atomic_cap;
	int mode = gdrfab_params.nic_atomics;

	domain->nic_atomic_flag = gdrfab_nic_atomic_cm_flag(mode, cap);
	if (domain->nic_atomic_flag == GDRFAB_CM_F_NIC_ATOMIC_HCA)
		GDRFAB_WARN(
			FI_LOG_DOMAIN,
			"%s: FI_GDRFAB_NIC_ATOMICS=unsafe_hca: NIC atomics on an IBV_ATOMIC_HCA device, which are not atomic with respect to message-borne ones on the same location (for tests only)\n",
			domain->info->domain_attr->name);
	else
		GDRFAB_INFO(FI_LOG_DOMAIN,
			    "%s: atomic_cap %s: NIC atomics %s\n",
			    domain->info->domain_attr->name,
			    cap == IBV_ATOMIC_GLOB  ? "GLOB"
			    : cap == IBV_ATOMIC_HCA ? "HCA"
						    : "NONE",
			    domain->nic_atomic_flag ? "used" : "not used");
}

static int atomic_stats(struct fid *fid, struct fi_gdrfab_atomic_stats *out)
{
	struct gdrfab_domain *domain;

	if (!gdrfab_fid_is(fid, FI_CLASS_DOMAIN) || !out)
		return -FI_EINVAL;
	domain = gdrfab_container_of(fid, struct gdrfab_domain, fid.fid);
	out->nic = atomic_load(&domain->atomics_nic);
	out->proto = atomic_load(&domain->atomics_proto);
	out->held = atomic_load(&domain->atomics_held);
	out->target_mode =
		domain->nic_atomic_flag == GDRFAB_CM_F_NIC_ATOMIC_GLOB	? 1
		: domain->nic_atomic_flag == GDRFAB_CM_F_NIC_ATOMIC_HCA ? 2
									: 0;
	return 0;
}

static struct fi_gdrfab_atomic_ops atomic_ops = {
	.size = sizeof(struct fi_gdrfab_atomic_ops),
	.stats = atomic_stats,
};

static int domain_ops_open(struct fid *fid, const char *name, uint64_t flags,
			   void **ops, void *context)
{
	(void)context;
	if (name && !strcmp(name, FI_GDRFAB_ATOMIC_OPS) && ops && !flags) {
		*ops = &atomic_ops;
		return 0;
	}
	if (name && !strcmp(name, FI_GDRFAB_MR_CACHE_OPS) && ops && !flags) {
		*ops = &cache_ops;
		return 0;
	}
	if (name && !strcmp(name, FI_GDRFAB_STATS_OPS))
		return gdrfab_stats_ops_open(fid, name, flags, ops);
	return gdrfab_nosys_ops_open(fid, name, flags, ops, context);
}

static struct fi_ops domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = domain_close,
	.bind = domain_bind,
	.control = gdrfab_nosys_control,
	.ops_open = domain_ops_open,
	.tostr = gdrfab_fid_tostr,
	.ops_set = gdrfab_nosys_ops_set,
};

static struct fi_ops_domain domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = gdrfab_av_open,
	.cq_open = gdrfab_cq_open,
	.endpoint = gdrfab_endpoint_open,
	.scalable_ep = nosys_scalable_ep,
	.cntr_open = gdrfab_cntr_open,
	.poll_open = gdrfab_poll_open,
	.stx_ctx = nosys_stx_ctx,
	.srx_ctx = nosys_srx_ctx,
	.query_atomic = gdrfab_query_atomic,
	.query_collective = nosys_query_collective,
	.endpoint2 = domain_endpoint2,
};

/* The port an info's source address names (in the info's format), in
 * gdrfab's form; false when it names none. */
static bool src_of(const struct fi_info *info, struct gdrfab_addr *src)
{
	char why[160];
	size_t used;

	return info->src_addr &&
	       !gdrfab_addr_import(gdrfab_fmt_of(info->addr_format),
				   info->src_addr, info->src_addrlen, true, src,
				   &used, why, sizeof(why));
}

/* Finds the port of device dev (the domain's, or a rail set's first NIC)
 * the info names (its src_addr: the port number, or for a socket address
 * the port with that IPv4 address; else the device's first active port)
 * among the n ports and records its address, as the domain's and as its
 * rail 0's. */
static int find_port(struct gdrfab_domain *domain, const struct fi_info *info,
		     const char *dev, const struct gdrfab_port_desc *ports,
		     int n)
{
	struct gdrfab_domain_rail *rail0 = &domain->rails.rail[0];
	struct gdrfab_addr want, here = {0};
	bool by_src = src_of(info, &want);
	uint32_t ip_want = 0, ip_here;
	int ret = -FI_ENODEV;

	if (by_src && !want.port_num)
		gdrfab_addr_ipv4(&want, &ip_want);
	for (int i = 0; i < n; i++) {
		const struct gdrfab_port_desc *p = &ports[i];

		memcpy(here.gid, p->gid.raw, sizeof(here.gid));
		if (strcmp(p->dev_name, dev) || !p->active)
			continue;
		if (by_src && want.port_num && want.port_num != p->port_num)
			continue;
		if (by_src && !want.port_num &&
		    (!gdrfab_addr_ipv4(&here, &ip_here) || ip_here != ip_want))
			continue;
		gdrfab_domain_rail_port(rail0, p);
		snprintf(rail0->name, sizeof(rail0->name), "%s", dev);
		domain->port_num = rail0->port_num;
		domain->max_msg_sz = rail0->max_msg_sz;
		domain->active_mtu = rail0->active_mtu;
		domain->gid_index = rail0->gid_index;
		domain->port_addr = rail0->port_addr;
		ret = 0;
		break;
	}
	return ret;
}

/* The NICs a rail-set domain's name stands for, checked against the
 * devices there are now: -FI_EINVAL with a log line when it names a
 * device that is not there, one twice, or is no set's name. */
static int rail_set_of(const char *name, const struct gdrfab_port_desc *ports,
		       int n, struct gdrfab_rail_set **set)
{
	char err[256];
	int ret;

	*set = calloc(1, sizeof(**set));
	if (!*set)
		return -FI_ENOMEM;
	ret = gdrfab_rail_set_of_name(name, ports, (size_t)n, *set, err,
				      sizeof(err));
	if (ret)
		GDRFAB_WARN(FI_LOG_DOMAIN, "fi_domain: rail set %s: %s\n", name,
			    err);
	return ret;
}

static int check_info(struct gdrfab_fabric *fabric, const struct fi_info *info)
{
	struct gdrfab_addr src;
	char why[160];
	size_t used;

	if (!info || !info->domain_attr || !info->domain_attr->name) {
		GDRFAB_WARN(FI_LOG_DOMAIN, "fi_domain: info names no domain\n");
		return -FI_EINVAL;
	}
	if (info->fabric_attr && info->fabric_attr->name &&
	    strcmp(info->fabric_attr->name, fabric->name)) {
		GDRFAB_WARN(FI_LOG_DOMAIN,
			    "fi_domain: %s is on fabric %s, not %s\n",
			    info->domain_attr->name, info->fabric_attr->name,
			    fabric->name);
		return -FI_EINVAL;
	}
	if (gdrfab_fmt_of(info->addr_format) == GDRFAB_FMT_NONE) {
		GDRFAB_WARN(FI_LOG_DOMAIN,
			    "fi_domain: address format %s is not gdrfab's\n",
			    fi_tostr(&info->addr_format, FI_TYPE_ADDR_FORMAT));
		return -FI_EINVAL;
	}
	if (info->src_addr &&
	    gdrfab_addr_import(gdrfab_fmt_of(info->addr_format), info->src_addr,
			       info->src_addrlen, true, &src, &used, why,
			       sizeof(why))) {
		GDRFAB_WARN(FI_LOG_DOMAIN, "fi_domain: src_addr: %s\n", why);
		return -FI_EINVAL;
	}
	return 0;
}

int gdrfab_domain_open(struct fid_fabric *fabric_fid, struct fi_info *info,
		       struct fid_domain **out, void *context)
{
	struct gdrfab_fabric *fabric;
	struct gdrfab_domain *domain;
	struct gdrfab_port_desc *ports = NULL;
	struct gdrfab_rail_set *set = NULL;
	const char *dev;
	int n = 0, ret;

	if (!gdrfab_fid_is(&fabric_fid->fid, FI_CLASS_FABRIC) || !out)
		return -FI_EINVAL;
	fabric = gdrfab_container_of(fabric_fid, struct gdrfab_fabric, fid);
	ret = check_info(fabric, info);
	if (ret)
		return ret;
	domain = calloc(1, sizeof(*domain));
	if (!domain)
		return -FI_ENOMEM;
	domain->fabric = fabric;
	domain->info = fi_dupinfo(info);
	if (!domain->info) {
		ret = -FI_ENOMEM;
		goto err;
	}
	/* Afresh (and the cache with it): a port fi_getinfo listed a moment
	 * ago may be down now, or have another address. */
	n = gdrfab_verbs_list_ports(&ports, true);
	if (n < 0) {
		ret = n;
		ports = NULL;
		goto err;
	}
	dev = info->domain_attr->name;
	domain->rails.count = 1;
	if (gdrfab_rail_name_is_set(dev)) {
		ret = rail_set_of(dev, ports, n, &set);
		if (ret)
			goto err;
		dev = set->nic[0];
	}
	ret = find_port(domain, info, dev, ports, n);
	if (ret) {
		GDRFAB_WARN(FI_LOG_DOMAIN,
			    "fi_domain: %s has no such active port\n", dev);
		goto err;
	}
	domain->ctx = gdrfab_verbs_open_device(dev);
	if (!domain->ctx) {
		ret = gdrfab_errno_to_fi(errno);
		GDRFAB_WARN(FI_LOG_DOMAIN, "fi_domain: cannot open %s: %s\n",
			    dev, strerror(errno));
		goto err;
	}
	if (gdrfab_vops->query_device(domain->ctx, &domain->dev_attr)) {
		ret = -FI_EOTHER;
		goto err;
	}
	domain->pd = gdrfab_vops->alloc_pd(domain->ctx);
	if (!domain->pd) {
		ret = gdrfab_errno_to_fi(errno);
		GDRFAB_WARN(FI_LOG_DOMAIN, "ibv_alloc_pd on %s: %s\n",
			    info->domain_attr->name, strerror(errno));
		goto err;
	}
	gdrfab_async_init(domain->ctx);
	domain->rails.rail[0].ctx = domain->ctx;
	domain->rails.rail[0].pd = domain->pd;
	domain->rails.rail[0].dev_attr = domain->dev_attr;
	if (set) {
		ret = gdrfab_domain_rails_open(&domain->rails, set, ports,
					       (size_t)n);
		if (ret)
			goto err;
	}
	free(set);
	set = NULL;
	free(ports);
	ports = NULL;
	{
		struct gdrfab_rc_params p = {
			.pd = domain->pd,
			.port_num = domain->port_num,
			.gid_index = domain->gid_index,
			.roce = !domain->port_addr.lid_be,
		};

		gdrfab_ah_cache_init(&domain->ah_cache, &p);
	}
	hmem_domain_init(domain);
	gdrfab_domain_stats_init(domain);
	gdrfab_mr_keys_init(domain);
	nic_atomics_init(domain);
	gdrfab_obj_init(&domain->fid.fid, FI_CLASS_DOMAIN, context,
			&domain_fi_ops);
	domain->fid.ops = &domain_ops;
	domain->fid.mr = &gdrfab_mr_ops;
	atomic_init(&domain->ref, 0);
	atomic_fetch_add(&fabric->ref, 1);
	*out = &domain->fid;
	return 0;
err:
	free(set);
	free(ports);
	if (domain->pd)
		gdrfab_vops->dealloc_pd(domain->pd);
	if (domain->ctx)
		gdrfab_vops->close_device(domain->ctx);
	fi_freeinfo(domain->info);
	free(domain);
	return ret;
}
