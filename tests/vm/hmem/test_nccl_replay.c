/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * aws-ofi-nccl 1.17.3's sendrecv protocol (its default with one NIC per
 * GPU), replayed call by call against gdrfab over rxe, with the CUDA
 * stand-in's device memory as NCCL's buffers. Each step names the plugin's
 * file and function it comes from (paths under aws-ofi-nccl-1.17.3/src).
 * Two "ranks" live in this process: 0 on rxe0 sends, 1 on rxe1 receives.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "dp_helpers.h"
#include "gpu_standin.h"

#ifndef FI_OPT_CUDA_API_PERMITTED
#define FI_OPT_CUDA_API_PERMITTED 10
#endif
#define FI_OPT_SHARED_MEMORY_PERMITTED_ 11 /* 1.18's number */

struct rank {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	uint8_t name[56]; /* the plugin's MAX_EP_ADDR */
	size_t namelen;
	fi_addr_t self, peer;
	bool cuda_refused; /* FI_OPT_CUDA_API_PERMITTED=false refused */
};

static struct rank r[2];

/* nccl_ofi_sendrecv.cpp: sendrecv_get_hints. */
static struct fi_info *plugin_hints(const char *domain)
{
	struct fi_info *h = fi_allocinfo();

	h->caps = FI_LOCAL_COMM | FI_REMOTE_COMM | FI_TAGGED | FI_MSG |
		  FI_HMEM | FI_RMA | FI_READ;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ENDPOINT |
				  FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				  FI_MR_PROV_KEY | FI_MR_HMEM;
	h->domain_attr->mr_key_size = 2;
	h->domain_attr->threading = FI_THREAD_SAFE;
	h->tx_attr->msg_order = FI_ORDER_SAS;
	h->rx_attr->msg_order = FI_ORDER_SAS;
	h->fabric_attr->prov_name = strdup("gdrfab");
	h->domain_attr->name = strdup(domain);
	return h;
}

/* nccl_ofi_sendrecv.cpp: nccl_net_ofi_sendrecv_init asks 1.18 (1.20 with
 * dma-buf), then 1.6: a 1.17 core answers the first with -FI_ENOSYS. */
static void open_rank(struct rank *k, const char *domain)
{
	struct fi_info *h = plugin_hints(domain);
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	struct fi_av_attr av_attr = {.type = FI_AV_UNSPEC};
	bool off = false;
	int ret = fi_getinfo(FI_VERSION(1, 18), NULL, NULL, 0, h, &k->info);

	if (ret == -FI_ENOSYS)
		ret = fi_getinfo(FI_VERSION(1, 6), NULL, NULL, 0, h, &k->info);
	fi_freeinfo(h);
	cr_assert_eq(ret, 0, "fi_getinfo: %s", fi_strerror(-ret));
	/* sendrecv_device_prepare_for_connection: the tag's top bit must
	 * be at 32 or above. */
	cr_assert_geq(63 - __builtin_clzll(k->info->ep_attr->mem_tag_format),
		      32);
	/* nccl_ofi_net.cpp: the NIC's attributes are read unchecked. */
	cr_assert_not_null(k->info->nic);
	cr_assert_not_null(k->info->nic->device_attr);
	cr_assert_not_null(k->info->nic->link_attr);
	cr_assert(k->info->caps & FI_HMEM);
	cr_assert(k->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR);
	cr_assert_eq(k->info->domain_attr->mr_mode & FI_MR_ENDPOINT, 0,
		     "gdrfab needs no fi_mr_bind");
	cr_assert_eq(fi_fabric(k->info->fabric_attr, &k->fabric, NULL), 0);
	cr_assert_eq(fi_domain(k->fabric, k->info, &k->domain, NULL), 0);
	cr_assert_eq(fi_cq_open(k->domain, &cq_attr, &k->cq, NULL), 0);
	cr_assert_eq(fi_av_open(k->domain, &av_attr, &k->av, NULL), 0);
	cr_assert_eq(fi_endpoint(k->domain, k->info, &k->ep, NULL), 0);
	cr_assert_eq(fi_ep_bind(k->ep, &k->cq->fid, FI_SEND | FI_RECV), 0);
	cr_assert_eq(fi_ep_bind(k->ep, &k->av->fid, 0), 0);
	/* nccl_ofi_ofiutils.cpp: nccl_ofi_ofiutils_init_connection. */
	ret = fi_setopt(&k->ep->fid, FI_OPT_ENDPOINT,
			FI_OPT_SHARED_MEMORY_PERMITTED_, &off, sizeof(off));
	cr_assert(ret == 0 || ret == -FI_ENOPROTOOPT || ret == -FI_EOPNOTSUPP,
		  "FI_OPT_SHARED_MEMORY_PERMITTED: %d", ret);
	if (FI_VERSION_GE(k->info->fabric_attr->api_version,
			  FI_VERSION(1, 18))) {
		ret = fi_setopt(&k->ep->fid, FI_OPT_ENDPOINT,
				FI_OPT_CUDA_API_PERMITTED, &off, sizeof(off));
		/* On rxe GPU memory is staged (copied with CUDA): refusing
		 * is right, and the plugin then runs without GPUDirect. */
		cr_assert(ret == 0 || ret == -FI_EOPNOTSUPP);
		k->cuda_refused = ret != 0;
	}
	cr_assert_eq(fi_enable(k->ep), 0);
	k->namelen = sizeof(k->name);
	cr_assert_eq(fi_getname(&k->ep->fid, k->name, &k->namelen), 0);
}

static void setup(void)
{
	require_vm();
	gpu_open();
	open_rank(&r[0], "rxe0");
	open_rank(&r[1], "rxe1");
	/* The plugin inserts one address per call, its own too (for the
	 * flush), and the same peer again for every communicator. */
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(fi_av_insert(r[i].av, r[1 - i].name, 1, &r[i].peer,
					  0, NULL),
			     1);
		cr_assert_eq(fi_av_insert(r[i].av, r[i].name, 1, &r[i].self, 0,
					  NULL),
			     1);
		fi_addr_t again;
		cr_assert_eq(fi_av_insert(r[i].av, r[1 - i].name, 1, &again, 0,
					  NULL),
			     1);
	}
}

static void teardown(void)
{
	for (int i = 1; i >= 0; i--) {
		if (r[i].ep)
			fi_close(&r[i].ep->fid);
		if (r[i].av)
			fi_close(&r[i].av->fid);
		if (r[i].cq)
			fi_close(&r[i].cq->fid);
		if (r[i].domain)
			fi_close(&r[i].domain->fid);
		if (r[i].fabric)
			fi_close(&r[i].fabric->fid);
		fi_freeinfo(r[i].info);
	}
}

TestSuite(nccl, .init = setup, .fini = teardown, .timeout = 240);

/* GPU memory the NIC reaches (peermem, the stand-in's memory made
 * CPU-visible for rxe): the plugin's GDR path. */
static void setup_gdr(void)
{
	setenv("FI_GDRFAB_CUDA_REG", "peermem", 1);
	setenv("GDRFAB_STANDIN_CPU_VISIBLE", "1", 1);
	setup();
}

TestSuite(nccl_gdr, .init = setup_gdr, .fini = teardown, .timeout = 240);

/* nccl_ofi_sendrecv.cpp: sendrecv_mr_buffers_register, with FI_RMA. */
static struct fid_mr *reg(struct rank *k, void *buf, size_t len,
			  enum fi_hmem_iface iface, uint64_t access)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct fi_mr_attr attr = {.mr_iov = &iov,
				  .iov_count = 1,
				  .access = access,
				  .iface = iface};
	struct fid_mr *mr;
	int ret = fi_mr_regattr(k->domain, &attr, 0, &mr);

	cr_assert_eq(ret, 0, "fi_mr_regattr: %s", fi_strerror(-ret));
	return mr;
}

/* nccl_ofi_sendrecv.cpp: the CQ reading loop (fi_cq_read, fi_cq_readerr):
 * waits for one completion on k, progressing both ranks. */
static struct fi_cq_tagged_entry wait_one(struct rank *k)
{
	struct fi_cq_tagged_entry e;

	dp_read_one(k->cq, &e, r[k == &r[0]].cq);
	return e;
}

/* The sendrecv protocol's messages and flush; with gdr, every CUDA call
 * gdrfab makes while they move is counted by the stand-in (and its
 * copies, events and streams fail): there must be none. */
static void sendrecv_and_flush(bool gdr)
{
	size_t sizes[] = {0, 4, 8192, 65536, 1 << 20, 4 << 20};
	size_t max = 4 << 20;
	void *src = gpu_alloc(max), *dst = gpu_alloc(max);
	uint8_t *flush_page = aligned_alloc(4096, 4096);
	struct fid_mr *smr = reg(&r[0], src, max, FI_HMEM_CUDA,
				 FI_SEND | FI_RECV | FI_REMOTE_READ);
	struct fid_mr *dmr = reg(&r[1], dst, max, FI_HMEM_CUDA,
				 FI_SEND | FI_RECV | FI_REMOTE_READ);
	struct fid_mr *fmr = reg(&r[1], flush_page, 4096, FI_HMEM_SYSTEM,
				 FI_SEND | FI_RECV | FI_READ);
	uint64_t tag = 1ULL << 40;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct fi_cq_tagged_entry e;
		int sctx, rctx, fctx;
		ssize_t ret;

		uint64_t calls;

		gpu_fill(src, sizes[i], (unsigned)i + 1);
		calls = gpu_stats().forbidden_calls;
		if (gdr)
			gpu_forbid(2);
		/* sendrecv_recv: any source, no ignore bits. */
		do {
			ret = fi_trecv(r[1].ep, dst, sizes[i], fi_mr_desc(dmr),
				       FI_ADDR_UNSPEC, tag + i, 0, &rctx);
		} while (ret == -FI_EAGAIN);
		cr_assert_eq(ret, 0);
		/* sendrecv_send: to the peer, no flags. */
		do {
			ret = fi_tsend(r[0].ep, src, sizes[i], fi_mr_desc(smr),
				       r[0].peer, tag + i, &sctx);
			if (ret == -FI_EAGAIN)
				fi_cq_read(r[0].cq, &e, 0);
		} while (ret == -FI_EAGAIN);
		cr_assert_eq(ret, 0);
		e = wait_one(&r[1]);
		cr_assert_eq(e.op_context, &rctx);
		cr_assert(e.flags & FI_RECV);
		cr_assert_eq(e.len, sizes[i]);
		e = wait_one(&r[0]);
		cr_assert_eq(e.op_context, &sctx);
		gpu_forbid(0);
		cr_assert_eq(gpu_stats().forbidden_calls, calls,
			     "CUDA calls while %zu bytes moved", sizes[i]);
		cr_assert(gpu_check(dst, sizes[i], (unsigned)i + 1),
			  "%zu bytes in GPU memory", sizes[i]);
		if (!sizes[i])
			continue;
		/* sendrecv_flush: a 4-byte fi_read of the GPU buffer, through
		 * the endpoint's own address, into a host page; the address
		 * is the buffer's (FI_MR_VIRT_ADDR), the key its MR's. */
		memset(flush_page, 0, 4);
		do {
			ret = fi_read(r[1].ep, flush_page, 4, fi_mr_desc(fmr),
				      r[1].self, (uint64_t)(uintptr_t)dst,
				      fi_mr_key(dmr), &fctx);
		} while (ret == -FI_EAGAIN);
		cr_assert_eq(ret, 0, "flush read: %s", fi_strerror(-ret));
		e = wait_one(&r[1]);
		cr_assert_eq(e.op_context, &fctx);
		cr_assert(e.flags & FI_READ);
		cr_assert(dp_check(flush_page, 4, (unsigned)i + 1),
			  "the flush read the GPU buffer's first bytes");
	}
	fi_close(&fmr->fid);
	fi_close(&dmr->fid);
	fi_close(&smr->fid);
	free(flush_page);
}

/* rxe's default: staged GPU memory, so the plugin runs without GDR. */
Test(nccl, sendrecv_tagged_gpu_buffers_then_flush_read_to_self)
{
	if (FI_VERSION_GE(r[0].info->fabric_attr->api_version,
			  FI_VERSION(1, 18)))
		cr_assert(
			r[0].cuda_refused && r[1].cuda_refused,
			"a staging domain refuses FI_OPT_CUDA_API_PERMITTED=false");
	sendrecv_and_flush(false);
}

/* With peermem: the option accepted (support_gdr = GDR_SUPPORTED in
 * nccl_ofi_ofiutils.cpp), the same calls with no CUDA call by gdrfab. */
Test(nccl_gdr, sendrecv_without_cuda_calls)
{
	if (FI_VERSION_LT(r[0].info->fabric_attr->api_version,
			  FI_VERSION(1, 18)))
		cr_skip_test(
			"API %u.%u: the plugin sets FI_OPT_CUDA_API_PERMITTED from 1.18 only",
			FI_MAJOR(r[0].info->fabric_attr->api_version),
			FI_MINOR(r[0].info->fabric_attr->api_version));
	cr_assert(!r[0].cuda_refused && !r[1].cuda_refused,
		  "a peermem domain accepts FI_OPT_CUDA_API_PERMITTED=false");
	sendrecv_and_flush(true);
}
