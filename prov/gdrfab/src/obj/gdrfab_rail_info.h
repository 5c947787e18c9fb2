/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Rail-set domains (issue 31): which sets of NICs fi_getinfo lists as
 * domains of their own, and which NICs a domain's name stands for. A
 * rail-set domain is named by its NICs joined with '+' (rxe0+rxe2); its
 * first NIC is rail 0, whose port names the endpoints and carries the
 * control path, so its fi_info is rail 0's with the set's name.
 *
 * The sets come from FI_GDRFAB_RAILS (gdrfab_topo_rails.h): named sets
 * as written, or with a cap the process's GPU's nearest NICs. Only sets of
 * more than one NIC are listed (one NIC is its own domain already), and
 * only while every NIC of the set has an active port.
 */
#ifndef GDRFAB_RAIL_INFO_H
#define GDRFAB_RAIL_INFO_H

#include <stdbool.h>
#include <stddef.h>

#include "gdrfab_topo_rails.h"
#include "gdrfab_verbs.h"

/* The rail sets to list beside the NICs alone. */
struct gdrfab_rail_list {
	size_t count;
	struct gdrfab_rail_set set[GDRFAB_RAIL_SETS_MAX];
};

/* Whether a domain name names a rail set (holds a '+'): a NIC's name
 * never does. */
bool gdrfab_rail_name_is_set(const char *name);

/* The sets of more than one NIC that FI_GDRFAB_RAILS (value; NULL: unset)
 * makes of the nports ports, of the NICs with an active port: a set's NIC
 * that is down is left out, the set named by those left, and listed while
 * two are (a job started with one NIC of four down uses three). A value that
 * does not parse lists none and says why (warning); with fewer than two
 * devices up, none and nothing read. 0 or -FI_ENOMEM. */
int gdrfab_rail_sets_listed(const char *value,
			    const struct gdrfab_port_desc *ports, size_t nports,
			    struct gdrfab_rail_list *out);

/* The one set an application names (hints' domain name, a+b): listed
 * when it is a set of the devices there with every NIC up, whatever
 * FI_GDRFAB_RAILS says, as fi_domain would open it; otherwise none (said
 * at info level). 0 or -FI_ENOMEM. */
int gdrfab_rail_sets_named(const char *name,
			   const struct gdrfab_port_desc *ports, size_t nports,
			   struct gdrfab_rail_list *out);

/* The NICs a rail-set domain's name stands for (a+b, each a device among
 * the nports ports, none twice, at most GDRFAB_RAILS_MAX): 0, or
 * -FI_EINVAL with the reason in err. */
int gdrfab_rail_set_of_name(const char *name,
			    const struct gdrfab_port_desc *ports, size_t nports,
			    struct gdrfab_rail_set *out, char *err,
			    size_t errlen);

/* The first active port of the device named dev among ports; NULL when it
 * has none. */
const struct gdrfab_port_desc *
gdrfab_rail_port_of(const char *dev, const struct gdrfab_port_desc *ports,
		    size_t nports);

#endif /* GDRFAB_RAIL_INFO_H */
