/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fid_av: peers' endpoint names. FI_AV_TABLE hands out fi_addr_t values
 * 0, 1, 2... in insertion order (removed slots are not reused, as
 * fi_av(3) requires); FI_AV_MAP reuses free slots and returns the same
 * fi_addr_t when a name is inserted again (counted, so that each insert
 * needs its own remove).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_ns.h"
#include "gdrfab_objs.h"
#include "gdrfab_quarantine.h"

#define AV_DEFAULT_COUNT 64

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

/* Validates and stores one name; the caller holds the lock. */
#define AV_PREALLOC_MAX 65536 /* entries allocated at open, at most */

static int insert_one(struct gdrfab_av *av, const struct gdrfab_addr *a,
		      size_t index, size_t *slot)
{
	char why[128];
	int ret = gdrfab_addr_validate(a, sizeof(*a), why, sizeof(why));

	if (!ret && !a->qpn_be) {
		snprintf(why, sizeof(why),
			 "a port's address (qpn 0), not an endpoint's name");
		ret = -FI_EINVAL;
	}
	if (ret) {
		GDRFAB_WARN(FI_LOG_AV, "fi_av_insert: address %zu: %s\n", index,
			    why);
		return ret;
	}
	ret = slot_for(av, a, slot);
	if (ret)
		return ret;
	if (!av->table[*slot].refcnt) {
		uint64_t first;

		av->table[*slot].addr = *a;
		/* The first slot of a name answers reverse lookups. */
		if (gdrfab_addrmap_get(&av->by_name, a, &first)) {
			ret = gdrfab_addrmap_put(&av->by_name, a, *slot);
			if (ret)
				return ret;
		}
	}
	av->table[*slot].refcnt++;
	av->generation++;
	return 0;
}

static int av_insert(struct fid_av *av_fid, const void *addr, size_t count,
		     fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct gdrfab_av *av =
		gdrfab_container_of(av_fid, struct gdrfab_av, fid);
	int *errors = (flags & FI_SYNC_ERR) ? context : NULL;
	int inserted = 0;

	if (flags & ~(uint64_t)(FI_MORE | FI_SYNC_ERR)) {
		GDRFAB_WARN(FI_LOG_AV,
			    "fi_av_insert: unsupported flags "
			    "0x%llx\n",
			    (unsigned long long)flags);
		return -FI_EBADFLAGS;
	}
	if (count && !addr) {
		GDRFAB_WARN(FI_LOG_AV, "fi_av_insert: NULL address array\n");
		return -FI_EINVAL;
	}
	if ((flags & FI_SYNC_ERR) && !context) {
		GDRFAB_WARN(FI_LOG_AV, "fi_av_insert: FI_SYNC_ERR without an "
				       "error array\n");
		return -FI_EINVAL;
	}
	gdrfab_lock_acquire(&av->lock);
	for (size_t i = 0; i < count; i++) {
		size_t slot;
		int ret = insert_one(av, (const struct gdrfab_addr *)addr + i,
				     i, &slot);

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

/* The endpoint name behind node:service: a gdrfab:// name itself, or asked
 * of the endpoint listening there (gdrfab_ns.h). */
static int name_of(const char *node, const char *service,
		   struct gdrfab_addr *name)
{
	if (!strncmp(node, "gdrfab://", 9))
		return gdrfab_addr_from_str(node, name) ? -FI_EINVAL : 0;
	return gdrfab_ns_resolve(node, service, name);
}

static int av_insertsvc(struct fid_av *av, const char *node,
			const char *service, fi_addr_t *fi_addr, uint64_t flags,
			void *context)
{
	struct gdrfab_addr name;
	int ret;

	if (!node || !service) {
		GDRFAB_WARN(FI_LOG_AV, "fi_av_insertsvc: node and service "
				       "are both needed\n");
		return -FI_EINVAL;
	}
	ret = name_of(node, service, &name);
	if (ret) {
		if (fi_addr)
			*fi_addr = FI_ADDR_NOTAVAIL;
		return ret;
	}
	return av_insert(av, &name, 1, fi_addr, flags, context);
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
		GDRFAB_WARN(FI_LOG_AV, "fi_av_insertsym: node and service "
				       "are both needed\n");
		return -FI_EINVAL;
	}
	port = strtoul(service, &end, 10);
	if (*end || !port || port + svccnt - 1 > 65535) {
		GDRFAB_WARN(FI_LOG_AV,
			    "fi_av_insertsym: service \"%s\" and %zu after it "
			    "are no UDP ports\n",
			    service, svccnt);
		return -FI_EINVAL;
	}
	for (size_t n = 0; n < nodecnt; n++) {
		for (size_t v = 0; v < svccnt; v++) {
			size_t i = n * svccnt + v;
			fi_addr_t *out = fi_addr ? &fi_addr[i] : NULL;
			int ret = nth_node(node, n, host, sizeof(host));

			snprintf(svc, sizeof(svc), "%lu", port + v);
			if (!ret)
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
			GDRFAB_WARN(FI_LOG_AV,
				    "fi_av_remove: fi_addr %llu is "
				    "not in the AV\n",
				    (unsigned long long)fi_addr[i]);
			ret = -FI_EINVAL;
			continue;
		}
		if (!--av->table[fi_addr[i]].refcnt) {
			uint64_t mapped;
			const struct gdrfab_addr *a =
				&av->table[fi_addr[i]].addr;

			if (!gdrfab_addrmap_get(&av->by_name, a, &mapped) &&
			    mapped == fi_addr[i])
				gdrfab_addrmap_del(&av->by_name, a);
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
	int ret = 0;

	if (!addrlen || (!addr && *addrlen))
		return -FI_EINVAL;
	gdrfab_lock_acquire(&av->lock);
	if (!valid_fi_addr(av, fi_addr)) {
		ret = -FI_EINVAL;
	} else {
		/* A NULL buffer of length 0 only asks for the size. */
		if (*addrlen)
			memcpy(addr, &av->table[fi_addr].addr,
			       GDRFAB_MIN(*addrlen,
					  sizeof(struct gdrfab_addr)));
		*addrlen = sizeof(struct gdrfab_addr);
	}
	gdrfab_lock_release(&av->lock);
	return ret;
}

static const char *av_straddr(struct fid_av *av, const void *addr, char *buf,
			      size_t *len)
{
	char why[128];
	size_t need;

	(void)av;
	if (!len)
		return NULL;
	if (gdrfab_addr_validate(addr, sizeof(struct gdrfab_addr), why,
				 sizeof(why)))
		need = (size_t)snprintf(buf, buf ? *len : 0,
					"(invalid gdrfab address)") +
		       1;
	else
		need = gdrfab_addr_to_str(addr, buf, buf ? *len : 0) + 1;
	*len = need;
	return buf;
}

static int av_set(struct fid_av *av, struct fi_av_set_attr *attr,
		  struct fid_av_set **av_set, void *context)
{
	(void)av, (void)attr, (void)av_set, (void)context;
	return -FI_ENOSYS;
}

int gdrfab_av_get_addr(struct gdrfab_av *av, fi_addr_t fi_addr,
		       struct gdrfab_addr *out)
{
	int ret = -FI_EINVAL;

	gdrfab_lock_acquire(&av->lock);
	if (valid_fi_addr(av, fi_addr)) {
		*out = av->table[fi_addr].addr;
		ret = 0;
	}
	gdrfab_lock_release(&av->lock);
	if (ret)
		GDRFAB_WARN(FI_LOG_AV, "fi_addr %llu is not in the AV\n",
			    (unsigned long long)fi_addr);
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
	GDRFAB_WARN(FI_LOG_AV, "fi_av_bind: asynchronous AV inserts are not "
			       "supported\n");
	return -FI_ENOSYS;
}

static int av_close(struct fid *fid)
{
	struct gdrfab_av *av =
		gdrfab_container_of(fid, struct gdrfab_av, fid.fid);

	if (atomic_load(&av->ref)) {
		GDRFAB_WARN(FI_LOG_AV,
			    "fi_close(av): %d endpoints are still "
			    "bound to it\n",
			    atomic_load(&av->ref));
		return -FI_EBUSY;
	}
	gdrfab_lock_fini(&av->lock);
	gdrfab_addrmap_fini(&av->by_name);
	atomic_fetch_sub(&av->domain->ref, 1);
	free(av->table);
	av->table = NULL;
	gdrfab_fid_retire(&av->fid.fid, av);
	return 0;
}

static struct fi_ops av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = av_close,
	.bind = av_bind,
	.control = gdrfab_nosys_control,
	.ops_open = gdrfab_nosys_ops_open,
	.tostr = gdrfab_nosys_tostr,
	.ops_set = gdrfab_nosys_ops_set,
};

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
		GDRFAB_WARN(FI_LOG_AV, "fi_av_open: rx_ctx_bits needs scalable "
				       "endpoints, which gdrfab lacks\n");
		return -FI_ENOSYS;
	}
	if (attr->name || (attr->flags & FI_READ)) {
		GDRFAB_WARN(FI_LOG_AV, "fi_av_open: shared (named) AVs are not "
				       "supported\n");
		return -FI_ENOSYS;
	}
	if (attr->flags & FI_EVENT) {
		GDRFAB_WARN(FI_LOG_AV, "fi_av_open: FI_EVENT (asynchronous "
				       "inserts) is not supported\n");
		return -FI_ENOSYS;
	}
	if (attr->flags & ~(uint64_t)FI_SYMMETRIC) {
		GDRFAB_WARN(FI_LOG_AV, "fi_av_open: unsupported flags 0x%llx\n",
			    (unsigned long long)attr->flags);
		return -FI_EBADFLAGS;
	}
	return 0;
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
	gdrfab_lock_init(&av->lock, gdrfab_domain_locks(domain));
	atomic_init(&av->ref, 0);
	av->fid.fid.fclass = FI_CLASS_AV;
	av->fid.fid.context = context;
	av->fid.fid.ops = &av_fi_ops;
	av->fid.ops = &av_ops;
	atomic_fetch_add(&domain->ref, 1);
	*out = &av->fid;
	return 0;
}
