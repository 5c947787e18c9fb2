/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A domain's GPU memory path: chosen once per domain, logged with its
 * reason, and the registration backend its cache uses (handed to mem's
 * cache here, so the cache's calls come back down into hmem).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "gdrfab.h"
#include "gdrfab_hmem.h"
#include "gdrfab_hmem_reg.h"
#include "gdrfab_hmem_ro.h"
#include "gdrfab_host_cache.h"
#include "gdrfab_params.h"
#include "gdrfab_topo.h"
#include "gdrfab_topo_rails.h"
#include "gdrfab_verbs_ops.h"

_Static_assert(GDRFAB_REG_RAILS_MAX == GDRFAB_RAILS_MAX,
	       "a registration holds one MR per rail of the largest set");

const char *gdrfab_cuda_reg_name(enum gdrfab_cuda_reg path)
{
	switch (path) {
	case GDRFAB_CUDA_REG_DMABUF: return "dmabuf";
	case GDRFAB_CUDA_REG_PEERMEM: return "peermem";
	case GDRFAB_CUDA_REG_STAGED: return "staged";
	default: return "none";
	}
}

static bool any_device(bool dmabuf)
{
	for (int i = 0; i < gdrfab_cuda_device_count(); i++) {
		const struct gdrfab_cuda_dev *d = gdrfab_cuda_device(i);

		if (dmabuf ? d->dmabuf_supported : d->gdr_supported)
			return true;
	}
	return false;
}

bool gdrfab_hmem_offered(const char **why)
{
	if (!gdrfab_cuda_available(why))
		return false;
	/* Staged works on any NIC; a forced dma-buf path needs a GPU that
	 * exports dma-bufs. A forced peermem path is taken at its word:
	 * in a container the module may not show in /sys. */
	if (gdrfab_params.cuda_reg == GDRFAB_CUDA_REG_DMABUF &&
	    !any_device(true)) {
		if (why)
			*why = "FI_GDRFAB_CUDA_REG=dmabuf but no GPU exports dma-bufs";
		return false;
	}
	return true;
}

/* Whether the NIC takes dma-buf registrations: with an invalid fd a
 * device that supports them fails with EBADF, one that does not with
 * EOPNOTSUPP (or the call is missing). */
static bool nic_takes_dmabuf(struct ibv_pd *pd)
{
	struct ibv_mr *mr = gdrfab_vops->reg_dmabuf_mr(pd, 0, 4096, 0, -1,
						       IBV_ACCESS_LOCAL_WRITE);

	if (mr) {
		gdrfab_vops->dereg_mr(mr);
		return true;
	}
	return errno == EBADF;
}

/* Whether the topology puts the GPU close enough to info's NIC for
 * GPUDirect RDMA under FI_GDRFAB_GDR_LEVEL (as NCCL's NCCL_NET_GDR_LEVEL);
 * true where it cannot tell. */
static bool gdr_level_allows(const struct fi_info *info, const char *name)
{
	enum gdrfab_path cls;
	char desc[192];
	int known = gdrfab_topo_gdr_class(info, &cls, desc, sizeof(desc));

	if (known == 0 && (int)cls > gdrfab_params.gdr_level) {
		GDRFAB_INFO(
			FI_LOG_DOMAIN,
			"%s: GPU memory staged through host buffers: %s, farther than FI_GDRFAB_GDR_LEVEL=%s\n",
			name, desc,
			gdrfab_path_name(
				(enum gdrfab_path)gdrfab_params.gdr_level));
		return false;
	}
	GDRFAB_INFO(FI_LOG_DOMAIN, "%s: %s: %s\n", name, desc,
		    known ? "FI_GDRFAB_GDR_LEVEL not applied"
			  : "within FI_GDRFAB_GDR_LEVEL");
	return true;
}

static enum gdrfab_cuda_reg
choose_path(struct gdrfab_hmem_domain *h,
	    const struct gdrfab_hmem_reg_setup *setup)
{
	const char *name = h->name;
	const char *peer_why;
	bool nic_dmabuf = nic_takes_dmabuf(h->pd);
	bool gpu_dmabuf = any_device(true);
	bool peermem = gdrfab_peermem_loaded(&peer_why);

	switch (gdrfab_params.cuda_reg) {
	case GDRFAB_CUDA_REG_DMABUF:
		if (!gpu_dmabuf || !nic_dmabuf)
			GDRFAB_WARN(
				FI_LOG_DOMAIN,
				"%s: FI_GDRFAB_CUDA_REG=dmabuf, but %s: GPU registrations will fail\n",
				name,
				!gpu_dmabuf
					? "no GPU reports dma-buf support (driver or kernel too old?)"
					: "the NIC refuses dma-buf registrations");
		return GDRFAB_CUDA_REG_DMABUF;
	case GDRFAB_CUDA_REG_PEERMEM:
		if (!peermem)
			GDRFAB_WARN(
				FI_LOG_DOMAIN,
				"%s: FI_GDRFAB_CUDA_REG=peermem, but %s: GPU registrations will likely fail\n",
				name, peer_why);
		return GDRFAB_CUDA_REG_PEERMEM;
	case GDRFAB_CUDA_REG_STAGED:
		GDRFAB_INFO(
			FI_LOG_DOMAIN,
			"%s: GPU memory staged through host buffers (FI_GDRFAB_CUDA_REG=staged)\n",
			name);
		return GDRFAB_CUDA_REG_STAGED;
	}
	if (setup->info && !gdr_level_allows(setup->info, name))
		return GDRFAB_CUDA_REG_STAGED;
	if (gpu_dmabuf && nic_dmabuf) {
		GDRFAB_INFO(
			FI_LOG_DOMAIN,
			"%s: GPU memory registered through dma-buf (GPU and NIC support it)\n",
			name);
		return GDRFAB_CUDA_REG_DMABUF;
	}
	if (peermem && any_device(false)) {
		GDRFAB_INFO(
			FI_LOG_DOMAIN,
			"%s: GPU memory registered through peer memory (%s; dma-buf: %s)\n",
			name, peer_why,
			!gpu_dmabuf ? "GPU lacks it" : "NIC refuses it");
		return GDRFAB_CUDA_REG_PEERMEM;
	}
	GDRFAB_INFO(
		FI_LOG_DOMAIN,
		"%s: GPU memory staged through host buffers: dma-buf %s, %s\n",
		name,
		!gpu_dmabuf ? "unsupported by the GPU" : "refused by the NIC",
		peermem ? "and no GPU supports GPUDirect RDMA" : peer_why);
	return GDRFAB_CUDA_REG_STAGED;
}

/* Says what is missing when the NIC refuses GPU memory. */
static const char *gdr_failure_hint(enum gdrfab_cuda_reg path, int err)
{
	if (path == GDRFAB_CUDA_REG_DMABUF)
		return err == EOPNOTSUPP || err == EPROTONOSUPPORT
			       ? "the NIC or its driver refuses dma-buf"
		       : err == EINVAL
			       ? "the GPU range cannot be exported (IOMMU or BAR mapping?)"
			       : "dma-buf registration failed";
	if (err == EFAULT || err == EINVAL)
		return "the kernel cannot pin this GPU memory: is nvidia-peermem loaded (modprobe nvidia-peermem)?";
	return "peer-memory registration failed";
}

static void dereg_more_rails(struct gdrfab_reg *r)
{
	int err;

	for (size_t i = 0; i < GDRFAB_REG_RAILS_MAX - 1; i++) {
		if (r->more_mr[i] &&
		    (err = gdrfab_vops->dereg_mr(r->more_mr[i])))
			GDRFAB_WARN(FI_LOG_MR, "ibv_dereg_mr (rail %zu): %s\n",
				    i + 1, strerror(err));
		r->more_mr[i] = NULL;
	}
}

/* A rail-set domain's registration on rails 1 and on, as a (rail 0's,
 * made) says: the same range, access and dma-buf. 0, or the FI_E* of the
 * first that failed, with a log line, none of them left. */
static int reg_more_rails(struct gdrfab_hmem_domain *h, struct gdrfab_reg *r,
			  struct gdrfab_data_reg a)
{
	for (size_t rail = 1; rail < h->nrails; rail++) {
		int err;

		a.pd = h->more_rails[rail - 1].pd;
		r->more_mr[rail - 1] = gdrfab_hmem_reg_data_rail(h, rail, &a);
		if (r->more_mr[rail - 1])
			continue;
		err = errno;
		GDRFAB_WARN(FI_LOG_MR,
			    "registering 0x%lx+%zu on rail %zu (%s): %s\n",
			    (unsigned long)r->start, r->len, rail,
			    h->more_rails[rail - 1].name, strerror(err));
		dereg_more_rails(r);
		errno = err;
		return -1;
	}
	return 0;
}

static int backend_reg(void *ctx, struct gdrfab_reg *r)
{
	struct gdrfab_hmem_domain *h = ctx;
	enum gdrfab_cuda_reg path = h->path;
	bool gpu = r->mem.kind == GDRFAB_MEM_CUDA_DEVICE;
	/* r->access stays the cache's key: relaxed ordering is the
	 * device's business, added (or not) below it. */
	struct gdrfab_data_reg a = {
		.pd = h->pd,
		.iova = r->start,
		.len = r->len,
		.access = r->access,
		.fd = -1,
	};
	uint64_t off = 0;
	int fd = -1, err, ret;

	if (gpu && path == GDRFAB_CUDA_REG_DMABUF) {
		ret = gdrfab_cuda_dmabuf_fd((void *)r->start, r->len, &fd,
					    &off);
		if (ret) {
			GDRFAB_WARN(
				FI_LOG_MR,
				"no dma-buf for GPU memory 0x%lx+%zu: the driver refuses to export it\n",
				(unsigned long)r->start, r->len);
			return ret;
		}
		a.fd = fd;
		a.offset = off;
	}
	memset(r->more_mr, 0, sizeof(r->more_mr));
	r->mr = gdrfab_hmem_reg_data(h, &a);
	if (r->mr && h->nrails > 1 && reg_more_rails(h, r, a)) {
		err = errno;
		gdrfab_vops->dereg_mr(r->mr);
		r->mr = NULL;
		errno = err;
	}
	if (r->mr) {
		r->dmabuf_fd = fd;
		r->dmabuf_off = off;
		return 0;
	}
	err = errno;
	if (fd >= 0)
		close(fd);
	if (gpu)
		GDRFAB_WARN(
			FI_LOG_MR,
			"registering GPU memory 0x%lx+%zu on %s (%s): %s: %s\n",
			(unsigned long)r->start, r->len, h->name,
			gdrfab_cuda_reg_name(path), strerror(err),
			gdr_failure_hint(path, err));
	else
		GDRFAB_WARN(
			FI_LOG_MR, "ibv_reg_mr(0x%lx, %zu) on %s: %s%s\n",
			(unsigned long)r->start, r->len, h->name, strerror(err),
			err == ENOMEM
				? " (is the locked-memory limit, ulimit -l, too low?)"
				: "");
	if (gpu && (err == ENOMEM || err == ENOSPC))
		return -FI_ENOSPC; /* the cache evicts and retries */
	if (gpu && (err == EFAULT || err == EINVAL || err == EOPNOTSUPP))
		return -FI_EOPNOTSUPP;
	return gdrfab_errno_to_fi(err);
}

static void backend_dereg(void *ctx, struct gdrfab_reg *r)
{
	int err;

	(void)ctx;
	dereg_more_rails(r);
	if (r->mr && (err = gdrfab_vops->dereg_mr(r->mr)))
		GDRFAB_WARN(FI_LOG_MR, "ibv_dereg_mr: %s\n", strerror(err));
	if (r->dmabuf_fd >= 0)
		close(r->dmabuf_fd);
}

void gdrfab_hmem_reg_init(struct gdrfab_hmem_domain *h,
			  const struct gdrfab_hmem_reg_setup *setup)
{
	struct gdrfab_reg_backend be = {
		.reg = backend_reg,
		.dereg = backend_dereg,
		.ctx = h,
	};

	h->ctx = setup->verbs_ctx;
	h->pd = setup->pd;
	h->name = setup->name;
	atomic_init(&h->ro_refused, false);
	h->nrails = 1 + setup->more_rails;
	for (size_t i = 0; i < setup->more_rails; i++) {
		h->more_rails[i].pd = setup->more_pd[i];
		h->more_rails[i].name = setup->more_name[i];
		atomic_init(&h->more_rails[i].ro_refused, false);
	}
	pthread_mutex_init(&h->rw_lock, NULL);
	pthread_mutex_init(&h->emu_lock, NULL);
	pthread_mutex_init(&h->loop_lock, NULL);
	gdrfab_mr_cache_init(&h->cache, &be, gdrfab_params.mr_cache_enable,
			     gdrfab_params.mr_cache_max_size,
			     gdrfab_params.mr_cache_max_count);
	gdrfab_host_cache_init(&h->cache, gdrfab_params.host_mr_cache);
	h->path = gdrfab_hmem_offered(NULL) ? choose_path(h, setup)
					    : GDRFAB_CUDA_REG_NONE;
}

void gdrfab_hmem_reg_fini(struct gdrfab_hmem_domain *h)
{
	gdrfab_host_cache_fini(&h->cache);
	gdrfab_mr_cache_fini(&h->cache);
	gdrfab_hmem_loop_fini(h);
	pthread_mutex_destroy(&h->rw_lock);
}
