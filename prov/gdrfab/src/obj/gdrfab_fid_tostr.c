/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The objects' tostr (gdrfab_fid_tostr.h). It reads only what does not
 * change while the object lives (its class, its domain's NIC, how it was
 * opened) or what is atomic (a counter's value, whether an endpoint is
 * enabled is set once), and takes no lock: a log line may be formatted
 * from a path that holds the object's lock.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gdrfab_fid_tostr.h"
#include "gdrfab_objs.h"

const char *gdrfab_fclass_name(size_t fclass)
{
	switch (fclass) {
	case FI_CLASS_FABRIC: return "fabric";
	case FI_CLASS_DOMAIN: return "domain";
	case FI_CLASS_EP: return "endpoint";
	case FI_CLASS_CQ: return "completion queue";
	case FI_CLASS_CNTR: return "counter";
	case FI_CLASS_EQ: return "event queue";
	case FI_CLASS_AV: return "address vector";
	case FI_CLASS_MR: return "memory region";
	case FI_CLASS_POLL: return "poll set";
	case FI_CLASS_WAIT: return "wait set";
	case FI_CLASS_NIC: return "NIC";
	default: return "object";
	}
}

/* Where tostr writes: the end of the string it was handed, and the room
 * left of what it was given. */
struct out {
	char *end;
	size_t room;
};

static struct out out_start(char *buf, size_t len)
{
	return (struct out){.end = buf ? buf + strlen(buf) : NULL,
			    .room = buf ? len : 0};
}

/* Appends, truncated to the room left, and keeps a string. */
__attribute__((format(printf, 2, 3))) static void append(struct out *o,
							 const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->room < 2)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->end, o->room, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= o->room)
		n = (int)o->room - 1;
	o->end += n;
	o->room -= (size_t)n;
}

/* The NIC a domain's objects use: the domain's name in fi_info. */
static const char *domain_nic(const struct gdrfab_domain *domain)
{
	if (!domain || !domain->info || !domain->info->domain_attr ||
	    !domain->info->domain_attr->name)
		return NULL;
	return domain->info->domain_attr->name;
}

/* " on rxe0", or nothing when the NIC is not known. */
static void append_nic(struct out *o, const struct gdrfab_domain *domain)
{
	const char *nic = domain_nic(domain);

	if (nic)
		append(o, " on %s", nic);
}

static const char *iface_name(enum fi_hmem_iface iface)
{
	switch (iface) {
	case FI_HMEM_SYSTEM: return "host";
	case FI_HMEM_CUDA: return "cuda";
	default: return "other";
	}
}

static void ep_tostr(const struct fid *fid, struct out *o)
{
	const struct gdrfab_ep *ep =
		gdrfab_container_of(fid, const struct gdrfab_ep, fid.fid);

	append_nic(o, ep->domain);
	append(o, " (%s)", ep->enabled ? "enabled" : "not enabled");
}

static void mr_tostr(const struct fid *fid, struct out *o)
{
	const struct gdrfab_mr *mr =
		gdrfab_container_of(fid, const struct gdrfab_mr, fid.fid);

	append_nic(o, mr->domain);
	append(o, " (%s%s, %zu bytes)", iface_name(mr->desc.iface),
	       mr->desc.staged ? ", staged" : "", mr->desc.len);
}

static void cntr_tostr(const struct fid *fid, struct out *o)
{
	const struct gdrfab_cntr *cntr =
		gdrfab_container_of(fid, const struct gdrfab_cntr, fid.fid);

	append_nic(o, cntr->domain);
	append(o, " (value %llu, errors %llu)",
	       (unsigned long long)atomic_load(&cntr->value),
	       (unsigned long long)atomic_load(&cntr->errors));
}

int gdrfab_fid_tostr(const struct fid *fid, char *buf, size_t len)
{
	struct out out = out_start(buf, len), *o = &out;

	if (!fid)
		return 0;
	append(o, "gdrfab %s", gdrfab_fclass_name(fid->fclass));
	switch (fid->fclass) {
	case FI_CLASS_FABRIC: {
		const struct gdrfab_fabric *f = gdrfab_container_of(
			fid, const struct gdrfab_fabric, fid.fid);

		append(o, " %s", f->name ? f->name : "");
		break;
	}
	case FI_CLASS_DOMAIN: {
		const struct gdrfab_domain *d = gdrfab_container_of(
			fid, const struct gdrfab_domain, fid.fid);
		const char *nic = domain_nic(d);

		append(o, " %s port %u", nic ? nic : "?",
		       (unsigned)d->port_num);
		break;
	}
	case FI_CLASS_EP: ep_tostr(fid, o); break;
	case FI_CLASS_CQ:
		append_nic(o, gdrfab_container_of(fid, const struct gdrfab_cq,
						  fid.fid)
				      ->domain);
		break;
	case FI_CLASS_AV: {
		const struct gdrfab_av *av = gdrfab_container_of(
			fid, const struct gdrfab_av, fid.fid);

		append_nic(o, av->domain);
		append(o, " (%s)", av->type == FI_AV_TABLE ? "table" : "map");
		break;
	}
	case FI_CLASS_MR: mr_tostr(fid, o); break;
	case FI_CLASS_CNTR: cntr_tostr(fid, o); break;
	default: /* an EQ, a poll or wait set: the class says it */ break;
	}
	return 0;
}

int gdrfab_dead_fid_tostr(const struct fid *fid, char *buf, size_t len)
{
	struct out out = out_start(buf, len), *o = &out;

	if (fid)
		append(o, "gdrfab %s (closed)",
		       gdrfab_fclass_name(fid->fclass));
	return 0;
}
