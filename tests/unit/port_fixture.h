/* SPDX-License-Identifier: BSD-2-Clause */
/* Port descriptions like the ones rdma-core reports, for tests that need
 * no hardware: an rxe port (no PCI device) and a ConnectX InfiniBand port. */
#ifndef PORT_FIXTURE_H
#define PORT_FIXTURE_H

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "gdrfab_verbs.h"

static inline struct gdrfab_port_desc fixture_rxe_port(void)
{
	struct gdrfab_port_desc p;

	memset(&p, 0, sizeof(p));
	snprintf(p.dev_name, sizeof(p.dev_name), "rxe0");
	p.port_num = 1;
	p.link_layer = GDRFAB_LINK_ETHERNET;
	p.active = true;
	inet_pton(AF_INET6, "::ffff:192.0.2.1", p.gid.raw);
	p.gid_index = 1;
	snprintf(p.fabric_name, sizeof(p.fabric_name), "RoCE-192.0.2.0/24");
	snprintf(p.netdev, sizeof(p.netdev), "veth0");
	snprintf(p.link_address, sizeof(p.link_address), "192.0.2.1");
	p.active_mtu = 4096;
	p.speed = 10000000000ULL;
	p.max_msg_sz = 1u << 23;
	p.vendor_id = 0xffffff;
	snprintf(p.driver, sizeof(p.driver), "rdma_rxe");
	p.max_qp_wr = 1 << 20;
	p.max_sge = 32;
	p.max_cqe = 32767;
	p.max_cq = 1 << 20;
	p.max_qp = 1 << 20;
	p.max_mr = 1 << 19;
	return p;
}

static inline struct gdrfab_port_desc fixture_ib_port(void)
{
	struct gdrfab_port_desc p = fixture_rxe_port();

	snprintf(p.dev_name, sizeof(p.dev_name), "mlx5_3");
	p.link_layer = GDRFAB_LINK_IB;
	p.lid = 0x2a;
	inet_pton(AF_INET6, "fe80::b8ce:f603:a:1", p.gid.raw);
	p.gid_index = 0;
	snprintf(p.fabric_name, sizeof(p.fabric_name), "IB-0xfe80000000000000");
	snprintf(p.link_address, sizeof(p.link_address), "fe80::b8ce:f603:a:1");
	p.vendor_id = 0x02c9;
	p.vendor_part_id = 0x101b;
	p.max_sge = 2; /* fewer than GDRFAB_IOV_LIMIT */
	p.max_qp_wr = 512;
	snprintf(p.driver, sizeof(p.driver), "mlx5_core");
	snprintf(p.fw_ver, sizeof(p.fw_ver), "20.31.1014");
	p.pci.valid = true;
	p.pci.domain = 0;
	p.pci.bus = 0x3b;
	p.pci.device = 0;
	p.pci.function = 1;
	return p;
}

#endif /* PORT_FIXTURE_H */
