/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Rail sets (issue 31): the NICs one GPU's traffic may be striped across.
 * By default every NIC of the GPU's share of its nearest ones
 * (gdrfab_topo_choose: the best class, ties kept, shared fairly between
 * GPUs), at most GDRFAB_RAILS_DEFAULT of them. FI_GDRFAB_RAILS changes
 * the cap (N, "all", "1" for a single rail) or names the sets outright,
 * "rxe0+rxe2,rxe1+rxe3", for machines whose topology hwloc cannot see
 * (VMs, soft-RoCE). A set's name is its NICs joined with '+'.
 *
 * Pure computation: nothing here opens a device. The parser checks names
 * against a list its caller provides (the topology's NICs, or the verbs
 * devices, whichever the caller knows).
 */
#ifndef GDRFAB_TOPO_RAILS_H
#define GDRFAB_TOPO_RAILS_H

#include <stddef.h>

#include "gdrfab_topo.h"

#define GDRFAB_RAILS_MAX     8	/* NICs in one rail set */
#define GDRFAB_RAILS_DEFAULT 4	/* the cap when FI_GDRFAB_RAILS is unset */
#define GDRFAB_RAIL_SETS_MAX 16 /* sets in an explicit list */
#define GDRFAB_RAIL_NIC_LEN  64 /* a NIC's name, with its NUL */

/* FI_GDRFAB_RAILS, parsed. */
struct gdrfab_rails_spec {
	/* NICs per set taken from the topology's choice; 0: the named sets
	 * below instead. */
	size_t limit;
	size_t nsets;
	size_t count[GDRFAB_RAIL_SETS_MAX];
	char nic[GDRFAB_RAIL_SETS_MAX][GDRFAB_RAILS_MAX][GDRFAB_RAIL_NIC_LEN];
};

struct gdrfab_rail_set {
	size_t count; /* 0: the GPU has no NIC */
	char nic[GDRFAB_RAILS_MAX][GDRFAB_RAIL_NIC_LEN];
	char name[GDRFAB_RAILS_MAX * GDRFAB_RAIL_NIC_LEN]; /* a+b+c */
	char why[160];
};

/* Parses value (NULL or "": the default cap). known lists the nknown NIC
 * names that exist; NULL skips that check (names then wait for the
 * devices). 0, or -FI_EINVAL with the reason, naming the variable, in
 * err: a count outside 1..GDRFAB_RAILS_MAX, an empty set or name, an
 * unknown NIC, a NIC named twice (one NIC is one rail of one set), more
 * than GDRFAB_RAILS_MAX NICs in a set or GDRFAB_RAIL_SETS_MAX sets. */
int gdrfab_rails_parse(const char *value, const char *const *known,
		       size_t nknown, struct gdrfab_rails_spec *spec, char *err,
		       size_t errlen);

/* GPU g's rail set under spec, from choice (its gdrfab_topo_choose
 * answer; NULL when the topology has none). With a cap: the choice's
 * NICs, one function per adapter first (two ports of one card share its
 * PCIe link), in bus-id order. With named sets: the set holding the
 * choice's first NIC, else set g modulo the sets (the topology does not
 * know them). */
void gdrfab_topo_rails(const struct gdrfab_topo *t,
		       const struct gdrfab_topo_choice *choice, size_t g,
		       const struct gdrfab_rails_spec *spec,
		       struct gdrfab_rail_set *out);

#endif /* GDRFAB_TOPO_RAILS_H */
