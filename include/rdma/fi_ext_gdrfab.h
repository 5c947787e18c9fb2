/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gdrfab: what applications may compile against. The provider's name, the
 * size of its endpoint names, and the provider-specific error values that
 * fi_cq_err_entry.prov_errno carries besides verbs work-completion statuses.
 */
#ifndef FI_EXT_GDRFAB_H
#define FI_EXT_GDRFAB_H

#include <stddef.h>
#include <stdint.h>

#define FI_GDRFAB_PROV_NAME "gdrfab"

/* Endpoint names (fi_getname, fi_info->src_addr) are opaque binary blobs of
 * this many bytes, addr_format FI_FORMAT_UNSPEC; fi_av_straddr prints them
 * as "gdrfab://GID/lid=L/qpn=Q/id=I/port=P". */
#define FI_GDRFAB_ADDR_LEN 32

/* prov_errno values at or above this base are gdrfab's own; below it they
 * are enum ibv_wc_status values reported by the NIC. */
#define FI_GDRFAB_PROV_ERRNO_BASE 0x1000

/* The registration cache's counters, for tests and benchmarks:
 * fi_open_ops(&domain->fid, FI_GDRFAB_MR_CACHE_OPS, 0, (void **)&ops, NULL)
 * gives a struct fi_gdrfab_mr_cache_ops whose stats() fills them in. */
#define FI_GDRFAB_MR_CACHE_OPS "gdrfab_mr_cache_v1"

struct fi_gdrfab_mr_cache_stats {
	uint64_t hits, misses, evictions, stale; /* GPU memory */
	/* Host memory used without a descriptor: found, registered anew,
	 * dropped because the monitor saw its memory unmapped, registered
	 * but not kept (an unmap event came meanwhile). */
	uint64_t host_hits, host_misses, host_invalidated, host_uncached;
	uint64_t entries, bytes; /* registrations kept now */
	int host_cached;	 /* host memory is cached in this domain */
};

struct fid;
struct fi_gdrfab_mr_cache_ops {
	size_t size;
	int (*stats)(struct fid *domain, struct fi_gdrfab_mr_cache_stats *out);
};

/* Where a domain's atomics went, for tests and benchmarks:
 * fi_open_ops(&domain->fid, FI_GDRFAB_ATOMIC_OPS, 0, (void **)&ops, NULL)
 * gives a struct fi_gdrfab_atomic_ops whose stats() fills them in. */
#define FI_GDRFAB_ATOMIC_OPS "gdrfab_atomic_v1"
struct fi_gdrfab_atomic_stats {
	uint64_t nic;	/* posted as the NIC's FETCH_ADD or CMP_SWP */
	uint64_t proto; /* sent as messages the target applies */
	/* NIC atomics that waited for earlier message-borne ones on their
	 * connection to be answered (FI_ORDER_ATOMIC_*). */
	uint64_t held;
	/* The domain's MRs accept NIC atomics, its device being
	 * IBV_ATOMIC_GLOB (1) or IBV_ATOMIC_HCA under
	 * FI_GDRFAB_NIC_ATOMICS=unsafe_hca (2); 0: they do not. */
	int target_mode;
};
struct fi_gdrfab_atomic_ops {
	size_t size;
	int (*stats)(struct fid *domain, struct fi_gdrfab_atomic_stats *out);
};
#endif /* FI_EXT_GDRFAB_H */
