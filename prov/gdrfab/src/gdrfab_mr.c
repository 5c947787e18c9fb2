/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fid_mr for host memory: fi_mr_reg/regv/regattr on a verbs protection
 * domain. fi_mr_key() is the verbs rkey (FI_MR_PROV_KEY), fi_mr_desc() the
 * gdrfab_mr itself (the data path reads its lkey).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_objs.h"

#define GDRFAB_MR_ACCESS                                                       \
	(FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |             \
	 FI_REMOTE_WRITE)

/* What verbs must allow for the libfabric access flags: local writes for
 * receives and RDMA READ targets, remote access as asked. */
static int verbs_access(uint64_t access)
{
	int flags = 0;

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
	int err;

	if (mr->rndv_mr && mr->rndv_mr != mr->ibv_mr &&
	    (err = ibv_dereg_mr(mr->rndv_mr))) {
		GDRFAB_WARN(FI_LOG_MR, "ibv_dereg_mr: %s\n", strerror(err));
		return gdrfab_errno_to_fi(err);
	}
	mr->rndv_mr = NULL;
	if (mr->ibv_mr && (err = ibv_dereg_mr(mr->ibv_mr))) {
		GDRFAB_WARN(FI_LOG_MR, "ibv_dereg_mr: %s\n", strerror(err));
		return gdrfab_errno_to_fi(err);
	}
	atomic_fetch_sub(&mr->domain->ref, 1);
	free(mr);
	return 0;
}

static int mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid, (void)bfid, (void)flags;
	GDRFAB_WARN(FI_LOG_MR, "fi_mr_bind: gdrfab needs no FI_MR_ENDPOINT "
			       "binding and offers no FI_RMA_EVENT\n");
	return -FI_ENOSYS;
}

static int mr_control(struct fid *fid, int command, void *arg)
{
	(void)fid, (void)arg;
	/* Registrations are usable at once: FI_ENABLE has nothing to do. */
	return command == FI_ENABLE ? 0 : -FI_ENOSYS;
}

static struct fi_ops mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = mr_close,
	.bind = mr_bind,
	.control = mr_control,
	.ops_open = gdrfab_nosys_ops_open,
};

static int check_regattr(const struct fi_mr_attr *attr, uint64_t flags)
{
	if (!attr) {
		GDRFAB_WARN(FI_LOG_MR, "fi_mr_regattr: attr is NULL\n");
		return -FI_EINVAL;
	}
	if (flags) {
		GDRFAB_WARN(FI_LOG_MR, "fi_mr_reg: unsupported flags 0x%llx\n",
			    (unsigned long long)flags);
		return -FI_EBADFLAGS;
	}
	if (attr->access & ~(uint64_t)GDRFAB_MR_ACCESS) {
		GDRFAB_WARN(FI_LOG_MR,
			    "fi_mr_reg: unknown access bits 0x%llx\n",
			    (unsigned long long)(attr->access &
						 ~(uint64_t)GDRFAB_MR_ACCESS));
		return -FI_EINVAL;
	}
	if (attr->iov_count != 1 || !attr->mr_iov) {
		GDRFAB_WARN(FI_LOG_MR,
			    "fi_mr_reg: %zu iovecs (gdrfab's "
			    "mr_iov_limit is 1)\n",
			    attr->iov_count);
		return -FI_EINVAL;
	}
	if (!attr->mr_iov[0].iov_base && attr->mr_iov[0].iov_len) {
		GDRFAB_WARN(FI_LOG_MR, "fi_mr_reg: NULL buffer of %zu bytes\n",
			    attr->mr_iov[0].iov_len);
		return -FI_EINVAL;
	}
	if (attr->auth_key_size) {
		GDRFAB_WARN(FI_LOG_MR, "fi_mr_reg: authorization keys are not "
				       "supported\n");
		return -FI_EINVAL;
	}
	if (attr->iface != FI_HMEM_SYSTEM) {
		GDRFAB_WARN(FI_LOG_MR,
			    "fi_mr_regattr: iface %s: this gdrfab "
			    "registers host memory only (FI_HMEM "
			    "is not advertised)\n",
			    fi_tostr(&attr->iface, FI_TYPE_HMEM_IFACE));
		return -FI_ENOSYS;
	}
	return 0;
}

static struct ibv_mr *reg_logged(struct gdrfab_domain *domain,
				 const struct iovec *iov, int access,
				 const char *what, int *err)
{
	struct ibv_mr *mr =
		ibv_reg_mr(domain->pd, iov->iov_base, iov->iov_len, access);

	if (!mr) {
		*err = errno;
		GDRFAB_WARN(FI_LOG_MR,
			    "ibv_reg_mr(%p, %zu bytes%s) on %s: %s%s\n",
			    iov->iov_base, iov->iov_len, what,
			    domain->info->domain_attr->name, strerror(*err),
			    *err == ENOMEM ? " (is the locked-memory limit, "
					     "ulimit -l, too low?)"
					   : "");
	}
	return mr;
}

/* The verbs registrations behind an MR; 0 or a negative FI_E* code. */
static int register_region(struct gdrfab_domain *domain, struct gdrfab_mr *mr,
			   const struct fi_mr_attr *attr)
{
	const struct iovec *iov = &attr->mr_iov[0];
	int err = 0;

	/* Verbs cannot register nothing; a zero-length region needs no key
	 * (zero-length transfers use none). */
	if (!iov->iov_len)
		return 0;
	mr->ibv_mr =
		reg_logged(domain, iov, verbs_access(attr->access), "", &err);
	if (!mr->ibv_mr)
		return gdrfab_errno_to_fi(err);
	if (attr->access & FI_REMOTE_READ) {
		mr->rndv_mr = mr->ibv_mr;
	} else if (!attr->access || (attr->access & FI_SEND)) {
		mr->rndv_mr = reg_logged(domain, iov, IBV_ACCESS_REMOTE_READ,
					 ", rendezvous source", &err);
		if (!mr->rndv_mr) {
			ibv_dereg_mr(mr->ibv_mr);
			return gdrfab_errno_to_fi(err);
		}
	}
	return 0;
}

static int mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		      uint64_t flags, struct fid_mr **out)
{
	struct gdrfab_domain *domain;
	struct gdrfab_mr *mr;
	int ret;

	if (!gdrfab_fid_is(fid, FI_CLASS_DOMAIN) || !out)
		return -FI_EINVAL;
	ret = check_regattr(attr, flags);
	if (ret)
		return ret;
	domain = gdrfab_container_of(fid, struct gdrfab_domain, fid.fid);
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	mr->domain = domain;
	mr->access = attr->access;
	mr->iface = attr->iface;
	ret = register_region(domain, mr, attr);
	if (ret) {
		free(mr);
		return ret;
	}
	mr->fid.fid.fclass = FI_CLASS_MR;
	mr->fid.fid.context = attr->context;
	mr->fid.fid.ops = &mr_fi_ops;
	mr->fid.mem_desc = mr;
	mr->fid.key = mr->ibv_mr ? mr->ibv_mr->rkey : 0;
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

struct fi_ops_mr gdrfab_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = mr_reg,
	.regv = mr_regv,
	.regattr = mr_regattr,
};
