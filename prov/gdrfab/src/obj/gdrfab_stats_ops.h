/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The counters of endpoints and domains, read through fi_open_ops
 * (FI_GDRFAB_STATS_OPS) and printed when they close (FI_GDRFAB_STATS).
 * An endpoint counts in its protocol state under its own lock
 * (gdrfab_proto_stats.h); its domain knows its open endpoints and sums
 * those that closed, so that a domain's read covers all of them.
 */
#ifndef GDRFAB_STATS_OPS_H
#define GDRFAB_STATS_OPS_H

#include <pthread.h>
#include <stdint.h>

#include <rdma/fi_ext_gdrfab.h>

#include "gdrfab_list.h"

struct fid;
struct gdrfab_domain;
struct gdrfab_ep;

/* In struct gdrfab_domain. lock covers closed and eps; an endpoint's lock
 * is taken under it (to read that endpoint), never the other way round:
 * nothing that holds an endpoint's lock takes this one. */
struct gdrfab_domain_stats {
	pthread_mutex_t lock;
	struct fi_gdrfab_stats closed; /* the endpoints that closed */
	struct gdrfab_list eps;	       /* open endpoints (stats_entry) */
};

void gdrfab_domain_stats_init(struct gdrfab_domain *domain);
/* At domain close: prints its table (FI_GDRFAB_STATS). */
void gdrfab_domain_stats_fini(struct gdrfab_domain *domain);
/* At endpoint open (no lock held). */
void gdrfab_ep_stats_attach(struct gdrfab_ep *ep);
/* At endpoint close, before its protocol state goes (no lock held): its
 * counters join its domain's, and its table is printed. */
void gdrfab_ep_stats_detach(struct gdrfab_ep *ep);

/* fi_open_ops of the endpoint and the domain: 0 with *ops for
 * FI_GDRFAB_STATS_OPS, -FI_EINVAL (logged) for flags or a NULL ops,
 * -FI_ENOSYS for any other name. */
int gdrfab_stats_ops_open(struct fid *fid, const char *name, uint64_t flags,
			  void **ops);

#endif /* GDRFAB_STATS_OPS_H */
