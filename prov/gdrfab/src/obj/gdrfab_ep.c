/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fid_ep (FI_EP_RDM): bindings, enable, names and options. Enabling creates
 * the endpoint's UD queue pair, whose number is part of the endpoint name:
 * peers address connection requests to it, so no socket or out-of-band
 * channel is needed beyond the names the application exchanges. The data
 * operations live in the protocol layer (proto/).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "gdrfab.h"
#include "gdrfab_info.h"
#include "gdrfab_msg.h"
#include "gdrfab_ns.h"
#include "gdrfab_obj_common.h"
#include "gdrfab_objs.h"
#include "gdrfab_proto.h"
#include "gdrfab_quarantine.h"
#include "gdrfab_req.h"
#include "gdrfab_ud.h"

#define EP_CQ_FLAGS (FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)
#define EP_CNTR_FLAGS                                                          \
	(FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |             \
	 FI_REMOTE_WRITE)

static struct gdrfab_ep *ep_of(struct fid *fid)
{
	return gdrfab_container_of(fid, struct gdrfab_ep, fid.fid);
}

static int bind_cq(struct gdrfab_ep *ep, struct gdrfab_cq *cq, uint64_t flags)
{
	int ret;

	if (flags & ~(uint64_t)EP_CQ_FLAGS ||
	    !(flags & (FI_TRANSMIT | FI_RECV))) {
		GDRFAB_WARN(
			FI_LOG_EP_CTRL,
			"fi_ep_bind(cq): flags 0x%llx must name FI_TRANSMIT and/or FI_RECV (and may add FI_SELECTIVE_COMPLETION)\n",
			(unsigned long long)flags);
		return -FI_EBADFLAGS;
	}
	if (((flags & FI_TRANSMIT) && ep->tx_cq) ||
	    ((flags & FI_RECV) && ep->rx_cq)) {
		GDRFAB_WARN(
			FI_LOG_EP_CTRL,
			"fi_ep_bind(cq): a CQ is already bound for that direction\n");
		return -FI_EINVAL;
	}
	ret = gdrfab_cq_attach_ep(cq, ep);
	if (ret)
		return ret;
	if (flags & FI_TRANSMIT) {
		ep->tx_cq = cq;
		ep->tx_cq_flags = flags & FI_SELECTIVE_COMPLETION;
	}
	if (flags & FI_RECV) {
		ep->rx_cq = cq;
		ep->rx_cq_flags = flags & FI_SELECTIVE_COMPLETION;
	}
	return 0;
}

static int bind_cntr(struct gdrfab_ep *ep, struct gdrfab_cntr *cntr,
		     uint64_t flags)
{
	static const struct {
		uint64_t flag;
		enum gdrfab_cntr_slot slot;
	} map[] = {
		{FI_SEND, GDRFAB_CNTR_SEND},
		{FI_RECV, GDRFAB_CNTR_RECV},
		{FI_READ, GDRFAB_CNTR_READ},
		{FI_WRITE, GDRFAB_CNTR_WRITE},
		{FI_REMOTE_READ, GDRFAB_CNTR_REMOTE_READ},
		{FI_REMOTE_WRITE, GDRFAB_CNTR_REMOTE_WRITE},
	};
	int ret;

	if ((flags & (FI_REMOTE_READ | FI_REMOTE_WRITE)) &&
	    !(ep->info->caps & FI_RMA_EVENT)) {
		GDRFAB_WARN(
			FI_LOG_EP_CTRL,
			"fi_ep_bind(cntr): remote access counters need the endpoint's caps to have FI_RMA_EVENT\n");
		return -FI_EINVAL;
	}
	if (!flags || (flags & ~(uint64_t)EP_CNTR_FLAGS)) {
		GDRFAB_WARN(
			FI_LOG_EP_CTRL,
			"fi_ep_bind(cntr): flags 0x%llx must be FI_SEND, FI_RECV, FI_READ, FI_WRITE, FI_REMOTE_READ and/or FI_REMOTE_WRITE\n",
			(unsigned long long)flags);
		return -FI_EBADFLAGS;
	}
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if ((flags & map[i].flag) && ep->cntrs[map[i].slot]) {
			GDRFAB_WARN(
				FI_LOG_EP_CTRL,
				"fi_ep_bind(cntr): a counter is already bound for that event\n");
			return -FI_EINVAL;
		}
	}
	ret = gdrfab_cntr_attach_ep(cntr, ep);
	if (ret)
		return ret;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (flags & map[i].flag)
			ep->cntrs[map[i].slot] = cntr;
	}
	if (flags & (FI_REMOTE_READ | FI_REMOTE_WRITE))
		ep->rma_events = true;
	return 0;
}

static int ep_bind_locked(struct gdrfab_ep *ep, struct fid *bfid,
			  uint64_t flags)
{
	switch (bfid->fclass) {
	case FI_CLASS_CQ: {
		struct gdrfab_cq *cq =
			gdrfab_container_of(bfid, struct gdrfab_cq, fid.fid);

		if (cq->domain != ep->domain)
			break;
		return bind_cq(ep, cq, flags);
	}
	case FI_CLASS_CNTR: {
		struct gdrfab_cntr *cntr =
			gdrfab_container_of(bfid, struct gdrfab_cntr, fid.fid);

		if (cntr->domain != ep->domain)
			break;
		return bind_cntr(ep, cntr, flags);
	}
	case FI_CLASS_AV: {
		struct gdrfab_av *av =
			gdrfab_container_of(bfid, struct gdrfab_av, fid.fid);

		if (av->domain != ep->domain)
			break;
		if (ep->av) {
			GDRFAB_WARN(FI_LOG_EP_CTRL,
				    "fi_ep_bind: an AV is already bound\n");
			return -FI_EINVAL;
		}
		ep->av = av;
		atomic_fetch_add(&av->ref, 1);
		return 0;
	}
	case FI_CLASS_EQ: {
		struct gdrfab_eq *eq =
			gdrfab_container_of(bfid, struct gdrfab_eq, fid.fid);

		if (eq->fabric != ep->domain->fabric)
			break;
		if (ep->eq) {
			GDRFAB_WARN(FI_LOG_EP_CTRL,
				    "fi_ep_bind: an EQ is already bound\n");
			return -FI_EINVAL;
		}
		ep->eq = eq;
		atomic_fetch_add(&eq->ref, 1);
		return 0;
	}
	default:
		GDRFAB_WARN(
			FI_LOG_EP_CTRL,
			"fi_ep_bind: cannot bind an object of class %zu to an endpoint\n",
			bfid->fclass);
		return -FI_EINVAL;
	}
	GDRFAB_WARN(
		FI_LOG_EP_CTRL,
		"fi_ep_bind: the object belongs to another domain or fabric\n");
	return -FI_EINVAL;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct gdrfab_ep *ep = ep_of(fid);
	int ret;

	if (!bfid || !bfid->ops)
		return -FI_EINVAL;
	if (gdrfab_fid_dead(bfid))
		return gdrfab_dead_call(bfid, "fi_ep_bind");
	gdrfab_lock_acquire(&ep->lock);
	if (ep->enabled) {
		GDRFAB_WARN(FI_LOG_EP_CTRL, "fi_ep_bind after fi_enable\n");
		ret = -FI_EOPBADSTATE;
	} else {
		ret = ep_bind_locked(ep, bfid, flags);
	}
	gdrfab_lock_release(&ep->lock);
	return ret;
}

static uint32_t random_ep_id(void)
{
	uint32_t id;

	if (getrandom(&id, sizeof(id), GRND_NONBLOCK) != sizeof(id))
		id = (uint32_t)time(NULL) ^ ((uint32_t)getpid() << 16) ^
		     (uint32_t)(uintptr_t)&id;
	return id;
}

/* The endpoint's address format: its domain's. */
static enum gdrfab_fmt ep_fmt(const struct gdrfab_ep *ep)
{
	return gdrfab_fmt_of(ep->domain->info->addr_format);
}

/* The UDP port named in the source address: peers' fi_getinfo(node,
 * service) and fi_av_insertsvc ask there for this endpoint's name. Not
 * fatal when taken: applications open several endpoints from one fi_info
 * (and so one service), and the first answers; the others are reached by
 * their names. With socket addresses the endpoint's name is IP:port, so
 * it always listens (on a port of the kernel's choosing when none was
 * named), and a port it cannot have fails fi_enable. */
static int listen_for_names(struct gdrfab_ep *ep)
{
	bool sin = ep_fmt(ep) == GDRFAB_FMT_SIN;
	int err;

	if (!ep->ns_service && !sin)
		return 0;
	ep->ns = gdrfab_ns_start(&ep->domain->port_addr, ep->ns_service,
				 &ep->name);
	if (!ep->ns) {
		err = errno;
		GDRFAB_WARN(
			FI_LOG_EP_CTRL,
			"fi_enable: cannot answer name queries on UDP port %u (%s): %s\n",
			ep->ns_service, strerror(err),
			sin ? "no socket address for this endpoint"
			    : "this endpoint is found by its name only");
		return sin ? gdrfab_errno_to_fi(err) : 0;
	}
	ep->ns_service = gdrfab_ns_port(ep->ns);
	return 0;
}

static int ep_enable_locked(struct gdrfab_ep *ep)
{
	bool has_tx = ep->tx_cq || ep->cntrs[GDRFAB_CNTR_SEND];
	bool has_rx = ep->rx_cq || ep->cntrs[GDRFAB_CNTR_RECV];
	const struct gdrfab_domain *d = ep->domain;
	const struct gdrfab_ud_port ud_port = {
		.dev = d->info->domain_attr->name,
		.ctx = d->ctx,
		.pd = d->pd,
		.port_num = d->port_num,
		.max_qp_wr = d->dev_attr.max_qp_wr,
		.max_cqe = d->dev_attr.max_cqe,
	};
	int ret;

	if (ep->enabled)
		return 0;
	if (!ep->av) {
		GDRFAB_WARN(FI_LOG_EP_CTRL, "fi_enable: no AV is bound\n");
		return -FI_ENOAV;
	}
	if (!has_tx && !has_rx) {
		GDRFAB_WARN(FI_LOG_EP_CTRL,
			    "fi_enable: no CQ or counter is bound\n");
		return -FI_ENOCQ;
	}
	ret = gdrfab_ud_create(&ud_port, &ep->ud_cq, &ep->ud_qp);
	if (ret)
		return ret;
	if (!ep->name_set) {
		ep->name = ep->domain->port_addr;
		ep->name.ep_id_be = htonl(random_ep_id());
	}
	ep->name.qpn_be = htonl(ep->ud_qp->qp_num);
	ret = listen_for_names(ep);
	if (!ret) {
		struct gdrfab_proto_env env;

		gdrfab_ep_proto_env(ep, &env);
		ret = gdrfab_proto_create(&env, &gdrfab_ep_proto_ops,
					  &ep->proto);
		/* The protocol owns the UD QP now (destroyed it if it
		 * failed). */
		ep->ud_cq = NULL;
		ep->ud_qp = NULL;
	}
	if (ret) {
		gdrfab_ud_destroy(ep->ud_cq, ep->ud_qp);
		ep->ud_cq = NULL;
		ep->ud_qp = NULL;
		gdrfab_ns_stop(ep->ns);
		ep->ns = NULL;
		return ret;
	}
	ep->enabled = true;
	return 0;
}

static int ep_control(struct fid *fid, int command, void *arg)
{
	struct gdrfab_ep *ep = ep_of(fid);
	uint64_t *flags = arg;
	int ret = 0;

	gdrfab_lock_acquire(&ep->lock);
	switch (command) {
	case FI_ENABLE: ret = ep_enable_locked(ep); break;
	case FI_GETOPSFLAG:
	case FI_SETOPSFLAG: {
		uint64_t *target;

		if (!flags || !(*flags & (FI_TRANSMIT | FI_RECV)) ||
		    ((*flags & FI_TRANSMIT) && (*flags & FI_RECV))) {
			ret = -FI_EINVAL;
			break;
		}
		target = (*flags & FI_TRANSMIT) ? &ep->tx_op_flags
						: &ep->rx_op_flags;
		if (command == FI_GETOPSFLAG)
			*flags = (*flags & (FI_TRANSMIT | FI_RECV)) | *target;
		else
			*target = *flags & ~(uint64_t)(FI_TRANSMIT | FI_RECV);
		break;
	}
	default: ret = -FI_ENOSYS;
	}
	gdrfab_lock_release(&ep->lock);
	return ret;
}

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct gdrfab_ep *ep = ep_of(fid);
	struct gdrfab_addr svc;
	uint32_t ip;
	int ret = 0;

	if (!addrlen || (!addr && *addrlen))
		return -FI_EINVAL;
	gdrfab_lock_acquire(&ep->lock);
	if (!ep->enabled) {
		GDRFAB_WARN(
			FI_LOG_EP_CTRL,
			"fi_getname before fi_enable: the name includes the endpoint's queue pair, made by fi_enable\n");
		ret = -FI_EOPBADSTATE;
	} else if (ep_fmt(ep) == GDRFAB_FMT_SIN) {
		/* Its name is where it answers name queries. */
		gdrfab_addr_ipv4(&ep->domain->port_addr, &ip);
		gdrfab_addr_make_service(&svc, ip, ep->ns_service);
		ret = gdrfab_addr_export(GDRFAB_FMT_SIN, &svc, addr, addrlen);
	} else {
		ret = gdrfab_addr_export(ep_fmt(ep), &ep->name, addr, addrlen);
	}
	gdrfab_lock_release(&ep->lock);
	return ret;
}

static int ep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct gdrfab_ep *ep = ep_of(fid);
	const struct gdrfab_addr *port = &ep->domain->port_addr;
	struct gdrfab_addr a;
	uint32_t want, have;
	char why[160];
	size_t used;
	int ret;

	ret = gdrfab_addr_import(ep_fmt(ep), addr, addrlen, true, &a, &used,
				 why, sizeof(why));
	if (ret) {
		GDRFAB_WARN(FI_LOG_EP_CTRL, "fi_setname: %s\n", why);
		return ret;
	}
	if (!a.port_num ? !gdrfab_addr_ipv4(&a, &want) ||
				  !gdrfab_addr_ipv4(port, &have) || want != have
			: memcmp(a.gid, port->gid, sizeof(a.gid)) ||
				  a.port_num != port->port_num || a.qpn_be) {
		GDRFAB_WARN(
			FI_LOG_EP_CTRL,
			"fi_setname: the name must be this domain's port with qpn 0 (the queue pair is assigned by fi_enable)\n");
		return -FI_EINVAL;
	}
	gdrfab_lock_acquire(&ep->lock);
	if (ep->enabled) {
		ret = -FI_EOPBADSTATE;
	} else {
		if (a.port_num) {
			ep->name = a;
			ep->name.reserved = 0; /* no part of the name */
			ep->name_set = true;
		}
		ep->ns_service = gdrfab_addr_service(&a);
	}
	gdrfab_lock_release(&ep->lock);
	return ret;
}

static int ep_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	(void)ep, (void)addr, (void)addrlen;
	return -FI_ENOSYS; /* connectionless (RDM) endpoint */
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval,
		     size_t *optlen)
{
	struct gdrfab_ep *ep = ep_of(fid);

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen)
		return -FI_EINVAL;
	switch (optname) {
	case FI_OPT_MIN_MULTI_RECV:
		if (*optlen < sizeof(size_t))
			return -FI_ETOOSMALL;
		*(size_t *)optval = ep->min_multi_recv;
		*optlen = sizeof(size_t);
		return 0;
	default: return gdrfab_ep_hmem_getopt(ep, optname, optval, optlen);
	}
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval,
		     size_t optlen)
{
	struct gdrfab_ep *ep = ep_of(fid);

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	switch (optname) {
	case FI_OPT_MIN_MULTI_RECV:
		if (!optval || optlen != sizeof(size_t))
			return -FI_EINVAL;
		ep->min_multi_recv = *(const size_t *)optval;
		if (ep->proto) /* its view, kept current */
			ep->proto->env.min_multi_recv = ep->min_multi_recv;
		return 0;
	case FI_OPT_FI_HMEM_P2P:
	case 10: /* FI_OPT_CUDA_API_PERMITTED (libfabric >= 1.18) */
		return gdrfab_ep_hmem_setopt(ep, optname, optval, optlen);
	default:
		GDRFAB_INFO(FI_LOG_EP_CTRL,
			    "fi_setopt: option %d is not supported\n", optname);
		return -FI_ENOPROTOOPT;
	}
}

/* Cancels a posted receive, or a send with FI_DELIVERY_COMPLETE that
 * waits only for the receiver's word; other sends and RMA run to
 * completion. */
static ssize_t ep_cancel(fid_t fid, void *context)
{
	struct gdrfab_ep *ep = ep_of(fid);
	ssize_t ret = -FI_ENOENT;

	gdrfab_lock_acquire(&ep->lock);
	if (ep->proto) {
		ret = gdrfab_recv_cancel(ep->proto, context);
		if (ret == -FI_ENOENT)
			ret = gdrfab_send_cancel(ep->proto, context);
		gdrfab_req_drain(ep->proto);
	}
	gdrfab_lock_release(&ep->lock);
	return ret;
}

static ssize_t ep_size_left(struct fid_ep *ep)
{
	(void)ep;
	return -FI_ENOSYS; /* deprecated in libfabric 1.x */
}

static int ep_close(struct fid *fid)
{
	struct gdrfab_ep *ep = ep_of(fid);

	gdrfab_ep_stats_detach(ep); /* while its counters are there */
	if (ep->proto)
		gdrfab_proto_destroy(ep->proto); /* and its UD QP */
	ep->proto = NULL;
	gdrfab_ud_destroy(ep->ud_cq, ep->ud_qp);
	gdrfab_ns_stop(ep->ns);
	ep->ns = NULL;
	if (ep->tx_cq)
		gdrfab_cq_detach_ep(ep->tx_cq, ep);
	if (ep->rx_cq && ep->rx_cq != ep->tx_cq)
		gdrfab_cq_detach_ep(ep->rx_cq, ep);
	for (int i = 0; i < GDRFAB_CNTR_SLOTS; i++) {
		if (ep->cntrs[i])
			gdrfab_cntr_detach_ep(ep->cntrs[i], ep);
	}
	if (ep->av)
		atomic_fetch_sub(&ep->av->ref, 1);
	if (ep->eq)
		atomic_fetch_sub(&ep->eq->ref, 1);
	atomic_fetch_sub(&ep->domain->ref, 1);
	gdrfab_lock_fini(&ep->lock);
	fi_freeinfo(ep->info);
	ep->info = NULL;
	gdrfab_fid_retire(&ep->fid.fid, ep);
	return 0;
}

static int ep_ops_open(struct fid *fid, const char *name, uint64_t flags,
		       void **ops, void *context)
{
	if (name && !strcmp(name, FI_GDRFAB_STATS_OPS))
		return gdrfab_stats_ops_open(fid, name, flags, ops);
	return gdrfab_nosys_ops_open(fid, name, flags, ops, context);
}

static struct fi_ops ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close,
	.bind = ep_bind,
	.control = ep_control,
	.ops_open = ep_ops_open,
	.tostr = gdrfab_fid_tostr,
	.ops_set = gdrfab_nosys_ops_set,
};

static struct fi_ops_ep ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = ep_cancel,
	.getopt = ep_getopt,
	.setopt = ep_setopt,
	.tx_ctx = gdrfab_nosys_tx_ctx,
	.rx_ctx = gdrfab_nosys_rx_ctx,
	.rx_size_left = ep_size_left,
	.tx_size_left = ep_size_left,
};

static struct fi_ops_cm ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = ep_setname,
	.getname = ep_getname,
	.getpeer = ep_getpeer,
	.connect = gdrfab_nosys_connect,
	.listen = gdrfab_nosys_listen,
	.accept = gdrfab_nosys_accept,
	.reject = gdrfab_nosys_reject,
	.shutdown = gdrfab_nosys_shutdown,
	.join = gdrfab_nosys_join,
};

static int check_info(const struct gdrfab_domain *domain,
		      const struct fi_info *info)
{
	if (!info || !info->ep_attr) {
		GDRFAB_WARN(FI_LOG_EP_CTRL, "fi_endpoint: info is NULL\n");
		return -FI_EINVAL;
	}
	if (info->ep_attr->type != FI_EP_RDM &&
	    info->ep_attr->type != FI_EP_UNSPEC) {
		GDRFAB_WARN(
			FI_LOG_EP_CTRL,
			"fi_endpoint: type %s (gdrfab offers FI_EP_RDM only)\n",
			fi_tostr(&info->ep_attr->type, FI_TYPE_EP_TYPE));
		return -FI_EINVAL;
	}
	if (info->caps & ~(uint64_t)(GDRFAB_CAPS | FI_HMEM)) {
		GDRFAB_WARN(FI_LOG_EP_CTRL,
			    "fi_endpoint: caps %s not supported\n",
			    fi_tostr(&(uint64_t){info->caps &
						 ~(GDRFAB_CAPS | FI_HMEM)},
				     FI_TYPE_CAPS));
		return -FI_EINVAL;
	}
	if ((info->caps & FI_HMEM) &&
	    domain->hmem.path == GDRFAB_CUDA_REG_NONE) {
		GDRFAB_WARN(
			FI_LOG_EP_CTRL,
			"fi_endpoint: FI_HMEM asked, but this domain has no CUDA\n");
		return -FI_EINVAL;
	}
	if (info->domain_attr && info->domain_attr->name &&
	    strcmp(info->domain_attr->name, domain->info->domain_attr->name)) {
		GDRFAB_WARN(FI_LOG_EP_CTRL,
			    "fi_endpoint: info is for domain %s, not %s\n",
			    info->domain_attr->name,
			    domain->info->domain_attr->name);
		return -FI_EINVAL;
	}
	return 0;
}

int gdrfab_endpoint_open(struct fid_domain *domain_fid, struct fi_info *info,
			 struct fid_ep **out, void *context)
{
	struct gdrfab_domain *domain;
	struct gdrfab_ep *ep;
	int ret;

	if (!gdrfab_fid_is(&domain_fid->fid, FI_CLASS_DOMAIN) || !out)
		return -FI_EINVAL;
	domain = gdrfab_container_of(domain_fid, struct gdrfab_domain, fid);
	ret = check_info(domain, info);
	if (ret)
		return ret;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->info = fi_dupinfo(info);
	if (!ep->info) {
		free(ep);
		return -FI_ENOMEM;
	}
	ep->domain = domain;
	ep->cuda_api_permitted = true;
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	gdrfab_lock_init(&ep->lock, gdrfab_domain_locks(domain));
	if (info->src_addr) {
		struct gdrfab_addr src;
		char why[160];
		size_t used;

		if (!gdrfab_addr_import(gdrfab_fmt_of(info->addr_format),
					info->src_addr, info->src_addrlen, true,
					&src, &used, why, sizeof(why)))
			ep->ns_service = gdrfab_addr_service(&src);
	}
	gdrfab_obj_init(&ep->fid.fid, FI_CLASS_EP, context, &ep_fi_ops);
	ep->fid.ops = &ep_ops;
	ep->fid.cm = &ep_cm_ops;
	ep->fid.msg = &gdrfab_msg_ops;
	ep->fid.tagged = &gdrfab_tagged_ops;
	ep->fid.rma = &gdrfab_rma_ops;
	ep->fid.atomic = &gdrfab_atomic_ops;
	ep->fid.collective = &gdrfab_nosys_collective_ops;
	atomic_fetch_add(&domain->ref, 1);
	gdrfab_ep_stats_attach(ep);
	*out = &ep->fid;
	return 0;
}
