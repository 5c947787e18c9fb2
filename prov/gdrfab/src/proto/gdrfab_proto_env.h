/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The protocol's view of the endpoint and domain above it: what it needs
 * of them, handed down by the object layer when the endpoint is enabled
 * (gdrfab_proto_create) instead of read out of the object layer's structs.
 * The protocol thus never includes gdrfab_objs.h, and its data path reads
 * these fields one load away (proto->env.x), where it used to follow
 * proto->ep->domain->x.
 *
 * Most of it is fixed once the endpoint is enabled. What the application
 * may still change (fi_setopt: min_multi_recv, cuda_api_permitted,
 * hmem_p2p) the object layer writes here as well as in its endpoint.
 * What only the object layer can answer (whether a desc is a live MR,
 * who an fi_addr_t is) goes through struct gdrfab_proto_ops.
 */
#ifndef GDRFAB_PROTO_ENV_H
#define GDRFAB_PROTO_ENV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "gdrfab_addr.h"
#include "gdrfab_wire.h"

/* A rail beyond rail 0: its device, PD and port, where the endpoint makes
 * a CQ and, per peer of several rails, an RC QP. */
struct gdrfab_proto_rail {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	const struct ibv_device_attr *dev_attr;
	uint8_t port_num;
	int gid_index;
	struct gdrfab_addr port_addr; /* the port's name (no endpoint) */
	enum ibv_mtu active_mtu;
};

/* The object layer's objects, opaque here: only handed back to it
 * through struct gdrfab_proto_ops. */
struct gdrfab_ep;
struct gdrfab_av;
struct gdrfab_domain;
struct gdrfab_lock;
struct gdrfab_ah_cache;
struct gdrfab_hmem_domain;

struct gdrfab_proto_env {
	/* ---- handles for the ops, never looked into ---- */
	struct gdrfab_ep *ep;
	struct gdrfab_av *av; /* the endpoint's bound AV */
	struct gdrfab_domain *domain;
	/* The AV's generation, bumped on every insert, remove and answer:
	 * connections cache their peer's fi_addr_t against it. */
	const uint64_t *av_generation;
	/* The endpoint's lock: the application's calls into the protocol
	 * take it (progress runs under it too). */
	struct gdrfab_lock *lock;

	/* ---- the domain: its device, port and memory ---- */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	const struct ibv_device_attr *dev_attr;
	uint8_t port_num;
	int gid_index;
	struct gdrfab_addr port_addr; /* the port's name (no endpoint) */
	uint32_t max_msg_sz;	      /* per work request (0: unknown) */
	enum ibv_mtu active_mtu;
	struct gdrfab_ah_cache *ah_cache; /* to peers' UD QPs */
	struct gdrfab_hmem_domain *hmem;  /* GPU memory, MR cache */
	/* GDRFAB_CM_F_NIC_ATOMIC_* (gdrfab_atomic.h), or 0. */
	uint16_t nic_atomic_flag;
	/* Where its atomics went (struct fi_gdrfab_atomic_stats). */
	_Atomic uint64_t *atomics_nic, *atomics_proto, *atomics_held;
	/* The device's port outages and returns, counted by whichever of its
	 * endpoints reads the event (gdrfab_async_poll). */
	_Atomic unsigned *port_events;

	/* A rail-set domain's rails (issue 31): nrails in all, 1 for a NIC
	 * alone; rail 0 is the device and port above, rail i
	 * more_rails[i - 1] (gdrfab_conn_rails.h). */
	size_t nrails;
	struct gdrfab_proto_rail more_rails[GDRFAB_CM_RAILS_MAX - 1];

	/* ---- the endpoint ---- */
	struct gdrfab_addr name;
	/* The UD QP connection messages use; the protocol owns (destroys)
	 * them from gdrfab_proto_create on. */
	struct ibv_qp *ud_qp;
	struct ibv_cq *ud_cq;
	uint16_t ns_port; /* its name service's port, 0: none */
	bool rma_events;  /* a counter counts RMA aimed at it */
	uint64_t caps;	  /* info->caps */
	size_t max_msg_size, tx_size, rx_size;
	/* It makes its flush QP when enabled (GPU writes flushed by a
	 * READ). */
	bool flush_by_read;
	/* Kept current by fi_setopt. */
	size_t min_multi_recv;	 /* FI_OPT_MIN_MULTI_RECV */
	bool cuda_api_permitted; /* FI_OPT_CUDA_API_PERMITTED */
	int hmem_p2p;		 /* FI_OPT_FI_HMEM_P2P */
};

#endif /* GDRFAB_PROTO_ENV_H */
