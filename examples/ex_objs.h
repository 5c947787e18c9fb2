/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The libfabric objects behind one RDM endpoint: its fabric, domain, an
 * AV and one CQ for both directions. gdrfab's example programs and the
 * test programs that drive endpoints by hand (tests/vm) open and close
 * them here, so that the sequence is written once.
 */
#ifndef EX_OBJS_H
#define EX_OBJS_H

#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

struct ex_objs {
	struct fi_info *info; /* what they were opened from; freed at close */
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

/* How to open the fabric: fi_fabric, or a provider's own entry point
 * for programs that link the provider's code directly. */
typedef int (*ex_fabric_open_fn)(struct fi_fabric_attr *attr,
				 struct fid_fabric **fabric, void *context);

/* Opens fabric, domain, AV and CQ from o->info (set by the caller), an
 * endpoint bound to both (the CQ with cq_flags) and enables it. Returns
 * 0, or the -FI_E* code of the first call that failed, whose name is put
 * in *failed; what was opened is closed by ex_objs_close either way. */
int ex_objs_open(struct ex_objs *o, ex_fabric_open_fn fabric_open,
		 const struct fi_av_attr *av_attr,
		 const struct fi_cq_attr *cq_attr, uint64_t cq_flags,
		 const char **failed);
/* Closes whatever is open (what is NULL is not), endpoint first, frees
 * info and zeroes *o. */
void ex_objs_close(struct ex_objs *o);

#endif /* EX_OBJS_H */
