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
	/* Without PROV_KEY no peer may target it: asked by name, that is no
	 * match; asked as plain FI_RMA, it is served as an initiator. */
	hints->domain_attr->mr_mode = GDRFAB_MR_MODE & ~FI_MR_PROV_KEY;
	hints->caps = FI_MSG | FI_RMA | FI_REMOTE_WRITE;
	cr_assert_eq(match(V117), -FI_ENODATA);
	hints->caps = FI_MSG | FI_RMA;
	cr_assert_eq(match(V117), 0);
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
	struct sockaddr_in sin = {.sin_family = AF_INET};

	/* Its own names, their text, and IPv4 socket addresses (the rxe
	 * port has an IPv4 GID; an InfiniBand port has none). */
	hints->addr_format = FI_SOCKADDR_IN;
	cr_assert_eq(match(V117), 0);
	hints->addr_format = FI_SOCKADDR;
	cr_assert_eq(match(V117), 0);
	hints->addr_format = FI_ADDR_STR;
	cr_assert_eq(match(V117), 0);
	hints->addr_format = FI_SOCKADDR_IN6;
	cr_assert_eq(match(V117), -FI_ENODATA);
	hints->addr_format = FI_ADDR_PSMX2;
	cr_assert_eq(match(V117), -FI_ENODATA);
	{
		struct gdrfab_port_desc port = fixture_ib_port();
		struct fi_info *ib = gdrfab_info_for_port(&port);
		char why[256];

		hints->addr_format = FI_SOCKADDR_IN;
		cr_assert_eq(
			gdrfab_info_match(ib, hints, V117, why, sizeof(why)),
			-FI_ENODATA);
		fi_freeinfo(ib);
	}
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
	/* A socket address names the port by its IPv4 address. */
	free(hints->src_addr);
	hints->addr_format = FI_SOCKADDR_IN;
	inet_pton(AF_INET, "192.0.2.1", &sin.sin_addr);
	hints->src_addr = malloc(sizeof(sin));
	hints->src_addrlen = sizeof(sin);
	memcpy(hints->src_addr, &sin, sizeof(sin));
	cr_assert_eq(match(V117), 0);
	inet_pton(AF_INET, "192.0.2.2", &sin.sin_addr);
	memcpy(hints->src_addr, &sin, sizeof(sin));
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
	cr_assert_eq(prov->tx_attr->caps, 0, "a domain cap is no tx cap");
	cr_assert_eq(prov->rx_attr->caps, 0);
	cr_assert_eq(prov->domain_attr->threading, FI_THREAD_DOMAIN);
	cr_assert_eq(prov->domain_attr->av_type, FI_AV_TABLE);
	cr_assert_eq(prov->tx_attr->op_flags, FI_COMPLETION);
	cr_assert_eq(prov->domain_attr->mr_mode, GDRFAB_MR_MODE);
}

/* ---- fabtests 1.17's unit/getinfo_test.c, its checks replayed ---- */

#define FT_PRIMARY_TX_CAPS                                                     \
	(FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_MULTICAST |              \
	 FI_NAMED_RX_CTX | FI_HMEM | FI_COLLECTIVE)
#define FT_PRIMARY_RX_CAPS                                                     \
	(FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_DIRECTED_RECV |          \
	 FI_VARIABLE_MSG | FI_HMEM | FI_COLLECTIVE)
#define FT_PRIMARY_CAPS (FT_PRIMARY_TX_CAPS | FT_PRIMARY_RX_CAPS)
#define FT_DOMAIN_CAPS	(FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SHARED_AV)
#define FT_OPT_TX_CAPS                                                         \
	(FI_SEND | FI_READ | FI_WRITE | FI_TRIGGER | FI_FENCE | FI_RMA_PMEM)
#define FT_OPT_RX_CAPS                                                         \
	(FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_RMA_PMEM |            \
	 FI_SOURCE | FI_SOURCE_ERR | FI_RMA_EVENT | FI_MULTI_RECV |            \
	 FI_TRIGGER)
#define FT_OPT_CAPS (FT_DOMAIN_CAPS | FT_OPT_TX_CAPS | FT_OPT_RX_CAPS)

/* The answer fi_getinfo gives (NULL: -FI_ENODATA), as gdrfab_getinfo
 * makes it for one port. */
static struct fi_info *answer(const struct fi_info *h, uint32_t version)
{
	struct fi_info *info;
	char why[256];

	if (gdrfab_info_match(prov, h, version, why, sizeof(why)))
		return NULL;
	info = fi_dupinfo(prov);
	cr_assert_not_null(info);
	gdrfab_info_apply_hints(info, h, version);
	return info;
}

/* check_no_extra_caps and check_caps of getinfo_test.c. */
static bool ft_caps_ok(const struct fi_info *info, uint64_t caps)
{
	if (caps && (info->caps & ~(caps | FT_OPT_CAPS)))
		return false;
	if (info->tx_attr->caps & ~(FT_PRIMARY_TX_CAPS | FT_OPT_TX_CAPS))
		return false;
	if (info->rx_attr->caps & ~(FT_PRIMARY_RX_CAPS | FT_OPT_RX_CAPS))
		return false;
	if (info->rx_attr->caps & ~info->caps)
		return false;
	if (!caps)
		return true;
	return (info->caps & caps) == caps &&
	       (info->tx_attr->caps & (caps & FT_PRIMARY_TX_CAPS)) ==
		       (caps & FT_PRIMARY_TX_CAPS) &&
	       (info->rx_attr->caps & (caps & FT_PRIMARY_RX_CAPS)) ==
		       (caps & FT_PRIMARY_RX_CAPS);
}

/* getinfo_caps2: no hints at all. */
Test(hints, fabtests_caps_without_hints)
{
	struct fi_info *info = answer(NULL, V117);

	cr_assert(ft_caps_ok(info, 0));
	cr_assert_eq(info->tx_attr->caps &
			     (FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE |
			      FI_DIRECTED_RECV | FI_MULTI_RECV | FI_SOURCE),
		     0, "receive-side caps on the transmit side");
	cr_assert_eq(info->rx_attr->caps & (FI_SEND | FI_READ | FI_WRITE), 0,
		     "transmit-side caps on the receive side");
	cr_assert_eq((info->tx_attr->caps | info->rx_attr->caps) &
			     (FI_LOCAL_COMM | FI_REMOTE_COMM),
		     0, "domain caps on a context");
	cr_assert_eq(info->tx_attr->caps & (FI_MSG | FI_TAGGED | FI_RMA),
		     FI_MSG | FI_TAGGED | FI_RMA);
	cr_assert_eq(info->rx_attr->caps & (FI_MSG | FI_TAGGED | FI_RMA),
		     FI_MSG | FI_TAGGED | FI_RMA);
	fi_freeinfo(info);
}

/* getinfo_caps1: every combination of the primary caps, with fabtests'
 * default mr_mode; each answer has the caps asked on the right sides. */
Test(hints, fabtests_caps_every_combination)
{
	const uint64_t bits[] = {
		FI_MSG,		  FI_RMA,	   FI_TAGGED, FI_ATOMIC,
		FI_MULTICAST,	  FI_NAMED_RX_CTX, FI_HMEM,   FI_COLLECTIVE,
		FI_DIRECTED_RECV, FI_VARIABLE_MSG};
	const size_t n = sizeof(bits) / sizeof(bits[0]);
	int answered = 0;

	hints->mode = ~0ULL;
	hints->domain_attr->mr_mode =
		FI_MR_LOCAL | FI_MR_ENDPOINT | GDRFAB_MR_BASIC_MAP;
	for (size_t combo = 0; combo < (1u << n); combo++) {
		struct fi_info *info;
		uint64_t caps = 0;

		for (size_t b = 0; b < n; b++)
			if (combo & (1u << b))
				caps |= bits[b];
		hints->caps = caps;
		info = answer(hints, V117);
		if (!info)
			continue;
		answered++;
		cr_assert(ft_caps_ok(info, caps), "caps %s",
			  fi_tostr(&caps, FI_TYPE_CAPS));
		fi_freeinfo(info);
	}
	cr_assert_geq(answered, 16, "MSG, RMA, TAGGED, DIRECTED_RECV");
}

/* getinfo_mr_mode6: every combination of eight mr_mode bits, with the
 * hints' mode all ones (FI_LOCAL_MR among them): an answer never has a
 * bit the hints did not offer. */
Test(hints, fabtests_mr_mode_every_combination)
{
	const int bits[] = {FI_MR_LOCAL,     FI_MR_RAW,	     FI_MR_VIRT_ADDR,
			    FI_MR_ALLOCATED, FI_MR_PROV_KEY, FI_MR_MMU_NOTIFY,
			    FI_MR_RMA_EVENT, FI_MR_ENDPOINT};
	int answered = 0;

	hints->mode = ~0ULL;
	for (int combo = 0; combo < 256; combo++) {
		struct fi_info *info;
		int mode = 0;

		for (int b = 0; b < 8; b++)
			if (combo & (1 << b))
				mode |= bits[b];
		hints->domain_attr->mr_mode = mode;
		info = answer(hints, V117);
		if (!info)
			continue;
		answered++;
		cr_assert_eq(info->domain_attr->mr_mode & ~mode, 0,
			     "asked 0x%x, answered 0x%x", mode,
			     info->domain_attr->mr_mode);
		fi_freeinfo(info);
	}
	cr_assert_eq(
		answered, 256,
		"every mode is served (an RMA target where it may be one)");
}

/* mr_mode 0 (API >= 1.5) offers no mode: the answer needs none, the caps
 * lose what would need one (remote access), and remote access asked by
 * name cannot be had. */
Test(hints, mr_mode_zero_takes_no_mode)
{
	struct fi_info *info;

	hints->domain_attr->mr_mode = 0;
	info = answer(hints, V117);
	cr_assert_not_null(info);
	cr_assert_eq(info->domain_attr->mr_mode, 0);
	cr_assert_eq(info->caps & (FI_REMOTE_READ | FI_REMOTE_WRITE), 0);
	cr_assert_eq(info->caps & (FI_RMA | FI_READ | FI_WRITE),
		     FI_RMA | FI_READ | FI_WRITE, "still an RMA initiator");
	cr_assert_eq(info->rx_attr->caps & (FI_REMOTE_READ | FI_REMOTE_WRITE),
		     0);
	fi_freeinfo(info);
	hints->caps = FI_RMA | FI_REMOTE_READ;
	cr_assert_null(answer(hints, V117));
	hints->caps = FI_TAGGED;
	info = answer(hints, V117);
	cr_assert_eq(info->caps, FI_TAGGED);
	cr_assert_eq(info->domain_attr->mr_mode, 0);
	fi_freeinfo(info);
}

/* FI_LOCAL_MR (the pre-1.5 mode bit) means FI_MR_LOCAL only before API
 * 1.5 or beside FI_MR_BASIC/FI_MR_SCALABLE; FI_MR_BASIC from a pre-1.5
 * application keeps working in both spellings. */
Test(hints, local_mr_mode_bit_and_basic_registration)
{
	struct fi_info *info;

	hints->mode = FI_LOCAL_MR;
	hints->caps = FI_MSG | FI_RMA;
	hints->domain_attr->mr_mode = GDRFAB_MR_BASIC_MAP;
	cr_assert(!gdrfab_mr_local_accepted(hints, V117));
	info = answer(hints, V117);
	cr_assert_eq(info->domain_attr->mr_mode, GDRFAB_MR_BASIC_MAP,
		     "FI_LOCAL_MR is ignored here (fi_getinfo(3))");
	fi_freeinfo(info);
	hints->domain_attr->mr_mode = FI_MR_BASIC;
	cr_assert(gdrfab_mr_local_accepted(hints, V117));
	info = answer(hints, V117);
	cr_assert_eq(info->domain_attr->mr_mode, FI_MR_BASIC);
	fi_freeinfo(info);
	/* An application of API 1.0 to 1.4: FI_MR_BASIC or FI_MR_UNSPEC. */
	for (uint32_t minor = 0; minor < 5; minor++) {
		hints->domain_attr->mr_mode = FI_MR_BASIC;
		cr_assert(
			gdrfab_mr_local_accepted(hints, FI_VERSION(1, minor)));
		info = answer(hints, FI_VERSION(1, minor));
		cr_assert_not_null(info, "FI_MR_BASIC at 1.%u", minor);
		cr_assert_eq(info->domain_attr->mr_mode, FI_MR_BASIC);
		cr_assert(info->caps & FI_REMOTE_WRITE ||
			  !(hints->caps & FI_REMOTE_WRITE));
		fi_freeinfo(info);
		hints->domain_attr->mr_mode = FI_MR_UNSPEC;
		info = answer(hints, FI_VERSION(1, minor));
		cr_assert_not_null(info, "FI_MR_UNSPEC at 1.%u", minor);
		cr_assert_eq(info->domain_attr->mr_mode, FI_MR_BASIC);
		fi_freeinfo(info);
		hints->domain_attr->mr_mode = FI_MR_SCALABLE;
		cr_assert_null(answer(hints, FI_VERSION(1, minor)));
	}
	/* FI_MR_SCALABLE suits an application that is no RMA target. */
	hints->caps = FI_TAGGED;
	hints->domain_attr->mr_mode = FI_MR_SCALABLE;
	info = answer(hints, V117);
	cr_assert_eq(info->domain_attr->mr_mode, FI_MR_SCALABLE);
	fi_freeinfo(info);
}
