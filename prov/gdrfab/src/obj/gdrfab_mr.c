/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fid_mr for host memory: fi_mr_reg/regv/regattr on a verbs protection
 * domain. fi_mr_key() is the verbs rkey (FI_MR_PROV_KEY), or on a rail-set
 * domain that rkey tagged with a generation (gdrfab_rail_key, for striped
 * RMA); fi_mr_desc() the gdrfab_mr itself (the data path reads its lkey).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_api_compat.h"
#include "gdrfab_hmem_domain.h"
#include "gdrfab_obj_common.h"
#include "gdrfab_objs.h"
#include "gdrfab_quarantine.h"

#define GDRFAB_MR_ACCESS                                                       \
	(FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |             \
	 FI_REMOTE_WRITE)

/* What verbs must allow for the libfabric access flags: local writes for
 * receives and RDMA READ targets, remote access as asked, and the NIC's
 * atomics with remote writes where the domain accepts them (host memory
 * only: atomics on GPU memory are refused, see gdrfab_atomic.h). */
static int verbs_access(const struct gdrfab_domain *domain, uint64_t access,
			bool gpu)
{
	int flags = 0;

	if ((access & FI_REMOTE_WRITE) && domain->nic_atomic_flag && !gpu)
		flags |= IBV_ACCESS_REMOTE_ATOMIC;

	if (!access || (access & (FI_RECV | FI_READ)))
		flags |= IBV_ACCESS_LOCAL_WRITE;
	if (access & FI_REMOTE_READ)
		flags |= IBV_ACCESS_REMOTE_READ;
	if (access & FI_REMOTE_WRITE)
		flags |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	return flags;
}

static int mr_close(struct fid *fid)
{
	struct gdrfab_mr *mr =
		gdrfab_container_of(fid, struct gdrfab_mr, fid.fid);
	struct gdrfab_mr_cache *cache = &mr->domain->hmem.cache;

	if (mr->tracked)
		gdrfab_hmem_track_remote_write(&mr->domain->hmem, mr, -1, NULL,
					       0, false);
	if (mr->emu_key)
		gdrfab_emu_mr_remove(mr->domain, mr->emu_key);
	gdrfab_hmem_loop_mr_release(&mr->desc);
	/* No atomic of a peer reaches the memory once this returns. */
	gdrfab_mr_keys_remove(mr->domain, mr);
	/* GPU registrations stay in the cache (lazy unpinning); host ones
	 * are deregistered now. */
	if (mr->desc.rndv_reg != mr->desc.reg)
		gdrfab_reg_put(cache, mr->desc.rndv_reg);
	gdrfab_reg_put(cache, mr->desc.reg);
	atomic_fetch_sub(&mr->domain->ref, 1);
	/* Its descriptor may still be handed to a data call: it must not
	 * lead to the registrations just released. */
	mr->desc.reg = mr->desc.rndv_reg = NULL;
	mr->desc.ibv_mr = mr->desc.rndv_mr = NULL;
	gdrfab_fid_retire(&mr->fid.fid, mr);
	return 0;
}

static int mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid, (void)bfid, (void)flags;
	GDRFAB_WARN(
		FI_LOG_MR,
		"fi_mr_bind: gdrfab needs no FI_MR_ENDPOINT binding, and counts RMA aimed at an endpoint (FI_RMA_EVENT: bind the counter to the endpoint with FI_REMOTE_WRITE/READ), not per memory region\n");
	return -FI_ENOSYS;
}

static int mr_control(struct fid *fid, int command, void *arg)
{
	(void)fid, (void)arg;
	/* Registrations are usable at once: FI_ENABLE has nothing to do. */
	return command == FI_ENABLE ? 0 : -FI_ENOSYS;
}

static struct fi_ops mr_fi_ops = GDRFAB_FI_OPS(mr_close, mr_bind, mr_control);

/* The registration flags gdrfab knows: FI_HMEM_DEVICE_ONLY (Open MPI main,
 * fabtests -D cuda), FI_HMEM_HOST_ALLOC, and FI_MR_DMABUF (aws-ofi-nccl
 * once GPUDirect is on). */
#define GDRFAB_MR_FLAGS                                                        \
	(FI_HMEM_DEVICE_ONLY | FI_HMEM_HOST_ALLOC | FI_MR_DMABUF)

static int check_flags(const struct fi_mr_attr *attr, uint64_t flags)
{
	if (flags & ~GDRFAB_MR_FLAGS) {
		uint64_t bad = flags & ~GDRFAB_MR_FLAGS;

		GDRFAB_WARN(FI_LOG_MR,
			    "fi_mr_regattr: unsupported flags 0x%llx%s\n",
			    (unsigned long long)bad,
			    bad & FI_MR_SINGLE_USE ? " (FI_MR_SINGLE_USE)"
						   : "");
		return -FI_EBADFLAGS;
	}
	if ((flags & FI_HMEM_DEVICE_ONLY) && (flags & FI_HMEM_HOST_ALLOC)) {
		GDRFAB_WARN(
			FI_LOG_MR,
			"fi_mr_regattr: FI_HMEM_DEVICE_ONLY and FI_HMEM_HOST_ALLOC together\n");
		return -FI_EINVAL;
	}
	if ((flags & (FI_HMEM_DEVICE_ONLY | FI_HMEM_HOST_ALLOC)) &&
	    attr->iface == FI_HMEM_SYSTEM) {
		GDRFAB_WARN(
			FI_LOG_MR,
			"fi_mr_regattr: FI_HMEM_%s needs a device iface, not FI_HMEM_SYSTEM\n",
			flags & FI_HMEM_DEVICE_ONLY ? "DEVICE_ONLY"
						    : "HOST_ALLOC");
		return -FI_EINVAL;
	}
	return 0;
}

static int check_regattr(const struct fi_mr_attr *attr, uint64_t flags)
{
	int ret;

	if (!attr) {
		GDRFAB_WARN(FI_LOG_MR, "fi_mr_regattr: attr is NULL\n");
		return -FI_EINVAL;
	}
	ret = check_flags(attr, flags);
	if (ret)
		return ret;
	if (attr->access & ~(uint64_t)GDRFAB_MR_ACCESS) {
		GDRFAB_WARN(FI_LOG_MR,
			    "fi_mr_reg: unknown access bits 0x%llx\n",
			    (unsigned long long)(attr->access &
						 ~(uint64_t)GDRFAB_MR_ACCESS));
		return -FI_EINVAL;
	}
	if (attr->iov_count != 1 || !attr->mr_iov) {
		GDRFAB_WARN(
			FI_LOG_MR,
			"fi_mr_reg: %zu iovecs (gdrfab's mr_iov_limit is 1)\n",
			attr->iov_count);
		return -FI_EINVAL;
	}
	if (!attr->mr_iov[0].iov_base && attr->mr_iov[0].iov_len) {
		GDRFAB_WARN(FI_LOG_MR, "fi_mr_reg: NULL buffer of %zu bytes\n",
			    attr->mr_iov[0].iov_len);
		return -FI_EINVAL;
	}
	if (attr->auth_key_size) {
		GDRFAB_WARN(
			FI_LOG_MR,
			"fi_mr_reg: authorization keys are not supported\n");
		return -FI_EINVAL;
	}
	if (attr->iface != FI_HMEM_SYSTEM && attr->iface != FI_HMEM_CUDA) {
		GDRFAB_WARN(
			FI_LOG_MR,
			"fi_mr_regattr: iface %s: gdrfab registers host and CUDA memory only\n",
			fi_tostr(&attr->iface, FI_TYPE_HMEM_IFACE));
		return -FI_ENOSYS;
	}
	return 0;
}

/* Checks that the buffer is what iface says, and for GPU memory readies
 * it (SYNC_MEMOPS) and picks its path. */
static int classify(struct gdrfab_domain *domain, struct gdrfab_mr *mr,
		    const struct fi_mr_attr *attr, uint64_t flags)
{
	const struct iovec *iov = &attr->mr_iov[0];
	struct gdrfab_cuda_ptr *m = &mr->desc.mem;
	int ret;

	m->kind = GDRFAB_MEM_HOST;
	m->device = -1;
	if (attr->iface == FI_HMEM_CUDA &&
	    domain->hmem.path == GDRFAB_CUDA_REG_NONE) {
		GDRFAB_WARN(
			FI_LOG_MR,
			"fi_mr_regattr: FI_HMEM_CUDA memory, but this domain has no CUDA (see FI_LOG_LEVEL=info for why)\n");
		return -FI_ENOSYS;
	}
	/* Host registrations are classified only once the application has
	 * shown it uses CUDA: a device pointer passed as host memory is
	 * then caught instead of pinned as if it were host memory. */
	if (domain->hmem.path == GDRFAB_CUDA_REG_NONE || !iov->iov_len ||
	    (attr->iface == FI_HMEM_SYSTEM &&
	     !atomic_load(&domain->hmem.cuda_used)))
		return 0;
	ret = gdrfab_cuda_classify(iov->iov_base, m);
	if (ret)
		return ret;
	if (attr->iface == FI_HMEM_SYSTEM) {
		if (m->kind == GDRFAB_MEM_CUDA_DEVICE) {
			GDRFAB_WARN(
				FI_LOG_MR,
				"fi_mr_regattr: %p is GPU memory (device %d) registered as FI_HMEM_SYSTEM: use iface FI_HMEM_CUDA\n",
				iov->iov_base, m->device);
			return -FI_EINVAL;
		}
		return 0;
	}
	/* FI_HMEM_HOST_ALLOC: host memory from CUDA's allocator
	 * (cuMemAllocHost), which the NIC reaches like any host memory. */
	if (flags & FI_HMEM_HOST_ALLOC) {
		if (m->kind == GDRFAB_MEM_CUDA_HOST ||
		    m->kind == GDRFAB_MEM_HOST)
			return 0;
		GDRFAB_WARN(
			FI_LOG_MR,
			"fi_mr_regattr: %p is GPU memory, but the flags say FI_HMEM_HOST_ALLOC\n",
			iov->iov_base);
		return -FI_EINVAL;
	}
	switch (m->kind) {
	case GDRFAB_MEM_CUDA_MANAGED:
		GDRFAB_WARN(
			FI_LOG_MR,
			"fi_mr_regattr: %p is CUDA managed memory, which is not safe for GPUDirect RDMA (its pages migrate): register device memory instead\n",
			iov->iov_base);
		return -FI_EINVAL;
	case GDRFAB_MEM_CUDA_DEVICE: break;
	default:
		GDRFAB_WARN(
			FI_LOG_MR,
			"fi_mr_regattr: %p is %s, not GPU memory, but iface is FI_HMEM_CUDA\n",
			iov->iov_base,
			m->kind == GDRFAB_MEM_CUDA_HOST
				? "CUDA-pinned host memory"
				: "host memory (or a freed pointer)");
		return -FI_EINVAL;
	}
	if (m->size &&
	    (uintptr_t)iov->iov_base + iov->iov_len > m->base + m->size) {
		GDRFAB_WARN(
			FI_LOG_MR,
			"fi_mr_regattr: %p+%zu runs past its CUDA allocation (0x%lx+%zu)\n",
			iov->iov_base, iov->iov_len, (unsigned long)m->base,
			m->size);
		return -FI_EINVAL;
	}
	if (attr->device.cuda != m->device)
		GDRFAB_INFO(
			FI_LOG_MR,
			"fi_mr_regattr: device.cuda %d, but the memory is on device %d: using %d\n",
			attr->device.cuda, m->device, m->device);
	atomic_store(&domain->hmem.cuda_used, true);
	gdrfab_cuda_sync_memops(m); /* refusal (VMM) is logged, not fatal */
	mr->desc.staged = domain->hmem.path == GDRFAB_CUDA_REG_STAGED;
	return 0;
}

/* The verbs registrations behind an MR; 0 or a negative FI_E* code. */
static int register_region(struct gdrfab_domain *domain, struct gdrfab_mr *mr,
			   const struct fi_mr_attr *attr)
{
	const struct iovec *iov = &attr->mr_iov[0];
	struct gdrfab_mr_cache *cache = &domain->hmem.cache;
	bool gpu = mr->desc.mem.kind == GDRFAB_MEM_CUDA_DEVICE;
	int ret;

	/* Verbs cannot register nothing; a zero-length region needs no key
	 * (zero-length transfers use none). Staged GPU memory is never
	 * seen by the NIC. */
	if (!iov->iov_len || mr->desc.staged)
		return 0;
	ret = gdrfab_reg_get(cache, iov->iov_base, iov->iov_len,
			     verbs_access(domain, attr->access, gpu),
			     gpu ? &mr->desc.mem : NULL, &mr->desc.reg);
	if (ret)
		return ret;
	mr->desc.ibv_mr = mr->desc.reg->mr;
	if (attr->access & FI_REMOTE_READ) {
		mr->desc.rndv_reg = mr->desc.reg;
	} else if (gpu || !attr->access || (attr->access & FI_SEND)) {
		/* Rendezvous sources, and GPU memory always: the flush
		 * READ reads it back through the NIC. */
		ret = gdrfab_reg_get(cache, iov->iov_base, iov->iov_len,
				     IBV_ACCESS_REMOTE_READ,
				     gpu ? &mr->desc.mem : NULL,
				     &mr->desc.rndv_reg);
		if (ret) {
			gdrfab_reg_put(cache, mr->desc.reg);
			return ret;
		}
	}
	mr->desc.rndv_mr = mr->desc.rndv_reg ? mr->desc.rndv_reg->mr : NULL;
	if (gpu && (attr->access & FI_REMOTE_WRITE)) {
		mr->tracked = true;
		gdrfab_hmem_track_remote_write(
			&domain->hmem, mr, mr->desc.mem.device, iov->iov_base,
			mr->desc.rndv_mr->rkey, true);
	}
	return 0;
}

/* FI_MR_DMABUF (API 1.20): the region is a dma-buf (fd, offset, len) that
 * the application exported from GPU memory at base_addr. gdrfab registers
 * GPU memory by its address through its own cache, which exports its own
 * dma-buf where the domain uses dma-buf (or uses peermem or staging): the
 * application's fd is checked for being open, then its region is served
 * as the iovec base_addr + offset, len. A dma-buf without an address, or
 * of host memory, cannot be served that way and is refused. */
static int dmabuf_as_iov(const struct fi_mr_attr *attr, struct fi_mr_attr *copy,
			 struct iovec *iov)
{
	const struct fi_mr_dmabuf *d =
		(const struct fi_mr_dmabuf *)(const void *)attr->mr_iov;

	if (!d || attr->iov_count != 1) {
		GDRFAB_WARN(
			FI_LOG_MR,
			"fi_mr_regattr: FI_MR_DMABUF needs one struct fi_mr_dmabuf\n");
		return -FI_EINVAL;
	}
	if (attr->iface != FI_HMEM_CUDA || !d->base_addr) {
		GDRFAB_WARN(
			FI_LOG_MR,
			"fi_mr_regattr: FI_MR_DMABUF is served for FI_HMEM_CUDA memory with its base_addr only\n");
		return -FI_EOPNOTSUPP;
	}
	if (d->fd < 0 || fcntl(d->fd, F_GETFD) < 0) {
		GDRFAB_WARN(FI_LOG_MR,
			    "fi_mr_regattr: FI_MR_DMABUF fd %d is not open\n",
			    d->fd);
		return -FI_EINVAL;
	}
	if (d->offset > UINTPTR_MAX - (uintptr_t)d->base_addr) {
		GDRFAB_WARN(
			FI_LOG_MR,
			"fi_mr_regattr: FI_MR_DMABUF offset wraps the address space\n");
		return -FI_EINVAL;
	}
	*copy = *attr;
	iov->iov_base = (char *)d->base_addr + d->offset;
	iov->iov_len = d->len;
	copy->mr_iov = iov;
	return 0;
}

static int mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		      uint64_t flags, struct fid_mr **out)
{
	struct fi_mr_attr dmabuf_attr;
	struct iovec dmabuf_iov;
	struct gdrfab_domain *domain;
	struct gdrfab_mr *mr;
	int ret;

	if (!gdrfab_fid_is(fid, FI_CLASS_DOMAIN) || !out)
		return -FI_EINVAL;
	ret = check_regattr(attr, flags);
	if (ret)
		return ret;
	if (flags & FI_MR_DMABUF) {
		ret = dmabuf_as_iov(attr, &dmabuf_attr, &dmabuf_iov);
		if (ret)
			return ret;
		attr = &dmabuf_attr;
	}
	domain = gdrfab_container_of(fid, struct gdrfab_domain, fid.fid);
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	mr->domain = domain;
	mr->access = attr->access;
	mr->desc.iface = attr->iface;
	mr->desc.hmem = &domain->hmem;
	ret = classify(domain, mr, attr, flags);
	if (!ret)
		ret = register_region(domain, mr, attr);
	if (ret) {
		free(mr);
		return ret;
	}
	gdrfab_obj_init(&mr->fid.fid, FI_CLASS_MR, attr->context, &mr_fi_ops);
	mr->fid.mem_desc = mr;
	mr->fid.key = mr->desc.ibv_mr ? mr->desc.ibv_mr->rkey : 0;
	mr->desc.base = attr->mr_iov[0].iov_base;
	mr->desc.len = attr->mr_iov[0].iov_len;
	/* Staged GPU memory has no rkey: peers' RMA to it is served by
	 * this domain's data path, under a key of its own. */
	if (mr->desc.staged &&
	    (attr->access & (FI_REMOTE_READ | FI_REMOTE_WRITE))) {
		ret = gdrfab_emu_mr_add(domain, mr, &mr->emu_key);
		if (ret) {
			free(mr);
			return ret;
		}
		mr->fid.key = mr->emu_key;
	}
	/* A rail-set domain's key names this MR alone (gdrfab_rail_key):
	 * peers learn its other rails' rkeys by it to stripe RMA. */
	if (mr->desc.ibv_mr && domain->rails.count > 1 &&
	    (attr->access & (FI_REMOTE_READ | FI_REMOTE_WRITE)))
		mr->fid.key = gdrfab_rail_key(
			mr->desc.ibv_mr->rkey,
			(atomic_fetch_add(&domain->keys.rail_gen, 1) + 1) &
				((1ULL << (64 - GDRFAB_RAIL_KEY_SHIFT)) - 1));
	/* Peers' atomics reach the memory through the data path. */
	if (mr->desc.ibv_mr &&
	    (attr->access & (FI_REMOTE_READ | FI_REMOTE_WRITE)))
		gdrfab_mr_keys_add(domain, mr);
	atomic_fetch_add(&domain->ref, 1);
	*out = &mr->fid;
	return 0;
}

static int mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		   uint64_t access, uint64_t offset, uint64_t requested_key,
		   uint64_t flags, struct fid_mr **mr, void *context)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = count,
		.access = access,
		.offset = offset,
		.requested_key = requested_key,
		.context = context,
		.iface = FI_HMEM_SYSTEM,
	};

	return mr_regattr(fid, &attr, flags, mr);
}

static int mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		  uint64_t offset, uint64_t requested_key, uint64_t flags,
		  struct fid_mr **mr, void *context)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return mr_regv(fid, &iov, 1, access, offset, requested_key, flags, mr,
		       context);
}

bool gdrfab_mr_desc_live(const void *desc)
{
	const struct gdrfab_mr *mr = desc;

	return !mr || mr->fid.fid.ops == &mr_fi_ops;
}

/* Whether buf+len lies inside the MR. */
static bool in_range(const struct gdrfab_mr *mr, uintptr_t b, size_t len)
{
	uintptr_t base = (uintptr_t)mr->desc.base;

	return !len || (b >= base && b - base <= mr->desc.len &&
			len <= mr->desc.len - (b - base));
}

/* No descriptor, or a live MR of this domain covering the buffer. A live
 * MR has these ops (a closed one has the dead ones): one comparison on
 * the data path, the cause looked for only when it fails. */
static bool desc_ok(const struct gdrfab_domain *domain,
		    const struct gdrfab_mr *mr, const void *buf, size_t len)
{
	return !mr || (mr->fid.fid.ops == &mr_fi_ops && mr->domain == domain &&
		       in_range(mr, (uintptr_t)buf, len));
}

/* Why a descriptor was refused, logged; out of line, so that the check
 * every data call makes saves no registers for it. */
static __attribute__((noinline)) int
refuse_desc(const struct gdrfab_domain *domain, const struct gdrfab_mr *mr,
	    const void *buf, size_t len)
{
	if (gdrfab_fid_dead(&mr->fid.fid)) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "descriptor %p for %p+%zu: its MR was closed\n",
			    (const void *)mr, buf, len);
		return -FI_EINVAL;
	}
	if (mr->fid.fid.ops != &mr_fi_ops) {
		GDRFAB_WARN(
			FI_LOG_EP_DATA,
			"descriptor %p for %p+%zu is not a gdrfab MR's (fi_mr_desc)\n",
			(const void *)mr, buf, len);
		return -FI_EINVAL;
	}
	if (mr->domain != domain) {
		GDRFAB_WARN(
			FI_LOG_EP_DATA,
			"descriptor %p for %p+%zu: its MR belongs to domain %s, not the endpoint's (%s)\n",
			(const void *)mr, buf, len,
			mr->domain->info->domain_attr->name,
			domain->info->domain_attr->name);
		return -FI_EINVAL;
	}
	GDRFAB_WARN(FI_LOG_EP_DATA,
		    "descriptor %p: %p+%zu is outside its MR (%p+%zu)\n",
		    (const void *)mr, buf, len, mr->desc.base, mr->desc.len);
	return -FI_EINVAL;
}

int gdrfab_mr_check_desc(const struct gdrfab_domain *domain, const void *desc,
			 const void *buf, size_t len)
{
	if (desc_ok(domain, desc, buf, len))
		return 0;
	return refuse_desc(domain, desc, buf, len);
}

/* gdrfab_mr_check_descs once one failed: each again, the first refusal
 * logged and returned. */
static __attribute__((noinline)) int
refuse_descs(const struct gdrfab_domain *domain, const struct iovec *iov,
	     void **desc, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		int ret = gdrfab_mr_check_desc(domain, desc[i], iov[i].iov_base,
					       iov[i].iov_len);

		if (ret)
			return ret;
	}
	return 0;
}

/* The loop calls nothing until a descriptor fails, so that it saves no
 * registers on the path every data call takes. */
int gdrfab_mr_check_descs(const struct gdrfab_domain *domain,
			  const struct iovec *iov, void **desc, size_t count)
{
	for (size_t i = 0; desc && i < count; i++) {
		if (!desc_ok(domain, desc[i], iov[i].iov_base, iov[i].iov_len))
			return refuse_descs(domain, iov, desc, count);
	}
	return 0;
}

struct fi_ops_mr gdrfab_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = mr_reg,
	.regv = mr_regv,
	.regattr = mr_regattr,
};
