/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Which atomics the NIC executes (FI_GDRFAB_NIC_ATOMICS). Every atomic is
 * otherwise a message the target's CPU applies (gdrfab_atomic.c). The NIC's
 * own 8-byte FETCH_ADD and CMP_SWP are used only where they are atomic with
 * respect to those CPU-applied ones: both devices report IBV_ATOMIC_GLOB.
 * An IBV_ATOMIC_HCA device (soft-RoCE, most ConnectX) is atomic only among
 * its own atomics, so mixing would lose updates; the test-only setting
 * unsafe_hca allows it anyway so that the path runs on rxe.
 *
 * These decisions are pure (no verbs calls), for the unit tests.
 */
#ifndef GDRFAB_ATOMIC_NIC_H
#define GDRFAB_ATOMIC_NIC_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "gdrfab_atomic.h"
#include "gdrfab_params.h"

/* Connection-message flags (gdrfab_cm_msg.cm_flags): the sender's host
 * MRs that allow FI_REMOTE_WRITE accept NIC atomics, and its device is
 * IBV_ATOMIC_GLOB, or IBV_ATOMIC_HCA (sent only under unsafe_hca). */
#define GDRFAB_CM_F_NIC_ATOMIC_GLOB 0x2
#define GDRFAB_CM_F_NIC_ATOMIC_HCA  0x4

/* Whether a device of this atomic_cap takes part in NIC atomics (as
 * initiator and as target) under mode. */
bool gdrfab_nic_atomic_cap_usable(int mode, enum ibv_atomic_cap cap);

/* The GDRFAB_CM_F_NIC_ATOMIC_* flag a side with this device advertises
 * (0: it does not accept NIC atomics). */
uint16_t gdrfab_nic_atomic_cm_flag(int mode, enum ibv_atomic_cap cap);

/* Whether the pair may use NIC atomics: this side's device is usable and
 * the peer advertised a device that mode accepts. */
bool gdrfab_nic_atomic_pair(int mode, enum ibv_atomic_cap local_cap,
			    uint16_t peer_cm_flags);

/* One atomic as the application asked for it. */
struct gdrfab_nic_atomic_query {
	int kind;	  /* enum gdrfab_atomic_kind */
	int op;		  /* enum fi_op */
	int datatype;	  /* enum fi_datatype */
	size_t count;	  /* elements */
	uint64_t addr;	  /* target address */
	uint64_t key;	  /* target key */
	bool remote_data; /* FI_REMOTE_CQ_DATA: the target must see it */
};

/* Whether the atomic goes to the NIC on a pair that may use NIC atomics:
 * FI_SUM (fi_atomic, fi_fetch_atomic) or FI_CSWAP (fi_compare_atomic) on
 * one FI_INT64/FI_UINT64 element at an 8-byte aligned address, with a
 * key of a host MR (not a staged GPU one), and no remote CQ data (which
 * the NIC cannot deliver). */
bool gdrfab_nic_atomic_eligible(const struct gdrfab_nic_atomic_query *q);

#endif /* GDRFAB_ATOMIC_NIC_H */
