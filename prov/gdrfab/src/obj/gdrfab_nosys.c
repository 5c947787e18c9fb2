/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Operations gdrfab does not offer: collectives, the connection calls of
 * connected endpoints, scalable endpoints' contexts. Every entry
 * of every ops table must be callable: an application that calls one gets
 * -FI_ENOSYS and a log line naming the call, never a NULL-pointer crash.
 * Capabilities whose operations are here are not advertised in fi_info.
 */
#include <rdma/fi_collective.h>

#include "gdrfab.h"
#include "gdrfab_objs.h"

/* The stubs take each table's exact parameters and use none of them. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

static ssize_t nosys(const char *call)
{
	GDRFAB_WARN(FI_LOG_EP_DATA, "%s: not supported by this endpoint\n",
		    call);
	return -FI_ENOSYS;
}

#define NOSYS(name, ...)                                                       \
	static ssize_t nosys_##name(__VA_ARGS__)                               \
	{                                                                      \
		return nosys("fi_" #name);                                     \
	}

NOSYS(barrier, struct fid_ep *ep, fi_addr_t coll, void *ctx)
NOSYS(broadcast, struct fid_ep *ep, void *buf, size_t count, void *desc,
      fi_addr_t coll, fi_addr_t root, enum fi_datatype dt, uint64_t flags,
      void *ctx)
NOSYS(alltoall, struct fid_ep *ep, const void *buf, size_t count, void *desc,
      void *result, void *result_desc, fi_addr_t coll, enum fi_datatype dt,
      uint64_t flags, void *ctx)
NOSYS(allreduce, struct fid_ep *ep, const void *buf, size_t count, void *desc,
      void *result, void *result_desc, fi_addr_t coll, enum fi_datatype dt,
      enum fi_op op, uint64_t flags, void *ctx)
NOSYS(allgather, struct fid_ep *ep, const void *buf, size_t count, void *desc,
      void *result, void *result_desc, fi_addr_t coll, enum fi_datatype dt,
      uint64_t flags, void *ctx)
NOSYS(reduce_scatter, struct fid_ep *ep, const void *buf, size_t count,
      void *desc, void *result, void *result_desc, fi_addr_t coll,
      enum fi_datatype dt, enum fi_op op, uint64_t flags, void *ctx)
NOSYS(reduce, struct fid_ep *ep, const void *buf, size_t count, void *desc,
      void *result, void *result_desc, fi_addr_t coll, fi_addr_t root,
      enum fi_datatype dt, enum fi_op op, uint64_t flags, void *ctx)
NOSYS(scatter, struct fid_ep *ep, const void *buf, size_t count, void *desc,
      void *result, void *result_desc, fi_addr_t coll, fi_addr_t root,
      enum fi_datatype dt, uint64_t flags, void *ctx)
NOSYS(gather, struct fid_ep *ep, const void *buf, size_t count, void *desc,
      void *result, void *result_desc, fi_addr_t coll, fi_addr_t root,
      enum fi_datatype dt, uint64_t flags, void *ctx)
NOSYS(collective_msg, struct fid_ep *ep, const struct fi_msg_collective *msg,
      struct fi_ioc *resultv, void **result_desc, size_t result_count,
      uint64_t flags)
NOSYS(barrier2, struct fid_ep *ep, fi_addr_t coll, uint64_t flags, void *ctx)

struct fi_ops_collective gdrfab_nosys_collective_ops = {
	.size = sizeof(struct fi_ops_collective),
	.barrier = nosys_barrier,
	.broadcast = nosys_broadcast,
	.alltoall = nosys_alltoall,
	.allreduce = nosys_allreduce,
	.allgather = nosys_allgather,
	.reduce_scatter = nosys_reduce_scatter,
	.reduce = nosys_reduce,
	.scatter = nosys_scatter,
	.gather = nosys_gather,
	.msg = nosys_collective_msg,
	.barrier2 = nosys_barrier2,
};

/* Connection management of connected endpoints: gdrfab's are RDM, and
 * its scalable-endpoint contexts do not exist. */
static int nosys_ctrl(const char *call)
{
	GDRFAB_WARN(FI_LOG_EP_CTRL,
		    "%s: not supported by gdrfab's FI_EP_RDM endpoints\n",
		    call);
	return -FI_ENOSYS;
}

#define NOSYS_CTRL(name, call, ...)                                            \
	int gdrfab_nosys_##name(__VA_ARGS__)                                   \
	{                                                                      \
		return nosys_ctrl(call);                                       \
	}

NOSYS_CTRL(connect, "fi_connect", struct fid_ep *ep, const void *addr,
	   const void *param, size_t paramlen)
NOSYS_CTRL(listen, "fi_listen", struct fid_pep *pep)
NOSYS_CTRL(accept, "fi_accept", struct fid_ep *ep, const void *param,
	   size_t paramlen)
NOSYS_CTRL(reject, "fi_reject", struct fid_pep *pep, fid_t handle,
	   const void *param, size_t paramlen)
NOSYS_CTRL(shutdown, "fi_shutdown", struct fid_ep *ep, uint64_t flags)
NOSYS_CTRL(join, "fi_join", struct fid_ep *ep, const void *addr, uint64_t flags,
	   struct fid_mc **mc, void *context)
NOSYS_CTRL(tx_ctx, "fi_tx_context", struct fid_ep *sep, int index,
	   struct fi_tx_attr *attr, struct fid_ep **tx_ep, void *context)
NOSYS_CTRL(rx_ctx, "fi_rx_context", struct fid_ep *sep, int index,
	   struct fi_rx_attr *attr, struct fid_ep **rx_ep, void *context)

int gdrfab_nosys_flags(const char *call, uint64_t flags)
{
	if (!flags)
		return 0;
	GDRFAB_WARN(FI_LOG_CORE, "%s: flags 0x%llx are not supported\n", call,
		    (unsigned long long)flags);
	return -FI_EBADFLAGS;
}

/* The generic fid operations an object does not have. */
static int fid_nosys(const struct fid *fid, const char *call)
{
	GDRFAB_WARN(FI_LOG_CORE, "%s: not supported on a %s\n", call,
		    fid ? gdrfab_fclass_name(fid->fclass) : "NULL fid");
	return -FI_ENOSYS;
}

int gdrfab_nosys_ops_open(struct fid *fid, const char *name, uint64_t flags,
			  void **ops, void *context)
{
	return fid_nosys(fid, "fi_open_ops");
}

int gdrfab_nosys_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return fid_nosys(fid, "fi_bind");
}

int gdrfab_nosys_control(struct fid *fid, int command, void *arg)
{
	return fid_nosys(fid, "fi_control");
}

int gdrfab_nosys_ops_set(struct fid *fid, const char *name, uint64_t flags,
			 void *ops, void *context)
{
	return fid_nosys(fid, "fi_set_ops");
}
