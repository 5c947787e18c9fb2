/* SPDX-License-Identifier: BSD-2-Clause */
/* FI_GDRFAB_* parameters: definition, parsing and validation. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gdrfab.h"
#include "gdrfab_params.h"

const char *const gdrfab_nic_atomics_names[] = {"auto", "off", "unsafe_hca",
						NULL};
const char *const gdrfab_relaxed_ordering_names[] = {"auto", "on", "off", NULL};

struct gdrfab_params gdrfab_params = {
	.gid_index = -1,
	.tx_size = GDRFAB_DEFAULT_TX_SIZE,
	.rx_size = GDRFAB_DEFAULT_RX_SIZE,
	.cq_size = GDRFAB_DEFAULT_CQ_SIZE,
	.qp_depth = GDRFAB_DEFAULT_QP_DEPTH,
	.idle_timeout_ms = GDRFAB_DEFAULT_IDLE_TIMEOUT_MS,
	.eager_max = GDRFAB_DEFAULT_EAGER_MAX,
	.seg_max = GDRFAB_DEFAULT_SEG_MAX,
	.rx_bufs = GDRFAB_DEFAULT_RX_BUFS,
	.tx_bufs = GDRFAB_DEFAULT_TX_BUFS,
	.conn_timeout_ms = GDRFAB_DEFAULT_CONN_TIMEOUT_MS,
	.discovery_ttl_ms = GDRFAB_DEFAULT_DISCOVERY_TTL_MS,
	.peer_timeout_ms = GDRFAB_DEFAULT_PEER_TIMEOUT_MS,
	.half_open_max = GDRFAB_DEFAULT_HALF_OPEN_MAX,
	.mr_cache_enable = true,
	.mr_cache_max_size = GDRFAB_DEFAULT_MR_CACHE_SIZE,
	.mr_cache_max_count = GDRFAB_DEFAULT_MR_CACHE_COUNT,
	.kmod_copy_max = GDRFAB_DEFAULT_KMOD_COPY_MAX,
	.stage_chunk = GDRFAB_DEFAULT_STAGE_CHUNK,
	.gdr_level = GDRFAB_DEFAULT_GDR_LEVEL,
	.stripe_min = GDRFAB_DEFAULT_STRIPE_MIN,
};

/* enum gdrfab_host_cache_mode order. */
static const char *const host_mr_cache_names[] = {"uffd", "off", "nomonitor",
						  NULL};
static const char *const cuda_reg_names[] = {"auto", "dmabuf", "peermem",
					     "staged", NULL};
static const char *const cuda_flush_names[] = {"auto", "cuda", "read", "none",
					       NULL};
/* enum gdrfab_path order, as nvidia-smi topo -m and NCCL name them. */
static const char *const gdr_level_names[] = {"PIX",  "PXB", "PHB",
					      "NODE", "SYS", NULL};

int gdrfab_param_choice(const char *value, const char *const *names)
{
	for (int i = 0; value && names[i]; i++) {
		if (!strcasecmp(value, names[i]))
			return i;
	}
	return -1;
}

static void read_choice(const char *name, int *out, const char *const *names,
			int def)
{
	char *value = NULL, all[128] = "";
	int i;

	*out = def;
	if (fi_param_get_str(&gdrfab_prov, name, &value) != FI_SUCCESS ||
	    !value)
		return;
	i = gdrfab_param_choice(value, names);
	if (i >= 0) {
		*out = i;
		return;
	}
	for (i = 0; names[i]; i++) {
		strncat(all, i ? "|" : "", sizeof(all) - strlen(all) - 1);
		strncat(all, names[i], sizeof(all) - strlen(all) - 1);
	}
	GDRFAB_WARN(FI_LOG_CORE,
		    "FI_GDRFAB_%s=\"%s\" is not one of %s: using %s\n", name,
		    value, all, names[def]);
}

/* A byte count: sizes up to 2^63 need more than fi_param's int. */
static void read_bytes(const char *name, size_t *out)
{
	char *value = NULL, *end;
	unsigned long long v;

	if (fi_param_get_str(&gdrfab_prov, name, &value) != FI_SUCCESS ||
	    !value)
		return;
	errno = 0;
	v = strtoull(value, &end, 0);
	if (errno || end == value || *end || !v)
		GDRFAB_WARN(
			FI_LOG_CORE,
			"FI_GDRFAB_%s=\"%s\" is not a positive byte count: using %zu\n",
			name, value, *out);
	else
		*out = (size_t)v;
}

#define GDRFAB_MAX_QUEUE_SIZE (1 << 24)
#define GDRFAB_MAX_DEVNAME    63

static void clear_device_filter(struct gdrfab_params *params)
{
	for (size_t i = 0; i < params->device_filter_cnt; i++)
		free(params->device_filter[i]);
	params->device_filter_cnt = 0;
}

int gdrfab_parse_device_filter(struct gdrfab_params *params, const char *list)
{
	const char *p = list;

	clear_device_filter(params);
	if (!list || !*list)
		return 0;
	for (;;) {
		size_t len = strcspn(p, ",");

		if (len == 0 || len > GDRFAB_MAX_DEVNAME ||
		    params->device_filter_cnt == GDRFAB_MAX_DEVICE_FILTER)
			goto invalid;
		params->device_filter[params->device_filter_cnt] =
			strndup(p, len);
		if (!params->device_filter[params->device_filter_cnt])
			goto invalid;
		params->device_filter_cnt++;
		if (!p[len])
			return 0;
		p += len + 1;
	}
invalid:
	clear_device_filter(params);
	return -FI_EINVAL;
}

bool gdrfab_device_selected(const struct gdrfab_params *params,
			    const char *name)
{
	if (!params->device_filter_cnt)
		return true;
	for (size_t i = 0; i < params->device_filter_cnt; i++) {
		if (!strcmp(params->device_filter[i], name))
			return true;
	}
	return false;
}

size_t gdrfab_param_size(const char *param, int value, size_t def)
{
	if (value < 1 || value > GDRFAB_MAX_QUEUE_SIZE) {
		GDRFAB_WARN(FI_LOG_CORE,
			    "%s=%d is outside [1, %d]: using %zu instead\n",
			    param, value, GDRFAB_MAX_QUEUE_SIZE, def);
		return def;
	}
	return (size_t)value;
}

static void read_size(const char *name, size_t *out, size_t def)
{
	int value;
	char env[64];

	snprintf(env, sizeof(env), "FI_GDRFAB_%s", name);
	if (fi_param_get_int(&gdrfab_prov, name, &value) == FI_SUCCESS)
		*out = gdrfab_param_size(env, value, def);
	else
		*out = def;
}

static void read_str(const char *name, char **out)
{
	char *value = NULL;

	free(*out);
	*out = NULL;
	if (fi_param_get_str(&gdrfab_prov, name, &value) == FI_SUCCESS &&
	    value && *value)
		*out = strdup(value);
}

/* Milliseconds in [min, max]; otherwise the default, with a warning. */
/* An integer parameter within [min, max]; def when unset or outside. */
static void read_int_in(const char *name, int *out, int def, int min, int max)
{
	int value;

	*out = def;
	if (fi_param_get_int(&gdrfab_prov, name, &value) != FI_SUCCESS)
		return;
	if (value < min || value > max) {
		GDRFAB_WARN(FI_LOG_CORE,
			    "FI_GDRFAB_%s=%d is outside [%d, %d]: using %d\n",
			    name, value, min, max, def);
		return;
	}
	*out = value;
}

void gdrfab_params_init(void)
{
	char *devices = NULL;
	int gid_index;

	fi_param_define(
		&gdrfab_prov, "DEVICE", FI_PARAM_STRING,
		"Comma-separated exact RDMA device names gdrfab may use, e.g. mlx5_0,mlx5_3 (default: every device with an active port)");
	fi_param_define(
		&gdrfab_prov, "GID_INDEX", FI_PARAM_INT,
		"RoCE GID table index to address ports by (default: the first RoCE v2 GID with an IPv4 address, then IPv6, then link-local)");
	fi_param_define(
		&gdrfab_prov, "TX_SIZE", FI_PARAM_INT,
		"Default transmit queue depth of an endpoint, capped by the device (default: 1024)");
	fi_param_define(
		&gdrfab_prov, "RX_SIZE", FI_PARAM_INT,
		"Default receive queue depth of an endpoint, capped by the device (default: 1024)");
	fi_param_define(
		&gdrfab_prov, "QP_DEPTH", FI_PARAM_INT,
		"Send queue depth of each connection's RC queue pair, at most the endpoint's transmit depth; sends beyond it wait in the connection's queue (default: 128)");
	fi_param_define(
		&gdrfab_prov, "CQ_SIZE", FI_PARAM_INT,
		"Default completion queue size when fi_cq_open asks for 0 (default: 4096)");
	fi_param_define(
		&gdrfab_prov, "TOPO_FILE", FI_PARAM_STRING,
		"hwloc XML topology to use instead of this machine's (HWLOC_XMLFILE works too)");
	fi_param_define(
		&gdrfab_prov, "GPU", FI_PARAM_STRING,
		"The GPU this process uses, as an index or a PCI bus id (default: the launcher's local rank modulo the GPUs): fi_getinfo lists its nearest NICs first");
	fi_param_define(
		&gdrfab_prov, "NIC_MAP", FI_PARAM_STRING,
		"GPU=NIC[,NIC];GPU=NIC... with exact device names: overrides the NIC choice per GPU");
	fi_param_define(
		&gdrfab_prov, "RAILS", FI_PARAM_STRING,
		"Rail sets: the NICs one GPU's endpoint may use together, listed by fi_getinfo as one more domain named by its NICs joined with '+' (rxe0+rxe2) when a set has more than one NIC: N (at most N of the GPU's nearest NICs, 1 to 8), all, 1 (never a rail set), or named sets rxe0+rxe2,rxe1+rxe3 for machines whose topology hwloc cannot see (default: at most 4 of the nearest NICs)");
	fi_param_define(
		&gdrfab_prov, "STRIPE_MIN", FI_PARAM_STRING,
		"A rendezvous message of at least this many bytes to a peer of a rail-set domain is read in one piece per rail, each a multiple of 64 KiB but the last (default: 262144)");
	fi_param_define(
		&gdrfab_prov, "EAGER_MAX", FI_PARAM_INT,
		"Largest message sent eagerly through bounce buffers; larger messages are pulled by the receiver with RDMA READ (default: 8192)");
	fi_param_define(
		&gdrfab_prov, "SEG_MAX", FI_PARAM_INT,
		"Largest message sent as segmented eager (a header packet and continuations through the bounce buffers, reassembled by the receiver) above FI_GDRFAB_EAGER_MAX; larger messages go by rendezvous. A multiple of 4096 (rounded down), at most 1044480; a pair of endpoints uses the smaller of their values; 0 turns it off (default: 16384)");
	fi_param_define(
		&gdrfab_prov, "RX_BUFS", FI_PARAM_INT,
		"Receive bounce buffers per endpoint, shared by all its peers (default: 256)");
	fi_param_define(&gdrfab_prov, "TX_BUFS", FI_PARAM_INT,
			"Transmit bounce buffers per endpoint (default: 256)");
	fi_param_define(
		&gdrfab_prov, "CONN_TIMEOUT_MS", FI_PARAM_INT,
		"Milliseconds to keep trying to reach a peer before its operations fail (default: 10000)");
	fi_param_define(
		&gdrfab_prov, "PEER_TIMEOUT_MS", FI_PARAM_INT,
		"Milliseconds after which a peer that stopped answering is declared dead and its operations fail (default: 4000)");
	fi_param_define(
		&gdrfab_prov, "IDLE_TIMEOUT_MS", FI_PARAM_INT,
		"Milliseconds a connection may stay silent before it is probed, so that one whose peer died without closing is found and released; 0 never probes (default: 30000)");
	fi_param_define(
		&gdrfab_prov, "DISCOVERY_TTL_MS", FI_PARAM_INT,
		"Milliseconds for which fi_getinfo reuses what it found of the RDMA ports instead of opening every device again; fi_domain always looks afresh; 0 discovers on every call (default: 1000)");
	fi_param_define(
		&gdrfab_prov, "HALF_OPEN_MAX", FI_PARAM_INT,
		"Connections requested by peers but not yet confirmed that an endpoint holds at once; more requests wait (default: 32)");

	fi_param_define(
		&gdrfab_prov, "CUDA_REG", FI_PARAM_STRING,
		"How GPU memory is registered: auto (dma-buf, then nvidia-peermem, then staged), dmabuf, peermem, or staged (host bounce buffers and CUDA copies; any NIC) (default: auto)");
	fi_param_define(
		&gdrfab_prov, "GDR_LEVEL", FI_PARAM_STRING,
		"Farthest GPU-NIC path class (PIX, PXB, PHB, NODE, SYS, as nvidia-smi topo -m names them) over which FI_GDRFAB_CUDA_REG=auto registers GPU memory for GPUDirect RDMA; farther GPUs are staged (default: PXB)");
	fi_param_define(
		&gdrfab_prov, "CUDA_FLUSH", FI_PARAM_STRING,
		"How RDMA writes into GPU memory are made visible before their completion: auto (nothing where the GPU orders them for its owner, else cuFlushGPUDirectRDMAWrites, else an RDMA READ), cuda, read, or none (default: auto)");
	fi_param_define(
		&gdrfab_prov, "NIC_ATOMICS", FI_PARAM_STRING,
		"Which atomics the NIC executes: auto (8-byte FI_SUM and FI_CSWAP when both devices are atomic with respect to the CPU, IBV_ATOMIC_GLOB), off (none: every atomic by message), or unsafe_hca (IBV_ATOMIC_HCA devices too, which loses updates when NIC and message-borne atomics meet on one location: for tests only) (default: auto)");
	fi_param_define(
		&gdrfab_prov, "RELAXED_ORDERING", FI_PARAM_STRING,
		"Whether memory registrations of application and GPU buffers ask for PCIe relaxed ordering (IBV_ACCESS_RELAXED_ORDERING), as NCCL and UCX do: auto (ask; where the device refuses, register without it and say so at info level), on (the same, but a refusal is a warning), or off (never) (default: auto)");
	fi_param_define(
		&gdrfab_prov, "MR_CACHE_ENABLE", FI_PARAM_BOOL,
		"Keep GPU registrations, and host memory used without a descriptor, after their last use, for reuse (default: 1)");
	fi_param_define(
		&gdrfab_prov, "HOST_MR_CACHE", FI_PARAM_STRING,
		"Host memory used without a descriptor: uffd (registrations are cached, a userfaultfd monitor drops those whose memory is unmapped), off (registered for each operation), or nomonitor (cached with no monitor: unsafe, for tests only) (default: uffd)");
	fi_param_define(
		&gdrfab_prov, "MR_CACHE_MAX_SIZE", FI_PARAM_STRING,
		"Bytes of GPU and host memory the registration cache keeps registered before evicting the least recently used (default: 8589934592)");
	fi_param_define(
		&gdrfab_prov, "MR_CACHE_MAX_COUNT", FI_PARAM_INT,
		"Registrations the cache keeps before evicting, GPU and host together (default: 1024)");
	fi_param_define(
		&gdrfab_prov, "KMOD_COPY_MAX", FI_PARAM_INT,
		"Host<->GPU copies up to this many bytes use the CPU mapping of GPU memory that gdrfab.ko (/dev/gdrfab) provides instead of a CUDA copy; 0 disables (default: 8192, at most 1048576)");
	fi_param_define(
		&gdrfab_prov, "STAGE_CHUNK", FI_PARAM_INT,
		"Staged GPU transfers (GPU memory the NIC cannot reach) are copied through pinned host memory in pieces of this many bytes, whose copies overlap each other and the network (default: 1048576, 4096 to 67108864)");

	fi_param_define(
		&gdrfab_prov, "STATS", FI_PARAM_STRING,
		"Print what each endpoint and domain did (messages eager and by rendezvous, RMA, GPU buffers by GPUDirect or staged, registration cache, connections, errors, per peer) as a table when it closes: 1 to stderr, or a file name in which %h is the host and %p the process id (.%h.%p is appended when %p is absent); gdrfab_stat sums a job's files (default: 0, nothing printed)");

	if (fi_param_get_str(&gdrfab_prov, "DEVICE", &devices) == FI_SUCCESS &&
	    gdrfab_parse_device_filter(&gdrfab_params, devices))
		GDRFAB_WARN(
			FI_LOG_CORE,
			"FI_GDRFAB_DEVICE=\"%s\" is not a comma-separated list of device names: using every device\n",
			devices);
	if (fi_param_get_int(&gdrfab_prov, "GID_INDEX", &gid_index) ==
	    FI_SUCCESS) {
		if (gid_index < 0 || gid_index > 255)
			GDRFAB_WARN(
				FI_LOG_CORE,
				"FI_GDRFAB_GID_INDEX=%d is outside [0, 255]: choosing the GID automatically\n",
				gid_index);
		else
			gdrfab_params.gid_index = gid_index;
	}
	read_size("TX_SIZE", &gdrfab_params.tx_size, GDRFAB_DEFAULT_TX_SIZE);
	read_size("RX_SIZE", &gdrfab_params.rx_size, GDRFAB_DEFAULT_RX_SIZE);
	read_str("TOPO_FILE", &gdrfab_params.topo_file);
	read_str("GPU", &gdrfab_params.gpu);
	read_str("NIC_MAP", &gdrfab_params.nic_map);
	read_str("RAILS", &gdrfab_params.rails);
	read_str("STATS", &gdrfab_params.stats);
	read_size("CQ_SIZE", &gdrfab_params.cq_size, GDRFAB_DEFAULT_CQ_SIZE);
	read_size("QP_DEPTH", &gdrfab_params.qp_depth, GDRFAB_DEFAULT_QP_DEPTH);
	read_size("EAGER_MAX", &gdrfab_params.eager_max,
		  GDRFAB_DEFAULT_EAGER_MAX);
	{
		int seg_max;

		read_int_in("SEG_MAX", &seg_max, GDRFAB_DEFAULT_SEG_MAX, 0,
			    GDRFAB_SEG_MAX_LIMIT);
		gdrfab_params.seg_max =
			(size_t)seg_max / GDRFAB_SEG_UNIT * GDRFAB_SEG_UNIT;
	}
	read_size("RX_BUFS", &gdrfab_params.rx_bufs, GDRFAB_DEFAULT_RX_BUFS);
	read_size("TX_BUFS", &gdrfab_params.tx_bufs, GDRFAB_DEFAULT_TX_BUFS);
	read_int_in("CONN_TIMEOUT_MS", &gdrfab_params.conn_timeout_ms,
		    GDRFAB_DEFAULT_CONN_TIMEOUT_MS, 10, 3600000);
	read_choice("CUDA_REG", &gdrfab_params.cuda_reg, cuda_reg_names, 0);
	read_choice("CUDA_FLUSH", &gdrfab_params.cuda_flush, cuda_flush_names,
		    0);
	read_choice("GDR_LEVEL", &gdrfab_params.gdr_level, gdr_level_names,
		    GDRFAB_DEFAULT_GDR_LEVEL);
	{
		int enable;

		if (fi_param_get_bool(&gdrfab_prov, "MR_CACHE_ENABLE",
				      &enable) == FI_SUCCESS)
			gdrfab_params.mr_cache_enable = enable;
	}
	read_choice("HOST_MR_CACHE", &gdrfab_params.host_mr_cache,
		    host_mr_cache_names, 0);
	read_choice("NIC_ATOMICS", &gdrfab_params.nic_atomics,
		    gdrfab_nic_atomics_names, GDRFAB_NIC_ATOMICS_AUTO);
	read_choice("RELAXED_ORDERING", &gdrfab_params.relaxed_ordering,
		    gdrfab_relaxed_ordering_names,
		    GDRFAB_RELAXED_ORDERING_AUTO);
	read_bytes("MR_CACHE_MAX_SIZE", &gdrfab_params.mr_cache_max_size);
	read_bytes("STRIPE_MIN", &gdrfab_params.stripe_min);
	read_size("MR_CACHE_MAX_COUNT", &gdrfab_params.mr_cache_max_count,
		  GDRFAB_DEFAULT_MR_CACHE_COUNT);
	read_int_in("PEER_TIMEOUT_MS", &gdrfab_params.peer_timeout_ms,
		    GDRFAB_DEFAULT_PEER_TIMEOUT_MS, 100, 600000);
	read_int_in("IDLE_TIMEOUT_MS", &gdrfab_params.idle_timeout_ms,
		    GDRFAB_DEFAULT_IDLE_TIMEOUT_MS, 0, 86400000);
	read_int_in("HALF_OPEN_MAX", &gdrfab_params.half_open_max,
		    GDRFAB_DEFAULT_HALF_OPEN_MAX, 1, 65536);
	read_int_in("DISCOVERY_TTL_MS", &gdrfab_params.discovery_ttl_ms,
		    GDRFAB_DEFAULT_DISCOVERY_TTL_MS, 0, 3600000);
	{
		int copy_max;

		read_int_in("KMOD_COPY_MAX", &copy_max,
			    GDRFAB_DEFAULT_KMOD_COPY_MAX, 0,
			    GDRFAB_MAX_KMOD_COPY);
		gdrfab_params.kmod_copy_max = (size_t)copy_max;
	}
	{
		int chunk;

		read_int_in("STAGE_CHUNK", &chunk, GDRFAB_DEFAULT_STAGE_CHUNK,
			    GDRFAB_MIN_STAGE_CHUNK, GDRFAB_MAX_STAGE_CHUNK);
		gdrfab_params.stage_chunk = (size_t)chunk;
	}
}

void gdrfab_params_fini(void)
{
	clear_device_filter(&gdrfab_params);
	free(gdrfab_params.topo_file);
	free(gdrfab_params.gpu);
	free(gdrfab_params.nic_map);
	free(gdrfab_params.rails);
	free(gdrfab_params.stats);
	gdrfab_params.topo_file = gdrfab_params.gpu = gdrfab_params.nic_map =
		NULL;
	gdrfab_params.rails = gdrfab_params.stats = NULL;
}
