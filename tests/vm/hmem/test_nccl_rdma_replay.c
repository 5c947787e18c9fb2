/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * aws-ofi-nccl 1.17.3's rdma protocol (what it runs with more than one NIC
 * per GPU, or with OFI_NCCL_PROTOCOL=RDMA), replayed call by call against
 * gdrfab over rxe with the CUDA stand-in's device memory as NCCL's
 * buffers. Each step names the plugin's file and function (paths under
 * aws-ofi-nccl-1.17.3/src). Two "ranks" live in this process: 0 on rxe0
 * sends, 1 on rxe1 receives; one rail each.
 *
 * The protocol: a connection manager (cm/) exchanges, over an endpoint of
 * its own, each side's data endpoint name, communicator ID and the
 * sender's control mailbox (host memory, its address and key). For every
 * message the receiver RDMA-writes a 64-byte control message (the
 * destination buffer's address, key and length) into that mailbox; the
 * sender polls the mailbox memory, then fi_writedata()s the payload with
 * 32 bits of immediate data (segment count, communicator ID, sequence
 * number) that the receiver's CQ reports as FI_REMOTE_WRITE |
 * FI_REMOTE_CQ_DATA, taking the received size from the entry's len.
 * Messages up to 8 KiB go eagerly instead: fi_senddata() into a posted
 * host bounce buffer, then a local fi_read() through the endpoint's own
 * address copies it into the destination. A flush is a 64-byte fi_read
 * of a GPU buffer holding a sentinel, again through the own address.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_rma.h>

#include "dp_helpers.h"
#include "gpu_standin.h"

#ifndef FI_OPT_CUDA_API_PERMITTED
#define FI_OPT_CUDA_API_PERMITTED 10
#endif
#define FI_OPT_SHARED_MEMORY_PERMITTED_ 11 /* 1.18's number */

#define EAGER_MAX    8192 /* nccl_ofi_param.h: EAGER_MAX_SIZE */
#define CTRL_SIZE    64	  /* nccl_ofi_rdma.h: nccl_net_ofi_ctrl_msg_t */
#define MAILBOX	     256  /* NCCL_OFI_CTRL_MAILBOX_SIZE */
#define RX_BUFS	     4	  /* eager bounce buffers posted here */
#define FLUSH_BYTES  64	  /* NCCL_OFI_DEFAULT_CPU_CACHE_LINE_SIZE */
#define SENTINEL     0xffffffffULL /* NCCL_OFI_RDMA_FLUSH_BUFFER_SENTINEL_VAL */
#define COMM_ID_BITS 18
#define SEQ_BITS     10

/* nccl_ofi_rdma.h: nccl_net_ofi_ctrl_msg_t, 64 bytes on the wire. */
struct ctrl_msg {
	uint64_t buff_addr;
	uint64_t mr_key[4];
	uint32_t buff_len;
	uint16_t flags;
	uint16_t msg_seq_num;
	uint8_t pad[16];
};
_Static_assert(sizeof(struct ctrl_msg) == CTRL_SIZE, "control message");

/* The connection message's transport data (nccl_ofi_rdma.h:
 * nccl_ofi_rdma_connection_info_t, reduced to what one rail needs). */
struct conn_msg {
	uint32_t type; /* 0: connect, 1: connect response */
	uint32_t comm_id;
	uint64_t mailbox_addr, mailbox_key;
	uint8_t ep_name[56]; /* the data endpoint */
	uint8_t cm_name[56]; /* the CM endpoint, to answer to */
};

struct rank {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;	   /* one per domain rail, shared */
	struct fid_av *av, *cm_av; /* one per endpoint */
	struct fid_ep *ep, *cm_ep; /* the data rail and the CM's */
	uint8_t name[56], cm_name[56];
	size_t namelen, cm_namelen;
	fi_addr_t self, peer, cm_peer;
	/* alloc_and_reg_flush_buff: two pages of GPU memory. */
	void *flush_base, *flush_buf;
	struct fid_mr *flush_mr;
	/* Host freelists: CM messages, eager bounce buffers, the mailbox
	 * (sender) or the control messages (receiver), flush landing. */
	uint8_t *host;
	struct fid_mr *host_mr;
	bool cuda_refused;
};

static struct rank r[2];
static uint32_t api, asked = FI_VERSION(1, 18);

/* Offsets in each rank's registered host area. */
enum {
	H_CM = 0,    /* 2 CM buffers of 256 B */
	H_RX = 4096, /* RX_BUFS eager buffers of EAGER_MAX */
	H_MAILBOX = H_RX + RX_BUFS * EAGER_MAX,
	H_FLUSH = H_MAILBOX + MAILBOX * CTRL_SIZE,
	H_SIZE = H_FLUSH + 4096,
};

/* nccl_ofi_rdma.cpp: get_hints. */
static struct fi_info *rdma_hints(const char *domain)
{
	struct fi_info *h = fi_allocinfo();

	h->caps = FI_MSG | FI_RMA | FI_HMEM | FI_LOCAL_COMM | FI_REMOTE_COMM;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_HMEM | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->domain_attr->mr_key_size = 2; /* OFI_NCCL_MR_KEY_SIZE */
	h->domain_attr->threading = FI_THREAD_SAFE;
	/* OFI_NCCL_PROGRESS_MODEL unset: FI_PROGRESS_UNSPEC. */
	h->domain_attr->control_progress = FI_PROGRESS_UNSPEC;
	h->domain_attr->data_progress = FI_PROGRESS_UNSPEC;
	h->domain_attr->cq_data_size = 4;
	/* FI_PROVIDER=gdrfab, and the rank's NIC. */
	h->fabric_attr->prov_name = strdup("gdrfab");
	h->domain_attr->name = strdup(domain);
	return h;
}

/* nccl_ofi_rdma.cpp: nccl_net_ofi_rdma_init asks API 1.20 when
 * nccl_ofi_dmabuf.cpp: nccl_ofi_dmabuf_viable says yes, else 1.18, with no
 * fallback. The stand-in answers CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED 0
 * (rxe has no dma-buf), so 1.18. A 1.17 core refuses that version: the
 * plugin's rdma protocol cannot start there, which is checked, and the
 * replay goes on at the core's own API so that the data path is covered
 * under both cores. */
static struct fi_info *get_provider(const char *domain)
{
	struct fi_info *h = rdma_hints(domain), *info = NULL;
	int ret = fi_getinfo(asked, NULL, NULL, 0, h, &info);

	if (FI_VERSION_LT(fi_version(), asked)) {
		cr_assert_eq(ret, -FI_ENOSYS, "a %u.%u core and API 1.18: %d",
			     FI_MAJOR(fi_version()), FI_MINOR(fi_version()),
			     ret);
		cr_log_info(
			"libfabric %u.%u refuses API 1.18: the plugin's rdma protocol stops here; replaying at %u.%u",
			FI_MAJOR(fi_version()), FI_MINOR(fi_version()),
			FI_MAJOR(fi_version()), FI_MINOR(fi_version()));
		ret = fi_getinfo(fi_version(), NULL, NULL, 0, h, &info);
	}
	fi_freeinfo(h);
	cr_assert_eq(ret, 0, "fi_getinfo(rdma hints): %s", fi_strerror(-ret));
	return info;
}

/* nccl_ofi_rdma.cpp: set_mr_req_attr: every buffer, host or GPU, gets
 * the same six access bits; reg_mr_on_device registers it per rail. */
static struct fid_mr *reg(struct rank *k, void *buf, size_t len, bool gpu)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = FI_SEND | FI_RECV | FI_WRITE | FI_REMOTE_WRITE |
			  FI_READ | FI_REMOTE_READ,
		.iface = gpu ? FI_HMEM_CUDA : FI_HMEM_SYSTEM,
		/* No key pool: the provider chooses (FI_MR_PROV_KEY). */
		.requested_key = 0,
	};
	struct fid_mr *mr;
	int ret;

	/* nccl_ofi_cuda.cpp: nccl_net_ofi_get_cuda_device_for_addr. */
	if (gpu)
		attr.device.cuda = 0;
	ret = fi_mr_regattr(k->domain, &attr, 0, &mr);
	cr_assert_eq(ret, 0, "fi_mr_regattr(%s, %zu): %s",
		     gpu ? "cuda" : "host", len, fi_strerror(-ret));
	return mr;
}

/* nccl_ofi_ofiutils.cpp: nccl_ofi_ofiutils_init_connection, for the data
 * rail's endpoint (nccl_net_ofi_rdma_ep_t::ep_rail_init) and the CM's
 * (cm/nccl_ofi_cm_resources.cpp). */
static void init_connection(struct rank *k, struct fid_ep **ep,
			    struct fid_av **av, uint8_t *name, size_t *namelen)
{
	struct fi_av_attr av_attr = {0};
	bool off = false;
	int ret;

	cr_assert_eq(fi_endpoint(k->domain, k->info, ep, NULL), 0);
	cr_assert_eq(fi_av_open(k->domain, &av_attr, av, NULL), 0);
	cr_assert_eq(fi_ep_bind(*ep, &k->cq->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(fi_ep_bind(*ep, &(*av)->fid, 0), 0);
	ret = fi_setopt(&(*ep)->fid, FI_OPT_ENDPOINT,
			FI_OPT_SHARED_MEMORY_PERMITTED_, &off, sizeof(off));
	cr_assert(ret == 0 || ret == -FI_EOPNOTSUPP || ret == -FI_ENOPROTOOPT,
		  "FI_OPT_SHARED_MEMORY_PERMITTED: %d", ret);
	/* support_gdr is GDR_UNKNOWN at the first endpoint: the plugin asks.
	 * Refused (-FI_EOPNOTSUPP), it sets GDR_UNSUPPORTED and asks no more;
	 * any other error fails the endpoint. */
	if (FI_VERSION_GE(k->info->fabric_attr->api_version,
			  FI_VERSION(1, 18)) &&
	    !k->cuda_refused) {
		ret = fi_setopt(&(*ep)->fid, FI_OPT_ENDPOINT,
				FI_OPT_CUDA_API_PERMITTED, &off, sizeof(off));
		cr_assert(ret == 0 || ret == -FI_EOPNOTSUPP ||
				  ret == -FI_ENOPROTOOPT,
			  "FI_OPT_CUDA_API_PERMITTED: %d", ret);
		k->cuda_refused = ret != 0;
		if (ret)
			cr_log_info(
				"FI_OPT_CUDA_API_PERMITTED=false refused (%s): the plugin reports GDR unsupported",
				fi_strerror(-ret));
	}
	cr_assert_eq(fi_enable(*ep), 0);
	*namelen = 56; /* MAX_EP_ADDR */
	cr_assert_eq(fi_getname(&(*ep)->fid, name, namelen), 0);
}

static void open_rank(struct rank *k, const char *domain)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA,
				     .size = 12288 /* OFI_NCCL_CQ_SIZE */};

	k->info = get_provider(domain);
	api = k->info->fabric_attr->api_version;
	/* nccl_net_ofi_rdma_init: 4 bytes of CQ data or no rdma protocol. */
	cr_assert_geq(k->info->domain_attr->cq_data_size, 4);
	/* nccl_ofi_net.cpp: nccl_net_ofi_query_provider_capabilities, then
	 * "RDMA protocol does not support endpoint memory registration". */
	cr_assert_eq(k->info->domain_attr->mr_mode & FI_MR_ENDPOINT, 0);
	cr_assert(k->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR,
		  "the flush and eager reads address by virtual address");
	cr_assert(k->info->caps & FI_HMEM);
	/* nccl_ofi_topo.cpp groups NICs by the PCI path of fid_nic. */
	cr_assert_not_null(k->info->nic);
	cr_assert_not_null(k->info->nic->bus_attr);
	cr_assert_eq(fi_fabric(k->info->fabric_attr, &k->fabric, NULL), 0);
	/* nccl_net_ofi_rdma_domain_t's constructor: domain, shared CQ. */
	cr_assert_eq(fi_domain(k->fabric, k->info, &k->domain, NULL), 0);
	cr_assert_eq(fi_cq_open(k->domain, &cq_attr, &k->cq, NULL), 0);
	/* alloc_and_reg_flush_buff: cuMemAlloc of two pages, the sentinel
	 * copied to the first page-aligned address, that page registered as
	 * NCCL_PTR_CUDA (FI_MR_DMABUF only where dma-buf is viable). */
	k->flush_base = gpu_alloc(2 * 4096);
	k->flush_buf = (void *)(((uintptr_t)k->flush_base + 4095) & ~4095UL);
	{
		uint64_t sentinel[FLUSH_BYTES / 8];

		for (int i = 0; i < FLUSH_BYTES / 8; i++)
			sentinel[i] = SENTINEL;
		int (*htod)(unsigned long long, const void *, size_t) = NULL;
		void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

		cr_assert_not_null(lib);
		*(void **)&htod = dlsym(lib, "cuMemcpyHtoD_v2");
		cr_assert_eq(htod((uintptr_t)k->flush_buf, sentinel,
				  sizeof(sentinel)),
			     0);
	}
	k->flush_mr = reg(k, k->flush_buf, 4096, true);
	/* nccl_net_ofi_rdma_ep_t: the data rail's endpoint, then the CM's. */
	init_connection(k, &k->ep, &k->av, k->name, &k->namelen);
	init_connection(k, &k->cm_ep, &k->cm_av, k->cm_name, &k->cm_namelen);
	/* Freelists of host memory (freelist_regmr_host_fn). */
	k->host = aligned_alloc(4096, H_SIZE);
	memset(k->host, 0, H_SIZE);
	k->host_mr = reg(k, k->host, H_SIZE, false);
	/* set_local_address: the own address, for the flush and eager
	 * copy reads. */
	cr_assert_eq(fi_av_insert(k->av, k->name, 1, &k->self, 0, NULL), 1);
}

static void setup(void)
{
	require_vm();
	gpu_open();
	open_rank(&r[0], "rxe0");
	open_rank(&r[1], "rxe1");
}

static void teardown(void)
{
	for (int i = 1; i >= 0; i--) {
		struct rank *k = &r[i];

		if (k->cm_ep)
			fi_close(&k->cm_ep->fid);
		if (k->ep)
			fi_close(&k->ep->fid);
		if (k->host_mr)
			fi_close(&k->host_mr->fid);
		if (k->flush_mr)
			fi_close(&k->flush_mr->fid);
		if (k->cm_av)
			fi_close(&k->cm_av->fid);
		if (k->av)
			fi_close(&k->av->fid);
		if (k->cq)
			fi_close(&k->cq->fid);
		if (k->domain)
			fi_close(&k->domain->fid);
		if (k->fabric)
			fi_close(&k->fabric->fid);
		fi_freeinfo(k->info);
		free(k->host);
	}
}

/* nccl_ofi_rdma.cpp: ofi_process_cq_rail: one entry from k's CQ, both
 * ranks progressed meanwhile; error entries fail the test. */
static struct fi_cq_data_entry wait_one(struct rank *k)
{
	struct fi_cq_data_entry e;

	dp_read_one(k->cq, &e, r[k == &r[0]].cq);
	return e;
}

#define POST(k, call)                                                          \
	do {                                                                   \
		ssize_t ret_;                                                  \
		struct fi_cq_data_entry none_;                                 \
		while ((ret_ = (call)) == -FI_EAGAIN) {                        \
			fi_cq_read(r[0].cq, &none_, 0);                        \
			fi_cq_read(r[1].cq, &none_, 0);                        \
		}                                                              \
		cr_assert_eq(ret_, 0, "%s: %s", #call,                         \
			     fi_strerror((int)-ret_));                         \
	} while (0)

/* cm/: the connection manager. The receiver (listen/accept) posts CM
 * receive buffers (nccl_ofi_cm_rx_req::progress: fi_recv); the sender
 * (connect) sends its connect message with fi_send, and the receiver
 * answers with the connect response; each inserts the other's data
 * endpoint name into its data AV (nccl_net_ofi_rdma_ep_t::connect and
 * accept, finish_connect). */
static void cm_exchange(uint32_t *s_comm_id, uint32_t *r_comm_id)
{
	struct conn_msg *s_tx = (void *)(r[0].host + H_CM);
	struct conn_msg *s_rx = (void *)(r[0].host + H_CM + 256);
	struct conn_msg *r_tx = (void *)(r[1].host + H_CM);
	struct conn_msg *r_rx = (void *)(r[1].host + H_CM + 256);
	void *sd = fi_mr_desc(r[0].host_mr), *rd = fi_mr_desc(r[1].host_mr);
	struct fi_cq_data_entry e;
	int ctx[4];

	/* The listen handle carries the receiver's CM address. */
	cr_assert_eq(fi_av_insert(r[0].cm_av, r[1].cm_name, 1, &r[0].cm_peer, 0,
				  NULL),
		     1);
	POST(&r[1],
	     fi_recv(r[1].cm_ep, r_rx, 256, rd, FI_ADDR_UNSPEC, &ctx[0]));
	POST(&r[0],
	     fi_recv(r[0].cm_ep, s_rx, 256, sd, FI_ADDR_UNSPEC, &ctx[1]));
	*s_comm_id = 7;
	*s_tx = (struct conn_msg){.type = 0,
				  .comm_id = *s_comm_id,
				  .mailbox_addr =
					  (uintptr_t)(r[0].host + H_MAILBOX),
				  .mailbox_key = fi_mr_key(r[0].host_mr)};
	memcpy(s_tx->ep_name, r[0].name, r[0].namelen);
	memcpy(s_tx->cm_name, r[0].cm_name, r[0].cm_namelen);
	POST(&r[0], fi_send(r[0].cm_ep, s_tx, sizeof(*s_tx), sd, r[0].cm_peer,
			    &ctx[2]));
	e = wait_one(&r[1]);
	cr_assert_eq(e.op_context, &ctx[0]);
	cr_assert(e.flags & FI_RECV);
	cr_assert_eq(e.flags & FI_REMOTE_CQ_DATA, 0);
	cr_assert_eq(e.len, sizeof(*s_tx));
	cr_assert_eq(r_rx->comm_id, *s_comm_id);
	e = wait_one(&r[0]);
	cr_assert_eq(e.op_context, &ctx[2]);
	cr_assert(e.flags & FI_SEND);
	/* accept: the sender's data endpoint into the data AV, the CM's
	 * into the CM AV, and the response. */
	cr_assert_eq(
		fi_av_insert(r[1].av, r_rx->ep_name, 1, &r[1].peer, 0, NULL),
		1);
	cr_assert_eq(fi_av_insert(r[1].cm_av, r_rx->cm_name, 1, &r[1].cm_peer,
				  0, NULL),
		     1);
	*r_comm_id = 9;
	*r_tx = (struct conn_msg){.type = 1, .comm_id = *r_comm_id};
	memcpy(r_tx->ep_name, r[1].name, r[1].namelen);
	POST(&r[1], fi_send(r[1].cm_ep, r_tx, sizeof(*r_tx), rd, r[1].cm_peer,
			    &ctx[3]));
	e = wait_one(&r[0]);
	cr_assert_eq(e.op_context, &ctx[1]);
	cr_assert_eq(s_rx->type, 1);
	e = wait_one(&r[1]);
	cr_assert_eq(e.op_context, &ctx[3]);
	/* finish_connect: the receiver's data endpoint. */
	cr_assert_eq(
		fi_av_insert(r[0].av, s_rx->ep_name, 1, &r[0].peer, 0, NULL),
		1);
}

/* nccl_ofi_rdma.h: | 4-bit segment count | 18-bit comm ID | 10-bit seq |. */
static uint64_t imm(uint32_t segs, uint32_t comm, uint32_t seq)
{
	return ((uint64_t)segs << (COMM_ID_BITS + SEQ_BITS)) |
	       ((uint64_t)comm << SEQ_BITS) | seq;
}

/* nccl_ofi_rdma.cpp: post_rx_buffer: eager bounce buffers, fi_recvmsg
 * from any address, no flags, one context per buffer. */
static int rx_ctx[RX_BUFS];
static void post_eager_buffer(int i)
{
	struct iovec iov = {.iov_base = r[1].host + H_RX + i * EAGER_MAX,
			    .iov_len = EAGER_MAX};
	void *desc = fi_mr_desc(r[1].host_mr);
	struct fi_msg msg = {.msg_iov = &iov,
			     .desc = &desc,
			     .iov_count = 1,
			     .addr = FI_ADDR_UNSPEC,
			     .context = &rx_ctx[i]};

	POST(&r[1], fi_recvmsg(r[1].ep, &msg, 0));
}

/* The whole protocol for one communicator: messages of each size from
 * GPU buffer to GPU buffer, the flush after each, and the close. */
static void replay(void)
{
	size_t sizes[] = {0, 4, 8192, 8193, 65536, 1 << 20, 4 << 20};
	size_t max = 4 << 20;
	void *src = gpu_alloc(max), *dst = gpu_alloc(max);
	struct fid_mr *smr, *dmr;
	uint32_t s_comm, r_comm;
	struct ctrl_msg *mailbox = (void *)(r[0].host + H_MAILBOX);
	struct ctrl_msg *ctrl = (void *)(r[1].host + H_MAILBOX);
	uint64_t *flush_land = (void *)(r[1].host + H_FLUSH);
	struct fi_cq_data_entry e;

	cr_log_info("replaying at API %u.%u", FI_MAJOR(api), FI_MINOR(api));
	cm_exchange(&s_comm, &r_comm);
	/* nccl_net_ofi_rdma_ep_t::post_rx_buffs: eager bounce buffers. */
	for (int i = 0; i < RX_BUFS; i++)
		post_eager_buffer(i);
	/* regMr (reg_mr_send_comm / reg_mr_recv_comm): NCCL_PTR_CUDA. */
	smr = reg(&r[0], src, max, true);
	dmr = reg(&r[1], dst, max, true);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint16_t seq = (uint16_t)(i + 1); /* MSG_SEQ_NUM_START */
		uint16_t slot = seq % MAILBOX;
		size_t len = sizes[i];
		int wctx, cctx, fctx, sctx;

		gpu_fill(src, len, (unsigned)i + 3);
		/* recv -> post_rdma_ctrl: the control message, written into
		 * the sender's mailbox slot from the receiver's own. */
		ctrl[slot] = (struct ctrl_msg){
			.buff_addr = (uintptr_t)dst,
			.mr_key = {fi_mr_key(dmr)},
			.buff_len = (uint32_t)max,
			.msg_seq_num = seq,
		};
		POST(&r[1], fi_write(r[1].ep, &ctrl[slot], CTRL_SIZE,
				     fi_mr_desc(r[1].host_mr), r[1].peer,
				     (uintptr_t)&mailbox[slot],
				     fi_mr_key(r[0].host_mr), &cctx));
		e = wait_one(&r[1]);
		cr_assert_eq(e.op_context, &cctx);
		cr_assert(e.flags & FI_WRITE, "control write: flags %#lx",
			  (unsigned long)e.flags);
		/* send: has_ctrl_msg polls the mailbox memory itself. */
		{
			volatile uint16_t *ready = &mailbox[slot].msg_seq_num;
			time_t end = time(NULL) + 30;

			while (*ready != seq) {
				struct fi_cq_data_entry none;

				fi_cq_read(r[0].cq, &none, 0);
				cr_assert_lt(time(NULL), end,
					     "no control message");
			}
		}
		cr_assert_eq(mailbox[slot].buff_addr, (uintptr_t)dst);
		cr_assert_eq(mailbox[slot].mr_key[0], fi_mr_key(dmr));
		if (len <= EAGER_MAX) {
			/* post_rdma_eager_send: fi_senddata into a bounce
			 * buffer, with the immediate data. */
			int b = (int)(i % RX_BUFS);

			POST(&r[0],
			     fi_senddata(r[0].ep, src, len, fi_mr_desc(smr),
					 imm(1, r_comm, seq), r[0].peer,
					 &sctx));
			e = wait_one(&r[1]);
			cr_assert_eq(e.op_context, &rx_ctx[b]);
			/* handle_rx_buff_recv: FI_REMOTE_CQ_DATA means
			 * eager, not control. */
			cr_assert(e.flags & FI_RECV);
			cr_assert(e.flags & FI_REMOTE_CQ_DATA,
				  "eager message without CQ data: %#lx",
				  (unsigned long)e.flags);
			cr_assert_eq(e.data, imm(1, r_comm, seq));
			cr_assert_eq(e.len, len);
			e = wait_one(&r[0]);
			cr_assert_eq(e.op_context, &sctx);
			cr_assert(e.flags & FI_SEND);
			/* post_eager_copy: fi_read through the own address
			 * from the bounce buffer into the GPU buffer. */
			if (len) {
				POST(&r[1],
				     fi_read(r[1].ep, dst, len, fi_mr_desc(dmr),
					     r[1].self,
					     (uintptr_t)(r[1].host + H_RX +
							 b * EAGER_MAX),
					     fi_mr_key(r[1].host_mr), &wctx));
				e = wait_one(&r[1]);
				cr_assert_eq(e.op_context, &wctx);
				cr_assert(e.flags & FI_READ);
			}
			post_eager_buffer(b); /* repost_rx_buff */
		} else {
			/* post_rdma_write: fi_writedata of the payload into
			 * the destination the control message named. */
			POST(&r[0],
			     fi_writedata(r[0].ep, src, len, fi_mr_desc(smr),
					  imm(1, r_comm, seq), r[0].peer,
					  mailbox[slot].buff_addr,
					  mailbox[slot].mr_key[0], &wctx));
			e = wait_one(&r[1]);
			/* rdma_process_completions -> handle_write_comp:
			 * FI_REMOTE_WRITE, the CQ data names the message,
			 * len is the bytes received (inc_recv_seg_completion
			 * reports it to NCCL as the received size). */
			cr_assert(e.flags & FI_REMOTE_WRITE,
				  "remote write: flags %#lx",
				  (unsigned long)e.flags);
			cr_assert(e.flags & FI_REMOTE_CQ_DATA);
			cr_assert_eq(e.data, imm(1, r_comm, seq));
			cr_assert_eq(e.len, len,
				     "the plugin reports this len to NCCL");
			e = wait_one(&r[0]);
			cr_assert_eq(e.op_context, &wctx);
			cr_assert(e.flags & FI_WRITE);
		}
		cr_assert(gpu_check(dst, len, (unsigned)i + 3),
			  "%zu bytes in GPU memory", len);
		/* flush -> post_flush_req (CUDA): not for 0-byte receives;
		 * a cache line of the GPU flush buffer read through the own
		 * address into host memory, complete when the sentinel is
		 * there (has_flush_completed). */
		if (!len)
			continue;
		memset(flush_land, 0, FLUSH_BYTES);
		POST(&r[1], fi_read(r[1].ep, flush_land, FLUSH_BYTES,
				    fi_mr_desc(r[1].host_mr), r[1].self,
				    (uintptr_t)r[1].flush_buf,
				    fi_mr_key(r[1].flush_mr), &fctx));
		e = wait_one(&r[1]);
		cr_assert_eq(e.op_context, &fctx);
		cr_assert(e.flags & FI_READ);
		cr_assert_eq(flush_land[0], SENTINEL, "flush sentinel");
	}
	/* recv_comm_insert_send_close_req -> post_close_msg: send_ctrl_post,
	 * fi_send of the close message, received by the sender in a control
	 * buffer: FI_RECV without CQ data. */
	{
		uint8_t *close_rx = r[0].host + H_RX;
		int ctx, sctx;

		POST(&r[0],
		     fi_recv(r[0].ep, close_rx, EAGER_MAX,
			     fi_mr_desc(r[0].host_mr), FI_ADDR_UNSPEC, &ctx));
		/* nccl_net_ofi_rdma_close_msg_t: the type in the first
		 * bits (NCCL_OFI_RDMA_MSG_CLOSE). */
		memset(ctrl, 0, 16);
		*(uint8_t *)ctrl = 2;
		POST(&r[1], fi_send(r[1].ep, ctrl, 16, fi_mr_desc(r[1].host_mr),
				    r[1].peer, &sctx));
		e = wait_one(&r[0]);
		cr_assert_eq(e.op_context, &ctx);
		cr_assert_eq(e.flags & FI_REMOTE_CQ_DATA, 0);
		cr_assert_eq(e.len, 16);
		e = wait_one(&r[1]);
		cr_assert_eq(e.op_context, &sctx);
	}
	/* deregMr, then the endpoints close with eager buffers still
	 * posted (nccl_net_ofi_rdma_ep_t::fini_rx_buffers). */
	fi_close(&smr->fid);
	fi_close(&dmr->fid);
	gpu_free(src);
	gpu_free(dst);
}

TestSuite(nccl_rdma, .fini = teardown, .timeout = 240);

/* rxe's default: GPU memory staged through host buffers by CUDA copies;
 * the plugin's FI_OPT_CUDA_API_PERMITTED=false is refused. */
Test(nccl_rdma, protocol_over_staged_gpu_memory)
{
	setup();
	/* Asked only at API 1.18 and up (not under a 1.17 core). */
	if (FI_VERSION_GE(api, FI_VERSION(1, 18)))
		cr_assert(
			r[0].cuda_refused,
			"a staging domain must refuse FI_OPT_CUDA_API_PERMITTED");
	replay();
}

/* GPU memory the NIC reaches directly (nvidia-peermem's path, the
 * stand-in's memory made CPU-visible so that rxe can register it): the
 * plugin's FI_OPT_CUDA_API_PERMITTED=false is accepted (its GDR path,
 * support_gdr = GDR_SUPPORTED), and gdrfab then moves the protocol's
 * GPU data with no CUDA copy, event or flush of its own (the test's own
 * fills and checks are synchronous copies, counted apart). */
Test(nccl_rdma, protocol_over_peermem_gpu_memory)
{
	struct standin_stats before, after;

	setenv("FI_GDRFAB_CUDA_REG", "peermem", 1);
	setenv("GDRFAB_STANDIN_CPU_VISIBLE", "1", 1);
	setup();
	if (FI_VERSION_GE(api, FI_VERSION(1, 18)))
		for (int i = 0; i < 2; i++)
			cr_assert_not(
				r[i].cuda_refused,
				"rank %d: a peermem domain must accept FI_OPT_CUDA_API_PERMITTED=false",
				i);
	before = gpu_stats();
	replay();
	after = gpu_stats();
	if (FI_VERSION_GE(api, FI_VERSION(1, 18))) {
		cr_assert_eq(after.async_copies, before.async_copies,
			     "gdrfab copied with CUDA on the GDR path");
		cr_assert_eq(after.flushes, before.flushes,
			     "gdrfab flushed with CUDA on the GDR path");
		cr_assert_eq(after.stream_syncs, before.stream_syncs);
	}
}

/* The branch the plugin takes where dma-buf is viable (the GPU reports
 * CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, kernel 5.12+, libfabric 1.20+):
 * it asks API 1.20 and registers GPU memory with FI_MR_DMABUF
 * (nccl_ofi_mr.h: nccl_ofi_mr_ckey_fill_mr_attrs), the fd from
 * cuMemGetHandleForAddressRange at offset 0 and the page-aligned address
 * as base_addr (nccl_ofi_rdma.cpp: alloc_and_reg_flush_buff). On rxe the
 * stand-in reports no dma-buf, so the plugin itself never gets here;
 * gdrfab serves such a registration by its address (an open fd stands in
 * for the export), and the flush read through its key must see the
 * sentinel. */
Test(nccl_rdma, dmabuf_registration_at_api_1_20)
{
	struct {
		int fd;
		uint64_t offset;
		size_t len;
		void *base_addr;
	} dmabuf; /* struct fi_mr_dmabuf (1.20) */
	struct fi_mr_attr attr = {
		.mr_iov = (const struct iovec *)(void *)&dmabuf,
		.iov_count = 1,
		.access = FI_SEND | FI_RECV | FI_WRITE | FI_REMOTE_WRITE |
			  FI_READ | FI_REMOTE_READ,
		.iface = FI_HMEM_CUDA,
	};
	uint64_t *land;
	struct fid_mr *mr;
	struct fi_cq_data_entry e;
	int (*attr_of)(int *, int, int);
	int supported = -1, ctx, ret;

	if (FI_VERSION_LT(fi_version(), FI_VERSION(1, 20)))
		cr_skip_test("libfabric %u.%u has no API 1.20",
			     FI_MAJOR(fi_version()), FI_MINOR(fi_version()));
	asked = FI_VERSION(1, 20);
	setup();
	cr_assert_eq(api, FI_VERSION(1, 20));
	/* nccl_ofi_cuda.cpp: nccl_net_ofi_cuda_have_dma_buf_attr. */
	*(void **)&attr_of =
		dlsym(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD),
		      "cuDeviceGetAttribute");
	cr_assert_eq(attr_of(&supported, 124, 0), 0);
	cr_assert_eq(supported, 0, "the stand-in has no dma-buf, as rxe");
	dmabuf.fd = open("/dev/null", O_RDONLY);
	dmabuf.offset = 0;
	dmabuf.len = 4096;
	dmabuf.base_addr = r[1].flush_buf;
	attr.device.cuda = 0;
	ret = fi_mr_regattr(r[1].domain, &attr, 1ULL << 40 /* FI_MR_DMABUF */,
			    &mr);
	cr_assert_eq(ret, 0, "FI_MR_DMABUF: %s", fi_strerror(-ret));
	land = (uint64_t *)(void *)(r[1].host + H_FLUSH);
	memset(land, 0, FLUSH_BYTES);
	POST(&r[1], fi_read(r[1].ep, land, FLUSH_BYTES,
			    fi_mr_desc(r[1].host_mr), r[1].self,
			    (uintptr_t)r[1].flush_buf, fi_mr_key(mr), &ctx));
	e = wait_one(&r[1]);
	cr_assert_eq(e.op_context, &ctx);
	cr_assert_eq(land[0], SENTINEL, "flush through the dma-buf key");
	fi_close(&mr->fid);
	close(dmabuf.fd);
}
