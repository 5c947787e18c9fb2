/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_ops_rma of the endpoint: each call's arguments in the protocol's
 * form, to gdrfab_proto_rma (proto/gdrfab_rma.c), once the endpoint is
 * enabled.
 */
#include <rdma/fi_rma.h>

#include "gdrfab.h"
#include "gdrfab_objs.h"
#include "gdrfab_proto.h"
#include "gdrfab_req.h"
#include "gdrfab_rma.h"

static struct gdrfab_ep *ep_of(struct fid_ep *ep_fid)
{
	return gdrfab_container_of(ep_fid, struct gdrfab_ep, fid);
}

static ssize_t do_rma(struct gdrfab_ep *ep, enum gdrfab_op op,
		      const struct iovec *iov, void **desc, size_t count,
		      fi_addr_t peer_addr, uint64_t raddr, uint64_t key,
		      uint64_t data, uint64_t flags, void *context, bool silent)
{
	if (!ep->proto)
		return gdrfab_ep_not_enabled(op == GDRFAB_OP_READ ? "fi_read"
								  : "fi_write");
	return gdrfab_proto_rma(ep->proto, op, iov, desc, count, peer_addr,
				raddr, key, data, flags, context, silent);
}

static ssize_t rma_read(struct fid_ep *ep, void *buf, size_t len, void *desc,
			fi_addr_t src, uint64_t addr, uint64_t key,
			void *context)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};

	return do_rma(ep_of(ep), GDRFAB_OP_READ, &iov, &desc, 1, src, addr, key,
		      0, ep_of(ep)->tx_op_flags, context, false);
}

static ssize_t rma_readv(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src,
			 uint64_t addr, uint64_t key, void *context)
{
	return do_rma(ep_of(ep), GDRFAB_OP_READ, iov, desc, count, src, addr,
		      key, 0, ep_of(ep)->tx_op_flags, context, false);
}

/* fi_readmsg/fi_writemsg: one remote segment (rma_iov_limit is 1). */
static int check_msg(const struct fi_msg_rma *msg)
{
	if (!msg || msg->rma_iov_count != 1 || !msg->rma_iov) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "RMA message needs exactly one remote segment\n");
		return -FI_EINVAL;
	}
	/* The local iovec is summed below, before do_rma checks it: a count
	 * beyond the array, or without one, must not be read. */
	if (msg->iov_count > GDRFAB_MAX_IOV ||
	    (msg->iov_count && !msg->msg_iov)) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "RMA message: %zu iovecs at %p (at most %d)\n",
			    msg->iov_count, (const void *)msg->msg_iov,
			    GDRFAB_MAX_IOV);
		return -FI_EINVAL;
	}
	if (gdrfab_iov_len(msg->msg_iov, msg->iov_count) !=
	    msg->rma_iov[0].len) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "RMA local and remote lengths differ\n");
		return -FI_EINVAL;
	}
	return 0;
}

static ssize_t rma_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			   uint64_t flags)
{
	int ret = check_msg(msg);

	if (ret)
		return ret;
	return do_rma(ep_of(ep), GDRFAB_OP_READ, msg->msg_iov, msg->desc,
		      msg->iov_count, msg->addr, msg->rma_iov[0].addr,
		      msg->rma_iov[0].key, 0, flags, msg->context, false);
}

static ssize_t rma_write(struct fid_ep *ep, const void *buf, size_t len,
			 void *desc, fi_addr_t dest, uint64_t addr,
			 uint64_t key, void *context)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return do_rma(ep_of(ep), GDRFAB_OP_WRITE, &iov, &desc, 1, dest, addr,
		      key, 0, ep_of(ep)->tx_op_flags, context, false);
}

static ssize_t rma_writev(struct fid_ep *ep, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t dest,
			  uint64_t addr, uint64_t key, void *context)
{
	return do_rma(ep_of(ep), GDRFAB_OP_WRITE, iov, desc, count, dest, addr,
		      key, 0, ep_of(ep)->tx_op_flags, context, false);
}

static ssize_t rma_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			    uint64_t flags)
{
	int ret = check_msg(msg);

	if (ret)
		return ret;
	return do_rma(ep_of(ep), GDRFAB_OP_WRITE, msg->msg_iov, msg->desc,
		      msg->iov_count, msg->addr, msg->rma_iov[0].addr,
		      msg->rma_iov[0].key, msg->data, flags, msg->context,
		      false);
}

static ssize_t rma_inject(struct fid_ep *ep, const void *buf, size_t len,
			  fi_addr_t dest, uint64_t addr, uint64_t key)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return do_rma(ep_of(ep), GDRFAB_OP_WRITE, &iov, NULL, 1, dest, addr,
		      key, 0, FI_INJECT, NULL, true);
}

static ssize_t rma_writedata(struct fid_ep *ep, const void *buf, size_t len,
			     void *desc, uint64_t data, fi_addr_t dest,
			     uint64_t addr, uint64_t key, void *context)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return do_rma(ep_of(ep), GDRFAB_OP_WRITE, &iov, &desc, 1, dest, addr,
		      key, data, ep_of(ep)->tx_op_flags | FI_REMOTE_CQ_DATA,
		      context, false);
}

static ssize_t rma_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			      uint64_t data, fi_addr_t dest, uint64_t addr,
			      uint64_t key)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return do_rma(ep_of(ep), GDRFAB_OP_WRITE, &iov, NULL, 1, dest, addr,
		      key, data, FI_INJECT | FI_REMOTE_CQ_DATA, NULL, true);
}

struct fi_ops_rma gdrfab_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = rma_read,
	.readv = rma_readv,
	.readmsg = rma_readmsg,
	.write = rma_write,
	.writev = rma_writev,
	.writemsg = rma_writemsg,
	.inject = rma_inject,
	.writedata = rma_writedata,
	.injectdata = rma_injectdata,
};
