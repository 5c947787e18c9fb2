/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_GDRFAB_* run-time parameters. Each is fi_param_define()d (so that
 * `fi_info -e` lists it) and read once, at provider initialisation.
 */
#ifndef GDRFAB_PARAMS_H
#define GDRFAB_PARAMS_H

#include <stdbool.h>
#include <stddef.h>

/* FI_GDRFAB_NIC_ATOMICS, in the order of its names. */
enum gdrfab_nic_atomics_mode {
	GDRFAB_NIC_ATOMICS_AUTO = 0,	   /* when both devices are GLOB */
	GDRFAB_NIC_ATOMICS_OFF = 1,	   /* never */
	GDRFAB_NIC_ATOMICS_UNSAFE_HCA = 2, /* HCA too: tests only */
};

/* The parameter's names, NULL-terminated, in enum order. */
extern const char *const gdrfab_nic_atomics_names[];

/* FI_GDRFAB_RELAXED_ORDERING, in the order of its names: whether data
 * registrations ask for IBV_ACCESS_RELAXED_ORDERING (PCIe writes that may
 * pass each other, which GPU memory behind a switch needs for full
 * bandwidth). auto and on both ask and fall back where the device
 * refuses; on says so as a warning. */
enum gdrfab_relaxed_ordering_mode {
	GDRFAB_RELAXED_ORDERING_AUTO = 0,
	GDRFAB_RELAXED_ORDERING_ON = 1,
	GDRFAB_RELAXED_ORDERING_OFF = 2,
};

extern const char *const gdrfab_relaxed_ordering_names[];

#define GDRFAB_MAX_DEVICE_FILTER 32

struct gdrfab_params {
	/* FI_GDRFAB_DEVICE: exact RDMA device names to use (empty: all). */
	char *device_filter[GDRFAB_MAX_DEVICE_FILTER];
	size_t device_filter_cnt;
	/* FI_GDRFAB_GID_INDEX: RoCE GID table index to use (-1: choose). */
	int gid_index;
	/* FI_GDRFAB_TX_SIZE / FI_GDRFAB_RX_SIZE / FI_GDRFAB_CQ_SIZE: default
	 * queue depths, capped by what the device reports. */
	size_t tx_size;
	size_t rx_size;
	size_t cq_size;
	/* FI_GDRFAB_QP_DEPTH: send queue depth of one connection's RC QP
	 * (at most the endpoint's transmit depth). Sends beyond it wait in
	 * the connection's queue. Every connection's send queue is memory
	 * (on rxe about 1 KiB a slot, mapped into the process), so it sets
	 * what a connected peer costs. */
	size_t qp_depth;
	/* FI_GDRFAB_IDLE_TIMEOUT_MS: a connection silent this long is
	 * probed (a NOP the peer's NIC must acknowledge), so that one whose
	 * peer died without closing fails and is released (0: never). */
	int idle_timeout_ms;
	/* FI_GDRFAB_EAGER_MAX: largest message sent eagerly (copied through
	 * bounce buffers); larger ones use rendezvous (RDMA READ). */
	size_t eager_max;
	/* FI_GDRFAB_SEG_MAX: largest message sent as segmented eager (a
	 * header packet and continuations through the bounce buffers, one
	 * eager_max piece each) above eager_max; larger ones go by
	 * rendezvous. 0 turns segmentation off. A multiple of
	 * GDRFAB_SEG_UNIT (rounded down), at most GDRFAB_SEG_MAX_LIMIT: it
	 * travels in the connection messages in those units, and a pair
	 * uses the smaller of its two values. */
	size_t seg_max;
	/* FI_GDRFAB_RX_BUFS / FI_GDRFAB_TX_BUFS: bounce buffers per
	 * endpoint. */
	size_t rx_bufs;
	size_t tx_bufs;
	/* FI_GDRFAB_CONN_TIMEOUT_MS: give up connecting after this long. */
	int conn_timeout_ms;
	/* FI_GDRFAB_PEER_TIMEOUT_MS: a peer that stops acknowledging is
	 * declared dead (its operations fail) within about this long. */
	int peer_timeout_ms;
	/* FI_GDRFAB_HALF_OPEN_MAX: connections a peer asked for that are not
	 * yet confirmed, per endpoint; further requests wait. */
	int half_open_max;
	/* FI_GDRFAB_TOPO_FILE / FI_GDRFAB_GPU / FI_GDRFAB_NIC_MAP: NIC
	 * affinity (NULL when unset). */
	char *topo_file;
	char *gpu;
	char *nic_map;
	/* FI_GDRFAB_RAILS: the rail sets fi_getinfo lists as domains of
	 * their own (N, all, 1, or named sets a+b,c+d; NULL when unset:
	 * the topology's nearest NICs, at most GDRFAB_RAILS_DEFAULT). Parsed
	 * where the devices are known (obj/gdrfab_rail_info.c). */
	char *rails;
	/* FI_GDRFAB_CUDA_REG: auto|dmabuf|peermem|staged (enum
	 * gdrfab_cuda_reg order: 0 auto). FI_GDRFAB_CUDA_FLUSH:
	 * auto|cuda|read|none (enum gdrfab_cuda_flush order). */
	int cuda_reg;
	int cuda_flush;
	/* FI_GDRFAB_MR_CACHE_ENABLE / _MAX_SIZE / _MAX_COUNT. */
	bool mr_cache_enable;
	size_t mr_cache_max_size;
	size_t mr_cache_max_count;
	/* FI_GDRFAB_HOST_MR_CACHE: uffd|off|nomonitor (enum
	 * gdrfab_host_cache_mode order). */
	int host_mr_cache;
	/* FI_GDRFAB_KMOD_COPY_MAX: host<->GPU copies up to this many bytes
	 * go through /dev/gdrfab's CPU mapping; 0 turns that off. */
	size_t kmod_copy_max;
	/* FI_GDRFAB_GDR_LEVEL: the farthest enum gdrfab_path over which
	 * CUDA_REG=auto uses GPUDirect RDMA; farther GPUs are staged. */
	int gdr_level;
	/* FI_GDRFAB_DISCOVERY_TTL_MS: how long fi_getinfo reuses a port
	 * discovery (0: discover on every call). */
	int discovery_ttl_ms;
	/* FI_GDRFAB_STAGE_CHUNK: staged GPU transfers are copied (and, for
	 * RMA writes, sent) in pieces of this many bytes, so that the
	 * copies of one piece overlap the network transfer of another. */
	size_t stage_chunk;
	/* FI_GDRFAB_STRIPE_MIN: RDMA of at least this many bytes to a peer
	 * whose rails are up goes in one piece per rail. */
	size_t stripe_min;
	/* FI_GDRFAB_NIC_ATOMICS: auto|off|unsafe_hca (enum
	 * gdrfab_nic_atomics_mode order): which atomics the NIC executes. */
	int nic_atomics;
	/* FI_GDRFAB_RELAXED_ORDERING: auto|on|off (enum
	 * gdrfab_relaxed_ordering_mode order). */
	int relaxed_ordering;
	/* FI_GDRFAB_STATS: where endpoints and domains print their counters
	 * when they close: NULL (nowhere), "1" (stderr) or a file name
	 * pattern (gdrfab_stats_path). */
	char *stats;
};

extern struct gdrfab_params gdrfab_params;

#define GDRFAB_DEFAULT_TX_SIZE		1024
#define GDRFAB_DEFAULT_RX_SIZE		1024
#define GDRFAB_DEFAULT_CQ_SIZE		4096
#define GDRFAB_DEFAULT_QP_DEPTH		128
#define GDRFAB_DEFAULT_IDLE_TIMEOUT_MS	30000
#define GDRFAB_DEFAULT_EAGER_MAX	8192
#define GDRFAB_DEFAULT_RX_BUFS		256
#define GDRFAB_DEFAULT_TX_BUFS		256
#define GDRFAB_DEFAULT_CONN_TIMEOUT_MS	10000
#define GDRFAB_DEFAULT_PEER_TIMEOUT_MS	4000
#define GDRFAB_DEFAULT_HALF_OPEN_MAX	32
#define GDRFAB_DEFAULT_MR_CACHE_SIZE	(8ULL << 30)
#define GDRFAB_DEFAULT_MR_CACHE_COUNT	1024
#define GDRFAB_DEFAULT_KMOD_COPY_MAX	8192
#define GDRFAB_MAX_KMOD_COPY		(1 << 20)
#define GDRFAB_DEFAULT_GDR_LEVEL	1 /* PXB, as NCCL */
#define GDRFAB_DEFAULT_STAGE_CHUNK	(1 << 20)
#define GDRFAB_DEFAULT_STRIPE_MIN	(256 << 10)
#define GDRFAB_MIN_STAGE_CHUNK		4096
#define GDRFAB_MAX_STAGE_CHUNK		(64 << 20)
#define GDRFAB_DEFAULT_DISCOVERY_TTL_MS 1000

/* 16 KiB, where the measurements cross: on soft-RoCE under TCG,
 * segmented beat the rendezvous by 16% at 8193 B and 7% at 16 KiB and
 * lost by 7-10% at 32 and 64 KiB (gdrfab_pingpong, host memory, 3
 * rounds); through Open MPI's osu_latency (tests/bench/osu-eager-sweep.sh
 * with GDRFAB_SWEEP_VAR=FI_GDRFAB_SEG_MAX, 3 rounds, docs/results.md) 16
 * KiB went from 1.08x rxm with it off to 0.96-0.99x, and 32 and 64 KiB
 * were no better segmented. Emulated memcpy makes the receiver's copy
 * dearer than on a real host, so real NICs may cross later: measure
 * with the same sweep there and raise it. A message takes seg_max /
 * eager_max receive buffers of the SRQ all peers share (2 of 256 here),
 * and the receiver holds one message of up to seg_max per connection
 * while it reassembles. */
#define GDRFAB_DEFAULT_SEG_MAX (16 << 10)
#define GDRFAB_SEG_UNIT	       4096
#define GDRFAB_SEG_MAX_LIMIT   (255 * GDRFAB_SEG_UNIT)

/* Defines every parameter with libfabric and fills gdrfab_params. */
void gdrfab_params_init(void);
void gdrfab_params_fini(void);

/* Parses a comma-separated list of exact device names into params'
 * device filter. Returns 0, or -FI_EINVAL for an empty element, a name
 * longer than 63 characters, or more than GDRFAB_MAX_DEVICE_FILTER names
 * (the filter is then left empty). */
int gdrfab_parse_device_filter(struct gdrfab_params *params, const char *list);

/* True when the filter is empty or names the device exactly. */
bool gdrfab_device_selected(const struct gdrfab_params *params,
			    const char *name);

/* Validates a queue size read from the environment: returns it, or def
 * (with a warning naming the parameter) when it is not in [1, 1<<24]. */
size_t gdrfab_param_size(const char *param, int value, size_t def);

/* The index of value in the NULL-terminated names, or -1. */
int gdrfab_param_choice(const char *value, const char *const *names);

#endif /* GDRFAB_PARAMS_H */
