/* SPDX-License-Identifier: BSD-2-Clause */
/* Rail sets from the topology or FI_GDRFAB_RAILS (gdrfab_topo_rails.h). */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gdrfab.h"
#include "gdrfab_topo_rails.h"

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, errlen, "FI_GDRFAB_RAILS: ");

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < errlen)
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -FI_EINVAL;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
	}
	return true;
}

static bool is_known(const char *name, const char *const *known, size_t nknown)
{
	for (size_t i = 0; i < nknown; i++) {
		if (!strcmp(known[i], name))
			return true;
	}
	return false;
}

/* Where name already is in spec's sets: true with *set (1-based). */
static bool find_named(const struct gdrfab_rails_spec *spec, const char *name,
		       size_t *set)
{
	for (size_t s = 0; s < spec->nsets; s++) {
		for (size_t i = 0; i < spec->count[s]; i++) {
			if (!strcmp(spec->nic[s][i], name)) {
				*set = s + 1;
				return true;
			}
		}
	}
	return false;
}

/* One NIC name of set nsets (counted already), len bytes at p. */
static int add_name(struct gdrfab_rails_spec *spec, const char *p, size_t len,
		    const char *const *known, size_t nknown, char *err,
		    size_t errlen)
{
	size_t s = spec->nsets - 1, other;
	char name[GDRFAB_RAIL_NIC_LEN];

	if (!len)
		return fail(err, errlen, "set %zu has an empty NIC name",
			    s + 1);
	if (len >= sizeof(name))
		return fail(
			err, errlen,
			"set %zu: a NIC name of %zu characters (at most %d)",
			s + 1, len, GDRFAB_RAIL_NIC_LEN - 1);
	memcpy(name, p, len);
	name[len] = '\0';
	if (known && !is_known(name, known, nknown)) {
		char list[160] = "";
		size_t off = 0;

		/* Whole names only: a cut one would read as a real one. */
		for (size_t i = 0; i < nknown; i++) {
			if (off + strlen(known[i]) + 5 >= sizeof(list)) {
				strcpy(list + off, " ...");
				break;
			}
			off += (size_t)snprintf(list + off, sizeof(list) - off,
						"%s%s", i ? " " : "", known[i]);
		}
		return fail(
			err, errlen,
			"set %zu names %s, which is no RDMA NIC here (%s%s)",
			s + 1, name, nknown ? "those are: " : "none is", list);
	}
	if (find_named(spec, name, &other))
		return other == s + 1
			       ? fail(err, errlen, "set %zu names %s twice",
				      s + 1, name)
			       : fail(err, errlen,
				      "%s is in set %zu and set %zu: a NIC is a rail of one set only",
				      name, other, s + 1);
	if (spec->count[s] == GDRFAB_RAILS_MAX)
		return fail(err, errlen, "set %zu has more than %d NICs", s + 1,
			    GDRFAB_RAILS_MAX);
	memcpy(spec->nic[s][spec->count[s]++], name, len + 1);
	return 0;
}

/* "a+b,c+d". */
static int parse_list(const char *value, const char *const *known,
		      size_t nknown, struct gdrfab_rails_spec *spec, char *err,
		      size_t errlen)
{
	const char *p = value;

	for (;;) {
		size_t set_len = strcspn(p, ","), off = 0;
		int ret;

		if (spec->nsets == GDRFAB_RAIL_SETS_MAX)
			return fail(err, errlen, "more than %d rail sets",
				    GDRFAB_RAIL_SETS_MAX);
		spec->nsets++;
		if (!set_len)
			return fail(err, errlen, "set %zu is empty",
				    spec->nsets);
		for (;;) {
			size_t len = strcspn(p + off, "+,");

			ret = add_name(spec, p + off, len, known, nknown, err,
				       errlen);
			if (ret)
				return ret;
			off += len;
			if (off >= set_len)
				break;
			off++;		    /* the '+' */
			if (off == set_len) /* "a+," or a trailing '+' */
				return add_name(spec, p + off, 0, known, nknown,
						err, errlen);
		}
		if (!p[set_len])
			return 0;
		p += set_len + 1;
	}
}

int gdrfab_rails_parse(const char *value, const char *const *known,
		       size_t nknown, struct gdrfab_rails_spec *spec, char *err,
		       size_t errlen)
{
	int ret;

	memset(spec, 0, sizeof(*spec));
	if (errlen)
		err[0] = '\0';
	if (!value || !*value) {
		spec->limit = GDRFAB_RAILS_DEFAULT;
		return 0;
	}
	if (!strcasecmp(value, "all")) {
		spec->limit = GDRFAB_RAILS_MAX;
		return 0;
	}
	if (all_digits(value)) {
		unsigned long n = strtoul(value, NULL, 10);

		if (n < 1 || n > GDRFAB_RAILS_MAX || strlen(value) > 3)
			return fail(
				err, errlen,
				"\"%s\": a count of rails is 1 to %d (or all, or sets of NICs: a+b,c+d)",
				value, GDRFAB_RAILS_MAX);
		spec->limit = n;
		return 0;
	}
	ret = parse_list(value, known, nknown, spec, err, errlen);
	if (ret)
		memset(spec, 0, sizeof(*spec));
	return ret;
}

static void set_name(struct gdrfab_rail_set *out)
{
	size_t off = 0;

	out->name[0] = '\0';
	for (size_t i = 0; i < out->count; i++)
		off += (size_t)snprintf(out->name + off,
					sizeof(out->name) - off, "%s%s",
					i ? "+" : "", out->nic[i]);
}

/* Takes up to limit of the choice's NICs: in rounds, each round one more
 * function of every adapter, so that a cap below the ties spreads over
 * cards before it doubles up on one; kept in the choice's (bus-id) order. */
static void from_choice(const struct gdrfab_topo *t,
			const struct gdrfab_topo_choice *c, size_t limit,
			struct gdrfab_rail_set *out)
{
	bool take[GDRFAB_TOPO_MAX_DEVS] = {false};
	size_t taken = 0;

	for (size_t round = 0; taken < limit && taken < c->count; round++) {
		for (size_t i = 0; i < c->count && taken < limit; i++) {
			size_t before = 0;

			for (size_t j = 0; j < i; j++)
				before += t->nic[c->nic[j]].adapter ==
					  t->nic[c->nic[i]].adapter;
			if (before == round) {
				take[i] = true;
				taken++;
			}
		}
	}
	for (size_t i = 0; i < c->count; i++) {
		if (take[i])
			snprintf(out->nic[out->count++], GDRFAB_RAIL_NIC_LEN,
				 "%s", t->nic[c->nic[i]].name);
	}
	snprintf(out->why, sizeof(out->why),
		 "%zu of %zu nearest NIC(s), at most %zu", out->count, c->count,
		 limit);
}

void gdrfab_topo_rails(const struct gdrfab_topo *t,
		       const struct gdrfab_topo_choice *choice, size_t g,
		       const struct gdrfab_rails_spec *spec,
		       struct gdrfab_rail_set *out)
{
	size_t set = 0, holder;
	const char *near = NULL;

	memset(out, 0, sizeof(*out));
	if (spec->limit) {
		if (choice && choice->count)
			from_choice(t, choice, spec->limit, out);
		else
			snprintf(out->why, sizeof(out->why), "no RDMA NIC");
		set_name(out);
		return;
	}
	if (!spec->nsets)
		return;
	if (choice && choice->count)
		near = t->nic[choice->nic[0]].name;
	if (near && find_named(spec, near, &holder)) {
		set = holder - 1;
		snprintf(
			out->why, sizeof(out->why),
			"named set %zu of %zu: it holds %s, this GPU's nearest",
			set + 1, spec->nsets, near);
	} else {
		set = g % spec->nsets;
		snprintf(out->why, sizeof(out->why),
			 "named set %zu of %zu: GPU %zu modulo the sets (%s)",
			 set + 1, spec->nsets, g,
			 near ? "its nearest NIC is in none"
			      : "the topology knows none of its NICs");
	}
	out->count = spec->count[set];
	memcpy(out->nic, spec->nic[set], sizeof(out->nic));
	set_name(out);
}
