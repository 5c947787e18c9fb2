/* SPDX-License-Identifier: BSD-2-Clause */
/* What is derived from rdma-core and sysfs: speeds, PCI addresses, fabric
 * names, and the fi_info->nic that libfabric duplicates and prints. */
#include <criterion/criterion.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_info.h"
#include "port_fixture.h"

TestSuite(verbs_desc, .timeout = 30);

Test(verbs_desc, port_speed_from_width_and_speed_codes)
{
	/* 4x EDR = 100 Gb/s; 4x HDR = 200; 1x QDR = 10; 2x NDR = 200. */
	cr_assert_eq(gdrfab_verbs_port_speed(2, 32), 100000000000ULL);
	cr_assert_eq(gdrfab_verbs_port_speed(2, 64), 200000000000ULL);
	cr_assert_eq(gdrfab_verbs_port_speed(1, 4), 10000000000ULL);
	cr_assert_eq(gdrfab_verbs_port_speed(16, 128), 200000000000ULL);
	cr_assert_eq(gdrfab_verbs_port_speed(3, 32), 0, "unknown width");
	cr_assert_eq(gdrfab_verbs_port_speed(2, 3), 0, "unknown speed");
}

Test(verbs_desc, pci_addresses_as_sysfs_names_them)
{
	struct gdrfab_pci_addr pci;

	cr_assert_eq(gdrfab_parse_pci_addr("0000:3b:00.1", &pci), 0);
	cr_assert(pci.valid);
	cr_assert_eq(pci.domain, 0);
	cr_assert_eq(pci.bus, 0x3b);
	cr_assert_eq(pci.device, 0);
	cr_assert_eq(pci.function, 1);
	cr_assert_eq(gdrfab_parse_pci_addr("0001:e1:1f.7", &pci), 0);
	cr_assert_eq(pci.domain, 1);
	cr_assert_eq(pci.bus, 0xe1);
	cr_assert_eq(pci.device, 0x1f);
	cr_assert_eq(pci.function, 7);
	cr_assert_eq(gdrfab_parse_pci_addr("veth0", &pci), -FI_EINVAL);
	cr_assert_not(pci.valid);
	cr_assert_eq(gdrfab_parse_pci_addr("0000:3b:20.0", &pci), -FI_EINVAL);
	cr_assert_eq(gdrfab_parse_pci_addr("0000:3b:00.8", &pci), -FI_EINVAL);
	cr_assert_eq(gdrfab_parse_pci_addr("0000:3b:00.1x", &pci), -FI_EINVAL);
}

Test(verbs_desc, roce_fabric_name_is_the_ip_network)
{
	char name[64];
	uint32_t ip;

	inet_pton(AF_INET, "192.0.2.77", &ip);
	gdrfab_roce_fabric_name(name, sizeof(name), ip, 24);
	cr_assert_str_eq(name, "RoCE-192.0.2.0/24");
	gdrfab_roce_fabric_name(name, sizeof(name), ip, 32);
	cr_assert_str_eq(name, "RoCE-192.0.2.77/32");
	inet_pton(AF_INET, "10.200.3.4", &ip);
	gdrfab_roce_fabric_name(name, sizeof(name), ip, 12);
	cr_assert_str_eq(name, "RoCE-10.192.0.0/12");
	gdrfab_roce_fabric_name(name, sizeof(name), ip, 0);
	cr_assert_str_eq(name, "RoCE-0.0.0.0/0");
}

Test(verbs_desc, nic_of_a_pci_port)
{
	struct gdrfab_port_desc port = fixture_ib_port();
	struct fid_nic *nic = gdrfab_nic_create(&port);

	cr_assert_not_null(nic);
	cr_assert_eq(nic->fid.fclass, FI_CLASS_NIC);
	cr_assert_str_eq(nic->device_attr->name, "mlx5_3");
	cr_assert_str_eq(nic->device_attr->vendor_id, "0x02c9");
	cr_assert_str_eq(nic->device_attr->device_id, "0x101b");
	cr_assert_str_eq(nic->device_attr->driver, "mlx5_core");
	cr_assert_str_eq(nic->device_attr->firmware, "20.31.1014");
	cr_assert_eq(nic->bus_attr->bus_type, FI_BUS_PCI);
	cr_assert_eq(nic->bus_attr->attr.pci.bus_id, 0x3b);
	cr_assert_eq(nic->bus_attr->attr.pci.function_id, 1);
	cr_assert_eq(nic->link_attr->state, FI_LINK_UP);
	cr_assert_eq(nic->link_attr->mtu, 4096);
	cr_assert_str_eq(nic->link_attr->network_type, "InfiniBand");
	cr_assert_eq(fi_close(&nic->fid), 0);
}

Test(verbs_desc, nic_of_rxe_has_no_bus)
{
	struct gdrfab_port_desc port = fixture_rxe_port();
	struct fid_nic *nic = gdrfab_nic_create(&port);

	cr_assert_not_null(nic->bus_attr, "consumers dereference bus_attr");
	cr_assert_eq(nic->bus_attr->bus_type, FI_BUS_UNKNOWN);
	cr_assert_str_eq(nic->link_attr->address, "192.0.2.1");
	cr_assert_str_eq(nic->link_attr->network_type, "Ethernet");
	cr_assert_str_eq(nic->device_attr->driver, "rdma_rxe");
	fi_close(&nic->fid);
}

Test(verbs_desc, libfabric_duplicates_and_prints_the_nic)
{
	struct gdrfab_port_desc port = fixture_ib_port();
	struct fi_info *info = gdrfab_info_for_port(&port), *dup;
	char *text;

	cr_assert_not_null(info);
	dup = fi_dupinfo(info);
	cr_assert_not_null(dup);
	cr_assert_not_null(dup->nic);
	cr_assert_neq(dup->nic, info->nic);
	cr_assert_neq(dup->nic->device_attr->name,
		      info->nic->device_attr->name);
	cr_assert_str_eq(dup->nic->device_attr->name, "mlx5_3");
	cr_assert_eq(dup->nic->bus_attr->attr.pci.bus_id, 0x3b);
	cr_assert_str_eq(dup->nic->link_attr->address, "fe80::b8ce:f603:a:1");
	text = fi_tostr(dup, FI_TYPE_INFO);
	cr_assert(strstr(text, "name: mlx5_3"), "%s", text);
	cr_assert(strstr(text, "bus_type: FI_BUS_PCI"), "%s", text);
	cr_assert(strstr(text, "bus_id: 59"), "%s", text);
	cr_assert(strstr(text, "network_type: InfiniBand"), "%s", text);
	fi_freeinfo(dup);
	fi_freeinfo(info);
}
