/* SPDX-License-Identifier: BSD-2-Clause */
/* Which atomics go to the NIC (FI_GDRFAB_NIC_ATOMICS): the device caps
 * each setting accepts, what a side advertises in its connection
 * messages, which pairs of sides qualify, and which operations, datatypes,
 * counts, addresses and keys are offloaded. */
#include <criterion/criterion.h>
#include <rdma/fi_atomic.h>

#include "gdrfab_atomic.h"

enum {
	AUTO = GDRFAB_NIC_ATOMICS_AUTO,
	OFF = GDRFAB_NIC_ATOMICS_OFF,
	UNSAFE = GDRFAB_NIC_ATOMICS_UNSAFE_HCA
};

Test(atomic_nic, names_in_enum_order)
{
	cr_assert_str_eq(gdrfab_nic_atomics_names[AUTO], "auto");
	cr_assert_str_eq(gdrfab_nic_atomics_names[OFF], "off");
	cr_assert_str_eq(gdrfab_nic_atomics_names[UNSAFE], "unsafe_hca");
	cr_assert_null(gdrfab_nic_atomics_names[3]);
}

Test(atomic_nic, caps_per_setting)
{
	/* auto: only a device atomic with respect to the CPU. */
	cr_assert(gdrfab_nic_atomic_cap_usable(AUTO, IBV_ATOMIC_GLOB));
	cr_assert_not(gdrfab_nic_atomic_cap_usable(AUTO, IBV_ATOMIC_HCA));
	cr_assert_not(gdrfab_nic_atomic_cap_usable(AUTO, IBV_ATOMIC_NONE));
	/* off: nothing. */
	cr_assert_not(gdrfab_nic_atomic_cap_usable(OFF, IBV_ATOMIC_GLOB));
	cr_assert_not(gdrfab_nic_atomic_cap_usable(OFF, IBV_ATOMIC_HCA));
	/* unsafe_hca: HCA too, never a device without atomics. */
	cr_assert(gdrfab_nic_atomic_cap_usable(UNSAFE, IBV_ATOMIC_GLOB));
	cr_assert(gdrfab_nic_atomic_cap_usable(UNSAFE, IBV_ATOMIC_HCA));
	cr_assert_not(gdrfab_nic_atomic_cap_usable(UNSAFE, IBV_ATOMIC_NONE));
	/* An unknown setting (never parsed into one) offloads nothing. */
	cr_assert_not(gdrfab_nic_atomic_cap_usable(7, IBV_ATOMIC_GLOB));
}

Test(atomic_nic, advertised_flags)
{
	cr_assert_eq(gdrfab_nic_atomic_cm_flag(AUTO, IBV_ATOMIC_GLOB),
		     GDRFAB_CM_F_NIC_ATOMIC_GLOB);
	cr_assert_eq(gdrfab_nic_atomic_cm_flag(AUTO, IBV_ATOMIC_HCA), 0);
	cr_assert_eq(gdrfab_nic_atomic_cm_flag(OFF, IBV_ATOMIC_GLOB), 0);
	cr_assert_eq(gdrfab_nic_atomic_cm_flag(UNSAFE, IBV_ATOMIC_HCA),
		     GDRFAB_CM_F_NIC_ATOMIC_HCA);
	cr_assert_eq(gdrfab_nic_atomic_cm_flag(UNSAFE, IBV_ATOMIC_GLOB),
		     GDRFAB_CM_F_NIC_ATOMIC_GLOB);
	cr_assert_eq(gdrfab_nic_atomic_cm_flag(UNSAFE, IBV_ATOMIC_NONE), 0);
	/* Distinct from the RMA-event flag that shares the field. */
	cr_assert_eq(
		(GDRFAB_CM_F_NIC_ATOMIC_GLOB | GDRFAB_CM_F_NIC_ATOMIC_HCA) &
			0x1,
		0);
}

Test(atomic_nic, pairs)
{
	uint16_t glob = GDRFAB_CM_F_NIC_ATOMIC_GLOB;
	uint16_t hca = GDRFAB_CM_F_NIC_ATOMIC_HCA;

	/* auto: both sides GLOB. */
	cr_assert(gdrfab_nic_atomic_pair(AUTO, IBV_ATOMIC_GLOB, glob));
	cr_assert_not(gdrfab_nic_atomic_pair(AUTO, IBV_ATOMIC_GLOB, hca));
	cr_assert_not(gdrfab_nic_atomic_pair(AUTO, IBV_ATOMIC_GLOB, 0));
	cr_assert_not(gdrfab_nic_atomic_pair(AUTO, IBV_ATOMIC_HCA, glob));
	/* A peer of an older version, or with the RMA-event flag only. */
	cr_assert_not(gdrfab_nic_atomic_pair(AUTO, IBV_ATOMIC_GLOB, 0x1));
	/* off: never. */
	cr_assert_not(gdrfab_nic_atomic_pair(OFF, IBV_ATOMIC_GLOB, glob));
	/* unsafe_hca: any device with atomics on both sides. */
	cr_assert(gdrfab_nic_atomic_pair(UNSAFE, IBV_ATOMIC_HCA, hca));
	cr_assert(gdrfab_nic_atomic_pair(UNSAFE, IBV_ATOMIC_HCA, glob));
	cr_assert(gdrfab_nic_atomic_pair(UNSAFE, IBV_ATOMIC_GLOB, hca));
	cr_assert_not(gdrfab_nic_atomic_pair(UNSAFE, IBV_ATOMIC_NONE, hca));
	cr_assert_not(gdrfab_nic_atomic_pair(UNSAFE, IBV_ATOMIC_HCA, 0));
}

static struct gdrfab_nic_atomic_query q(int kind, int op, int dt)
{
	struct gdrfab_nic_atomic_query r = {.kind = kind,
					    .op = op,
					    .datatype = dt,
					    .count = 1,
					    .addr = 0x10000,
					    .key = 0x1234};
	return r;
}

Test(atomic_nic, operations)
{
	/* The two the NIC has: FETCH_ADD (fi_atomic and fi_fetch_atomic
	 * FI_SUM) and CMP_SWP (fi_compare_atomic FI_CSWAP). */
	for (int dt = FI_INT64; dt <= FI_UINT64; dt++) {
		struct gdrfab_nic_atomic_query a =
			q(GDRFAB_ATOMIC_WRITE, FI_SUM, dt);
		struct gdrfab_nic_atomic_query f =
			q(GDRFAB_ATOMIC_FETCH, FI_SUM, dt);
		struct gdrfab_nic_atomic_query c =
			q(GDRFAB_ATOMIC_COMPARE, FI_CSWAP, dt);

		cr_assert(gdrfab_nic_atomic_eligible(&a), "dt %d", dt);
		cr_assert(gdrfab_nic_atomic_eligible(&f), "dt %d", dt);
		cr_assert(gdrfab_nic_atomic_eligible(&c), "dt %d", dt);
	}
	/* Every other op stays on the protocol. */
	for (int op = FI_MIN; op <= FI_MSWAP; op++) {
		for (int kind = GDRFAB_ATOMIC_WRITE;
		     kind <= GDRFAB_ATOMIC_COMPARE; kind++) {
			struct gdrfab_nic_atomic_query x =
				q(kind, op, FI_INT64);
			bool want = (op == FI_SUM &&
				     kind != GDRFAB_ATOMIC_COMPARE) ||
				    (op == FI_CSWAP &&
				     kind == GDRFAB_ATOMIC_COMPARE);

			cr_assert_eq(gdrfab_nic_atomic_eligible(&x), want,
				     "op %d kind %d", op, kind);
		}
	}
}

Test(atomic_nic, datatypes_counts_targets)
{
	struct gdrfab_nic_atomic_query x;
	const int others[] = {FI_INT8,	FI_UINT8,  FI_INT16, FI_UINT16,
			      FI_INT32, FI_UINT32, FI_FLOAT, FI_DOUBLE};

	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		x = q(GDRFAB_ATOMIC_FETCH, FI_SUM, others[i]);
		cr_assert_not(gdrfab_nic_atomic_eligible(&x), "dt %d",
			      others[i]);
	}
	/* One element only. */
	x = q(GDRFAB_ATOMIC_FETCH, FI_SUM, FI_UINT64);
	x.count = 2;
	cr_assert_not(gdrfab_nic_atomic_eligible(&x));
	/* 8-byte aligned target. */
	for (uint64_t off = 1; off < 8; off++) {
		x = q(GDRFAB_ATOMIC_COMPARE, FI_CSWAP, FI_UINT64);
		x.addr += off;
		cr_assert_not(gdrfab_nic_atomic_eligible(&x), "off %llu",
			      (unsigned long long)off);
	}
	/* A staged GPU MR's key (above 32 bits) stays with the CPU. */
	x = q(GDRFAB_ATOMIC_FETCH, FI_SUM, FI_INT64);
	x.key = 0x4744520000000005ULL;
	cr_assert_not(gdrfab_nic_atomic_eligible(&x));
	x.key = UINT32_MAX;
	cr_assert(gdrfab_nic_atomic_eligible(&x));
	/* Remote CQ data: the NIC cannot deliver it. */
	x = q(GDRFAB_ATOMIC_WRITE, FI_SUM, FI_INT64);
	x.remote_data = true;
	cr_assert_not(gdrfab_nic_atomic_eligible(&x));
}
