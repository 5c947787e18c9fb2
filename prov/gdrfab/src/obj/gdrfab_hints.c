/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Hint matching as fi_getinfo(3) and fi_domain(3) define it: an info
 * matches when the provider can meet every hint the application set; then
 * the info is narrowed to what was asked. Each refusal says which hint.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "gdrfab.h"
#include "gdrfab_addr.h"
#include "gdrfab_info.h"

#define UNMET(...)                                                             \
	do {                                                                   \
		snprintf(why, why_len, __VA_ARGS__);                           \
		return -FI_ENODATA;                                            \
	} while (0)

/* An application that may be an RMA target registers memory for peers:
 * the keys and addresses it hands them must follow gdrfab's modes. */
static bool rma_target(uint64_t caps)
{
	const uint64_t dirs =
		FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;

	return (caps & (FI_RMA | FI_ATOMIC)) &&
	       ((caps & (FI_REMOTE_READ | FI_REMOTE_WRITE)) || !(caps & dirs));
}

/* As libfabric's own providers reduce their modes by the caps asked for
 * (prov/util/src/util_attr.c, ofi_cap_mr_mode): FI_MR_HMEM only with
 * FI_HMEM; the RMA-target bits only for an RMA target; and an application
 * that registers nothing (no GPU memory, no RMA target, no FI_MR_LOCAL)
 * needs no mode at all: Open MPI 4.1's mtl asks mr_mode 0. */
int gdrfab_mr_mode_needed(uint64_t caps, bool hmem)
{
	int mode = GDRFAB_MR_BASIC_MAP;

	if (hmem && (!caps || (caps & FI_HMEM)))
		mode |= FI_MR_HMEM;
	if (caps && !rma_target(caps)) {
		mode &= ~GDRFAB_MR_RMA_TARGET;
		if (!(mode & FI_MR_HMEM))
			return 0;
	}
	return mode;
}

bool gdrfab_mr_local_accepted(const struct fi_info *hints, uint32_t version)
{
	int user_mode;

	if (!hints)
		return false;
	user_mode = hints->domain_attr ? hints->domain_attr->mr_mode : 0;
	if (user_mode & FI_MR_LOCAL)
		return true;
	/* fi_getinfo(3): FI_LOCAL_MR "is ignored if the application version
	 * is 1.5 or later and the domain mr_mode is set to anything other
	 * than FI_MR_BASIC or FI_MR_SCALABLE". */
	return (hints->mode & FI_LOCAL_MR) &&
	       (FI_VERSION_LT(version, FI_VERSION(1, 5)) ||
		(user_mode & (FI_MR_BASIC | FI_MR_SCALABLE)));
}

uint64_t gdrfab_caps_granted(const struct fi_info *prov,
			     const struct fi_info *hints, uint32_t version)
{
	const uint64_t remote = FI_REMOTE_READ | FI_REMOTE_WRITE;
	uint64_t caps = hints && hints->caps ? hints->caps : prov->caps;
	int user_mode;

	if (!hints || !hints->domain_attr ||
	    FI_VERSION_LT(version, FI_VERSION(1, 5)) || !rma_target(caps) ||
	    (hints->caps & remote))
		return caps;
	user_mode = hints->domain_attr->mr_mode;
	if ((user_mode & (FI_MR_BASIC | FI_MR_SCALABLE)) ||
	    (user_mode & GDRFAB_MR_BASIC_MAP) == GDRFAB_MR_BASIC_MAP)
		return caps;
	/* An initiator: FI_RMA with no direction meant both ways. */
	if (!(caps & (FI_READ | FI_WRITE)))
		caps |= (FI_READ | FI_WRITE) & prov->caps;
	return caps & ~remote;
}

int gdrfab_mr_mode_ok(uint32_t version, int needed, int user_mode)
{
	if (FI_VERSION_LT(version, FI_VERSION(1, 5))) {
		/* Only FI_MR_UNSPEC or FI_MR_BASIC existed; both mean the
		 * basic map, which gdrfab's needs fit in. */
		return user_mode == FI_MR_UNSPEC || user_mode == FI_MR_BASIC;
	}
	if (user_mode & FI_MR_BASIC)
		return !(user_mode & ~FI_MR_BASIC) &&
		       !(needed & ~GDRFAB_MR_BASIC_MAP);
	if (user_mode & FI_MR_SCALABLE)
		return !(user_mode & ~FI_MR_SCALABLE) && !needed;
	/* From API 1.5 on, 0 says the application takes no mode at all
	 * (fi_domain(3): scalable registration "is the default if no
	 * mr_mode bits are set"): it suits only caps that need none, which
	 * gdrfab_caps_granted arranges where it can. */
	return (user_mode & needed) == needed;
}

static int match_tx(const struct fi_tx_attr *p, const struct fi_tx_attr *h,
		    char *why, size_t why_len)
{
	if (h->caps & ~p->caps)
		UNMET("tx_attr caps 0x%llx not supported",
		      (unsigned long long)(h->caps & ~p->caps));
	if (h->msg_order & ~p->msg_order)
		UNMET("tx_attr msg_order 0x%llx not supported",
		      (unsigned long long)(h->msg_order & ~p->msg_order));
	if (h->comp_order & ~p->comp_order)
		UNMET("tx_attr comp_order 0x%llx not supported",
		      (unsigned long long)(h->comp_order & ~p->comp_order));
	if (h->inject_size > p->inject_size)
		UNMET("tx_attr inject_size %zu > %zu", h->inject_size,
		      p->inject_size);
	if (h->size > p->size)
		UNMET("tx_attr size %zu > %zu", h->size, p->size);
	if (h->iov_limit > p->iov_limit)
		UNMET("tx_attr iov_limit %zu > %zu", h->iov_limit,
		      p->iov_limit);
	if (h->rma_iov_limit > p->rma_iov_limit)
		UNMET("tx_attr rma_iov_limit %zu > %zu", h->rma_iov_limit,
		      p->rma_iov_limit);
	return 0;
}

static int match_rx(const struct fi_rx_attr *p, const struct fi_rx_attr *h,
		    char *why, size_t why_len)
{
	if (h->caps & ~p->caps)
		UNMET("rx_attr caps 0x%llx not supported",
		      (unsigned long long)(h->caps & ~p->caps));
	if (h->msg_order & ~p->msg_order)
		UNMET("rx_attr msg_order 0x%llx not supported",
		      (unsigned long long)(h->msg_order & ~p->msg_order));
	if (h->comp_order & ~p->comp_order)
		UNMET("rx_attr comp_order 0x%llx not supported",
		      (unsigned long long)(h->comp_order & ~p->comp_order));
	if (h->size > p->size)
		UNMET("rx_attr size %zu > %zu", h->size, p->size);
	if (h->iov_limit > p->iov_limit)
		UNMET("rx_attr iov_limit %zu > %zu", h->iov_limit,
		      p->iov_limit);
	return 0;
}

static int match_ep(const struct fi_ep_attr *p, const struct fi_ep_attr *h,
		    char *why, size_t why_len)
{
	if (h->type != FI_EP_UNSPEC && h->type != p->type)
		UNMET("endpoint type %s (gdrfab offers FI_EP_RDM only)",
		      fi_tostr(&h->type, FI_TYPE_EP_TYPE));
	if (h->protocol != FI_PROTO_UNSPEC && h->protocol != p->protocol)
		UNMET("protocol %u not supported", h->protocol);
	if (h->max_msg_size > p->max_msg_size)
		UNMET("max_msg_size %zu > %zu", h->max_msg_size,
		      p->max_msg_size);
	if (h->tx_ctx_cnt > 1 && h->tx_ctx_cnt != FI_SHARED_CONTEXT)
		UNMET("tx_ctx_cnt %zu (no scalable endpoints)", h->tx_ctx_cnt);
	if (h->rx_ctx_cnt > 1 && h->rx_ctx_cnt != FI_SHARED_CONTEXT)
		UNMET("rx_ctx_cnt %zu (no scalable endpoints)", h->rx_ctx_cnt);
	if (h->tx_ctx_cnt == FI_SHARED_CONTEXT ||
	    h->rx_ctx_cnt == FI_SHARED_CONTEXT)
		UNMET("shared contexts not supported");
	if (h->auth_key_size)
		UNMET("authorization keys not supported");
	return 0;
}

static int match_progress(enum fi_progress p, enum fi_progress h)
{
	return h == FI_PROGRESS_UNSPEC || h == p;
}

static int match_domain(uint32_t version, const struct fi_info *prov,
			const struct fi_info *hints, char *why, size_t why_len)
{
	const struct fi_domain_attr *p = prov->domain_attr;
	const struct fi_domain_attr *h = hints->domain_attr;
	int needed;

	if (h->name && strcmp(h->name, p->name))
		UNMET("domain %s is not %s", h->name, p->name);
	if (!match_progress(p->control_progress, h->control_progress))
		UNMET("control progress %s (gdrfab progresses manually)",
		      fi_tostr(&h->control_progress, FI_TYPE_PROGRESS));
	if (!match_progress(p->data_progress, h->data_progress))
		UNMET("data progress %s (gdrfab progresses manually)",
		      fi_tostr(&h->data_progress, FI_TYPE_PROGRESS));
	if (h->av_type > FI_AV_TABLE)
		UNMET("av_type %d not supported", h->av_type);
	if (h->cq_data_size > p->cq_data_size)
		UNMET("cq_data_size %zu > %zu", h->cq_data_size,
		      p->cq_data_size);
	if (h->mr_key_size > p->mr_key_size)
		UNMET("mr_key_size %zu > %zu", h->mr_key_size, p->mr_key_size);
	if (h->ep_cnt > p->ep_cnt)
		UNMET("ep_cnt %zu > %zu", h->ep_cnt, p->ep_cnt);
	if (h->max_ep_tx_ctx > p->max_ep_tx_ctx ||
	    h->max_ep_rx_ctx > p->max_ep_rx_ctx)
		UNMET("more than one tx/rx context per endpoint");
	if (h->max_ep_stx_ctx || h->max_ep_srx_ctx)
		UNMET("shared contexts not supported");
	if (h->mr_iov_limit > p->mr_iov_limit)
		UNMET("mr_iov_limit %zu > %zu", h->mr_iov_limit,
		      p->mr_iov_limit);
	if (h->caps & ~p->caps)
		UNMET("domain caps 0x%llx not supported",
		      (unsigned long long)(h->caps & ~p->caps));
	if (h->auth_key_size)
		UNMET("authorization keys not supported");
	needed =
		gdrfab_mr_mode_needed(gdrfab_caps_granted(prov, hints, version),
				      p->mr_mode & FI_MR_HMEM);
	if (!gdrfab_mr_mode_ok(version, needed, h->mr_mode))
		UNMET("mr_mode 0x%x does not include what gdrfab needs for these caps (%s)",
		      h->mr_mode, fi_tostr(&needed, FI_TYPE_MR_MODE));
	return 0;
}

static int match_src_addr(const struct fi_info *prov,
			  const struct fi_info *hints, char *why,
			  size_t why_len)
{
	const struct gdrfab_addr *p = prov->src_addr;
	struct gdrfab_addr h;
	uint32_t want, have;
	char reason[160];
	size_t used;

	if (gdrfab_addr_import(gdrfab_fmt_of(hints->addr_format),
			       hints->src_addr, hints->src_addrlen, true, &h,
			       &used, reason, sizeof(reason)))
		UNMET("src_addr: %s", reason);
	/* A socket address (or a service address) names a port by its IPv4
	 * address. */
	if (!h.port_num) {
		if (!gdrfab_addr_ipv4(&h, &want) ||
		    !gdrfab_addr_ipv4(p, &have) || want != have)
			UNMET("src_addr is another port's");
		return 0;
	}
	if (memcmp(h.gid, p->gid, sizeof(p->gid)) || h.port_num != p->port_num)
		UNMET("src_addr is another port's");
	return 0;
}

int gdrfab_info_match(const struct fi_info *prov, const struct fi_info *hints,
		      uint32_t version, char *why, size_t why_len)
{
	int ret;

	if (FI_VERSION_LT(gdrfab_api_version, version))
		UNMET("API version %u.%u is newer than gdrfab's %u.%u",
		      FI_MAJOR(version), FI_MINOR(version),
		      FI_MAJOR(gdrfab_api_version),
		      FI_MINOR(gdrfab_api_version));
	if (!hints)
		return 0;
	if (hints->caps & ~prov->caps)
		UNMET("caps %s not supported",
		      fi_tostr(&(uint64_t){hints->caps & ~prov->caps},
			       FI_TYPE_CAPS));
	switch (gdrfab_fmt_of(hints->addr_format)) {
	case GDRFAB_FMT_NONE:
		UNMET("address format %s not supported",
		      fi_tostr(&hints->addr_format, FI_TYPE_ADDR_FORMAT));
	case GDRFAB_FMT_SIN:
		/* The name service listens on the port's IPv4 address. */
		if (!gdrfab_addr_ipv4(prov->src_addr, NULL))
			UNMET("socket addresses need a RoCE port with an IPv4 address");
		break;
	default: break;
	}
	if (hints->fabric_attr) {
		const struct fi_fabric_attr *h = hints->fabric_attr;

		if (h->name && strcmp(h->name, prov->fabric_attr->name))
			UNMET("fabric %s is not %s", h->name,
			      prov->fabric_attr->name);
		if (h->prov_name &&
		    strcasecmp(h->prov_name, FI_GDRFAB_PROV_NAME))
			UNMET("provider %s is not gdrfab", h->prov_name);
	}
	if (hints->src_addr &&
	    (ret = match_src_addr(prov, hints, why, why_len)))
		return ret;
	if (hints->ep_attr &&
	    (ret = match_ep(prov->ep_attr, hints->ep_attr, why, why_len)))
		return ret;
	if (hints->domain_attr &&
	    (ret = match_domain(version, prov, hints, why, why_len)))
		return ret;
	if (hints->tx_attr &&
	    (ret = match_tx(prov->tx_attr, hints->tx_attr, why, why_len)))
		return ret;
	if (hints->rx_attr &&
	    (ret = match_rx(prov->rx_attr, hints->rx_attr, why, why_len)))
		return ret;
	return 0;
}

void gdrfab_info_apply_hints(struct fi_info *info, const struct fi_info *hints,
			     uint32_t version)
{
	struct fi_domain_attr *d = info->domain_attr;
	uint64_t caps;

	if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
		d->mr_mode = FI_MR_BASIC;
	if (!hints)
		return;
	caps = gdrfab_caps_granted(info, hints, version);
	info->caps = caps;
	/* Each side keeps its own bits of what was granted, narrowed again
	 * by what the hints ask of that side. */
	info->tx_attr->caps &= caps;
	if (hints->tx_attr && hints->tx_attr->caps)
		info->tx_attr->caps &= hints->tx_attr->caps;
	info->rx_attr->caps &= caps;
	if (hints->rx_attr && hints->rx_attr->caps)
		info->rx_attr->caps &= hints->rx_attr->caps;
	/* The modes returned: FI_MR_BASIC or FI_MR_SCALABLE as asked (in
	 * their 1.0 spelling); all gdrfab offers where the application takes
	 * them all; else what the granted caps need, and FI_MR_LOCAL where
	 * the application takes it (its descriptors then spare gdrfab a
	 * registration per operation), as libfabric's util providers narrow
	 * them (ofi_alter_domain_attr). Never a bit the hints did not
	 * offer. */
	if (FI_VERSION_GE(version, FI_VERSION(1, 5)) && hints->domain_attr) {
		int user_mode = hints->domain_attr->mr_mode;

		if (user_mode & FI_MR_BASIC)
			d->mr_mode = FI_MR_BASIC;
		else if (user_mode & FI_MR_SCALABLE)
			d->mr_mode = FI_MR_SCALABLE;
		else if ((user_mode & d->mr_mode) != d->mr_mode)
			d->mr_mode = gdrfab_mr_mode_needed(
					     caps, d->mr_mode & FI_MR_HMEM) |
				     (gdrfab_mr_local_accepted(hints, version)
					      ? FI_MR_LOCAL
					      : 0);
	}
	if (hints->domain_attr) {
		const struct fi_domain_attr *h = hints->domain_attr;

		if (h->threading != FI_THREAD_UNSPEC)
			d->threading = h->threading;
		if (h->av_type != FI_AV_UNSPEC)
			d->av_type = h->av_type;
		if (h->resource_mgmt != FI_RM_UNSPEC)
			d->resource_mgmt = h->resource_mgmt;
	}
	if (hints->tx_attr && hints->tx_attr->op_flags)
		info->tx_attr->op_flags = hints->tx_attr->op_flags;
	if (hints->rx_attr && hints->rx_attr->op_flags)
		info->rx_attr->op_flags = hints->rx_attr->op_flags;
	/* Every tag bit matches, so any format asked for (a bit pattern, or
	 * in API 2.x a named one: FI_TAG_BITS, FI_TAG_MPI, FI_TAG_CCL) is
	 * served as asked, as verbs;ofi_rxm does. */
	if (hints->ep_attr && hints->ep_attr->mem_tag_format)
		info->ep_attr->mem_tag_format = hints->ep_attr->mem_tag_format;
}
