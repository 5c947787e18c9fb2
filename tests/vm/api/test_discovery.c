/* SPDX-License-Identifier: BSD-2-Clause */
/* Provider discovery through libfabric's real fi_getinfo, on rxe0/rxe1. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_ext_gdrfab.h>

#include "vm_helpers.h"

TestSuite(discovery, .init = require_vm);

static int count_infos(const struct fi_info *info)
{
	int n = 0;

	for (; info; info = info->next)
		n++;
	return n;
}

static const struct fi_info *find(const struct fi_info *info,
				  const char *domain)
{
	for (; info; info = info->next) {
		if (!strcmp(info->domain_attr->name, domain))
			return info;
	}
	return NULL;
}

Test(discovery, one_info_per_active_port_of_each_rxe)
{
	struct fi_info *info =
		gdrfab_getinfo_hints(gdrfab_hints(), 0, NULL, NULL);
	const struct fi_info *r0, *r1;

	cr_assert_not_null(info);
	cr_assert_eq(count_infos(info), 2);
	r0 = find(info, "rxe0");
	r1 = find(info, "rxe1");
	cr_assert_not_null(r0);
	cr_assert_not_null(r1);
	cr_assert_str_eq(r0->fabric_attr->prov_name, "gdrfab");
	cr_assert_eq(r0->ep_attr->type, FI_EP_RDM);
	/* Both ports are on 192.0.2.0/24: one fabric. */
	cr_assert_str_eq(r0->fabric_attr->name, "RoCE-192.0.2.0/24");
	cr_assert_str_eq(r1->fabric_attr->name, r0->fabric_attr->name);
	cr_assert_eq(r0->src_addrlen, FI_GDRFAB_ADDR_LEN);
	cr_assert_neq(memcmp(r0->src_addr, r1->src_addr, r0->src_addrlen), 0);
	fi_freeinfo(info);
}

/* fabtests' getinfo_caps2: no hints at all (FI_PROVIDER names gdrfab),
 * and each context's caps are its own side's. */
Test(discovery, no_hints_give_each_side_its_own_caps)
{
	struct fi_info *info = NULL, *i;
	int ret;

	setenv("FI_PROVIDER", "gdrfab", 1);
	ret = fi_getinfo(TEST_VERSION, NULL, NULL, 0, NULL, &info);
	cr_assert_eq(ret, 0, "fi_getinfo: %s", fi_strerror(-ret));
	for (i = info; i; i = i->next) {
		cr_assert_eq(i->tx_attr->caps &
				     (FI_RECV | FI_REMOTE_READ |
				      FI_REMOTE_WRITE | FI_DIRECTED_RECV |
				      FI_MULTI_RECV | FI_SOURCE | FI_RMA_EVENT |
				      FI_LOCAL_COMM | FI_REMOTE_COMM),
			     0);
		cr_assert_eq(i->rx_attr->caps &
				     (FI_SEND | FI_READ | FI_WRITE |
				      FI_LOCAL_COMM | FI_REMOTE_COMM),
			     0);
		cr_assert_eq(i->rx_attr->caps & ~i->caps, 0);
		cr_assert_eq(i->tx_attr->caps & ~i->caps, 0);
		cr_assert(i->tx_attr->caps & FI_SEND);
		cr_assert(i->rx_attr->caps & FI_RECV);
	}
	fi_freeinfo(info);
}

Test(discovery, nic_attributes_come_from_the_device)
{
	struct fi_info *info = gdrfab_info_for("rxe1");
	const struct fid_nic *nic = info->nic;

	cr_assert_not_null(nic);
	cr_assert_str_eq(nic->device_attr->name, "rxe1");
	cr_assert_str_eq(nic->device_attr->driver, "rdma_rxe");
	cr_assert_str_eq(nic->device_attr->vendor_id, "0xffffff");
	cr_assert_eq(nic->bus_attr->bus_type, FI_BUS_UNKNOWN,
		     "rxe has no PCI function");
	cr_assert_str_eq(nic->link_attr->address, "192.0.2.2");
	cr_assert_eq(nic->link_attr->mtu, 4096, "veth MTU 4500 -> 4096");
	cr_assert_eq(nic->link_attr->state, FI_LINK_UP);
	cr_assert_str_eq(nic->link_attr->network_type, "Ethernet");
	cr_assert_gt(nic->link_attr->speed, 0);
	fi_freeinfo(info);
}

Test(discovery, advertised_limits_fit_the_device)
{
	struct fi_info *info = gdrfab_info_for("rxe0");

	/* rxe: max_qp_wr 1048576, max_msg_sz 8 MiB, max_mr 524287; larger
	 * messages are split into 8 MiB pieces. */
	cr_assert_eq(info->tx_attr->size, 1024);
	cr_assert_geq(info->ep_attr->max_msg_size, 1ULL << 30);
	cr_assert_eq(info->domain_attr->mr_cnt, 524287);
	cr_assert_eq(info->domain_attr->mr_key_size, 8);
	cr_assert_eq(info->domain_attr->threading, FI_THREAD_SAFE);
	fi_freeinfo(info);
}

/* A capability is matched exactly when it is advertised. */
Test(discovery, capability_hints_match_what_is_advertised)
{
	static const uint64_t caps[] = {FI_MSG,	       FI_TAGGED, FI_RMA,
					FI_ATOMIC,     FI_HMEM,	  FI_LOCAL_COMM,
					FI_REMOTE_COMM};
	struct fi_info *all = gdrfab_info_for("rxe0");

	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		struct fi_info *hints = gdrfab_hints(), *got;
		int ret;

		hints->caps = caps[i];
		got = gdrfab_getinfo_hints(hints, 0, NULL, &ret);
		if (all->caps & caps[i]) {
			cr_expect_not_null(got,
					   "cap %s advertised but not matched",
					   fi_tostr(&caps[i], FI_TYPE_CAPS));
		} else {
			cr_expect_null(got, "cap %s matched but not advertised",
				       fi_tostr(&caps[i], FI_TYPE_CAPS));
			cr_expect_eq(ret, -FI_ENODATA);
		}
		fi_freeinfo(got);
	}
	cr_expect_neq(all->caps & FI_ATOMIC, 0, "gdrfab offers atomics");
	fi_freeinfo(all);
}

Test(discovery, hints_it_cannot_meet_give_enodata)
{
	struct fi_info *hints;
	int ret;

	hints = gdrfab_hints();
	hints->ep_attr->type = FI_EP_DGRAM;
	cr_assert_null(gdrfab_getinfo_hints(hints, 0, NULL, &ret));
	cr_assert_eq(ret, -FI_ENODATA);

	hints = gdrfab_hints();
	hints->ep_attr->type = FI_EP_MSG;
	cr_assert_null(gdrfab_getinfo_hints(hints, 0, NULL, &ret));
	cr_assert_eq(ret, -FI_ENODATA);

	/* No PROV_KEY: no RMA target, when asked for by name; otherwise
	 * served as an RMA initiator only (as libfabric's own providers). */
	hints = gdrfab_hints();
	hints->caps = FI_RMA | FI_REMOTE_WRITE;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR;
	cr_assert_null(gdrfab_getinfo_hints(hints, 0, NULL, &ret));
	cr_assert_eq(ret, -FI_ENODATA);
	hints = gdrfab_hints();
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR;
	{
		struct fi_info *info =
			gdrfab_getinfo_hints(hints, 0, NULL, &ret);

		cr_assert_not_null(info, "%s", fi_strerror(-ret));
		cr_assert_eq(info->caps & (FI_REMOTE_READ | FI_REMOTE_WRITE),
			     0);
		cr_assert_eq(info->domain_attr->mr_mode & ~FI_MR_VIRT_ADDR, 0);
		fi_freeinfo(info);
	}

	hints = gdrfab_hints();
	hints->domain_attr->name = strdup("mlx5_0");
	cr_assert_null(gdrfab_getinfo_hints(hints, 0, NULL, &ret));
	cr_assert_eq(ret, -FI_ENODATA);

	hints = gdrfab_hints();
	hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
	cr_assert_null(gdrfab_getinfo_hints(hints, 0, NULL, &ret));
	cr_assert_eq(ret, -FI_ENODATA);
}

/* Hints as Open MPI's components start them: gdrfab by name, RDM, both
 * FI_CONTEXT modes, caps. */
static struct fi_info *mpi_hints(uint64_t caps)
{
	struct fi_info *hints = fi_allocinfo();

	cr_assert(hints);
	hints->fabric_attr->prov_name = strdup("gdrfab");
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = caps;
	return hints;
}

/* Open MPI 4.1's mtl ofi, replayed (ompi_mtl_ofi_component_init): API 1.5,
 * mr_mode 0 (it registers nothing and passes no descriptors), tagged with
 * directed receives; then it needs the top tag bits for its CID and 4
 * bytes of CQ data. */
Test(discovery, open_mpi_mtl_hints_select_gdrfab)
{
	struct fi_info *hints = mpi_hints(FI_TAGGED | FI_LOCAL_COMM |
					  FI_REMOTE_COMM | FI_DIRECTED_RECV),
		       *info = NULL;
	int ret;

	hints->tx_attr->msg_order = FI_ORDER_SAS;
	hints->rx_attr->msg_order = FI_ORDER_SAS;
	hints->tx_attr->op_flags = FI_COMPLETION;
	hints->rx_attr->op_flags = FI_COMPLETION;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->domain_attr->cq_data_size = 4;
	hints->domain_attr->av_type = FI_AV_MAP;
	hints->domain_attr->resource_mgmt = FI_RM_ENABLED;
	hints->domain_attr->mr_mode = 0;
	ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, &info);
	cr_assert_eq(ret, 0, "fi_getinfo: %s", fi_strerror(-ret));
	cr_assert_eq(info->domain_attr->mr_mode, 0);
	cr_assert_eq(info->ep_attr->mem_tag_format >> 63, 1,
		     "Open MPI counts a CID bit per leading zero");
	cr_assert_geq(info->domain_attr->cq_data_size, 4);
	cr_assert(info->caps & FI_DIRECTED_RECV);
	cr_assert_eq(info->domain_attr->threading, FI_THREAD_DOMAIN);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/* Open MPI's btl ofi refuses any mr_mode with FI_MR_LOCAL
 * (mca_btl_ofi_component_init's validate_info). */
Test(discovery, an_rma_user_without_mr_local_is_served)
{
	struct fi_info *hints = mpi_hints(FI_RMA), *info = NULL;
	int ret;

	hints->tx_attr->iov_limit = 1;
	hints->rx_attr->iov_limit = 1;
	hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
	hints->domain_attr->mr_mode =
		FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, &info);
	cr_assert_eq(ret, 0, "fi_getinfo: %s", fi_strerror(-ret));
	cr_assert_eq(
		info->domain_attr->mr_mode &
			~(FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR),
		0);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

Test(discovery, too_new_api_version_is_refused)
{
	struct fi_info *hints = gdrfab_hints(), *info = NULL;
	int ret = fi_getinfo(FI_VERSION(1, 99), NULL, NULL, 0, hints, &info);

	cr_assert_lt(ret, 0, "fi_getinfo(1.99) returned an info");
	cr_assert_null(info);
	fi_freeinfo(hints);
}

Test(discovery, source_node_selects_a_port)
{
	static const char *const nodes[] = {"192.0.2.2", "rxe1"};

	for (size_t i = 0; i < 2; i++) {
		struct fi_info *info = gdrfab_getinfo_hints(
			gdrfab_hints(), FI_SOURCE, nodes[i], NULL);

		cr_assert_not_null(info, "node %s", nodes[i]);
		cr_assert_eq(count_infos(info), 1);
		cr_assert_str_eq(info->domain_attr->name, "rxe1");
		fi_freeinfo(info);
	}
	cr_assert_null(gdrfab_getinfo_hints(gdrfab_hints(), FI_SOURCE,
					    "198.51.100.7", NULL));
}

Test(discovery, destination_node_in_gdrfab_form_sets_dest_addr)
{
	const char *node = "gdrfab://::ffff:192.0.2.2/lid=0/qpn=17/id=5/port=1";
	struct fi_info *info =
		gdrfab_getinfo_hints(gdrfab_hints(), 0, node, NULL);
	const uint8_t *dest;

	cr_assert_not_null(info);
	cr_assert_eq(info->dest_addrlen, FI_GDRFAB_ADDR_LEN);
	dest = info->dest_addr;
	cr_assert_eq(dest[1], 1, "port");
	cr_assert_eq(dest[8 + 15], 2, "last GID byte (192.0.2.2)");
	fi_freeinfo(info);
}

Test(discovery, device_parameter_filters_devices)
{
	struct fi_info *info;

	/* Read when the provider loads: this test runs in its own process. */
	setenv("FI_GDRFAB_DEVICE", "rxe1", 1);
	info = gdrfab_getinfo_hints(gdrfab_hints(), 0, NULL, NULL);
	cr_assert_not_null(info);
	cr_assert_eq(count_infos(info), 1);
	cr_assert_str_eq(info->domain_attr->name, "rxe1");
	fi_freeinfo(info);
}

Test(discovery, gid_index_parameter_picks_the_link_local_gid)
{
	struct fi_info *info;

	/* GID 0 of an rxe port is its fe80:: link-local address. */
	setenv("FI_GDRFAB_GID_INDEX", "0", 1);
	info = gdrfab_info_for("rxe0");
	cr_assert_str_eq(info->fabric_attr->name, "RoCE-fe80::/64");
	cr_assert_eq(strncmp(info->nic->link_attr->address, "fe80::", 6), 0);
	fi_freeinfo(info);
}

Test(discovery, queue_size_parameters_are_used)
{
	struct fi_info *info;

	setenv("FI_GDRFAB_TX_SIZE", "64", 1);
	setenv("FI_GDRFAB_RX_SIZE", "-3", 1); /* invalid: default kept */
	info = gdrfab_info_for("rxe0");
	cr_assert_eq(info->tx_attr->size, 64);
	cr_assert_eq(info->rx_attr->size, 1024);
	fi_freeinfo(info);
}
