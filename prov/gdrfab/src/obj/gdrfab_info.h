/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_info: what gdrfab advertises for each port, and how application hints
 * are matched against it (fi_getinfo(3)).
 */
#ifndef GDRFAB_INFO_H
#define GDRFAB_INFO_H

#include <stdbool.h>

#include <rdma/fabric.h>

#include "gdrfab_verbs.h"
#include "gdrfab_wire.h" /* GDRFAB_IOV_LIMIT */

/* Capabilities that work today (gdrfab never advertises what does not
 * work yet: FI_HMEM joins with the CUDA memory domain). */
#define GDRFAB_PRIMARY_CAPS                                                    \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE |        \
	 FI_SEND | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE |                \
	 FI_DIRECTED_RECV)
#define GDRFAB_SECONDARY_CAPS                                                  \
	(FI_MULTI_RECV | FI_SOURCE | FI_LOCAL_COMM | FI_REMOTE_COMM |          \
	 FI_RMA_EVENT)
#define GDRFAB_CAPS	   (GDRFAB_PRIMARY_CAPS | GDRFAB_SECONDARY_CAPS)
#define GDRFAB_DOMAIN_CAPS (FI_LOCAL_COMM | FI_REMOTE_COMM)

/* Which capability bits belong to a transmit and which to a receive
 * context (libfabric's include/ofi.h sorts them so: OFI_PRIMARY_TX_CAPS
 * and the rest); tx_attr->caps and rx_attr->caps are gdrfab's caps of
 * their side only, domain caps on neither. */
#define GDRFAB_TX_SIDE                                                         \
	(FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_MULTICAST | FI_READ |    \
	 FI_WRITE | FI_SEND | FI_COLLECTIVE | FI_NAMED_RX_CTX | FI_HMEM |      \
	 FI_TRIGGER | FI_FENCE | FI_RMA_PMEM)
#define GDRFAB_RX_SIDE                                                         \
	(FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_REMOTE_READ |            \
	 FI_REMOTE_WRITE | FI_RECV | FI_DIRECTED_RECV | FI_VARIABLE_MSG |      \
	 FI_COLLECTIVE | FI_HMEM | FI_MULTI_RECV | FI_TRIGGER | FI_RMA_PMEM |  \
	 FI_SOURCE | FI_RMA_EVENT | FI_SOURCE_ERR)
#define GDRFAB_TX_CAPS (GDRFAB_CAPS & GDRFAB_TX_SIDE)
#define GDRFAB_RX_CAPS (GDRFAB_CAPS & GDRFAB_RX_SIDE)

/* Memory registration modes the application must support (API >= 1.5). */
#define GDRFAB_MR_MODE                                                         \
	(FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)
/* What FI_MR_BASIC stands for, and what gdrfab needs of an application
 * that registers memory for peers' RMA. FI_MR_LOCAL is offered, never
 * needed: a buffer passed without a descriptor is registered by gdrfab. */
#define GDRFAB_MR_BASIC_MAP (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)
/* The bits that only matter for memory peers access (fi_domain(3)). */
#define GDRFAB_MR_RMA_TARGET (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY)

/* Atomics from one endpoint to one peer are applied in posting order. */
#define GDRFAB_ATOMIC_ORDER                                                    \
	(FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAR |     \
	 FI_ORDER_ATOMIC_WAW)

#define GDRFAB_MR_KEY_SIZE 8 /* rkeys, and GDRFAB_EMU_KEY keys */
/* Remote CQ data travels as RDMA immediate data: 4 bytes. */
#define GDRFAB_CQ_DATA_SIZE 4
#define GDRFAB_TAG_FORMAT   0xAAAAAAAAAAAAAAAAULL /* FI_TAG_GENERIC */
/* Rendezvous and RMA split messages into pieces the port accepts. */
#define GDRFAB_MAX_MSG_SIZE (1ULL << 31)

/* The fi_info gdrfab advertises for one port, hints not applied. NULL when
 * out of memory. */
struct fi_info *gdrfab_info_for_port(const struct gdrfab_port_desc *port);

/* Whether hints (may be NULL) can be met by prov at API version; 0 or
 * -FI_ENODATA with the unmet hint described in why. */
int gdrfab_info_match(const struct fi_info *prov, const struct fi_info *hints,
		      uint32_t version, char *why, size_t why_len);

/* Narrows a matching info to what the hints asked for. */
void gdrfab_info_apply_hints(struct fi_info *info, const struct fi_info *hints,
			     uint32_t version);

/* The registration modes gdrfab needs of an application asking for caps
 * (0: every cap), hmem telling whether FI_HMEM is offered at all. */
int gdrfab_mr_mode_needed(uint64_t caps, bool hmem);
/* Whether the application's mr_mode (hints) covers what gdrfab needs
 * (needed, from gdrfab_mr_mode_needed), as fi_domain(3) defines it for API
 * version. */
int gdrfab_mr_mode_ok(uint32_t version, int needed, int user_mode);
/* Whether the application takes FI_MR_LOCAL: the mr_mode bit, or before
 * API 1.5 (and with FI_MR_BASIC or FI_MR_SCALABLE) the mode bit
 * FI_LOCAL_MR, which fi_getinfo(3) says is ignored otherwise. */
bool gdrfab_mr_local_accepted(const struct fi_info *hints, uint32_t version);
/* The caps an info answers hints with (every cap of prov's when the hints
 * name none): an application whose mr_mode (API >= 1.5) lacks what an RMA
 * target needs, and that did not ask for remote access by name, is served
 * as an RMA initiator only, without FI_REMOTE_READ and FI_REMOTE_WRITE,
 * as libfabric's own providers trim them (ofi_get_info_caps). */
uint64_t gdrfab_caps_granted(const struct fi_info *prov,
			     const struct fi_info *hints, uint32_t version);

int gdrfab_getinfo(uint32_t version, const char *node, const char *service,
		   uint64_t flags, const struct fi_info *hints,
		   struct fi_info **info);

/* NIC attributes (fi_info->nic) for a port, as libfabric's fi_nic(3). */
struct fid_nic *gdrfab_nic_create(const struct gdrfab_port_desc *port);

#endif /* GDRFAB_INFO_H */
