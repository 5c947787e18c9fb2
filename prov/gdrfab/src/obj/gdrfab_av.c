/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fid_av: peers' addresses. FI_AV_TABLE hands out fi_addr_t values 0, 1,
 * 2... in insertion order (removed slots are not reused, as fi_av(3)
 * requires); FI_AV_MAP reuses free slots and returns the same fi_addr_t
 * when an address is inserted again (counted, so that each insert needs
 * its own remove).
 *
 * An address is an endpoint's name, or a service address: an IP:port
 * where an endpoint answers name queries (a sockaddr, "fi_sockaddr_in://",
 * fi_av_insertsvc, or what fi_getinfo(node, service) returns). Inserting
 * one sends no more than a first query: the AV asks in the background,
 * from the progress of the endpoints bound to it, resending every
 * GDRFAB_NS_RETRY_MS, and a connection to the slot waits for the answer.
 * Nobody answering within FI_GDRFAB_CONN_TIMEOUT_MS fails the operations
 * waiting on it (FI_EHOSTUNREACH, logged); the next operation asks again.
 * A peer's connection request also says at which service its endpoint
 * answers, which answers for that address at once (gdrfab_av_learn).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gdrfab.h"
#include "gdrfab_ns.h"
#include "gdrfab_obj_common.h"
#include "gdrfab_objs.h"
#include "gdrfab_params.h"
#include "gdrfab_quarantine.h"
#include "gdrfab_signal.h"

#define AV_DEFAULT_COUNT 64
#define AV_LEARNT_MAX	 65536 /* peers' services remembered, at most */

static int grow_table(struct gdrfab_av *av)
{
	size_t cap = av->cap ? av->cap * 2 : AV_DEFAULT_COUNT;
	struct gdrfab_av_entry *table =
		realloc(av->table, cap * sizeof(*table));

	if (!table)
		return -FI_ENOMEM;
	memset(table + av->cap, 0, (cap - av->cap) * sizeof(*table));
	av->table = table;
	av->cap = cap;
	return 0;
}

/* Finds the slot for a new name; the caller holds the lock. */
static int slot_for(struct gdrfab_av *av, const struct gdrfab_addr *addr,
		    size_t *slot)
{
	uint64_t found;

	if (av->type == FI_AV_MAP &&
	    !gdrfab_addrmap_get(&av->by_name, addr, &found)) {
		*slot = (size_t)found;
		return 0;
	}
	if (av->type == FI_AV_MAP && av->free_hint < av->used) {
		for (size_t i = av->free_hint; i < av->used; i++) {
			if (!av->table[i].refcnt) {
				*slot = i;
				av->free_hint = i + 1;
				return 0;
			}
		}
	}
	if (av->used == av->cap && grow_table(av))
		return -FI_ENOMEM;
	*slot = av->used++;
	av->free_hint = av->used;
	return 0;
}

#define AV_PREALLOC_MAX 65536 /* entries allocated at open, at most */

static void service_text(const struct gdrfab_addr *svc, char *buf, size_t len)
{
	gdrfab_addr_to_str(svc, buf, len);
}

/* ---- resolving service addresses (the caller holds the lock) ---- */

static int ask_list_add(struct gdrfab_av *av, size_t slot)
{
	if (av->asking_cnt == av->asking_cap) {
		size_t cap = av->asking_cap ? 2 * av->asking_cap : 16;
		size_t *grown = realloc(av->asking, cap * sizeof(*grown));

		if (!grown)
			return -FI_ENOMEM;
		av->asking = grown;
		av->asking_cap = cap;
	}
	av->asking[av->asking_cnt++] = slot;
	atomic_store(&av->any_asking, true);
	return 0;
}

static void ask_list_del(struct gdrfab_av *av, size_t i)
{
	av->asking[i] = av->asking[--av->asking_cnt];
	if (!av->asking_cnt)
		atomic_store(&av->any_asking, false);
}

static void ask_now(struct gdrfab_av *av, struct gdrfab_av_entry *e,
		    long long now)
{
	uint32_t ip;

	gdrfab_addr_ipv4(&e->addr, &ip);
	gdrfab_ns_ask(av->ns_fd, ip, gdrfab_addr_service(&e->addr));
	e->next_ask_ms = now + GDRFAB_NS_RETRY_MS;
}

/* The slot's endpoint answered with name. */
static void resolved(struct gdrfab_av *av, size_t slot,
		     const struct gdrfab_addr *name)
{
	struct gdrfab_av_entry *e = &av->table[slot];
	uint64_t first;

	e->name = *name;
	e->state = GDRFAB_AV_RESOLVED;
	if (gdrfab_addrmap_get(&av->by_name, name, &first))
		(void)gdrfab_addrmap_put(&av->by_name, name, slot);
	av->generation++;
}

/* Starts (or restarts) asking for a slot's name. */
static void start_asking(struct gdrfab_av *av, size_t slot)
{
	struct gdrfab_av_entry *e = &av->table[slot];
	long long now = gdrfab_tick_ms();
	char text[64];

	if (av->ns_fd < 0)
		av->ns_fd = gdrfab_ns_query_socket();
	if (av->ns_fd < 0 || ask_list_add(av, slot)) {
		service_text(&e->addr, text, sizeof(text));
		GDRFAB_WARN(FI_LOG_AV,
			    "cannot ask %s for its gdrfab name: %s\n", text,
			    strerror(errno));
		e->state = GDRFAB_AV_SILENT;
		return;
	}
	e->state = GDRFAB_AV_ASKING;
	e->ask_until_ms = now + gdrfab_params.conn_timeout_ms;
	ask_now(av, e, now);
}

/* A service address some peer told us about already. */
static bool learnt_name(struct gdrfab_av *av, const struct gdrfab_addr *svc,
			struct gdrfab_addr *name)
{
	uint64_t i;

	if (gdrfab_addrmap_get(&av->learnt_by_svc, svc, &i))
		return false;
	*name = av->learnt[i];
	return true;
}

static void answer_slots(struct gdrfab_av *av, const struct gdrfab_addr *svc,
			 const struct gdrfab_addr *name)
{
	for (size_t i = 0; i < av->asking_cnt;) {
		size_t slot = av->asking[i];

		if (gdrfab_addr_equal(&av->table[slot].addr, svc)) {
			ask_list_del(av, i);
			resolved(av, slot, name);
		} else {
			i++;
		}
	}
}

void gdrfab_av_progress(struct gdrfab_av *av)
{
	struct gdrfab_addr name, svc;
	long long now;
	uint32_t ip;
	uint16_t port;

	if (!atomic_load_explicit(&av->any_asking, memory_order_relaxed))
		return;
	gdrfab_lock_acquire(&av->lock);
	now = gdrfab_tick_ms();
	while (av->ns_fd >= 0 &&
	       gdrfab_ns_read_answer(av->ns_fd, &ip, &port, &name) == 1) {
		uint32_t name_ip;

		/* A RoCE name carries its IPv4 address: an answer naming
		 * another host's port is no answer for this one. */
		if (gdrfab_addr_ipv4(&name, &name_ip) && name_ip != ip)
			continue;
		gdrfab_addr_make_service(&svc, ip, port);
		answer_slots(av, &svc, &name);
	}
	for (size_t i = 0; i < av->asking_cnt;) {
		struct gdrfab_av_entry *e = &av->table[av->asking[i]];
		char text[64];

		if (now >= e->ask_until_ms) {
			service_text(&e->addr, text, sizeof(text));
			GDRFAB_WARN(
				FI_LOG_AV,
				"no gdrfab endpoint answered at %s within %d ms (FI_GDRFAB_CONN_TIMEOUT_MS): is one open there, with that service?\n",
				text + strlen("fi_sockaddr_in://"),
				gdrfab_params.conn_timeout_ms);
			e->state = GDRFAB_AV_SILENT;
			ask_list_del(av, i);
			continue;
		}
		if (now >= e->next_ask_ms)
			ask_now(av, e, now);
		i++;
	}
	gdrfab_lock_release(&av->lock);
}

void gdrfab_av_learn(struct gdrfab_av *av, const struct gdrfab_addr *svc,
		     const struct gdrfab_addr *name)
{
	uint64_t i;

	gdrfab_lock_acquire(&av->lock);
	if (!gdrfab_addrmap_get(&av->learnt_by_svc, svc, &i)) {
		av->learnt[i] = *name; /* the endpoint there was replaced */
	} else if (av->learnt_cnt < AV_LEARNT_MAX) {
		if (av->learnt_cnt == av->learnt_cap) {
			size_t cap = av->learnt_cap ? 2 * av->learnt_cap : 16;
			struct gdrfab_addr *grown =
				realloc(av->learnt, cap * sizeof(*grown));

			if (!grown)
				goto out;
			av->learnt = grown;
			av->learnt_cap = cap;
		}
		if (gdrfab_addrmap_put(&av->learnt_by_svc, svc, av->learnt_cnt))
			goto out;
		av->learnt[av->learnt_cnt++] = *name;
	}
	answer_slots(av, svc, name);
out:
	gdrfab_lock_release(&av->lock);
}

/* ---- inserting ---- */

/* Stores one address (in gdrfab's form); the caller holds the lock. */
static int insert_one(struct gdrfab_av *av, const struct gdrfab_addr *a,
		      size_t *slot)
{
	struct gdrfab_av_entry *e;
	struct gdrfab_addr name;
	int ret = slot_for(av, a, slot);

	if (ret)
		return ret;
	e = &av->table[*slot];
	if (!e->refcnt) {
		uint64_t first;

		e->addr = *a;
		/* The first slot of an address answers reverse lookups. */
		if (gdrfab_addrmap_get(&av->by_name, a, &first)) {
			ret = gdrfab_addrmap_put(&av->by_name, a, *slot);
			if (ret)
				return ret;
		}
		if (!gdrfab_addr_is_service(a)) {
			e->name = *a;
			e->state = GDRFAB_AV_NAMED;
		} else if (learnt_name(av, a, &name)) {
			resolved(av, *slot, &name);
		} else {
			start_asking(av, *slot);
		}
	}
	e->refcnt++;
	av->generation++;
	return 0;
}

/* The i-th address of an array in the AV's format, in gdrfab's form;
 * *next moves past it. */
static int import_nth(struct gdrfab_av *av, const void *array, size_t i,
		      const uint8_t **next, struct gdrfab_addr *out)
{
	char why[160];
	size_t used;
	const void *addr = *next;
	int ret;

	if (av->fmt == GDRFAB_FMT_STR)
		addr = ((const char *const *)array)[i];
	ret = gdrfab_addr_import(av->fmt, addr,
				 av->fmt == GDRFAB_FMT_NATIVE
					 ? sizeof(struct gdrfab_addr)
					 : sizeof(struct sockaddr_in6),
				 false, out, &used, why, sizeof(why));
	if (av->fmt != GDRFAB_FMT_STR)
		*next += used ? used : sizeof(struct gdrfab_addr);
	if (ret)
		GDRFAB_WARN(FI_LOG_AV, "fi_av_insert: address %zu: %s\n", i,
			    why);
	return ret;
}

static int av_insert(struct fid_av *av_fid, const void *addr, size_t count,
		     fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct gdrfab_av *av =
		gdrfab_container_of(av_fid, struct gdrfab_av, fid);
	int *errors = (flags & FI_SYNC_ERR) ? context : NULL;
	const uint8_t *next = addr;
	int inserted = 0;

	if (gdrfab_obj_flags(FI_LOG_AV, "fi_av_insert", flags,
			     FI_MORE | FI_SYNC_ERR))
		return -FI_EBADFLAGS;
	if (count && !addr) {
		GDRFAB_WARN(FI_LOG_AV, "fi_av_insert: NULL address array\n");
		return -FI_EINVAL;
	}
	if ((flags & FI_SYNC_ERR) && !context) {
		GDRFAB_WARN(
			FI_LOG_AV,
			"fi_av_insert: FI_SYNC_ERR without an error array\n");
		return -FI_EINVAL;
	}
	gdrfab_lock_acquire(&av->lock);
	for (size_t i = 0; i < count; i++) {
		struct gdrfab_addr a;
		size_t slot;
		int ret = import_nth(av, addr, i, &next, &a);

		if (!ret)
			ret = insert_one(av, &a, &slot);
		if (errors)
			errors[i] = -ret;
		if (fi_addr)
			fi_addr[i] = ret ? FI_ADDR_NOTAVAIL : (fi_addr_t)slot;
		if (!ret)
			inserted++;
	}
	gdrfab_lock_release(&av->lock);
	return inserted;
}

/* Inserts one address in gdrfab's form (insertsvc, insertsym). */
static int insert_native(struct gdrfab_av *av, const struct gdrfab_addr *a,
			 fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	int *errors = (flags & FI_SYNC_ERR) ? context : NULL;
	size_t slot;
	int ret;

	if (gdrfab_obj_flags(FI_LOG_AV, "fi_av_insertsvc", flags,
			     FI_MORE | FI_SYNC_ERR))
		return -FI_EBADFLAGS;
	gdrfab_lock_acquire(&av->lock);
	ret = insert_one(av, a, &slot);
	gdrfab_lock_release(&av->lock);
	if (errors)
		errors[0] = -ret;
	if (fi_addr)
		*fi_addr = ret ? FI_ADDR_NOTAVAIL : (fi_addr_t)slot;
	return ret ? ret : 1;
}

/* The address behind node:service: a gdrfab:// or fi_sockaddr_in://
 * string as node (service NULL, as fi_av(3) allows), or the service
 * address of host:port, asked in the background. */
static int name_of(const char *node, const char *service,
		   struct gdrfab_addr *out)
{
	char why[160];
	size_t used;

	if (!strncmp(node, "gdrfab://", 9) ||
	    !strncasecmp(node, "fi_sockaddr_in://", 17)) {
		if (service) {
			GDRFAB_WARN(
				FI_LOG_AV,
				"fi_av_insertsvc: with an address string as node, service must be NULL\n");
			return -FI_EINVAL;
		}
		if (gdrfab_addr_import(GDRFAB_FMT_STR, node, 0, false, out,
				       &used, why, sizeof(why))) {
			GDRFAB_WARN(FI_LOG_AV, "fi_av_insertsvc: %s\n", why);
			return -FI_EINVAL;
		}
		return 0;
	}
	if (!service) {
		GDRFAB_WARN(FI_LOG_AV,
			    "fi_av_insertsvc: node \"%.64s\" needs a service\n",
			    node);
		return -FI_EINVAL;
	}
	return gdrfab_ns_service_addr(node, service, out);
}

static int av_insertsvc(struct fid_av *av_fid, const char *node,
			const char *service, fi_addr_t *fi_addr, uint64_t flags,
			void *context)
{
	struct gdrfab_av *av =
		gdrfab_container_of(av_fid, struct gdrfab_av, fid);
	struct gdrfab_addr name;
	int ret;

	if (!node) {
		GDRFAB_WARN(FI_LOG_AV, "fi_av_insertsvc: node is NULL\n");
		return -FI_EINVAL;
	}
	ret = name_of(node, service, &name);
	if (ret) {
		if (fi_addr)
			*fi_addr = FI_ADDR_NOTAVAIL;
		return ret;
	}
	return insert_native(av, &name, fi_addr, flags, context);
}

/* The i-th node after base: an IPv4 address counted up, or a name whose
 * trailing digits are (keeping their width). */
static int nth_node(const char *base, size_t i, char *out, size_t len)
{
	struct in_addr a;
	size_t digits = 0, n = strlen(base);
	unsigned long long v;

	if (inet_pton(AF_INET, base, &a) == 1) {
		a.s_addr = htonl(ntohl(a.s_addr) + (uint32_t)i);
		return inet_ntop(AF_INET, &a, out, (socklen_t)len) ? 0
								   : -FI_EINVAL;
	}
	while (digits < n && base[n - 1 - digits] >= '0' &&
	       base[n - 1 - digits] <= '9')
		digits++;
	if (!digits)
		return i ? -FI_EINVAL : (snprintf(out, len, "%s", base), 0);
	v = strtoull(base + n - digits, NULL, 10) + i;
	if ((size_t)snprintf(out, len, "%.*s%0*llu", (int)(n - digits), base,
			     (int)digits, v) >= len)
		return -FI_EINVAL;
	return 0;
}

static int av_insertsym(struct fid_av *av, const char *node, size_t nodecnt,
			const char *service, size_t svccnt, fi_addr_t *fi_addr,
			uint64_t flags, void *context)
{
	char *end, host[256], svc[8];
	unsigned long port;
	int inserted = 0;

	if (!node || !service) {
		GDRFAB_WARN(
			FI_LOG_AV,
			"fi_av_insertsym: node and service are both needed\n");
		return -FI_EINVAL;
	}
	if (flags & FI_SYNC_ERR) {
		GDRFAB_WARN(
			FI_LOG_AV,
			"fi_av_insertsym: FI_SYNC_ERR is not supported here\n");
		return -FI_EBADFLAGS;
	}
	port = strtoul(service, &end, 10);
	if (!*service || *end || !port || !svccnt ||
	    port + svccnt - 1 > 65535 || strlen(node) >= sizeof(host)) {
		GDRFAB_WARN(
			FI_LOG_AV,
			"fi_av_insertsym: service \"%.16s\" and %zu after it are no UDP ports (or node is too long)\n",
			service, svccnt);
		return -FI_EINVAL;
	}
	for (size_t n = 0; n < nodecnt; n++) {
		for (size_t v = 0; v < svccnt; v++) {
			size_t i = n * svccnt + v;
			fi_addr_t *out = fi_addr ? &fi_addr[i] : NULL;
			int ret = nth_node(node, n, host, sizeof(host));

			snprintf(svc, sizeof(svc), "%lu", port + v);
			if (ret)
				GDRFAB_WARN(
					FI_LOG_AV,
					"fi_av_insertsym: no node %zu after \"%.64s\"\n",
					n, node);
			else
				ret = av_insertsvc(av, host, svc, out, flags,
						   context);
			if (ret == 1)
				inserted++;
			else if (out)
				*out = FI_ADDR_NOTAVAIL;
		}
	}
	return inserted;
}

static bool valid_fi_addr(const struct gdrfab_av *av, fi_addr_t fi_addr)
{
	return fi_addr < av->used && av->table[fi_addr].refcnt;
}

/* Forgets what maps to a slot being freed; the caller holds the lock. */
static void unmap_slot(struct gdrfab_av *av, size_t slot)
{
	struct gdrfab_av_entry *e = &av->table[slot];
	uint64_t mapped;

	if (!gdrfab_addrmap_get(&av->by_name, &e->addr, &mapped) &&
	    mapped == slot)
		gdrfab_addrmap_del(&av->by_name, &e->addr);
	if (e->state == GDRFAB_AV_RESOLVED &&
	    !gdrfab_addrmap_get(&av->by_name, &e->name, &mapped) &&
	    mapped == slot)
		gdrfab_addrmap_del(&av->by_name, &e->name);
	for (size_t i = 0; i < av->asking_cnt; i++) {
		if (av->asking[i] == slot) {
			ask_list_del(av, i);
			break;
		}
	}
	e->state = GDRFAB_AV_NAMED;
}

static int av_remove(struct fid_av *av_fid, fi_addr_t *fi_addr, size_t count,
		     uint64_t flags)
{
	struct gdrfab_av *av =
		gdrfab_container_of(av_fid, struct gdrfab_av, fid);
	int ret = 0;

	if (flags)
		return -FI_EBADFLAGS;
	if (count && !fi_addr)
		return -FI_EINVAL;
	gdrfab_lock_acquire(&av->lock);
	for (size_t i = 0; i < count; i++) {
		if (!valid_fi_addr(av, fi_addr[i])) {
			GDRFAB_WARN(
				FI_LOG_AV,
				"fi_av_remove: fi_addr %llu is not in the AV\n",
				(unsigned long long)fi_addr[i]);
			ret = -FI_EINVAL;
			continue;
		}
		if (!--av->table[fi_addr[i]].refcnt) {
			unmap_slot(av, fi_addr[i]);
			if (fi_addr[i] < av->free_hint)
				av->free_hint = fi_addr[i];
		}
		av->generation++;
	}
	gdrfab_lock_release(&av->lock);
	return ret;
}

static int av_lookup(struct fid_av *av_fid, fi_addr_t fi_addr, void *addr,
		     size_t *addrlen)
{
	struct gdrfab_av *av =
		gdrfab_container_of(av_fid, struct gdrfab_av, fid);
	int ret;

	if (!addrlen || (!addr && *addrlen))
		return -FI_EINVAL;
	gdrfab_lock_acquire(&av->lock);
	if (!valid_fi_addr(av, fi_addr)) {
		ret = -FI_EINVAL;
	} else {
		/* The address as inserted, in the AV's format; a buffer too
		 * small gets what fits, and the size it needs (fi_av(3)). */
		size_t len = *addrlen;

		ret = gdrfab_addr_export(av->fmt, &av->table[fi_addr].addr,
					 addr, &len);
		if (ret == -FI_ETOOSMALL && av->fmt == GDRFAB_FMT_STR &&
		    *addrlen) {
			gdrfab_addr_to_str(&av->table[fi_addr].addr, addr,
					   *addrlen);
		}
		if (ret == -FI_ETOOSMALL)
			ret = 0;
		*addrlen = len;
	}
	gdrfab_lock_release(&av->lock);
	return ret;
}

static const char *av_straddr(struct fid_av *av_fid, const void *addr,
			      char *buf, size_t *len)
{
	struct gdrfab_av *av =
		gdrfab_container_of(av_fid, struct gdrfab_av, fid);
	struct gdrfab_addr a;
	char why[160];
	size_t used, need;

	if (!len)
		return NULL;
	if (gdrfab_addr_import(av->fmt, addr,
			       av->fmt == GDRFAB_FMT_NATIVE
				       ? sizeof(struct gdrfab_addr)
				       : sizeof(struct sockaddr_in6),
			       true, &a, &used, why, sizeof(why)))
		need = (size_t)snprintf(buf, buf ? *len : 0,
					"(invalid gdrfab address)") +
		       1;
	else
		need = gdrfab_addr_to_str(&a, buf, buf ? *len : 0) + 1;
	*len = need;
	return buf;
}

static int av_set(struct fid_av *av, struct fi_av_set_attr *attr,
		  struct fid_av_set **av_set, void *context)
{
	(void)av, (void)attr, (void)av_set, (void)context;
	return -FI_ENOSYS;
}

int gdrfab_av_peer(struct gdrfab_av *av, fi_addr_t fi_addr,
		   struct gdrfab_addr *out, struct gdrfab_addr *inserted)
{
	int ret = -FI_EINVAL;

	gdrfab_lock_acquire(&av->lock);
	if (valid_fi_addr(av, fi_addr)) {
		struct gdrfab_av_entry *e = &av->table[fi_addr];

		*inserted = e->addr;
		switch (e->state) {
		case GDRFAB_AV_NAMED:
		case GDRFAB_AV_RESOLVED:
			*out = e->name;
			ret = 0;
			break;
		case GDRFAB_AV_SILENT:
			/* Someone needs it again: ask again. */
			start_asking(av, fi_addr);
			/* fall through */
		default: *out = e->addr; ret = -FI_EAGAIN;
		}
	}
	gdrfab_lock_release(&av->lock);
	if (ret == -FI_EINVAL)
		GDRFAB_WARN(FI_LOG_AV, "fi_addr %llu is not in the AV\n",
			    (unsigned long long)fi_addr);
	return ret;
}

int gdrfab_av_get_addr(struct gdrfab_av *av, fi_addr_t fi_addr,
		       struct gdrfab_addr *out)
{
	struct gdrfab_addr inserted;

	return gdrfab_av_peer(av, fi_addr, out, &inserted);
}

int gdrfab_av_service_status(struct gdrfab_av *av,
			     const struct gdrfab_addr *svc,
			     struct gdrfab_addr *name)
{
	int ret = -FI_EHOSTUNREACH;
	uint64_t slot;

	gdrfab_lock_acquire(&av->lock);
	if (!gdrfab_addrmap_get(&av->by_name, svc, &slot)) {
		const struct gdrfab_av_entry *e = &av->table[slot];

		if (e->state == GDRFAB_AV_RESOLVED) {
			*name = e->name;
			ret = 0;
		} else if (e->state == GDRFAB_AV_ASKING) {
			ret = -FI_EAGAIN;
		}
	}
	gdrfab_lock_release(&av->lock);
	return ret;
}

fi_addr_t gdrfab_av_find(struct gdrfab_av *av, const struct gdrfab_addr *addr)
{
	uint64_t slot;
	fi_addr_t ret = FI_ADDR_NOTAVAIL;

	gdrfab_lock_acquire(&av->lock);
	if (!gdrfab_addrmap_get(&av->by_name, addr, &slot))
		ret = (fi_addr_t)slot;
	gdrfab_lock_release(&av->lock);
	return ret;
}

static int av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid, (void)bfid, (void)flags;
	GDRFAB_WARN(FI_LOG_AV,
		    "fi_av_bind: asynchronous AV inserts are not supported\n");
	return -FI_ENOSYS;
}

static int av_close(struct fid *fid)
{
	struct gdrfab_av *av =
		gdrfab_container_of(fid, struct gdrfab_av, fid.fid);
	int ret = gdrfab_obj_busy(FI_LOG_AV, "av", &av->ref,
				  "endpoints are still bound to it");

	if (ret)
		return ret;
	gdrfab_lock_fini(&av->lock);
	gdrfab_addrmap_fini(&av->by_name);
	gdrfab_addrmap_fini(&av->learnt_by_svc);
	if (av->ns_fd >= 0)
		close(av->ns_fd);
	av->ns_fd = -1;
	free(av->asking);
	free(av->learnt);
	atomic_fetch_sub(&av->domain->ref, 1);
	free(av->table);
	av->table = NULL;
	gdrfab_fid_retire(&av->fid.fid, av);
	return 0;
}

static struct fi_ops av_fi_ops =
	GDRFAB_FI_OPS(av_close, av_bind, gdrfab_nosys_control);

static struct fi_ops_av av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = av_insert,
	.insertsvc = av_insertsvc,
	.insertsym = av_insertsym,
	.remove = av_remove,
	.lookup = av_lookup,
	.straddr = av_straddr,
	.av_set = av_set,
};

static int check_attr(const struct fi_av_attr *attr)
{
	if (!attr) {
		GDRFAB_WARN(FI_LOG_AV, "fi_av_open: attr is NULL\n");
		return -FI_EINVAL;
	}
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP &&
	    attr->type != FI_AV_TABLE) {
		GDRFAB_WARN(FI_LOG_AV, "fi_av_open: unknown AV type %d\n",
			    attr->type);
		return -FI_EINVAL;
	}
	if (attr->rx_ctx_bits) {
		GDRFAB_WARN(
			FI_LOG_AV,
			"fi_av_open: rx_ctx_bits needs scalable endpoints, which gdrfab lacks\n");
		return -FI_ENOSYS;
	}
	if (attr->name || (attr->flags & FI_READ)) {
		GDRFAB_WARN(
			FI_LOG_AV,
			"fi_av_open: shared (named) AVs are not supported\n");
		return -FI_ENOSYS;
	}
	if (attr->flags & FI_EVENT) {
		GDRFAB_WARN(
			FI_LOG_AV,
			"fi_av_open: FI_EVENT (asynchronous inserts) is not supported\n");
		return -FI_ENOSYS;
	}
	return gdrfab_obj_flags(FI_LOG_AV, "fi_av_open", attr->flags,
				FI_SYMMETRIC);
}

int gdrfab_av_open(struct fid_domain *domain_fid, struct fi_av_attr *attr,
		   struct fid_av **out, void *context)
{
	struct gdrfab_domain *domain;
	struct gdrfab_av *av;
	int ret;

	if (!gdrfab_fid_is(&domain_fid->fid, FI_CLASS_DOMAIN) || !out)
		return -FI_EINVAL;
	ret = check_attr(attr);
	if (ret)
		return ret;
	domain = gdrfab_container_of(domain_fid, struct gdrfab_domain, fid);
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->domain = domain;
	av->type = attr->type;
	if (av->type == FI_AV_UNSPEC)
		av->type = domain->info->domain_attr->av_type == FI_AV_MAP
				   ? FI_AV_MAP
				   : FI_AV_TABLE;
	if (attr->count) {
		/* A hint: the table grows past it, so a huge one costs no
		 * more than this up front. */
		size_t cap = GDRFAB_MIN(attr->count, (size_t)AV_PREALLOC_MAX);

		av->table = calloc(cap, sizeof(*av->table));
		if (!av->table) {
			free(av);
			return -FI_ENOMEM;
		}
		av->cap = cap;
	}
	if (gdrfab_addrmap_init(&av->by_name)) {
		free(av->table);
		free(av);
		return -FI_ENOMEM;
	}
	if (gdrfab_addrmap_init(&av->learnt_by_svc)) {
		gdrfab_addrmap_fini(&av->by_name);
		free(av->table);
		free(av);
		return -FI_ENOMEM;
	}
	av->ns_fd = -1;
	atomic_init(&av->any_asking, false);
	av->fmt = gdrfab_fmt_of(domain->info->addr_format);
	gdrfab_lock_init(&av->lock, gdrfab_domain_locks(domain));
	atomic_init(&av->ref, 0);
	gdrfab_obj_init(&av->fid.fid, FI_CLASS_AV, context, &av_fi_ops);
	av->fid.ops = &av_ops;
	atomic_fetch_add(&domain->ref, 1);
	*out = &av->fid;
	return 0;
}
