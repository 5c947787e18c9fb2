/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The port discovery cache (gdrfab_verbs.h). Discovering opens every RDMA
 * device and reads its GID table: milliseconds on a NIC, tens of them
 * under emulation, and applications call fi_getinfo many times while
 * they start (fabtests' fi_getinfo_test about 2,400 times). Ports change
 * rarely (a link going down, an address moving), so a discovery is
 * reused for a short while; what uses a port for real (fi_domain) always
 * looks afresh.
 */
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_params.h"
#include "gdrfab_signal.h"
#include "gdrfab_verbs.h"
#include "gdrfab_verbs_ops.h"

/* A copy of the cached ports for the caller; count or -FI_ENOMEM. */
static int copy_out(const struct gdrfab_port_cache *cache,
		    struct gdrfab_port_desc **ports)
{
	*ports = NULL;
	if (!cache->count)
		return 0;
	*ports = malloc(sizeof(**ports) * (size_t)cache->count);
	if (!*ports)
		return -FI_ENOMEM;
	memcpy(*ports, cache->ports, sizeof(**ports) * (size_t)cache->count);
	return cache->count;
}

int gdrfab_port_cache_get(struct gdrfab_port_cache *cache, int ttl_ms,
			  long long now_ms, bool fresh,
			  gdrfab_discover_fn discover,
			  struct gdrfab_port_desc **ports)
{
	struct gdrfab_port_desc *found;
	int n, ret;

	pthread_mutex_lock(&cache->lock);
	if (!fresh && ttl_ms > 0 && cache->ports &&
	    now_ms - cache->taken_ms < ttl_ms && now_ms >= cache->taken_ms) {
		ret = copy_out(cache, ports);
		pthread_mutex_unlock(&cache->lock);
		return ret;
	}
	n = discover(&found);
	cache->discoveries++;
	free(cache->ports);
	cache->ports = NULL;
	cache->count = 0;
	if (n < 0) {
		pthread_mutex_unlock(&cache->lock);
		*ports = NULL;
		return n;
	}
	/* The cache owns the discovery (an empty one too: "no device" is
	 * an answer worth keeping); the caller gets a copy. */
	cache->ports = found ? found : calloc(1, sizeof(*found));
	if (!cache->ports) {
		pthread_mutex_unlock(&cache->lock);
		*ports = NULL;
		return -FI_ENOMEM;
	}
	cache->count = n;
	cache->taken_ms = now_ms;
	ret = copy_out(cache, ports);
	if (ttl_ms <= 0) {
		free(cache->ports);
		cache->ports = NULL;
		cache->count = 0;
	}
	pthread_mutex_unlock(&cache->lock);
	return ret;
}

void gdrfab_port_cache_drop(struct gdrfab_port_cache *cache)
{
	pthread_mutex_lock(&cache->lock);
	free(cache->ports);
	cache->ports = NULL;
	cache->count = 0;
	pthread_mutex_unlock(&cache->lock);
}

static struct gdrfab_port_cache port_cache = GDRFAB_PORT_CACHE_INIT;

int gdrfab_verbs_list_ports(struct gdrfab_port_desc **ports, bool fresh)
{
	return gdrfab_port_cache_get(
		&port_cache, gdrfab_params.discovery_ttl_ms, gdrfab_now_ms(),
		fresh, gdrfab_vops->discover_ports, ports);
}

void gdrfab_verbs_ports_invalidate(void)
{
	gdrfab_port_cache_drop(&port_cache);
}

void gdrfab_verbs_ports_fini(void)
{
	gdrfab_port_cache_drop(&port_cache);
}
