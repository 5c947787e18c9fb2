/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * How a peer's port is addressed: by LID on InfiniBand, by GID with a GRH
 * on RoCE. The VM has RoCE (rxe) only, so the InfiniBand choice is
 * checked here, on the attributes themselves.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_rc.h"

static struct gdrfab_addr peer(uint16_t lid, const char *gid)
{
	struct gdrfab_addr a = {
		.version = GDRFAB_ADDR_VERSION,
		.port_num = 1,
		.lid_be = htons(lid),
		.qpn_be = htonl(77),
	};

	inet_pton(AF_INET6, gid, a.gid);
	return a;
}

TestSuite(rc_ah, .timeout = 30);

Test(rc_ah, infiniband_peer_is_reached_by_lid_without_grh)
{
	struct gdrfab_rc_params p = {.port_num = 2, .gid_index = 0};
	struct gdrfab_addr a = peer(0x1234, "fe80::2:c903:a:b0c1");
	struct ibv_ah_attr ah;

	memset(&ah, 0xff, sizeof(ah));
	gdrfab_rc_ah_attr(&ah, &p, &a);
	cr_assert_eq(ah.dlid, 0x1234);
	cr_assert_eq(ah.port_num, 2);
	cr_assert_eq(ah.is_global, 0);
	cr_assert_eq(ah.sl, 0);
	cr_assert_eq(ah.src_path_bits, 0);
}

Test(rc_ah, roce_peer_is_reached_by_gid_with_the_chosen_sgid)
{
	struct gdrfab_rc_params p = {
		.port_num = 1, .gid_index = 3, .roce = true};
	struct gdrfab_addr a = peer(0, "::ffff:192.0.2.2");
	struct ibv_ah_attr ah;

	gdrfab_rc_ah_attr(&ah, &p, &a);
	cr_assert_eq(ah.is_global, 1);
	cr_assert_eq(ah.dlid, 0);
	cr_assert_eq(ah.grh.sgid_index, 3);
	cr_assert_gt(ah.grh.hop_limit, 1, "a GRH must be routable");
	cr_assert_arr_eq(ah.grh.dgid.raw, a.gid, 16);
}

Test(rc_ah, peer_without_lid_gets_a_grh_even_on_infiniband)
{
	struct gdrfab_rc_params p = {.port_num = 1, .gid_index = 0};
	struct gdrfab_addr a = peer(0, "fe80::2:c903:a:b0c2");
	struct ibv_ah_attr ah;

	gdrfab_rc_ah_attr(&ah, &p, &a);
	cr_assert_eq(ah.is_global, 1);
	cr_assert_arr_eq(ah.grh.dgid.raw, a.gid, 16);
}
