/* SPDX-License-Identifier: BSD-2-Clause */
/* Endpoints' and domains' counters: read, summed, printed at close. */
#include <stdlib.h>
#include <string.h>

#include "gdrfab_objs.h"
#include "gdrfab_proto.h"
#include "gdrfab_stats_ops.h"
#include "gdrfab_stats_out.h"

void gdrfab_domain_stats_init(struct gdrfab_domain *domain)
{
	struct gdrfab_domain_stats *ds = &domain->stats;

	pthread_mutex_init(&ds->lock, NULL);
	gdrfab_list_init(&ds->eps);
	ds->closed.size = sizeof(ds->closed);
	ds->closed.peer_other.fi_addr = FI_ADDR_NOTAVAIL;
}

/* An endpoint's counters now; the caller holds its lock (or it is
 * closing and nothing else runs on it). */
static void ep_read_locked(struct gdrfab_ep *ep, struct fi_gdrfab_stats *out)
{
	if (ep->proto) {
		gdrfab_stats_export(&ep->proto->stats, out);
	} else {
		memset(out, 0, sizeof(*out));
		out->size = sizeof(*out);
		out->peer_other.fi_addr = FI_ADDR_NOTAVAIL;
	}
	out->endpoints = 1;
}

static void ep_read(struct gdrfab_ep *ep, struct fi_gdrfab_stats *out)
{
	gdrfab_lock_acquire(&ep->lock);
	ep_read_locked(ep, out);
	gdrfab_lock_release(&ep->lock);
}

/* A rail set holds no more NICs than the public struct has rows. */
_Static_assert(GDRFAB_RAILS_MAX <= FI_GDRFAB_STATS_RAILS,
	       "struct fi_gdrfab_stats has fewer rail rows than a rail set "
	       "may have NICs");

/* A rail-set domain's rails, each with its row (in the set's order),
 * whether or not an endpoint counted on it yet; one NIC's has none. */
static void domain_rails(const struct gdrfab_domain *domain,
			 struct fi_gdrfab_stats *out)
{
	if (domain->rails.count < 2)
		return;
	for (size_t i = 0; i < domain->rails.count; i++)
		gdrfab_stats_rail_row(out, domain->rails.rail[i].name);
}

/* What only the domain knows: its registration cache, GPU path, rails. */
static void domain_own(struct gdrfab_domain *domain,
		       struct fi_gdrfab_stats *out)
{
	struct fi_gdrfab_mr_cache_stats mc;

	memset(&mc, 0, sizeof(mc));
	gdrfab_mr_cache_stats(&domain->hmem.cache, &mc);
	out->mr_cache_hits = mc.hits;
	out->mr_cache_misses = mc.misses;
	out->mr_cache_evictions = mc.evictions;
	out->mr_cache_host_hits = mc.host_hits;
	out->mr_cache_host_misses = mc.host_misses;
	out->gpu_path = (uint64_t)domain->hmem.path;
	domain_rails(domain, out);
}

/* The domain's counters: its closed endpoints, its open ones, its own. */
static void domain_read(struct gdrfab_domain *domain,
			struct fi_gdrfab_stats *out)
{
	struct gdrfab_domain_stats *ds = &domain->stats;
	struct fi_gdrfab_stats *one = malloc(sizeof(*one));
	struct gdrfab_list *it, *tmp;

	pthread_mutex_lock(&ds->lock);
	*out = ds->closed;
	gdrfab_list_for_each_safe (&ds->eps, it, tmp) {
		if (!one)
			break; /* no room to read them: the closed ones only */
		ep_read(gdrfab_list_entry(it, struct gdrfab_ep, stats_entry),
			one);
		gdrfab_stats_sum(out, one);
	}
	pthread_mutex_unlock(&ds->lock);
	free(one);
	domain_own(domain, out);
}

void gdrfab_ep_stats_attach(struct gdrfab_ep *ep)
{
	struct gdrfab_domain_stats *ds = &ep->domain->stats;

	pthread_mutex_lock(&ds->lock);
	gdrfab_list_push_tail(&ds->eps, &ep->stats_entry);
	pthread_mutex_unlock(&ds->lock);
}

void gdrfab_ep_stats_detach(struct gdrfab_ep *ep)
{
	struct gdrfab_domain_stats *ds = &ep->domain->stats;
	struct fi_gdrfab_stats *mine = malloc(sizeof(*mine));

	pthread_mutex_lock(&ds->lock);
	if (mine) {
		ep_read(ep, mine);
		gdrfab_stats_sum(&ds->closed, mine);
	}
	gdrfab_list_remove(&ep->stats_entry);
	pthread_mutex_unlock(&ds->lock);
	if (mine && ep->proto)
		gdrfab_stats_emit("endpoint",
				  ep->domain->info->domain_attr->name, mine);
	free(mine);
}

void gdrfab_domain_stats_fini(struct gdrfab_domain *domain)
{
	if (gdrfab_stats_wanted()) {
		struct fi_gdrfab_stats *all = malloc(sizeof(*all));

		if (all) {
			domain_read(domain, all);
			gdrfab_stats_emit("domain",
					  domain->info->domain_attr->name, all);
			free(all);
		}
	}
	pthread_mutex_destroy(&domain->stats.lock);
}

static int stats_read(struct fid *fid, struct fi_gdrfab_stats *out)
{
	struct fi_gdrfab_stats *all;
	int ret;

	if (!out || out->size < sizeof(out->size)) {
		GDRFAB_WARN(
			FI_LOG_CORE,
			"gdrfab_stats_v1 read: out is NULL or its size (%zu) holds not even the size field\n",
			out ? out->size : 0);
		return -FI_EINVAL;
	}
	if (!gdrfab_fid_is(fid, FI_CLASS_EP) &&
	    !gdrfab_fid_is(fid, FI_CLASS_DOMAIN)) {
		GDRFAB_WARN(
			FI_LOG_CORE,
			"gdrfab_stats_v1 read: the fid is not a gdrfab endpoint or domain\n");
		return -FI_EINVAL;
	}
	all = malloc(sizeof(*all));
	if (!all)
		return -FI_ENOMEM;
	if (fid->fclass == FI_CLASS_EP)
		ep_read(gdrfab_container_of(fid, struct gdrfab_ep, fid.fid),
			all);
	else
		domain_read(
			gdrfab_container_of(fid, struct gdrfab_domain, fid.fid),
			all);
	ret = gdrfab_stats_copy_out(all, out);
	free(all);
	return ret;
}

static struct fi_gdrfab_stats_ops stats_ops = {
	.size = sizeof(struct fi_gdrfab_stats_ops),
	.read = stats_read,
};

int gdrfab_stats_ops_open(struct fid *fid, const char *name, uint64_t flags,
			  void **ops)
{
	(void)fid;
	if (!name || strcmp(name, FI_GDRFAB_STATS_OPS))
		return -FI_ENOSYS;
	if (!ops || flags) {
		GDRFAB_WARN(
			FI_LOG_CORE,
			"fi_open_ops(%s): ops must not be NULL and flags must be 0 (got 0x%llx)\n",
			name, (unsigned long long)flags);
		return -FI_EINVAL;
	}
	*ops = &stats_ops;
	return 0;
}
