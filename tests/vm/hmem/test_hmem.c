/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * GPU memory over rxe, with the CUDA stand-in (tests/cuda/) as the GPU:
 * what FI_HMEM_CUDA registration accepts and refuses, SYNC_MEMOPS once per
 * allocation, the registration cache and its buffer-ID check, the staged
 * path for every kind of operation, and flushes before completions. The
 * same behaviours are checked against a real GPU by tests/gpu/.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dp_helpers.h"
#include "gpu_standin.h"

#ifndef FI_OPT_CUDA_API_PERMITTED
#define FI_OPT_CUDA_API_PERMITTED 10
#endif

static struct dp_ep *const p = dp_pair_eps;

/* The stand-in and the provider read their settings at first use. */
static void start(const char *cuda_reg, bool cpu_visible)
{
	require_vm();
	if (cuda_reg)
		setenv("FI_GDRFAB_CUDA_REG", cuda_reg, 1);
	if (cpu_visible)
		setenv("GDRFAB_STANDIN_CPU_VISIBLE", "1", 1);
	gpu_open();
	dp_pair_open(NULL);
}

TestSuite(hmem, .fini = dp_pair_teardown, .timeout = 240);

static struct fid_mr *reg_flags(struct dp_ep *e, void *buf, size_t len,
				enum fi_hmem_iface iface, uint64_t flags,
				int *ret)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = FI_SEND | FI_RECV,
		.iface = iface,
	};
	struct fid_mr *mr = NULL;

	*ret = fi_mr_regattr(e->d.domain, &attr, flags, &mr);
	return mr;
}

static struct fid_mr *reg_cuda(struct dp_ep *e, void *buf, size_t len,
			       uint64_t access, int *ret)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = access,
		.iface = FI_HMEM_CUDA,
	};
	struct fid_mr *mr = NULL;

	*ret = fi_mr_regattr(e->d.domain, &attr, 0, &mr);
	return mr;
}

Test(hmem, fi_info_offers_hmem_with_cuda)
{
	start(NULL, false);
	cr_assert(p[0].d.info->caps & FI_HMEM);
	cr_assert(p[0].d.info->domain_attr->mr_mode & FI_MR_HMEM);
}

Test(hmem, no_cuda_means_no_hmem)
{
	struct fid_mr *mr;
	bool off = false;
	int ret;

	setenv("GDRFAB_STANDIN_INIT_FAIL", "1", 1);
	dp_pair_open(NULL);
	cr_assert_not(p[0].d.info->caps & FI_HMEM);
	mr = reg_cuda(&p[0], &off, sizeof(off), FI_SEND, &ret);
	cr_assert_eq(ret, -FI_ENOSYS);
	cr_assert_null(mr);
	cr_assert_eq(fi_setopt(&p[0].ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_CUDA_API_PERMITTED, &off, sizeof(off)),
		     -FI_EINVAL);
}

Test(hmem, registration_checks_what_the_memory_is)
{
	void *dev, *managed, *pinned, *host = dp_alloc(4096);
	struct fid_mr *mr;
	int ret;

	start(NULL, false);
	dev = gpu_alloc(1 << 20);
	managed = gpu_alloc_managed(1 << 16);
	pinned = gpu_alloc_host(1 << 16);
	mr = reg_cuda(&p[0], managed, 1 << 16, FI_SEND, &ret);
	cr_assert_eq(ret, -FI_EINVAL, "managed memory is refused");
	mr = reg_cuda(&p[0], host, 4096, FI_SEND, &ret);
	cr_assert_eq(ret, -FI_EINVAL, "a host pointer is not FI_HMEM_CUDA");
	mr = reg_cuda(&p[0], pinned, 4096, FI_SEND, &ret);
	cr_assert_eq(ret, -FI_EINVAL, "CUDA-pinned host memory either");
	mr = reg_cuda(&p[0], (char *)dev + (1 << 20) - 16, 64, FI_SEND, &ret);
	cr_assert_eq(ret, -FI_EINVAL, "a range past the allocation");
	mr = gpu_reg(&p[0], dev, 1 << 20, FI_SEND | FI_RECV);
	/* Once GPU memory is in use, a device pointer passed as host
	 * memory is caught. */
	ret = fi_mr_reg(p[0].d.domain, dev, 4096, FI_SEND, 0, 0, 0,
			&(struct fid_mr *){NULL}, NULL);
	cr_assert_eq(ret, -FI_EINVAL);
	fi_close(&mr->fid);
	free(host);
}

/* The flags consumers pass: Open MPI main and fabtests' -D cuda say
 * FI_HMEM_DEVICE_ONLY, aws-ofi-nccl FI_MR_DMABUF (its fd, offset and
 * base_addr); anything else is -FI_EBADFLAGS. */
Test(hmem, registration_flags_consumers_pass)
{
	void *dev, *pinned, *host = dp_alloc(4096);
	struct fid_mr *mr;
	int ret, fd = open("/dev/null", O_RDONLY);

	start(NULL, false);
	dev = gpu_alloc(1 << 20);
	pinned = gpu_alloc_host(1 << 16);
	mr = reg_flags(&p[0], dev, 4096, FI_HMEM_CUDA, FI_HMEM_DEVICE_ONLY,
		       &ret);
	cr_assert_eq(ret, 0, "FI_HMEM_DEVICE_ONLY on device memory");
	fi_close(&mr->fid);
	reg_flags(&p[0], host, 4096, FI_HMEM_SYSTEM, FI_HMEM_DEVICE_ONLY, &ret);
	cr_assert_eq(ret, -FI_EINVAL, "DEVICE_ONLY with FI_HMEM_SYSTEM");
	mr = reg_flags(&p[0], pinned, 4096, FI_HMEM_CUDA, FI_HMEM_HOST_ALLOC,
		       &ret);
	cr_assert_eq(ret, 0, "cuMemAllocHost memory with HOST_ALLOC");
	fi_close(&mr->fid);
	reg_flags(&p[0], dev, 4096, FI_HMEM_CUDA, FI_HMEM_HOST_ALLOC, &ret);
	cr_assert_eq(ret, -FI_EINVAL, "HOST_ALLOC on device memory");
	reg_flags(&p[0], dev, 4096, FI_HMEM_CUDA, 1ULL << 41, &ret);
	cr_assert_eq(ret, -FI_EBADFLAGS, "FI_MR_SINGLE_USE is not served");
	reg_flags(&p[0], dev, 4096, FI_HMEM_CUDA, 1ULL << 62, &ret);
	cr_assert_eq(ret, -FI_EBADFLAGS, "an unknown flag");

	/* FI_MR_DMABUF: mr_iov is a struct fi_mr_dmabuf (API 1.20). */
	struct {
		int fd;
		uint64_t offset;
		size_t len;
		void *base_addr;
	} dmabuf = {fd, 65536, 4096, dev};
	struct fi_mr_attr attr = {
		.mr_iov = (const struct iovec *)(void *)&dmabuf,
		.iov_count = 1,
		.access = FI_SEND | FI_RECV,
		.iface = FI_HMEM_CUDA,
	};
	cr_assert_eq(fi_mr_regattr(p[0].d.domain, &attr, 1ULL << 40, &mr), 0);
	fi_close(&mr->fid);
	dmabuf.fd = -1;
	cr_assert_eq(fi_mr_regattr(p[0].d.domain, &attr, 1ULL << 40, &mr),
		     -FI_EINVAL, "a closed fd");
	dmabuf.fd = fd;
	dmabuf.base_addr = NULL;
	cr_assert_eq(fi_mr_regattr(p[0].d.domain, &attr, 1ULL << 40, &mr),
		     -FI_EOPNOTSUPP, "no base address");
	dmabuf.base_addr = dev;
	dmabuf.offset = 1 << 20; /* past the allocation */
	cr_assert_eq(fi_mr_regattr(p[0].d.domain, &attr, 1ULL << 40, &mr),
		     -FI_EINVAL, "a range past the allocation");
	close(fd);
	free(host);
}

Test(hmem, sync_memops_is_set_once_per_allocation)
{
	struct fid_mr *a, *b, *c;
	uint8_t *dev, *other;
	uint64_t before;

	start(NULL, false);
	dev = gpu_alloc(1 << 20);
	other = gpu_alloc(1 << 16);
	before = gpu_stats().sync_memops;
	a = gpu_reg(&p[0], dev, 4096, FI_SEND);
	b = gpu_reg(&p[0], dev + 8192, 4096, FI_RECV);
	cr_assert_eq(gpu_stats().sync_memops, before + 1);
	cr_assert_eq(gpu_sync_memops_of(dev), 1);
	c = gpu_reg(&p[0], other, 4096, FI_SEND);
	cr_assert_eq(gpu_stats().sync_memops, before + 2);
	fi_close(&a->fid);
	fi_close(&b->fid);
	fi_close(&c->fid);
}

/* Keys identify registrations (rxe gives non-remote MRs key 0, so these
 * ask for remote reading). */
#define KEYED FI_REMOTE_READ

Test(hmem, cache_shares_a_granule_and_drops_reallocated_memory)
{
	struct fid_mr *a, *b;
	uint8_t *dev;
	uint64_t key;

	start("peermem", true);
	dev = gpu_alloc(1 << 20);
	a = gpu_reg(&p[0], dev, 100, KEYED);
	b = gpu_reg(&p[0], dev + 4096, 100, KEYED);
	cr_assert_eq(fi_mr_key(a), fi_mr_key(b),
		     "two buffers in one 64 KB page share a registration");
	key = fi_mr_key(a);
	fi_close(&a->fid);
	fi_close(&b->fid);
	a = gpu_reg(&p[0], dev, 100, KEYED);
	cr_assert_eq(fi_mr_key(a), key, "kept after its last close");
	/* Freed and reallocated at the same address: a new buffer ID, so
	 * the old registration (still held by a) must not be served. */
	gpu_free(dev);
	cr_assert_eq(gpu_alloc(1 << 20), dev, "the stand-in reuses addresses");
	b = gpu_reg(&p[0], dev, 100, KEYED);
	cr_assert_neq(fi_mr_key(b), key);
	fi_close(&a->fid);
	fi_close(&b->fid);
}

Test(hmem, cache_can_be_turned_off)
{
	struct fid_mr *a, *b;
	uint8_t *dev;

	setenv("FI_GDRFAB_MR_CACHE_ENABLE", "0", 1);
	start("peermem", true);
	dev = gpu_alloc(1 << 20);
	a = gpu_reg(&p[0], dev, 100, KEYED);
	b = gpu_reg(&p[0], dev, 100, KEYED);
	cr_assert_neq(fi_mr_key(a), fi_mr_key(b));
	fi_close(&a->fid);
	fi_close(&b->fid);
}

/* A tagged message from GPU memory into GPU memory; checks the bytes and
 * that the data path copied through CUDA (staged) as expected. */
static void gpu_to_gpu(size_t len)
{
	uint8_t *src = gpu_alloc(len ? len : 1), *dst = gpu_alloc(len + 64);
	struct fid_mr *smr = gpu_reg(&p[0], src, len ? len : 1, FI_SEND);
	struct fid_mr *dmr = gpu_reg(&p[1], dst, len + 64, FI_RECV);
	struct fi_cq_tagged_entry e;

	gpu_fill(src, len, 7);
	DP_POST(p, 2,
		fi_trecv(p[1].ep, dst, len + 64, fi_mr_desc(dmr),
			 FI_ADDR_UNSPEC, 0x42, 0, dst));
	DP_POST(p, 2,
		fi_tsend(p[0].ep, src, len, fi_mr_desc(smr), p[0].peer[1], 0x42,
			 src));
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	cr_assert_eq(e.len, len);
	cr_assert_eq(e.buf, dst);
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	cr_assert(gpu_check(dst, len, 7), "%zu bytes arrived", len);
	fi_close(&smr->fid);
	fi_close(&dmr->fid);
	gpu_free(src);
	gpu_free(dst);
}

Test(hmem, staged_messages_of_every_size)
{
	struct standin_stats before;
	size_t sizes[] = {0, 1, 100, 8192, 8193, 65536, 1 << 20, 9 << 20};

	start(NULL, false); /* rxe: no dma-buf, no peermem: staged */
	before = gpu_stats();
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		gpu_to_gpu(sizes[i]);
	cr_assert_gt(gpu_stats().copies_to_host, before.copies_to_host);
	cr_assert_gt(gpu_stats().copies_to_dev, before.copies_to_dev);
}

Test(hmem, staged_rma_on_local_gpu_buffers)
{
	size_t len = 3 << 20;
	uint8_t *src, *back, *remote = dp_alloc(len);
	struct fid_mr *smr, *bmr, *rmr;
	struct fi_cq_tagged_entry e;

	start(NULL, false);
	src = gpu_alloc(len);
	back = gpu_alloc(len);
	smr = gpu_reg(&p[0], src, len, FI_WRITE);
	bmr = gpu_reg(&p[0], back, len, FI_READ);
	rmr = dp_reg(&p[1], remote, len, FI_REMOTE_READ | FI_REMOTE_WRITE);
	gpu_fill(src, len, 3);
	DP_POST(p, 2,
		fi_write(p[0].ep, src, len, fi_mr_desc(smr), p[0].peer[1],
			 (uintptr_t)remote, fi_mr_key(rmr), NULL));
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	cr_assert(dp_check(remote, len, 3));
	DP_POST(p, 2,
		fi_read(p[0].ep, back, len, fi_mr_desc(bmr), p[0].peer[1],
			(uintptr_t)remote, fi_mr_key(rmr), NULL));
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	cr_assert(gpu_check(back, len, 3));
	fi_close(&smr->fid);
	fi_close(&bmr->fid);
	fi_close(&rmr->fid);
	free(remote);
}

/* Staged GPU memory as an RMA target: the peer's NIC cannot reach it, so
 * the two data paths emulate the access (GDRFAB_EMU_KEY keys). */
#define EMU_OFF 4096

static void emu_rma(struct dp_ep *from, fi_addr_t to, uint8_t *tgt,
		    struct fid_mr *tmr, size_t n)
{
	uint8_t *src = dp_alloc(n + 1), *back = dp_alloc(n + 1);
	uint8_t *gback = gpu_alloc(n + 1);
	struct fid_mr *smr = dp_reg(from, src, n + 1, FI_WRITE);
	struct fid_mr *bmr = dp_reg(from, back, n + 1, FI_READ);
	struct fid_mr *gmr = gpu_reg(from, gback, n + 1, FI_READ);
	uint64_t raddr = (uintptr_t)tgt + EMU_OFF;
	struct fi_cq_tagged_entry e;
	unsigned seed = (unsigned)(n % 251);

	dp_fill(src, n, seed);
	DP_POST(p, 2,
		fi_write(from->ep, src, n, fi_mr_desc(smr), to, raddr,
			 fi_mr_key(tmr), NULL));
	dp_expect(from->txcq, &e, NULL, p, 2);
	cr_assert_eq(e.flags, FI_RMA | FI_WRITE);
	/* Complete means in GPU memory: the target answered once there. */
	cr_assert(gpu_check(tgt + EMU_OFF, n, seed), "%zu bytes written", n);
	DP_POST(p, 2,
		fi_read(from->ep, back, n, fi_mr_desc(bmr), to, raddr,
			fi_mr_key(tmr), NULL));
	dp_expect(from->txcq, &e, NULL, p, 2);
	cr_assert_eq(e.flags, FI_RMA | FI_READ);
	cr_assert(dp_check(back, n, seed), "%zu bytes read into host", n);
	DP_POST(p, 2,
		fi_read(from->ep, gback, n, fi_mr_desc(gmr), to, raddr,
			fi_mr_key(tmr), NULL));
	dp_expect(from->txcq, &e, NULL, p, 2);
	cr_assert(gpu_check(gback, n, seed), "%zu bytes read into GPU", n);
	fi_close(&smr->fid);
	fi_close(&bmr->fid);
	fi_close(&gmr->fid);
	gpu_free(gback);
	free(src);
	free(back);
}

Test(hmem, staged_gpu_memory_is_an_rma_target)
{
	size_t sizes[] = {0, 1, 100, 8192, 8193, 65536, 3 << 20};
	size_t len = EMU_OFF + (3 << 20);
	uint8_t *tgt, small[16];
	struct fid_mr *tmr;
	struct fi_cq_tagged_entry e;

	start(NULL, false); /* rxe: staged */
	tgt = gpu_alloc(len);
	tmr = gpu_reg(&p[1], tgt, len, FI_REMOTE_READ | FI_REMOTE_WRITE);
	cr_assert(fi_mr_key(tmr) >> 32, "a key of gdrfab's own, no rkey");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		emu_rma(&p[0], p[0].peer[1], tgt, tmr, sizes[i]);
	/* To the endpoint's own address. */
	emu_rma(&p[1], p[1].peer[1], tgt, tmr, 70000);
	/* fi_writedata: the CQ data reaches the target's CQ. */
	DP_POST(p, 2,
		fi_writedata(p[0].ep, tgt, 0, NULL, 0x5eed, p[0].peer[1],
			     (uintptr_t)tgt, fi_mr_key(tmr), NULL));
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	cr_assert_eq(e.flags, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA);
	cr_assert_eq(e.data, 0x5eed);
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	/* fi_inject_write: no completion, data there by the next read. */
	dp_fill(small, sizeof(small), 9);
	DP_POST(p, 2,
		fi_inject_write(p[0].ep, small, sizeof(small), p[0].peer[1],
				(uintptr_t)tgt, fi_mr_key(tmr)));
	memset(small, 0, sizeof(small));
	DP_POST(p, 2,
		fi_read(p[0].ep, small, sizeof(small), NULL, p[0].peer[1],
			(uintptr_t)tgt, fi_mr_key(tmr), NULL));
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	cr_assert(dp_check(small, sizeof(small), 9));
	fi_close(&tmr->fid);
	gpu_free(tgt);
}

/* One emulated access that the target must refuse. */
static void emu_refused(uint64_t op, uint8_t *local, uint64_t raddr, size_t n,
			uint64_t key)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = {0};
	char buf[128];

	DP_POST(p, 2,
		op == FI_WRITE ? fi_write(p[0].ep, local, n, NULL, p[0].peer[1],
					  raddr, key, local)
			       : fi_read(p[0].ep, local, n, NULL, p[0].peer[1],
					 raddr, key, local));
	cr_assert_eq(dp_wait(p[0].txcq, &e, NULL, &err, p, 2, 20000),
		     -FI_EAVAIL);
	cr_assert_eq(err.err, FI_EACCES, "%s", fi_strerror(err.err));
	cr_assert_eq(err.op_context, local);
	cr_assert_eq(err.flags & (FI_RMA | op), FI_RMA | op);
	cr_assert_not_null(fi_cq_strerror(p[0].txcq, err.prov_errno,
					  err.err_data, buf, sizeof(buf)));
}

Test(hmem, emulated_rma_is_checked_by_the_target)
{
	size_t len = 1 << 20;
	uint8_t *tgt, *local = dp_alloc(len);
	struct fid_mr *ro, *rw;
	uint64_t old_key;

	start(NULL, false);
	tgt = gpu_alloc(len);
	gpu_fill(tgt, len, 4);
	ro = gpu_reg(&p[1], tgt, len, FI_REMOTE_READ);
	rw = gpu_reg(&p[1], tgt, 65536, FI_REMOTE_READ | FI_REMOTE_WRITE);
	/* Writes the key does not allow, eager and rendezvous. */
	emu_refused(FI_WRITE, local, (uintptr_t)tgt, 64, fi_mr_key(ro));
	emu_refused(FI_WRITE, local, (uintptr_t)tgt, len, fi_mr_key(ro));
	/* Past the end of the registration; a range wrapping around is
	 * refused by the initiator's call already. */
	emu_refused(FI_READ, local, (uintptr_t)tgt + 65536 - 10, 100,
		    fi_mr_key(rw));
	cr_assert_eq(fi_read(p[0].ep, local, 100, NULL, p[0].peer[1],
			     UINT64_MAX - 10, fi_mr_key(rw), local),
		     -FI_EINVAL);
	/* A closed MR's key, even with its slot reused. */
	old_key = fi_mr_key(rw);
	fi_close(&rw->fid);
	rw = gpu_reg(&p[1], tgt, 65536, FI_REMOTE_READ | FI_REMOTE_WRITE);
	cr_assert_neq(fi_mr_key(rw), old_key);
	emu_refused(FI_WRITE, local, (uintptr_t)tgt, 64, old_key);
	cr_assert(gpu_check(tgt, len, 4), "nothing refused was written");
	/* The connection still works. */
	emu_rma(&p[0], p[0].peer[1], tgt, rw, 100);
	fi_close(&ro->fid);
	fi_close(&rw->fid);
	gpu_free(tgt);
	free(local);
}

Test(hmem, p2p_options_follow_the_domain)
{
	int mode = FI_HMEM_P2P_REQUIRED;
	bool no = false;

	start(NULL, false);
	cr_assert_eq(fi_setopt(&p[0].ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_FI_HMEM_P2P, &mode, sizeof(mode)),
		     -FI_EOPNOTSUPP, "staged domain: P2P cannot be required");
	mode = FI_HMEM_P2P_DISABLED;
	cr_assert_eq(fi_setopt(&p[0].ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_FI_HMEM_P2P, &mode, sizeof(mode)),
		     0);
	cr_assert_eq(fi_setopt(&p[0].ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_CUDA_API_PERMITTED, &no, sizeof(no)),
		     -FI_EOPNOTSUPP, "the data path copies with CUDA");
}

/* Rendezvous into GPU memory the NIC writes (peermem over the stand-in):
 * the flush must come before the completion. */
static void p2p_rendezvous(uint64_t expect_flushes)
{
	size_t len = 1 << 20;
	uint8_t *src, *dst;
	struct fid_mr *smr, *dmr;
	struct fi_cq_tagged_entry e;
	uint64_t before;

	src = gpu_alloc(len);
	dst = gpu_alloc(len);
	smr = gpu_reg(&p[0], src, len, FI_SEND);
	dmr = gpu_reg(&p[1], dst, len, FI_RECV);
	gpu_fill(src, len, 9);
	before = gpu_stats().flushes;
	DP_POST(p, 2,
		fi_recv(p[1].ep, dst, len, fi_mr_desc(dmr), FI_ADDR_UNSPEC,
			NULL));
	DP_POST(p, 2,
		fi_send(p[0].ep, src, len, fi_mr_desc(smr), p[0].peer[1],
			NULL));
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	cr_assert_eq(gpu_stats().flushes, before + expect_flushes,
		     "flushes when the receive completed");
	cr_assert(gpu_check(dst, len, 9));
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	fi_close(&smr->fid);
	fi_close(&dmr->fid);
}

Test(hmem, p2p_receive_is_flushed_before_its_completion)
{
	start("peermem", true);
	p2p_rendezvous(1);
	gpu_to_gpu(100);
	gpu_to_gpu(5 << 20);
}

Test(hmem, owner_ordered_gpu_needs_no_flush)
{
	setenv("GDRFAB_STANDIN_ORDERING", "100", 1);
	start("peermem", true);
	p2p_rendezvous(0);
}

Test(hmem, read_flush_without_cuda_flush)
{
	setenv("GDRFAB_STANDIN_FLUSH", "0", 1);
	start("peermem", true);
	p2p_rendezvous(0); /* flushed by an RDMA READ instead */
}

/* Flush READs are steps of their requests, completed from progress: with
 * more in flight than the flush QP holds (some wait in line), each
 * fi_writedata into GPU memory is reported once, after its flush, and a
 * burst of rendezvous receives each completes once with its data. */
Test(hmem, read_flushes_in_flight_complete_each_once)
{
	enum { N = 200, R = 8 };
	size_t len = 4096, rlen = 256 << 10;
	uint8_t *src = dp_alloc(len), *dst, *rsrc, *rdst;
	struct fid_mr *smr, *dmr, *rsmr, *rdmr;
	struct fi_cq_tagged_entry e;
	bool seen[N] = {0};

	setenv("GDRFAB_STANDIN_FLUSH", "0", 1); /* flushed by READs */
	start("peermem", true);
	dst = gpu_alloc(len * N);
	smr = dp_reg(&p[0], src, len, FI_WRITE);
	dmr = gpu_reg(&p[1], dst, len * N, FI_REMOTE_WRITE);
	dp_fill(src, len, 7);
	for (int i = 0; i < N; i++)
		DP_POST(p, 2,
			fi_writedata(p[0].ep, src, len, fi_mr_desc(smr),
				     (uint64_t)i, p[0].peer[1],
				     (uintptr_t)dst + (size_t)i * len,
				     fi_mr_key(dmr), NULL));
	for (int i = 0; i < N; i++) {
		dp_expect(p[1].rxcq, &e, NULL, p, 2);
		cr_assert(e.flags & FI_REMOTE_CQ_DATA);
		cr_assert_lt(e.data, (uint64_t)N);
		cr_assert_not(seen[e.data], "writedata %llu reported twice",
			      (unsigned long long)e.data);
		seen[e.data] = true;
		cr_assert(gpu_check(dst + e.data * len, len, 7),
			  "writedata %llu not there when reported",
			  (unsigned long long)e.data);
	}
	for (int i = 0; i < N; i++)
		dp_expect(p[0].txcq, &e, NULL, p, 2);

	rsrc = gpu_alloc(rlen * R);
	rdst = gpu_alloc(rlen * R);
	rsmr = gpu_reg(&p[0], rsrc, rlen * R, FI_SEND);
	rdmr = gpu_reg(&p[1], rdst, rlen * R, FI_RECV);
	gpu_fill(rsrc, rlen * R, 3);
	for (int i = 0; i < R; i++)
		DP_POST(p, 2,
			fi_recv(p[1].ep, rdst + i * rlen, rlen,
				fi_mr_desc(rdmr), FI_ADDR_UNSPEC, NULL));
	for (int i = 0; i < R; i++)
		DP_POST(p, 2,
			fi_send(p[0].ep, rsrc + i * rlen, rlen,
				fi_mr_desc(rsmr), p[0].peer[1], NULL));
	for (int i = 0; i < R; i++)
		dp_expect(p[1].rxcq, &e, NULL, p, 2);
	cr_assert(gpu_check(rdst, rlen * R, 3));
	for (int i = 0; i < R; i++)
		dp_expect(p[0].txcq, &e, NULL, p, 2);
	dp_expect_none(p[1].rxcq, p, 2, 200);
	fi_close(&rsmr->fid);
	fi_close(&rdmr->fid);
	fi_close(&smr->fid);
	fi_close(&dmr->fid);
	free(src);
}

/* A flush that fails (cuFlushGPUDirectRDMAWrites refused) fails its
 * receive, once; the sender still completes (its FIN is sent). */
Test(hmem, failed_flush_fails_the_receive_once)
{
	size_t len = 1 << 20;
	uint8_t *src, *dst;
	struct fid_mr *smr, *dmr;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = {0};
	int ret;

	start("peermem", true);
	src = gpu_alloc(len);
	dst = gpu_alloc(len);
	smr = gpu_reg(&p[0], src, len, FI_SEND);
	dmr = gpu_reg(&p[1], dst, len, FI_RECV);
	gpu_fill(src, len, 4);
	gpu_forbid(1); /* data movement fails: the flush among it */
	DP_POST(p, 2,
		fi_recv(p[1].ep, dst, len, fi_mr_desc(dmr), FI_ADDR_UNSPEC,
			NULL));
	DP_POST(p, 2,
		fi_send(p[0].ep, src, len, fi_mr_desc(smr), p[0].peer[1],
			NULL));
	ret = dp_wait(p[1].rxcq, &e, NULL, &err, p, 2, 20000);
	cr_assert_eq(ret, -FI_EAVAIL, "the receive's flush failed: %d", ret);
	cr_assert_eq(err.err, FI_EIO);
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	dp_expect_none(p[1].rxcq, p, 2, 200);
	gpu_forbid(0);
	fi_close(&smr->fid);
	fi_close(&dmr->fid);
}

Test(hmem, writedata_into_gpu_is_flushed)
{
	size_t len = 65536;
	uint8_t *src = dp_alloc(len), *dst;
	struct fid_mr *smr, *dmr;
	struct fi_cq_tagged_entry e;
	uint64_t before;

	start("peermem", true);
	dst = gpu_alloc(len);
	smr = dp_reg(&p[0], src, len, FI_WRITE);
	dmr = gpu_reg(&p[1], dst, len, FI_REMOTE_WRITE);
	dp_fill(src, len, 5);
	before = gpu_stats().flushes;
	DP_POST(p, 2,
		fi_writedata(p[0].ep, src, len, fi_mr_desc(smr), 0xabcd,
			     p[0].peer[1], (uintptr_t)dst, fi_mr_key(dmr),
			     NULL));
	dp_expect(p[1].rxcq, &e, NULL, p, 2);
	cr_assert_eq(e.data, 0xabcd);
	cr_assert_geq(gpu_stats().flushes, before + 1);
	cr_assert(gpu_check(dst, len, 5));
	dp_expect(p[0].txcq, &e, NULL, p, 2);
	fi_close(&smr->fid);
	fi_close(&dmr->fid);
	free(src);
}

Test(hmem, p2p_disabled_endpoint_stages)
{
	int mode = FI_HMEM_P2P_DISABLED;
	uint64_t before;

	start("peermem", true);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(fi_setopt(&p[i].ep->fid, FI_OPT_ENDPOINT,
				       FI_OPT_FI_HMEM_P2P, &mode, sizeof(mode)),
			     0);
	before = gpu_stats().copies_to_host;
	gpu_to_gpu(1 << 20);
	cr_assert_gt(gpu_stats().copies_to_host, before,
		     "the sender staged the rendezvous source");
}

/*
 * With gdrfab.ko loaded over the p2p stand-in (tests/kmod/, backing the
 * "GPU" addresses with the stand-in CUDA's own pages), small copies to and
 * from GPU memory go through /dev/gdrfab's mapping, not through CUDA. Run
 * by tests/kmod/run-kmod-tests.sh, where the modules are loaded.
 */
TestSuite(hmem_kmod, .fini = dp_pair_teardown, .timeout = 240);

static void require_gdrfab_ko(void)
{
	if (access("/dev/gdrfab", R_OK | W_OK))
		cr_skip_test("no /dev/gdrfab: gdrfab.ko is not loaded here");
}

Test(hmem_kmod, small_copies_bypass_cuda)
{
	struct standin_stats before, after;

	require_gdrfab_ko();
	start(NULL, false);
	before = gpu_stats();
	gpu_to_gpu(1);
	gpu_to_gpu(100);
	gpu_to_gpu(8192); /* the eager limit and FI_GDRFAB_KMOD_COPY_MAX */
	after = gpu_stats();
	/* The test's own gpu_fill and gpu_check copy once each per round. */
	cr_assert_eq(after.copies_to_host, before.copies_to_host + 3,
		     "GPU sends read with CUDA");
	cr_assert_eq(after.copies_to_dev, before.copies_to_dev + 3,
		     "GPU receives written with CUDA");
	/* Staged rendezvous chunks are larger: CUDA copies them. */
	gpu_to_gpu(1 << 20);
	after = gpu_stats();
	cr_assert_gt(after.copies_to_dev, before.copies_to_dev);
}

Test(hmem_kmod, reallocated_buffer_is_pinned_again)
{
	struct standin_stats before;

	require_gdrfab_ko();
	start(NULL, false);
	before = gpu_stats();
	/* gpu_to_gpu frees its buffers, and the stand-in hands the same
	 * addresses out again with new buffer IDs: each round must land in
	 * the new allocation, never through the previous pin. */
	for (int i = 0; i < 20; i++)
		gpu_to_gpu(64 + (size_t)i);
	/* gpu_fill's copies only. */
	cr_assert_eq(gpu_stats().copies_to_dev, before.copies_to_dev + 20);
}

Test(hmem_kmod, copy_max_zero_uses_cuda)
{
	struct standin_stats before;

	require_gdrfab_ko();
	setenv("FI_GDRFAB_KMOD_COPY_MAX", "0", 1);
	start(NULL, false);
	before = gpu_stats();
	gpu_to_gpu(100);
	/* gpu_fill and gpu_check copy once each; the provider too. */
	cr_assert_gt(gpu_stats().copies_to_dev, before.copies_to_dev + 1);
	cr_assert_gt(gpu_stats().copies_to_host, before.copies_to_host + 1);
}
