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
/* What an endpoint or a domain did, cheap enough to be always counted:
 * fi_open_ops(&ep->fid or &domain->fid, FI_GDRFAB_STATS_OPS, 0,
 * (void **)&ops, NULL) gives a struct fi_gdrfab_stats_ops whose read()
 * fills a struct fi_gdrfab_stats. An endpoint's are its own since
 * fi_enable; a domain's are the sum of its endpoints (open and closed)
 * and its registration cache's. Set out->size to sizeof(*out) before
 * read(): the provider fills no more than that many bytes and sets size to
 * what it filled, so a program built against an older (smaller) struct
 * keeps working when fields are added at its end. FI_GDRFAB_STATS=1 (or a
 * path) prints the same numbers as a table when each closes; fi_gdrfab(7)
 * says what each counts. */
#define FI_GDRFAB_STATS_OPS   "gdrfab_stats_v1"
#define FI_GDRFAB_STATS_PEERS 64
/* Rails of a rail-set domain a struct holds: as many as a rail set may
 * have NICs. */
#define FI_GDRFAB_STATS_RAILS	8
#define FI_GDRFAB_RAIL_NAME_LEN 32

/* One peer's share, by the fi_addr the application's AV gave it. */
struct fi_gdrfab_peer_stats {
	uint64_t fi_addr;
	uint64_t tx_msgs, tx_bytes; /* messages sent to it */
	uint64_t rx_msgs, rx_bytes; /* messages received from it */
	/* Failed work completions on its connection and failures of the
	 * connection itself (each fails the operations queued on it). */
	uint64_t errors;
};

/* One NIC's share of a rail-set domain's traffic (domain "a+b"). */
struct fi_gdrfab_rail_stats {
	/* The NIC's device name, NUL-terminated (cut to fit). */
	char name[FI_GDRFAB_RAIL_NAME_LEN];
	/* RDMA READ work requests a striped rendezvous posted on this
	 * rail, rail 0's piece included, and their bytes: over the rails,
	 * the bytes add up to the striped messages' (those the receiver
	 * read in one piece per rail). Counted by the reader, when posted.
	 * Striped RMA's RDMA READs and WRITEs count here too, by the
	 * initiator. */
	uint64_t stripe_ops, stripe_bytes;
	/* Failed work completions on this rail's QPs (rail 0: any the
	 * endpoint's own QPs report), flushed ones not counted: a rail that
	 * fails counts its error there, not on the rails whose work it
	 * flushed. */
	uint64_t errors;
};

struct fi_gdrfab_stats {
	size_t size; /* in: sizeof the caller's struct; out: bytes filled */
	/* Messages (fi_send, fi_tsend families) by how they went: eager
	 * (through bounce buffers, inline or gathered) or by rendezvous
	 * (the receiver pulls them with RDMA READ), counted when posted. */
	uint64_t tx_eager_msgs, tx_eager_bytes;
	uint64_t tx_rndv_msgs, tx_rndv_bytes;
	/* Messages received, counted when they arrive, and those that
	 * arrived before their receive was posted. */
	uint64_t rx_eager_msgs, rx_eager_bytes;
	uint64_t rx_rndv_msgs, rx_rndv_bytes;
	uint64_t rx_unexpected_msgs;
	/* fi_write and fi_read families: by the NIC, and emulated (the
	 * target's memory is staged GPU memory, its data path serves it). */
	uint64_t rma_write_ops, rma_write_bytes;
	uint64_t rma_read_ops, rma_read_bytes;
	uint64_t rma_emulated_ops;
	uint64_t atomic_ops;
	/* GPU buffers: read or written by the NIC itself (GPUDirect RDMA:
	 * dma-buf or nvidia-peermem, gpu_path says which); copied through
	 * host staging buffers (the NIC cannot reach the GPU); eager bytes
	 * copied by the CPU or CUDA between a bounce buffer and the GPU. */
	uint64_t gpu_direct_ops, gpu_direct_bytes;
	uint64_t gpu_staged_ops, gpu_staged_bytes;
	uint64_t gpu_copied_ops, gpu_copied_bytes;
	/* Connections: asked for by this side, asked for by a peer,
	 * established, failed; connection requests and replies sent again
	 * (unanswered); connections made again after a peer's QP failed or
	 * the peer came back with a new one. */
	uint64_t conn_requested, conn_accepted, conn_established;
	uint64_t conn_failed, conn_resends, reconnects;
	/* Error completions written to the application's CQs (and counters)
	 * and their kinds: a verbs work completion's status (prov_errno
	 * below FI_GDRFAB_PROV_ERRNO_BASE), the peer unreachable or gone,
	 * timed out, truncated, canceled, anything else. */
	uint64_t err_completions, err_verbs, err_unreachable, err_timeout;
	uint64_t err_truncated, err_canceled, err_other;
	/* The domain's registration cache (zero in an endpoint's read): GPU
	 * hits, misses and evictions; host memory without a descriptor. */
	uint64_t mr_cache_hits, mr_cache_misses, mr_cache_evictions;
	uint64_t mr_cache_host_hits, mr_cache_host_misses;
	/* How the domain registers GPU memory: 0 no CUDA, 1 dma-buf,
	 * 2 nvidia-peermem, 3 staged (zero in an endpoint's read). */
	uint64_t gpu_path;
	/* Endpoints counted (1 for an endpoint). */
	uint64_t endpoints;
	/* Peers by fi_addr (peer_count entries used); the messages and
	 * errors of peers beyond the table (or not in the AV) are summed in
	 * peer_other, whose fi_addr is FI_ADDR_NOTAVAIL. */
	uint64_t peer_count;
	struct fi_gdrfab_peer_stats peer_other;
	struct fi_gdrfab_peer_stats peers[FI_GDRFAB_STATS_PEERS];
	/* Appended (a struct of an older size ends above): the NICs of a
	 * rail-set domain, rails[0] the primary, in the set's order.
	 * rail_count is 0 for an endpoint or domain of one NIC, which
	 * stripes nothing (its traffic is all its NIC's, counted above);
	 * a domain's rows are its rails, the sum of its endpoints'. */
	uint64_t rail_count;
	struct fi_gdrfab_rail_stats rails[FI_GDRFAB_STATS_RAILS];
	/* Appended after rails[] (a struct of an older size ends above):
	 * the times a connection took rails[i] back after it failed, once
	 * its port was active again and both sides connected it anew
	 * (striping resumed on it). */
	uint64_t rail_back[FI_GDRFAB_STATS_RAILS];
};

struct fi_gdrfab_stats_ops {
	size_t size;
	/* fid: an endpoint or a domain of gdrfab. 0, or -FI_EINVAL (not
	 * one, out NULL, or out->size smaller than a size_t). */
	int (*read)(struct fid *fid, struct fi_gdrfab_stats *out);
};
#endif /* FI_EXT_GDRFAB_H */
