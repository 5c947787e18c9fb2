/* SPDX-License-Identifier: BSD-2-Clause */
/* Rail-set domains: what fi_getinfo lists, what a name stands for
 * (gdrfab_rail_info.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_rail_info.h"
#include "gdrfab_topo.h"

bool gdrfab_rail_name_is_set(const char *name)
{
	return name && strchr(name, '+');
}

const struct gdrfab_port_desc *
gdrfab_rail_port_of(const char *dev, const struct gdrfab_port_desc *ports,
		    size_t nports)
{
	for (size_t i = 0; i < nports; i++) {
		if (ports[i].active && !strcmp(ports[i].dev_name, dev))
			return &ports[i];
	}
	return NULL;
}

/* Every port's device name, for the parser's check (a device of several
 * ports appears more than once, which the check does not mind). NULL when
 * out of memory. */
static const char **known_names(const struct gdrfab_port_desc *ports,
				size_t nports)
{
	const char **known = calloc(nports ? nports : 1, sizeof(*known));

	for (size_t i = 0; known && i < nports; i++)
		known[i] = ports[i].dev_name;
	return known;
}

/* Adds set to out when it has more than one NIC, each with an active
 * port; says at info level why one with a NIC down is left out. */
static void list_if_usable(const struct gdrfab_rail_set *set,
			   const struct gdrfab_port_desc *ports, size_t nports,
			   struct gdrfab_rail_list *out)
{
	if (set->count < 2 || out->count == GDRFAB_RAIL_SETS_MAX)
		return;
	for (size_t i = 0; i < set->count; i++) {
		if (!gdrfab_rail_port_of(set->nic[i], ports, nports)) {
			GDRFAB_INFO(
				FI_LOG_CORE,
				"rail set %s: %s has no active port: not listed\n",
				set->name, set->nic[i]);
			return;
		}
	}
	out->set[out->count++] = *set;
}

/* A set the process did not name (the topology's, or one of
 * FI_GDRFAB_RAILS's list): what of it is active, in its order and named
 * anew, so that a NIC down when the job starts costs its share of the
 * bandwidth rather than every rail but one; listed while two NICs are
 * left. A set named in the hints stays as named (list_if_usable). */
static void list_active_part(const struct gdrfab_rail_set *set,
			     const struct gdrfab_port_desc *ports,
			     size_t nports, struct gdrfab_rail_list *out)
{
	struct gdrfab_rail_set part = {.count = 0};
	size_t off = 0;

	for (size_t i = 0; i < set->count; i++) {
		if (!gdrfab_rail_port_of(set->nic[i], ports, nports)) {
			GDRFAB_INFO(
				FI_LOG_CORE,
				"rail set %s: %s has no active port: left out\n",
				set->name, set->nic[i]);
			continue;
		}
		memcpy(part.nic[part.count], set->nic[i], sizeof(part.nic[0]));
		off += (size_t)snprintf(part.name + off,
					sizeof(part.name) - off, "%s%s",
					part.count ? "+" : "", set->nic[i]);
		part.count++;
	}
	memcpy(part.why, set->why, sizeof(part.why));
	list_if_usable(&part, ports, nports, out);
}

/* With a cap: the process's GPU's set, from the topology. */
static int list_from_topology(const struct gdrfab_rails_spec *spec,
			      const struct gdrfab_port_desc *ports,
			      size_t nports, struct gdrfab_rail_list *out)
{
	const struct gdrfab_topo *t = gdrfab_topo_get();
	struct gdrfab_topo_choice *choice;
	struct gdrfab_rail_set *set;
	int g = t ? gdrfab_topo_this_process_gpu(t) : -1;
	int ret = 0;

	/* No topology or no GPU known (every VM, every host-memory job):
	 * nothing to stripe for. */
	if (g < 0 || spec->limit < 2)
		return 0;
	/* On the heap: fi_getinfo may run on several threads at once. */
	choice = calloc(t->ngpu, sizeof(*choice));
	set = calloc(1, sizeof(*set));
	if (!choice || !set) {
		ret = -FI_ENOMEM;
		goto out;
	}
	ret = gdrfab_topo_choose(t, choice);
	if (ret)
		goto out;
	gdrfab_topo_rails(t, &choice[g], (size_t)g, spec, set);
	if (set->count > 1)
		GDRFAB_INFO(FI_LOG_CORE, "GPU %s: rail set %s (%s)\n",
			    t->gpu[g].busid, set->name, set->why);
	list_active_part(set, ports, nports, out);
out:
	free(set);
	free(choice);
	return ret;
}

/* Whether two devices have an active port: no rail set is possible
 * otherwise. */
static bool two_active_devices(const struct gdrfab_port_desc *ports,
			       size_t nports)
{
	for (size_t i = 0; i < nports; i++) {
		if (!ports[i].active)
			continue;
		for (size_t j = i + 1; j < nports; j++) {
			if (ports[j].active &&
			    strcmp(ports[j].dev_name, ports[i].dev_name))
				return true;
		}
	}
	return false;
}

int gdrfab_rail_sets_listed(const char *value,
			    const struct gdrfab_port_desc *ports, size_t nports,
			    struct gdrfab_rail_list *out)
{
	struct gdrfab_rails_spec *spec;
	const char **known;
	struct gdrfab_rail_set *set;
	char err[256];
	int ret = 0;

	out->count = 0;
	/* One NIC: nothing to list, and nothing new to do (no topology
	 * load, no CUDA call) in a fi_getinfo that did none before. */
	if (!two_active_devices(ports, nports))
		return 0;
	spec = calloc(1, sizeof(*spec));
	known = known_names(ports, nports);
	set = calloc(1, sizeof(*set));
	if (!spec || !known || !set) {
		ret = -FI_ENOMEM;
		goto out;
	}
	if (gdrfab_rails_parse(value, known, nports, spec, err, sizeof(err))) {
		GDRFAB_WARN(FI_LOG_CORE, "%s: no rail set is listed\n", err);
		goto out;
	}
	if (spec->limit) {
		ret = list_from_topology(spec, ports, nports, out);
		goto out;
	}
	/* Named sets: every one, whichever GPU it may serve (the topology
	 * cannot see the NICs of a machine where sets are named). */
	for (size_t s = 0; s < spec->nsets; s++) {
		struct gdrfab_rails_spec one = {.nsets = 1};

		one.count[0] = spec->count[s];
		memcpy(one.nic[0], spec->nic[s], sizeof(one.nic[0]));
		gdrfab_topo_rails(NULL, NULL, 0, &one, set);
		list_active_part(set, ports, nports, out);
	}
out:
	free(set);
	free(known);
	free(spec);
	return ret;
}

int gdrfab_rail_sets_named(const char *name,
			   const struct gdrfab_port_desc *ports, size_t nports,
			   struct gdrfab_rail_list *out)
{
	struct gdrfab_rail_set *set = calloc(1, sizeof(*set));
	char err[256];
	int ret;

	out->count = 0;
	if (!set)
		return -FI_ENOMEM;
	ret = gdrfab_rail_set_of_name(name, ports, nports, set, err,
				      sizeof(err));
	if (!ret)
		list_if_usable(set, ports, nports, out);
	else if (ret == -FI_EINVAL)
		GDRFAB_INFO(FI_LOG_CORE, "rail set %s: %s\n", name, err);
	free(set);
	return ret == -FI_ENOMEM ? ret : 0;
}

static const char rails_prefix[] = "FI_GDRFAB_RAILS: ";

int gdrfab_rail_set_of_name(const char *name,
			    const struct gdrfab_port_desc *ports, size_t nports,
			    struct gdrfab_rail_set *out, char *err,
			    size_t errlen)
{
	struct gdrfab_rails_spec *spec;
	const char **known;
	int ret;

	memset(out, 0, sizeof(*out));
	/* A list of sets, or a count, is no one set's name. */
	if (!gdrfab_rail_name_is_set(name) || strchr(name, ',')) {
		snprintf(
			err, errlen,
			"\"%s\" is not one rail set's name (NICs joined with '+')",
			name ? name : "");
		return -FI_EINVAL;
	}
	spec = calloc(1, sizeof(*spec));
	known = known_names(ports, nports);
	if (!spec || !known) {
		free(spec);
		free(known);
		snprintf(err, errlen, "out of memory");
		return -FI_ENOMEM;
	}
	ret = gdrfab_rails_parse(name, known, nports, spec, err, errlen);
	if (!ret)
		gdrfab_topo_rails(NULL, NULL, 0, spec, out);
	else if (!strncmp(err, rails_prefix, strlen(rails_prefix)))
		/* The parser speaks of the parameter; this is a name. */
		memmove(err, err + strlen(rails_prefix),
			strlen(err + strlen(rails_prefix)) + 1);
	free(known);
	free(spec);
	return ret;
}
