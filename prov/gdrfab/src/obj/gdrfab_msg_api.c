/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_ops_msg and fi_ops_tagged of the endpoint: each call's arguments in
 * the protocol's form, to gdrfab_proto_send / gdrfab_proto_recv
 * (proto/gdrfab_msg.c), once the endpoint is enabled.
 */
#include <rdma/fi_tagged.h>

#include "gdrfab.h"
#include "gdrfab_msg.h"
#include "gdrfab_objs.h"
#include "gdrfab_proto.h"

static struct gdrfab_ep *ep_of(struct fid_ep *ep_fid)
{
	return gdrfab_container_of(ep_fid, struct gdrfab_ep, fid);
}

static ssize_t do_send(struct gdrfab_ep *ep, const struct iovec *iov,
		       void **desc, size_t count, fi_addr_t dest, uint64_t tag,
		       uint64_t data, uint64_t flags, void *context,
		       bool tagged, bool silent)
{
	if (!ep->proto)
		return gdrfab_ep_not_enabled("send");
	return gdrfab_proto_send(ep->proto, iov, desc, count, dest, tag, data,
				 flags, context, tagged, silent);
}

static ssize_t do_recv(struct gdrfab_ep *ep, const struct iovec *iov,
		       void **desc, size_t count, fi_addr_t src, uint64_t tag,
		       uint64_t ignore, uint64_t flags, void *context,
		       bool tagged)
{
	if (!ep->proto)
		return gdrfab_ep_not_enabled("recv");
	return gdrfab_proto_recv(ep->proto, iov, desc, count, src, tag, ignore,
				 flags, context, tagged);
}

static ssize_t msg_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
			fi_addr_t src, void *context)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};

	return do_recv(ep_of(ep), &iov, &desc, 1, src, 0, 0,
		       ep_of(ep)->rx_op_flags, context, false);
}

static ssize_t msg_recvv(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src,
			 void *context)
{
	return do_recv(ep_of(ep), iov, desc, count, src, 0, 0,
		       ep_of(ep)->rx_op_flags, context, false);
}

static ssize_t msg_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
			   uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return do_recv(ep_of(ep), msg->msg_iov, msg->desc, msg->iov_count,
		       msg->addr, 0, 0, flags, msg->context, false);
}

static ssize_t msg_send(struct fid_ep *ep, const void *buf, size_t len,
			void *desc, fi_addr_t dest, void *context)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return do_send(ep_of(ep), &iov, &desc, 1, dest, 0, 0,
		       ep_of(ep)->tx_op_flags, context, false, false);
}

static ssize_t msg_sendv(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest,
			 void *context)
{
	return do_send(ep_of(ep), iov, desc, count, dest, 0, 0,
		       ep_of(ep)->tx_op_flags, context, false, false);
}

static ssize_t msg_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
			   uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return do_send(ep_of(ep), msg->msg_iov, msg->desc, msg->iov_count,
		       msg->addr, 0, msg->data, flags, msg->context, false,
		       false);
}

static ssize_t msg_inject(struct fid_ep *ep, const void *buf, size_t len,
			  fi_addr_t dest)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return do_send(ep_of(ep), &iov, NULL, 1, dest, 0, 0, FI_INJECT, NULL,
		       false, true);
}

static ssize_t msg_senddata(struct fid_ep *ep, const void *buf, size_t len,
			    void *desc, uint64_t data, fi_addr_t dest,
			    void *context)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return do_send(ep_of(ep), &iov, &desc, 1, dest, 0, data,
		       ep_of(ep)->tx_op_flags | FI_REMOTE_CQ_DATA, context,
		       false, false);
}

static ssize_t msg_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			      uint64_t data, fi_addr_t dest)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return do_send(ep_of(ep), &iov, NULL, 1, dest, 0, data,
		       FI_INJECT | FI_REMOTE_CQ_DATA, NULL, false, true);
}

struct fi_ops_msg gdrfab_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = msg_recv,
	.recvv = msg_recvv,
	.recvmsg = msg_recvmsg,
	.send = msg_send,
	.sendv = msg_sendv,
	.sendmsg = msg_sendmsg,
	.inject = msg_inject,
	.senddata = msg_senddata,
	.injectdata = msg_injectdata,
};

static ssize_t tag_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
			fi_addr_t src, uint64_t tag, uint64_t ignore,
			void *context)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};

	return do_recv(ep_of(ep), &iov, &desc, 1, src, tag, ignore,
		       ep_of(ep)->rx_op_flags, context, true);
}

static ssize_t tag_recvv(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src, uint64_t tag,
			 uint64_t ignore, void *context)
{
	return do_recv(ep_of(ep), iov, desc, count, src, tag, ignore,
		       ep_of(ep)->rx_op_flags, context, true);
}

static ssize_t tag_recvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			   uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return do_recv(ep_of(ep), msg->msg_iov, msg->desc, msg->iov_count,
		       msg->addr, msg->tag, msg->ignore, flags, msg->context,
		       true);
}

static ssize_t tag_send(struct fid_ep *ep, const void *buf, size_t len,
			void *desc, fi_addr_t dest, uint64_t tag, void *context)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return do_send(ep_of(ep), &iov, &desc, 1, dest, tag, 0,
		       ep_of(ep)->tx_op_flags, context, true, false);
}

static ssize_t tag_sendv(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest,
			 uint64_t tag, void *context)
{
	return do_send(ep_of(ep), iov, desc, count, dest, tag, 0,
		       ep_of(ep)->tx_op_flags, context, true, false);
}

static ssize_t tag_sendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			   uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return do_send(ep_of(ep), msg->msg_iov, msg->desc, msg->iov_count,
		       msg->addr, msg->tag, msg->data, flags, msg->context,
		       true, false);
}

static ssize_t tag_inject(struct fid_ep *ep, const void *buf, size_t len,
			  fi_addr_t dest, uint64_t tag)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return do_send(ep_of(ep), &iov, NULL, 1, dest, tag, 0, FI_INJECT, NULL,
		       true, true);
}

static ssize_t tag_senddata(struct fid_ep *ep, const void *buf, size_t len,
			    void *desc, uint64_t data, fi_addr_t dest,
			    uint64_t tag, void *context)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return do_send(ep_of(ep), &iov, &desc, 1, dest, tag, data,
		       ep_of(ep)->tx_op_flags | FI_REMOTE_CQ_DATA, context,
		       true, false);
}

static ssize_t tag_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			      uint64_t data, fi_addr_t dest, uint64_t tag)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return do_send(ep_of(ep), &iov, NULL, 1, dest, tag, data,
		       FI_INJECT | FI_REMOTE_CQ_DATA, NULL, true, true);
}

struct fi_ops_tagged gdrfab_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = tag_recv,
	.recvv = tag_recvv,
	.recvmsg = tag_recvmsg,
	.send = tag_send,
	.sendv = tag_sendv,
	.sendmsg = tag_sendmsg,
	.inject = tag_inject,
	.senddata = tag_senddata,
	.injectdata = tag_injectdata,
};
