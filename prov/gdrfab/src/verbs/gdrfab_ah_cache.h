/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Address handles to peers' ports, per domain, made off the progress path.
 *
 * On RoCE, ibv_create_ah resolves the peer's GID to a MAC address in the
 * kernel, which blocks for about a second when nobody answers. A
 * connection request carries its sender's GID, so anyone could make
 * progress call that once per datagram. Here a worker thread makes the
 * handles; progress only looks them up. A request from a port whose handle
 * is not made yet is dropped (its sender resends), a failed resolution is
 * remembered for a while, and at most a few resolutions asked for by
 * peers wait at once, so a flood of bogus GIDs costs a bounded queue and
 * never blocks an endpoint.
 */
#ifndef GDRFAB_AH_CACHE_H
#define GDRFAB_AH_CACHE_H

#include <pthread.h>
#include <stdbool.h>

#include <infiniband/verbs.h>

#include "gdrfab_addr.h"
#include "gdrfab_rc.h"

enum gdrfab_ah_state {
	GDRFAB_AH_READY,   /* *ah is the handle */
	GDRFAB_AH_PENDING, /* being made: ask again later */
	GDRFAB_AH_FAILED,  /* the port could not be resolved lately */
	GDRFAB_AH_BUSY,	   /* too many waiting: ask again later */
};

#define GDRFAB_AH_BUCKETS     256  /* a power of two */
#define GDRFAB_AH_MAX	      4096 /* ports remembered per domain */
#define GDRFAB_AH_PEER_QUEUED 16   /* resolutions peers may queue */
#define GDRFAB_AH_RETRY_MS    5000 /* a failed port is tried again after */

struct gdrfab_ah_ent;

struct gdrfab_ah_cache {
	pthread_mutex_t lock; /* everything below; never held in ibv calls */
	pthread_cond_t wake;
	pthread_t worker;
	bool worker_running, stopping;
	struct gdrfab_rc_params params; /* pd, port, GID index, RoCE */
	struct gdrfab_ah_ent *buckets[GDRFAB_AH_BUCKETS];
	size_t count;
	/* Resolutions waiting for the worker, local ones first. */
	struct gdrfab_ah_ent *queue_head, *queue_tail;
	size_t peer_queued;
	unsigned long long made, failed, refused; /* for the log */
};

void gdrfab_ah_cache_init(struct gdrfab_ah_cache *cache,
			  const struct gdrfab_rc_params *params);
/* Stops the worker (waiting for a resolution under way) and destroys
 * every handle. */
void gdrfab_ah_cache_fini(struct gdrfab_ah_cache *cache);
/* The handle to the peer's port, or why there is none yet. local: our
 * application wants the peer (queued first, never refused for a full
 * queue); otherwise a peer's datagram asked. Never blocks. */
enum gdrfab_ah_state gdrfab_ah_get(struct gdrfab_ah_cache *cache,
				   const struct gdrfab_addr *peer, bool local,
				   struct ibv_ah **ah);

#endif /* GDRFAB_AH_CACHE_H */
