/* SPDX-License-Identifier: BSD-2-Clause */
#include "ex_objs.h"

/* Runs one opening call; on failure names it and returns its code. */
#define EX_OPEN(call)                                                          \
	do {                                                                   \
		int ret_ = (call);                                             \
		if (ret_) {                                                    \
			*failed = #call;                                       \
			return ret_;                                           \
		}                                                              \
	} while (0)

int ex_objs_open(struct ex_objs *o, ex_fabric_open_fn fabric_open,
		 const struct fi_av_attr *av_attr,
		 const struct fi_cq_attr *cq_attr, uint64_t cq_flags,
		 const char **failed)
{
	struct fi_av_attr av = *av_attr;
	struct fi_cq_attr cq = *cq_attr;

	EX_OPEN(fabric_open(o->info->fabric_attr, &o->fabric, NULL));
	EX_OPEN(fi_domain(o->fabric, o->info, &o->domain, NULL));
	EX_OPEN(fi_av_open(o->domain, &av, &o->av, NULL));
	EX_OPEN(fi_cq_open(o->domain, &cq, &o->cq, NULL));
	EX_OPEN(fi_endpoint(o->domain, o->info, &o->ep, NULL));
	EX_OPEN(fi_ep_bind(o->ep, &o->av->fid, 0));
	EX_OPEN(fi_ep_bind(o->ep, &o->cq->fid, cq_flags));
	EX_OPEN(fi_enable(o->ep));
	return 0;
}

void ex_objs_close(struct ex_objs *o)
{
	if (o->ep)
		fi_close(&o->ep->fid);
	if (o->cq)
		fi_close(&o->cq->fid);
	if (o->av)
		fi_close(&o->av->fid);
	if (o->domain)
		fi_close(&o->domain->fid);
	if (o->fabric)
		fi_close(&o->fabric->fid);
	fi_freeinfo(o->info);
	*o = (struct ex_objs){0};
}
