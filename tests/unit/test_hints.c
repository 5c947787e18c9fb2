/* SPDX-License-Identifier: BSD-2-Clause */
/* fi_info for a port and hint matching, as fi_getinfo(3) defines it. */
#include <criterion/criterion.h>

#include <rdma/fi_domain.h>

#include "gdrfab.h"
#include "gdrfab_addr.h"
#include "gdrfab_info.h"
#include "port_fixture.h"

#define V117 FI_VERSION(1, 17)

static struct fi_info *prov, *hints;

static void setup(void)
{
	struct gdrfab_port_desc port = fixture_rxe_port();

	prov = gdrfab_info_for_port(&port);
	cr_assert_not_null(prov);
	hints = fi_allocinfo();
	cr_assert_not_null(hints);
	/* What fi_info(1) and most applications send. */
	hints->domain_attr->mr_mode = ~(FI_MR_BASIC | FI_MR_SCALABLE);
}

static void teardown(void)
{
	fi_freeinfo(prov);
	fi_freeinfo(hints);
}

TestSuite(hints, .init = setup, .fini = teardown, .timeout = 30);

static int match(uint32_t version)
{
	char why[256];

	return gdrfab_info_match(prov, hints, version, why, sizeof(why));
}

Test(hints, port_info_describes_the_port)
{
	const struct gdrfab_addr *a = prov->src_addr;

	cr_assert_eq(prov->ep_attr->type, FI_EP_RDM);
	cr_assert_str_eq(prov->domain_attr->name, "rxe0");
	cr_assert_str_eq(prov->fabric_attr->name, "RoCE-192.0.2.0/24");
	cr_assert_null(prov->fabric_attr->prov_name,
		       "libfabric sets prov_name for core providers");
	cr_assert_eq(prov->addr_format, FI_FORMAT_UNSPEC);
	cr_assert_eq(prov->src_addrlen, FI_GDRFAB_ADDR_LEN);
	cr_assert_eq(a->port_num, 1);
	cr_assert_eq(a->qpn_be, 0);
	cr_assert_eq(a->gid[15], 1);
	cr_assert_eq(prov->ep_attr->max_msg_size, GDRFAB_MAX_MSG_SIZE,
		     "larger than the port's 8 MiB: messages are split");
	cr_assert_eq(prov->tx_attr->iov_limit, GDRFAB_IOV_LIMIT);
	cr_assert_eq(prov->domain_attr->mr_mode, GDRFAB_MR_MODE);
	cr_assert_eq(prov->caps & (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC),
		     FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC);
	cr_assert_eq(prov->caps & FI_HMEM, 0);
	/* Atomics keep their order; RMA claims none. */
	cr_assert_eq(prov->tx_attr->msg_order,
		     FI_ORDER_SAS | FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW |
			     FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW);
	cr_assert_eq(prov->domain_attr->cq_data_size, 4);
	cr_assert_not_null(prov->nic);
}

Test(hints, queue_sizes_and_iov_limit_are_capped_by_the_device)
{
	struct gdrfab_port_desc port = fixture_ib_port();
	struct fi_info *ib = gdrfab_info_for_port(&port);

	cr_assert_eq(ib->tx_attr->size, 512);
	cr_assert_eq(ib->rx_attr->size, 512);
	cr_assert_eq(ib->tx_attr->iov_limit, 2);
	fi_freeinfo(ib);
}

Test(hints, null_and_empty_hints_match)
{
	char why[64];

	cr_assert_eq(gdrfab_info_match(prov, NULL, V117, why, sizeof(why)), 0);
	cr_assert_eq(match(V117), 0);
}

/* gdrfab answers for the API of the core that loaded it, from its build
 * headers' version up to the newest it was checked against. */
Test(hints, api_version_follows_the_loading_core)
{
	uint32_t saved = gdrfab_api_version;

	cr_assert_eq(gdrfab_api_for_core(FI_VERSION(1, 9)), GDRFAB_API_MIN);
	cr_assert_eq(gdrfab_api_for_core(FI_VERSION(1, 20)), FI_VERSION(1, 20));
	cr_assert_eq(gdrfab_api_for_core(FI_VERSION(2, 6)), FI_VERSION(2, 6));
	cr_assert_eq(gdrfab_api_for_core(FI_VERSION(2, 9)), GDRFAB_API_MAX);
	/* Loaded by a 1.17 core: a 2.0 request is not for gdrfab. */
	gdrfab_api_version = FI_VERSION(1, 17);
	cr_assert_eq(match(FI_VERSION(2, 0)), -FI_ENODATA);
	cr_assert_eq(match(FI_VERSION(1, 5)), 0);
	/* Loaded by a 2.6 core: what MPICH (the runtime's fi_version) and
	 * Open MPI main (1.18) ask for matches. */
	gdrfab_api_version = FI_VERSION(2, 6);
	cr_assert_eq(match(FI_VERSION(2, 6)), 0);
	cr_assert_eq(match(FI_VERSION(1, 18)), 0);
	cr_assert_eq(match(FI_VERSION(2, 7)), -FI_ENODATA);
	gdrfab_api_version = saved;
}

/* Consumers read the tag width from the format's highest set bit: Open
 * MPI's mtl needs bit 63 (a CID bit per leading zero), aws-ofi-nccl bit 32
 * or above. A format asked for is served as asked. */
Test(hints, tag_format_offers_all_64_bits_and_echoes_a_request)
{
	struct fi_info *info = fi_dupinfo(prov);

	cr_assert_eq(prov->ep_attr->mem_tag_format >> 63, 1);
	cr_assert_eq(prov->ep_attr->mem_tag_format, 0xAAAAAAAAAAAAAAAAULL);
	hints->caps = FI_TAGGED;
	hints->ep_attr->mem_tag_format = 0x00C000007FFFFFFFULL; /* MPICH's */
	cr_assert_eq(match(V117), 0);
	gdrfab_info_apply_hints(info, hints, V117);
	cr_assert_eq(info->ep_attr->mem_tag_format, 0x00C000007FFFFFFFULL);
	fi_freeinfo(info);
}

Test(hints, endpoint_type)
{
	hints->ep_attr->type = FI_EP_DGRAM;
	cr_assert_eq(match(V117), -FI_ENODATA);
	hints->ep_attr->type = FI_EP_MSG;
	cr_assert_eq(match(V117), -FI_ENODATA);
	hints->ep_attr->type = FI_EP_RDM;
	cr_assert_eq(match(V117), 0);
}

Test(hints, capabilities_not_offered_do_not_match)
{
	hints->caps = FI_LOCAL_COMM;
	cr_assert_eq(match(V117), 0);
	hints->caps = FI_COLLECTIVE;
	cr_assert_eq(match(V117), -FI_ENODATA);
	hints->caps = GDRFAB_CAPS;
	cr_assert_eq(match(V117), 0);
	hints->caps = 0;
	hints->tx_attr->caps = FI_COLLECTIVE;
	cr_assert_eq(match(V117), -FI_ENODATA);
}

Test(hints, domain_and_fabric_names)
{
	hints->domain_attr->name = strdup("rxe1");
	cr_assert_eq(match(V117), -FI_ENODATA);
	free(hints->domain_attr->name);
	hints->domain_attr->name = strdup("rxe0");
	cr_assert_eq(match(V117), 0);
	hints->fabric_attr->name = strdup("IB-0xfe80000000000000");
	cr_assert_eq(match(V117), -FI_ENODATA);
	free(hints->fabric_attr->name);
	hints->fabric_attr->name = strdup("RoCE-192.0.2.0/24");
	cr_assert_eq(match(V117), 0);
	hints->fabric_attr->prov_name = strdup("verbs");
	cr_assert_eq(match(V117), -FI_ENODATA);
	free(hints->fabric_attr->prov_name);
	hints->fabric_attr->prov_name = strdup("GDRFAB");
	cr_assert_eq(match(V117), 0);
}

/* An RMA target must take VIRT_ADDR, ALLOCATED and PROV_KEY; FI_MR_LOCAL is
 * never needed (gdrfab registers what comes without a descriptor). */
Test(hints, mr_mode_needs_every_bit_an_rma_target_requires)
{
	hints->caps = FI_MSG | FI_RMA;
	hints->domain_attr->mr_mode = GDRFAB_MR_MODE;
	cr_assert_eq(match(V117), 0);
	hints->domain_attr->mr_mode = GDRFAB_MR_BASIC_MAP; /* no FI_MR_LOCAL */
	cr_assert_eq(match(V117), 0);
	hints->domain_attr->mr_mode = GDRFAB_MR_MODE & ~FI_MR_PROV_KEY;
	cr_assert_eq(match(V117), -FI_ENODATA);
	hints->domain_attr->mr_mode = FI_MR_SCALABLE;
	cr_assert_eq(match(V117), -FI_ENODATA);
	/* FI_MR_BASIC stands for VIRT_ADDR|ALLOCATED|PROV_KEY (fabtests'
	 * getinfo_mr_mode1). */
	hints->domain_attr->mr_mode = FI_MR_BASIC;
	cr_assert_eq(match(V117), 0);
	gdrfab_info_apply_hints(prov, hints, V117);
	cr_assert_eq(prov->domain_attr->mr_mode, FI_MR_BASIC);
}

/* What consumers ask, replayed: Open MPI 4.1's mtl (API 1.5, mr_mode 0,
 * tagged only), its btl (RMA and atomics, VIRT_ADDR|ALLOCATED|PROV_KEY,
 * no FI_MR_LOCAL allowed), MPICH (FI_MR_ENDPOINT and the provider's own
 * bits), aws-ofi-nccl (FI_MR_LOCAL and the rest). */
Test(hints, consumers_mr_modes)
{
	struct fi_info *info = fi_dupinfo(prov);

	hints->caps =
		FI_TAGGED | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_DIRECTED_RECV;
	hints->domain_attr->mr_mode = 0;
	cr_assert_eq(match(FI_VERSION(1, 5)), 0, "Open MPI mtl");
	gdrfab_info_apply_hints(info, hints, FI_VERSION(1, 5));
	cr_assert_eq(info->domain_attr->mr_mode, 0);

	hints->caps = FI_RMA;
	hints->domain_attr->mr_mode =
		FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	cr_assert_eq(match(FI_VERSION(1, 5)), 0, "Open MPI btl");
	fi_freeinfo(info);
	info = fi_dupinfo(prov);
	gdrfab_info_apply_hints(info, hints, FI_VERSION(1, 5));
	cr_assert_eq(info->domain_attr->mr_mode, GDRFAB_MR_BASIC_MAP,
		     "the btl refuses any mode with FI_MR_LOCAL");

	hints->caps = FI_TAGGED | FI_MSG | FI_RMA;
	hints->domain_attr->mr_mode = FI_MR_ENDPOINT | GDRFAB_MR_BASIC_MAP;
	cr_assert_eq(match(V117), 0, "MPICH");

	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ENDPOINT |
				      FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	cr_assert_eq(match(V117), 0, "aws-ofi-nccl sendrecv");
	fi_freeinfo(info);
	info = fi_dupinfo(prov);
	gdrfab_info_apply_hints(info, hints, V117);
	cr_assert_eq(info->domain_attr->mr_mode, GDRFAB_MR_MODE);
	fi_freeinfo(info);
}

Test(hints, mr_mode_needed_follows_the_caps)
{
	cr_assert_eq(gdrfab_mr_mode_needed(0, false), GDRFAB_MR_BASIC_MAP);
	cr_assert_eq(gdrfab_mr_mode_needed(0, true),
		     GDRFAB_MR_BASIC_MAP | FI_MR_HMEM);
	cr_assert_eq(gdrfab_mr_mode_needed(FI_TAGGED, true), 0);
	cr_assert_eq(gdrfab_mr_mode_needed(FI_TAGGED | FI_HMEM, true),
		     FI_MR_ALLOCATED | FI_MR_HMEM);
	cr_assert_eq(gdrfab_mr_mode_needed(FI_RMA | FI_WRITE, false), 0,
		     "an RMA initiator only registers nothing for peers");
	cr_assert_eq(gdrfab_mr_mode_needed(FI_RMA | FI_REMOTE_WRITE, false),
		     GDRFAB_MR_BASIC_MAP);
}

Test(hints, old_api_versions_get_basic_registration)
{
	hints->domain_attr->mr_mode = FI_MR_UNSPEC;
	cr_assert_eq(match(FI_VERSION(1, 4)), 0);
	gdrfab_info_apply_hints(prov, hints, FI_VERSION(1, 4));
	cr_assert_eq(prov->domain_attr->mr_mode, FI_MR_BASIC);
	hints->domain_attr->mr_mode = FI_MR_SCALABLE;
	cr_assert_eq(match(FI_VERSION(1, 4)), -FI_ENODATA);
}

Test(hints, progress_models)
{
	hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
	cr_assert_eq(match(V117), -FI_ENODATA);
	hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	hints->domain_attr->control_progress = FI_PROGRESS_AUTO;
	cr_assert_eq(match(V117), -FI_ENODATA);
	hints->domain_attr->control_progress = FI_PROGRESS_UNSPEC;
	cr_assert_eq(match(V117), 0);
}

Test(hints, sizes_beyond_the_port)
{
	hints->tx_attr->size = prov->tx_attr->size + 1;
	cr_assert_eq(match(V117), -FI_ENODATA);
	hints->tx_attr->size = prov->tx_attr->size;
	cr_assert_eq(match(V117), 0);
	hints->rx_attr->iov_limit = GDRFAB_IOV_LIMIT + 1;
	cr_assert_eq(match(V117), -FI_ENODATA);
	hints->rx_attr->iov_limit = 1;
	hints->ep_attr->max_msg_size = (size_t)1 << 40;
	cr_assert_eq(match(V117), -FI_ENODATA);
	hints->ep_attr->max_msg_size = 0;
	hints->domain_attr->cq_data_size = 8;
	cr_assert_eq(match(V117), -FI_ENODATA);
}

Test(hints, scalable_and_shared_contexts_are_refused)
{
	hints->ep_attr->tx_ctx_cnt = 4;
	cr_assert_eq(match(V117), -FI_ENODATA);
	hints->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
	cr_assert_eq(match(V117), -FI_ENODATA);
	hints->ep_attr->tx_ctx_cnt = 1;
	cr_assert_eq(match(V117), 0);
}

Test(hints, address_format_and_source_address)
{
	struct gdrfab_addr other = *(struct gdrfab_addr *)prov->src_addr;

	hints->addr_format = FI_SOCKADDR_IN;
	cr_assert_eq(match(V117), -FI_ENODATA);
	hints->addr_format = FI_FORMAT_UNSPEC;
	hints->src_addr = malloc(sizeof(other));
	hints->src_addrlen = sizeof(other);
	memcpy(hints->src_addr, prov->src_addr, sizeof(other));
	cr_assert_eq(match(V117), 0);
	other.gid[15] = 2;
	memcpy(hints->src_addr, &other, sizeof(other));
	cr_assert_eq(match(V117), -FI_ENODATA);
	hints->src_addrlen = 3;
	cr_assert_eq(match(V117), -FI_ENODATA);
}

Test(hints, apply_narrows_to_the_request)
{
	hints->caps = FI_LOCAL_COMM;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->domain_attr->av_type = FI_AV_TABLE;
	hints->tx_attr->op_flags = FI_COMPLETION;
	gdrfab_info_apply_hints(prov, hints, V117);
	cr_assert_eq(prov->caps, FI_LOCAL_COMM);
	cr_assert_eq(prov->tx_attr->caps, FI_LOCAL_COMM);
	cr_assert_eq(prov->domain_attr->threading, FI_THREAD_DOMAIN);
	cr_assert_eq(prov->domain_attr->av_type, FI_AV_TABLE);
	cr_assert_eq(prov->tx_attr->op_flags, FI_COMPLETION);
	cr_assert_eq(prov->domain_attr->mr_mode, GDRFAB_MR_MODE);
}
