/* SPDX-License-Identifier: BSD-2-Clause */
/* Name-keyed hash map with chaining; grows at load factor 1. */
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_addrmap.h"

struct gdrfab_addrmap_node {
	struct gdrfab_addr key;
	uint64_t value;
	struct gdrfab_addrmap_node *next;
};

#define INITIAL_BUCKETS 64

/* FNV-1a over the whole name. */
static size_t hash(const struct gdrfab_addr *key, size_t nbuckets)
{
	const uint8_t *p = (const uint8_t *)key;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < sizeof(*key); i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return (size_t)(h & (nbuckets - 1));
}

int gdrfab_addrmap_init(struct gdrfab_addrmap *map)
{
	map->buckets = calloc(INITIAL_BUCKETS, sizeof(*map->buckets));
	map->nbuckets = INITIAL_BUCKETS;
	map->count = 0;
	return map->buckets ? 0 : -FI_ENOMEM;
}

void gdrfab_addrmap_fini(struct gdrfab_addrmap *map)
{
	for (size_t i = 0; map->buckets && i < map->nbuckets; i++) {
		struct gdrfab_addrmap_node *n = map->buckets[i], *next;

		for (; n; n = next) {
			next = n->next;
			free(n);
		}
	}
	free(map->buckets);
	map->buckets = NULL;
	map->count = 0;
}

static struct gdrfab_addrmap_node *find(const struct gdrfab_addrmap *map,
					const struct gdrfab_addr *key)
{
	struct gdrfab_addrmap_node *n = map->buckets[hash(key, map->nbuckets)];

	for (; n; n = n->next) {
		if (gdrfab_addr_equal(&n->key, key))
			return n;
	}
	return NULL;
}

int gdrfab_addrmap_get(const struct gdrfab_addrmap *map,
		       const struct gdrfab_addr *key, uint64_t *value)
{
	const struct gdrfab_addrmap_node *n = find(map, key);

	if (!n)
		return -FI_ENOENT;
	*value = n->value;
	return 0;
}

static void grow(struct gdrfab_addrmap *map)
{
	size_t nb = map->nbuckets * 2;
	struct gdrfab_addrmap_node **b = calloc(nb, sizeof(*b));

	if (!b)
		return; /* keep the longer chains */
	for (size_t i = 0; i < map->nbuckets; i++) {
		struct gdrfab_addrmap_node *n = map->buckets[i], *next;

		for (; n; n = next) {
			size_t h = hash(&n->key, nb);

			next = n->next;
			n->next = b[h];
			b[h] = n;
		}
	}
	free(map->buckets);
	map->buckets = b;
	map->nbuckets = nb;
}

int gdrfab_addrmap_put(struct gdrfab_addrmap *map,
		       const struct gdrfab_addr *key, uint64_t value)
{
	struct gdrfab_addrmap_node *n = find(map, key);
	size_t h;

	if (n) {
		n->value = value;
		return 0;
	}
	n = malloc(sizeof(*n));
	if (!n)
		return -FI_ENOMEM;
	n->key = *key;
	n->value = value;
	h = hash(key, map->nbuckets);
	n->next = map->buckets[h];
	map->buckets[h] = n;
	if (++map->count > map->nbuckets)
		grow(map);
	return 0;
}

void gdrfab_addrmap_del(struct gdrfab_addrmap *map,
			const struct gdrfab_addr *key)
{
	struct gdrfab_addrmap_node **pp =
		&map->buckets[hash(key, map->nbuckets)];

	for (; *pp; pp = &(*pp)->next) {
		if (gdrfab_addr_equal(&(*pp)->key, key)) {
			struct gdrfab_addrmap_node *n = *pp;

			*pp = n->next;
			free(n);
			map->count--;
			return;
		}
	}
}
