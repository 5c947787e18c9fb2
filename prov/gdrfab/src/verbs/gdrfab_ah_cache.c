/* SPDX-License-Identifier: BSD-2-Clause */
/* Address handles made by a worker thread (see gdrfab_ah_cache.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_ah_cache.h"
#include "gdrfab_signal.h"
#include "gdrfab_verbs_ops.h"

struct gdrfab_ah_ent {
	uint8_t gid[16];
	uint16_t lid_be;
	enum gdrfab_ah_state state;
	bool queued, peer_asked;
	struct ibv_ah *ah;
	long long retry_ms; /* FAILED: when to try again */
	struct gdrfab_ah_ent *next_in_bucket, *next_queued;
};

static size_t bucket_of(const uint8_t *gid, uint16_t lid_be)
{
	uint32_t h = 2166136261u;

	for (int i = 0; i < 16; i++)
		h = (h ^ gid[i]) * 16777619u;
	h = (h ^ lid_be) * 16777619u;
	return h & (GDRFAB_AH_BUCKETS - 1);
}

static struct gdrfab_ah_ent **find(struct gdrfab_ah_cache *c,
				   const struct gdrfab_addr *peer)
{
	struct gdrfab_ah_ent **at =
		&c->buckets[bucket_of(peer->gid, peer->lid_be)];

	for (; *at; at = &(*at)->next_in_bucket) {
		if ((*at)->lid_be == peer->lid_be &&
		    !memcmp((*at)->gid, peer->gid, 16))
			break;
	}
	return at;
}

/* Room for one more port: forgets a failed one whose retry is due when
 * the table is full. */
static bool make_room(struct gdrfab_ah_cache *c, long long now)
{
	if (c->count < GDRFAB_AH_MAX)
		return true;
	for (size_t b = 0; b < GDRFAB_AH_BUCKETS; b++) {
		for (struct gdrfab_ah_ent **at = &c->buckets[b]; *at;
		     at = &(*at)->next_in_bucket) {
			struct gdrfab_ah_ent *e = *at;

			if (e->state == GDRFAB_AH_FAILED && !e->queued &&
			    now >= e->retry_ms) {
				*at = e->next_in_bucket;
				free(e);
				c->count--;
				return true;
			}
		}
	}
	return false;
}

static void enqueue(struct gdrfab_ah_cache *c, struct gdrfab_ah_ent *e,
		    bool local)
{
	e->state = GDRFAB_AH_PENDING;
	e->queued = true;
	e->peer_asked = !local;
	e->next_queued = NULL;
	if (local) { /* ahead of what peers asked for */
		e->next_queued = c->queue_head;
		c->queue_head = e;
		if (!c->queue_tail)
			c->queue_tail = e;
	} else {
		if (c->queue_tail)
			c->queue_tail->next_queued = e;
		else
			c->queue_head = e;
		c->queue_tail = e;
		c->peer_queued++;
	}
	pthread_cond_signal(&c->wake);
}

static struct gdrfab_ah_ent *dequeue(struct gdrfab_ah_cache *c)
{
	struct gdrfab_ah_ent *e = c->queue_head;

	c->queue_head = e->next_queued;
	if (!c->queue_head)
		c->queue_tail = NULL;
	if (e->peer_asked)
		c->peer_queued--;
	return e;
}

static void *worker(void *arg)
{
	struct gdrfab_ah_cache *c = arg;

	pthread_mutex_lock(&c->lock);
	while (!c->stopping) {
		struct gdrfab_addr peer = {0};
		struct ibv_ah_attr attr;
		struct gdrfab_ah_ent *e;
		struct ibv_ah *ah;
		int err;

		if (!c->queue_head) {
			pthread_cond_wait(&c->wake, &c->lock);
			continue;
		}
		e = dequeue(c);
		memcpy(peer.gid, e->gid, 16);
		peer.lid_be = e->lid_be;
		gdrfab_rc_ah_attr(&attr, &c->params, &peer);
		/* The entry stays (queued entries are never freed) while the
		 * kernel resolves the port without our lock. */
		pthread_mutex_unlock(&c->lock);
		ah = gdrfab_vops->create_ah(c->params.pd, &attr);
		err = errno;
		pthread_mutex_lock(&c->lock);
		e->queued = false;
		e->ah = ah;
		if (ah) {
			e->state = GDRFAB_AH_READY;
			c->made++;
		} else {
			char name[128];

			e->state = GDRFAB_AH_FAILED;
			e->retry_ms = gdrfab_tick_ms() + GDRFAB_AH_RETRY_MS;
			c->failed++;
			gdrfab_addr_to_str(&peer, name, sizeof(name));
			GDRFAB_INFO(
				FI_LOG_EP_CTRL,
				"no address handle to %s: %s (%llu failed so far; tried again in %d ms)\n",
				name, strerror(err), c->failed,
				GDRFAB_AH_RETRY_MS);
		}
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

void gdrfab_ah_cache_init(struct gdrfab_ah_cache *cache,
			  const struct gdrfab_rc_params *params)
{
	memset(cache, 0, sizeof(*cache));
	pthread_mutex_init(&cache->lock, NULL);
	pthread_cond_init(&cache->wake, NULL);
	cache->params = *params;
}

void gdrfab_ah_cache_fini(struct gdrfab_ah_cache *cache)
{
	pthread_mutex_lock(&cache->lock);
	cache->stopping = true;
	pthread_cond_signal(&cache->wake);
	pthread_mutex_unlock(&cache->lock);
	if (cache->worker_running)
		pthread_join(cache->worker, NULL);
	for (size_t b = 0; b < GDRFAB_AH_BUCKETS; b++) {
		while (cache->buckets[b]) {
			struct gdrfab_ah_ent *e = cache->buckets[b];

			cache->buckets[b] = e->next_in_bucket;
			if (e->ah && gdrfab_vops->destroy_ah(e->ah))
				GDRFAB_WARN(FI_LOG_DOMAIN, "ibv_destroy_ah\n");
			free(e);
		}
	}
	pthread_cond_destroy(&cache->wake);
	pthread_mutex_destroy(&cache->lock);
}

enum gdrfab_ah_state gdrfab_ah_get(struct gdrfab_ah_cache *cache,
				   const struct gdrfab_addr *peer, bool local,
				   struct ibv_ah **ah)
{
	long long now = gdrfab_tick_ms();
	enum gdrfab_ah_state state;
	struct gdrfab_ah_ent **at, *e;
	bool can_queue;

	*ah = NULL;
	pthread_mutex_lock(&cache->lock);
	can_queue = local || cache->peer_queued < GDRFAB_AH_PEER_QUEUED;
	at = find(cache, peer);
	e = *at;
	if (!e) {
		if (!can_queue || !make_room(cache, now) ||
		    !(e = calloc(1, sizeof(*e)))) {
			cache->refused++;
			state = GDRFAB_AH_BUSY;
			goto out;
		}
		memcpy(e->gid, peer->gid, 16);
		e->lid_be = peer->lid_be;
		/* make_room may have unlinked from this very bucket. */
		at = find(cache, peer);
		*at = e;
		cache->count++;
		enqueue(cache, e, local);
	} else if (e->state == GDRFAB_AH_FAILED && now >= e->retry_ms &&
		   can_queue) {
		enqueue(cache, e, local);
	}
	state = e->state;
	*ah = e->ah;
	if (state == GDRFAB_AH_PENDING && !cache->worker_running) {
		int err = pthread_create(&cache->worker, NULL, worker, cache);

		if (err)
			GDRFAB_WARN(FI_LOG_EP_CTRL,
				    "no thread to make address handles: %s\n",
				    strerror(err));
		else
			cache->worker_running = true;
	}
out:
	pthread_mutex_unlock(&cache->lock);
	return state;
}
