/* SPDX-License-Identifier: BSD-2-Clause */
/* Which atomics go to the NIC (see gdrfab_atomic_nic.h). */
#include <rdma/fi_atomic.h>

#include "gdrfab_atomic_nic.h"

bool gdrfab_nic_atomic_cap_usable(int mode, enum ibv_atomic_cap cap)
{
	switch (mode) {
	case GDRFAB_NIC_ATOMICS_AUTO: return cap == IBV_ATOMIC_GLOB;
	case GDRFAB_NIC_ATOMICS_UNSAFE_HCA:
		return cap == IBV_ATOMIC_GLOB || cap == IBV_ATOMIC_HCA;
	default: return false;
	}
}

uint16_t gdrfab_nic_atomic_cm_flag(int mode, enum ibv_atomic_cap cap)
{
	if (!gdrfab_nic_atomic_cap_usable(mode, cap))
		return 0;
	return cap == IBV_ATOMIC_GLOB ? GDRFAB_CM_F_NIC_ATOMIC_GLOB
				      : GDRFAB_CM_F_NIC_ATOMIC_HCA;
}

bool gdrfab_nic_atomic_pair(int mode, enum ibv_atomic_cap local_cap,
			    uint16_t peer_cm_flags)
{
	uint16_t ok = GDRFAB_CM_F_NIC_ATOMIC_GLOB;

	if (!gdrfab_nic_atomic_cap_usable(mode, local_cap))
		return false;
	if (mode == GDRFAB_NIC_ATOMICS_UNSAFE_HCA)
		ok |= GDRFAB_CM_F_NIC_ATOMIC_HCA;
	return (peer_cm_flags & ok) != 0;
}

bool gdrfab_nic_atomic_eligible(const struct gdrfab_nic_atomic_query *q)
{
	if (q->datatype != FI_INT64 && q->datatype != FI_UINT64)
		return false;
	if (q->count != 1 || q->addr % 8 || q->remote_data)
		return false;
	/* Keys above 32 bits name staged GPU memory, which only the
	 * target's CPU reaches. */
	if (q->key > UINT32_MAX)
		return false;
	switch (q->kind) {
	case GDRFAB_ATOMIC_WRITE:
	case GDRFAB_ATOMIC_FETCH: return q->op == FI_SUM;
	case GDRFAB_ATOMIC_COMPARE: return q->op == FI_CSWAP;
	default: return false;
	}
}
