/* SPDX-License-Identifier: BSD-2-Clause */
/* The counters' public form: made, summed, printed and read back. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include "gdrfab_stats_fmt.h"

/* The public struct holds the counters as the list names them, one
 * uint64_t after another: checked here, field by field. */
#define GDRFAB_STAT_CHECK(name)                                                \
	_Static_assert(                                                        \
		offsetof(struct fi_gdrfab_stats, name) ==                      \
			offsetof(struct fi_gdrfab_stats, tx_eager_msgs) +      \
				GDRFAB_STAT_##name * sizeof(uint64_t),         \
		"struct fi_gdrfab_stats out of GDRFAB_STATS_LIST's "           \
		"order: " #name);
GDRFAB_STATS_LIST(GDRFAB_STAT_CHECK)
#undef GDRFAB_STAT_CHECK

static const char *const stat_names[] = {
#define GDRFAB_STAT_NAME(name) #name,
	GDRFAB_STATS_LIST(GDRFAB_STAT_NAME)
#undef GDRFAB_STAT_NAME
};

static const char *const gpu_path_names[] = {"no CUDA", "dma-buf",
					     "nvidia-peermem", "staged"};

const char *gdrfab_stats_name(unsigned id)
{
	return id < GDRFAB_STAT_COUNT ? stat_names[id] : NULL;
}

int gdrfab_stats_lookup(const char *name)
{
	for (unsigned i = 0; i < GDRFAB_STAT_COUNT; i++) {
		if (!strcmp(stat_names[i], name))
			return (int)i;
	}
	return -1;
}

void gdrfab_stats_count_error(struct gdrfab_stats *s, int err, int prov_errno)
{
	enum gdrfab_stat kind;

	if (err == FI_ETRUNC)
		kind = GDRFAB_STAT_err_truncated;
	else if (err == FI_ECANCELED)
		kind = GDRFAB_STAT_err_canceled;
	else if (prov_errno > 0 && prov_errno < FI_GDRFAB_PROV_ERRNO_BASE)
		kind = GDRFAB_STAT_err_verbs; /* the NIC's status says it */
	else if (err == FI_ETIMEDOUT)
		kind = GDRFAB_STAT_err_timeout;
	else if (err == FI_EHOSTUNREACH || err == FI_ENOTCONN ||
		 err == FI_ECONNRESET || err == FI_ECONNREFUSED ||
		 err == FI_ECONNABORTED)
		kind = GDRFAB_STAT_err_unreachable;
	else
		kind = GDRFAB_STAT_err_other;
	s->c[GDRFAB_STAT_err_completions]++;
	s->c[kind]++;
}

/* Copies name into a rail row's name, cut to fit, zeros after it (rows
 * compare whole); "?" for none, so that the table's row always has a
 * name to parse. */
static void rail_name_set(char *dst, const char *name)
{
	memset(dst, 0, FI_GDRFAB_RAIL_NAME_LEN);
	snprintf(dst, FI_GDRFAB_RAIL_NAME_LEN, "%s",
		 name && *name ? name : "?");
}

void gdrfab_stats_rails_init(struct gdrfab_stats *s, size_t n,
			     const char *const *names)
{
	s->nrails = n > 1 && n <= FI_GDRFAB_STATS_RAILS ? n : 0;
	for (size_t i = 0; i < s->nrails; i++)
		rail_name_set(s->rail_name[i], names[i]);
}

uint64_t *gdrfab_stats_field(struct fi_gdrfab_stats *s, unsigned id)
{
	return &s->tx_eager_msgs + id;
}

static void peer_out(const struct gdrfab_stat_peer *p, uint64_t fi_addr,
		     struct fi_gdrfab_peer_stats *out)
{
	out->fi_addr = fi_addr;
	out->tx_msgs = p->tx_msgs;
	out->tx_bytes = p->tx_bytes;
	out->rx_msgs = p->rx_msgs;
	out->rx_bytes = p->rx_bytes;
	out->errors = p->errors;
}

static void peer_fold(struct gdrfab_stat_peer *dst,
		      const struct gdrfab_stat_peer *src)
{
	dst->tx_msgs += src->tx_msgs;
	dst->tx_bytes += src->tx_bytes;
	dst->rx_msgs += src->rx_msgs;
	dst->rx_bytes += src->rx_bytes;
	dst->errors += src->errors;
}

struct gdrfab_stat_peer *gdrfab_stat_peer_take(struct gdrfab_stats *s,
					       struct gdrfab_stat_peer *p,
					       uint64_t key)
{
	peer_fold(&s->other, p);
	memset(p, 0, sizeof(*p));
	p->key = key;
	return p;
}

void gdrfab_stats_export(const struct gdrfab_stats *s,
			 struct fi_gdrfab_stats *out)
{
	struct gdrfab_stat_peer other = s->other;

	memset(out, 0, sizeof(*out));
	out->size = sizeof(*out);
	for (unsigned i = 0; i < GDRFAB_STAT_COUNT; i++)
		*gdrfab_stats_field(out, i) = s->c[i];
	/* Rows in fi_addr order (the table's own order, by low bits, would
	 * read as shuffled once a peer's row is its fi_addr modulo 64). */
	for (unsigned i = 0; i < GDRFAB_STAT_PEERS; i++) {
		const struct gdrfab_stat_peer *p = &s->peers[i];

		if (p->key)
			peer_out(p, p->key - 1, &out->peers[out->peer_count++]);
		else
			peer_fold(&other, p); /* FI_ADDR_NOTAVAIL's */
	}
	for (uint64_t i = 1; i < out->peer_count; i++) {
		struct fi_gdrfab_peer_stats t = out->peers[i];
		uint64_t j = i;

		for (; j > 0 && out->peers[j - 1].fi_addr > t.fi_addr; j--)
			out->peers[j] = out->peers[j - 1];
		out->peers[j] = t;
	}
	peer_out(&other, FI_ADDR_NOTAVAIL, &out->peer_other);
	out->rail_count = s->nrails;
	for (size_t i = 0; i < s->nrails; i++) {
		memcpy(out->rails[i].name, s->rail_name[i],
		       sizeof(out->rails[i].name));
		out->rails[i].stripe_ops = s->rails[i].stripe_ops;
		out->rails[i].stripe_bytes = s->rails[i].stripe_bytes;
		out->rails[i].errors = s->rails[i].errors;
		out->rail_back[i] = s->rails[i].back;
	}
}

static void peer_add(struct fi_gdrfab_peer_stats *dst,
		     const struct fi_gdrfab_peer_stats *src)
{
	dst->tx_msgs += src->tx_msgs;
	dst->tx_bytes += src->tx_bytes;
	dst->rx_msgs += src->rx_msgs;
	dst->rx_bytes += src->rx_bytes;
	dst->errors += src->errors;
}

static struct fi_gdrfab_peer_stats *peer_row(struct fi_gdrfab_stats *s,
					     uint64_t fi_addr)
{
	uint64_t i = 0;

	for (; i < s->peer_count && s->peers[i].fi_addr < fi_addr; i++)
		;
	if (i < s->peer_count && s->peers[i].fi_addr == fi_addr)
		return &s->peers[i];
	if (s->peer_count == FI_GDRFAB_STATS_PEERS)
		return &s->peer_other;
	/* Kept in fi_addr order. */
	memmove(&s->peers[i + 1], &s->peers[i],
		(s->peer_count - i) * sizeof(s->peers[0]));
	memset(&s->peers[i], 0, sizeof(s->peers[i]));
	s->peers[i].fi_addr = fi_addr;
	s->peer_count++;
	return &s->peers[i];
}

struct fi_gdrfab_rail_stats *gdrfab_stats_rail_row(struct fi_gdrfab_stats *s,
						   const char *name)
{
	char key[FI_GDRFAB_RAIL_NAME_LEN];
	struct fi_gdrfab_rail_stats *r;

	rail_name_set(key, name);
	for (uint64_t i = 0; i < s->rail_count && i < FI_GDRFAB_STATS_RAILS;
	     i++) {
		if (!strcmp(s->rails[i].name, key))
			return &s->rails[i];
	}
	/* Full (a job's hosts name more NICs than a row each): the last
	 * row holds the rest, and says so. */
	if (s->rail_count >= FI_GDRFAB_STATS_RAILS) {
		r = &s->rails[FI_GDRFAB_STATS_RAILS - 1];
		rail_name_set(r->name, "other");
		return r;
	}
	r = &s->rails[s->rail_count++];
	memset(r, 0, sizeof(*r));
	s->rail_back[r - s->rails] = 0;
	memcpy(r->name, key, sizeof(r->name));
	return r;
}

static void rail_add(struct fi_gdrfab_rail_stats *dst,
		     const struct fi_gdrfab_rail_stats *src)
{
	dst->stripe_ops += src->stripe_ops;
	dst->stripe_bytes += src->stripe_bytes;
	dst->errors += src->errors;
}

void gdrfab_stats_sum(struct fi_gdrfab_stats *dst,
		      const struct fi_gdrfab_stats *src)
{
	for (unsigned i = 0; i < GDRFAB_STAT_COUNT; i++) {
		if (i == GDRFAB_STAT_gpu_path)
			continue;
		*gdrfab_stats_field(dst, i) +=
			*gdrfab_stats_field((struct fi_gdrfab_stats *)src, i);
	}
	if (!dst->gpu_path)
		dst->gpu_path = src->gpu_path;
	for (uint64_t i = 0; i < src->peer_count && i < FI_GDRFAB_STATS_PEERS;
	     i++)
		peer_add(peer_row(dst, src->peers[i].fi_addr), &src->peers[i]);
	peer_add(&dst->peer_other, &src->peer_other);
	dst->peer_other.fi_addr = FI_ADDR_NOTAVAIL;
	/* Rails merged by NIC name: a domain's endpoints share its rails,
	 * in its order; a job's hosts add theirs. */
	for (uint64_t i = 0; i < src->rail_count && i < FI_GDRFAB_STATS_RAILS;
	     i++) {
		struct fi_gdrfab_rail_stats *row =
			gdrfab_stats_rail_row(dst, src->rails[i].name);

		rail_add(row, &src->rails[i]);
		dst->rail_back[row - dst->rails] += src->rail_back[i];
	}
}

int gdrfab_stats_copy_out(const struct fi_gdrfab_stats *all,
			  struct fi_gdrfab_stats *out)
{
	size_t n;

	if (!out || out->size < sizeof(out->size))
		return -FI_EINVAL;
	n = out->size < sizeof(*all) ? out->size : sizeof(*all);
	memcpy((char *)out + sizeof(out->size),
	       (const char *)all + sizeof(all->size), n - sizeof(out->size));
	out->size = n;
	return 0;
}

static int peer_print(FILE *f, const char *key,
		      const struct fi_gdrfab_peer_stats *p)
{
	return fprintf(
		f, "  peer %9s %10llu %12llu %10llu %12llu %8llu\n", key,
		(unsigned long long)p->tx_msgs, (unsigned long long)p->tx_bytes,
		(unsigned long long)p->rx_msgs, (unsigned long long)p->rx_bytes,
		(unsigned long long)p->errors);
}

/* The rails' rows, only for a rail-set domain's table (one NIC's stays
 * as it was): heading, then a row per rail in its order. */
static int rails_print(FILE *f, const struct fi_gdrfab_stats *s)
{
	if (!s->rail_count)
		return 0;
	if (fprintf(f, "  rail %5s %-16s %10s %14s %8s %6s\n", "index", "nic",
		    "stripe_ops", "stripe_bytes", "errors", "back") < 0)
		return -1;
	for (uint64_t i = 0; i < s->rail_count && i < FI_GDRFAB_STATS_RAILS;
	     i++) {
		const struct fi_gdrfab_rail_stats *r = &s->rails[i];

		if (fprintf(f,
			    "  rail %5llu %-16.*s %10llu %14llu %8llu %6llu\n",
			    (unsigned long long)i, (int)sizeof(r->name) - 1,
			    r->name, (unsigned long long)r->stripe_ops,
			    (unsigned long long)r->stripe_bytes,
			    (unsigned long long)r->errors,
			    (unsigned long long)s->rail_back[i]) < 0)
			return -1;
	}
	return 0;
}

int gdrfab_stats_print(FILE *f, const char *title,
		       const struct fi_gdrfab_stats *s)
{
	struct fi_gdrfab_stats *w = (struct fi_gdrfab_stats *)s;
	const struct fi_gdrfab_peer_stats *o = &s->peer_other;
	int err = 0;

	err |= fprintf(f, "gdrfab stats: %s\n", title) < 0;
	err |= fprintf(f, "  %-24s %20s\n", "counter", "value") < 0;
	for (unsigned i = 0; i < GDRFAB_STAT_COUNT; i++) {
		uint64_t v = *gdrfab_stats_field(w, i);

		if (i == GDRFAB_STAT_gpu_path && v < 4)
			err |= fprintf(f, "  %-24s %20llu (%s)\n",
				       stat_names[i], (unsigned long long)v,
				       gpu_path_names[v]) < 0;
		else
			err |= fprintf(f, "  %-24s %20llu\n", stat_names[i],
				       (unsigned long long)v) < 0;
	}
	err |= fprintf(f, "  peer %9s %10s %12s %10s %12s %8s\n", "fi_addr",
		       "tx_msgs", "tx_bytes", "rx_msgs", "rx_bytes",
		       "errors") < 0;
	for (uint64_t i = 0; i < s->peer_count && i < FI_GDRFAB_STATS_PEERS;
	     i++) {
		char key[24];

		snprintf(key, sizeof(key), "%llu",
			 (unsigned long long)s->peers[i].fi_addr);
		err |= peer_print(f, key, &s->peers[i]) < 0;
	}
	if (o->tx_msgs || o->rx_msgs || o->errors)
		err |= peer_print(f, "other", o) < 0;
	err |= rails_print(f, s) < 0;
	err |= fprintf(f, "end\n") < 0;
	return err ? -1 : 0;
}

/* One line of a table: false when it is not one a table holds. */
static bool parse_line(const char *buf, struct fi_gdrfab_stats *s)
{
	char name[64], key[32];
	unsigned long long v[5];
	int id;

	if (sscanf(buf, " peer %31s %llu %llu %llu %llu %llu", key, &v[0],
		   &v[1], &v[2], &v[3], &v[4]) == 6) {
		struct fi_gdrfab_peer_stats p = {
			.tx_msgs = v[0],
			.tx_bytes = v[1],
			.rx_msgs = v[2],
			.rx_bytes = v[3],
			.errors = v[4],
		};
		char *end;
		unsigned long long a;

		if (!strcmp(key, "other")) {
			peer_add(&s->peer_other, &p);
			return true;
		}
		a = strtoull(key, &end, 10);
		if (*end)
			return false;
		peer_add(peer_row(s, a), &p);
		return true;
	}
	if (sscanf(buf, " peer %31s", key) == 1 && !strcmp(key, "fi_addr"))
		return true; /* the peers' heading */
	v[3] = 0;	     /* a table before the back column has none */
	if (sscanf(buf, " rail %31s %31s %llu %llu %llu %llu", key, name, &v[0],
		   &v[1], &v[2], &v[3]) >= 5) {
		struct fi_gdrfab_rail_stats r = {
			.stripe_ops = v[0],
			.stripe_bytes = v[1],
			.errors = v[2],
		};
		struct fi_gdrfab_rail_stats *row;

		/* By the NIC's name: the index is where it printed. */
		row = gdrfab_stats_rail_row(s, name);
		rail_add(row, &r);
		s->rail_back[row - s->rails] += v[3];
		return true;
	}
	if (sscanf(buf, " rail %31s", key) == 1 && !strcmp(key, "index"))
		return true; /* the rails' heading */
	if (sscanf(buf, " %63s %llu", name, &v[0]) == 2) {
		id = gdrfab_stats_lookup(name);
		if (id < 0)
			return false;
		*gdrfab_stats_field(s, (unsigned)id) = v[0];
		return true;
	}
	return sscanf(buf, " %63s", name) == 1 && !strcmp(name, "counter");
}

int gdrfab_stats_parse(FILE *f, gdrfab_stats_fn fn, void *arg, int *line)
{
	static struct fi_gdrfab_stats s; /* too large for a stack frame */
	char buf[512], scope[32] = "";
	bool in = false;
	int tables = 0;

	*line = 0;
	while (fgets(buf, sizeof(buf), f)) {
		++*line;
		if (!in) {
			if (sscanf(buf, "gdrfab stats: %31s", scope) == 1) {
				memset(&s, 0, sizeof(s));
				s.size = sizeof(s);
				s.peer_other.fi_addr = FI_ADDR_NOTAVAIL;
				in = true;
			}
			continue; /* anything between tables is not ours */
		}
		if (!strcmp(buf, "end\n") || !strcmp(buf, "end")) {
			fn(scope, &s, arg);
			tables++;
			in = false;
		} else if (!parse_line(buf, &s)) {
			return -1;
		}
	}
	return in ? -1 : tables;
}

int gdrfab_stats_path(const char *pattern, const char *host, long pid,
		      char *out, size_t len)
{
	size_t n = 0;
	bool has_pid = strstr(pattern, "%p") != NULL;
	char suffix[] = ".%h.%p";

	for (int pass = 0; pass < 2; pass++) {
		const char *p = pass ? (has_pid ? "" : suffix) : pattern;

		for (; *p; p++) {
			char num[24];
			const char *put = num;

			if (p[0] == '%' && p[1] == 'h') {
				put = host;
				p++;
			} else if (p[0] == '%' && p[1] == 'p') {
				snprintf(num, sizeof(num), "%ld", pid);
				p++;
			} else if (p[0] == '%' && p[1] == '%') {
				put = "%";
				p++;
			} else {
				num[0] = *p;
				num[1] = '\0';
			}
			if (n + strlen(put) >= len)
				return -1;
			memcpy(out + n, put, strlen(put));
			n += strlen(put);
		}
	}
	out[n] = '\0';
	return 0;
}
