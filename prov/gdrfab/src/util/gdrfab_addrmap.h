/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A hash map from endpoint names to a value (an AV slot, a connection), so
 * that inserting N peers and matching arriving connections stay O(1) per
 * name. Not thread-safe: its owner locks.
 */
#ifndef GDRFAB_ADDRMAP_H
#define GDRFAB_ADDRMAP_H

#include <stddef.h>
#include <stdint.h>

#include "gdrfab_addr.h"

struct gdrfab_addrmap_node;

struct gdrfab_addrmap {
	struct gdrfab_addrmap_node **buckets;
	size_t nbuckets, count;
};

int gdrfab_addrmap_init(struct gdrfab_addrmap *map);
void gdrfab_addrmap_fini(struct gdrfab_addrmap *map);
/* Returns 0 and the value, or -FI_ENOENT. */
int gdrfab_addrmap_get(const struct gdrfab_addrmap *map,
		       const struct gdrfab_addr *key, uint64_t *value);
/* Inserts or replaces. */
int gdrfab_addrmap_put(struct gdrfab_addrmap *map,
		       const struct gdrfab_addr *key, uint64_t value);
void gdrfab_addrmap_del(struct gdrfab_addrmap *map,
			const struct gdrfab_addr *key);

#endif /* GDRFAB_ADDRMAP_H */
