/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_ops_atomic (fi_atomic(3)) and fi_query_atomic: argument checks, then
 * an ATOMIC request to the peer (proto/gdrfab_atomic.c). The operands are
 * copied into the request when the call is made, so every atomic may reuse
 * its source buffers at once; the fetched values land in the result
 * buffers before the completion is written.
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_atomic.h>

#include "gdrfab.h"
#include "gdrfab_atomic.h"
#include "gdrfab_conn.h"
#include "gdrfab_gpu.h"
#include "gdrfab_objs.h"
#include "gdrfab_params.h"
#include "gdrfab_proto.h"
#include "gdrfab_req.h"

static struct gdrfab_ep *ep_of(struct fid_ep *ep_fid)
{
	return gdrfab_container_of(ep_fid, struct gdrfab_ep, fid);
}

static const char *kind_name(int kind)
{
	return kind == GDRFAB_ATOMIC_WRITE   ? "fi_atomic"
	       : kind == GDRFAB_ATOMIC_FETCH ? "fi_fetch_atomic"
					     : "fi_compare_atomic";
}

/* One side of an atomic (operands, compare values or results) as bytes:
 * the element counts of ioc must add up to count. */
struct side {
	struct iovec iov[GDRFAB_MAX_IOV];
	size_t cnt;
};

static int to_bytes(const char *call, const char *what,
		    const struct fi_ioc *ioc, size_t cnt, size_t size,
		    size_t count, struct side *out, bool need_buf)
{
	size_t total = 0;

	if (cnt > GDRFAB_MAX_IOV || (cnt && !ioc)) {
		GDRFAB_WARN(FI_LOG_EP_DATA, "%s: %zu %s iovecs (at most %d)\n",
			    call, cnt, what, GDRFAB_MAX_IOV);
		return -FI_EINVAL;
	}
	for (size_t i = 0; i < cnt; i++) {
		if (ioc[i].count > count - total) {
			GDRFAB_WARN(
				FI_LOG_EP_DATA,
				"%s: %s counts exceed the operand count %zu\n",
				call, what, count);
			return -FI_EINVAL;
		}
		if (need_buf && ioc[i].count && !ioc[i].addr) {
			GDRFAB_WARN(FI_LOG_EP_DATA,
				    "%s: NULL %s buffer of %zu elements\n",
				    call, what, ioc[i].count);
			return -FI_EINVAL;
		}
		out->iov[i].iov_base = ioc[i].addr;
		out->iov[i].iov_len = ioc[i].count * size;
		if (need_buf && out->iov[i].iov_len >
					UINTPTR_MAX - (uintptr_t)ioc[i].addr) {
			GDRFAB_WARN(FI_LOG_EP_DATA,
				    "%s: %s buffer wraps the address space\n",
				    call, what);
			return -FI_EINVAL;
		}
		total += ioc[i].count;
	}
	if (total != count) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "%s: %zu %s elements for %zu operands\n", call,
			    total, what, count);
		return -FI_EINVAL;
	}
	out->cnt = cnt;
	return 0;
}

/* One side as the application gives it. */
struct iocs {
	const struct fi_ioc *ioc;
	void **desc;
	size_t cnt;
};

struct call {
	int kind;
	enum fi_op op;
	enum fi_datatype datatype;
	struct iocs src, cmp, res;
	fi_addr_t dest;
	uint64_t addr, key, data, flags;
	void *context;
	bool silent; /* fi_inject_atomic */
};

static ssize_t do_atomic(struct gdrfab_ep *ep, const struct call *c)
{
	const char *call = kind_name(c->kind);
	struct gdrfab_proto *proto = ep->proto;
	struct gdrfab_atomic_args a = {.kind = c->kind,
				       .op = c->op,
				       .datatype = c->datatype,
				       .addr = c->addr,
				       .key = c->key};
	struct side src = {0}, cmp = {0}, res = {0};
	struct gdrfab_nic_atomic_query q;
	size_t size = gdrfab_atomic_size(c->datatype), count = 0, max;
	size_t nops = gdrfab_atomic_operands(c->kind, c->op);
	struct gdrfab_inject_copy src_copy = {.bounce = NULL};
	struct gdrfab_inject_copy cmp_copy = {.bounce = NULL};
	struct gdrfab_req *req;
	int ret;

	if (!gdrfab_atomic_valid(c->kind, c->op, c->datatype)) {
		GDRFAB_WARN(
			FI_LOG_EP_DATA,
			"%s: %s on %s is not supported (see fi_atomicvalid)\n",
			call, fi_tostr(&c->op, FI_TYPE_ATOMIC_OP),
			fi_tostr(&c->datatype, FI_TYPE_ATOMIC_TYPE));
		return -FI_EOPNOTSUPP;
	}
	if (!proto) {
		GDRFAB_WARN(FI_LOG_EP_DATA, "%s before fi_enable\n", call);
		return -FI_EOPBADSTATE;
	}
	if (c->src.cnt > GDRFAB_MAX_IOV || (c->src.cnt && !c->src.ioc)) {
		GDRFAB_WARN(FI_LOG_EP_DATA, "%s: %zu iovecs (at most %d)\n",
			    call, c->src.cnt, GDRFAB_MAX_IOV);
		return -FI_EINVAL;
	}
	for (size_t i = 0; i < c->src.cnt; i++) {
		if (c->src.ioc[i].count > SIZE_MAX / size - count) {
			GDRFAB_WARN(FI_LOG_EP_DATA, "%s: counts overflow\n",
				    call);
			return -FI_EINVAL;
		}
		count += c->src.ioc[i].count;
	}
	max = gdrfab_atomic_max_count(proto, c->kind, c->op, c->datatype);
	if (!count || count > max) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "%s: %zu elements (1 to %zu for %s)\n", call, count,
			    max, fi_tostr(&c->datatype, FI_TYPE_ATOMIC_TYPE));
		return count ? -FI_EMSGSIZE : -FI_EINVAL;
	}
	ret = to_bytes(call, "operand", c->src.ioc, c->src.cnt, size, count,
		       &src, nops > 0);
	if (!ret && nops == 2)
		ret = to_bytes(call, "compare", c->cmp.ioc, c->cmp.cnt, size,
			       count, &cmp, true);
	if (!ret && c->kind != GDRFAB_ATOMIC_WRITE)
		ret = to_bytes(call, "result", c->res.ioc, c->res.cnt, size,
			       count, &res, true);
	if (ret)
		return ret;
	if (c->addr + (count * size - 1) < c->addr) {
		GDRFAB_WARN(
			FI_LOG_EP_DATA,
			"%s: %zu bytes at 0x%llx wrap around the address space\n",
			call, count * size, (unsigned long long)c->addr);
		return -FI_EINVAL;
	}
	if (c->key > UINT32_MAX &&
	    (c->key & ~(uint64_t)UINT32_MAX) != GDRFAB_EMU_KEY &&
	    !gdrfab_key_is_rail(c->key)) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "%s: key 0x%llx is not a gdrfab key\n", call,
			    (unsigned long long)c->key);
		return -FI_EINVAL;
	}
	if (nops)
		ret = gdrfab_mr_check_descs(ep->domain, src.iov, c->src.desc,
					    src.cnt);
	if (!ret && nops == 2)
		ret = gdrfab_mr_check_descs(ep->domain, cmp.iov, c->cmp.desc,
					    cmp.cnt);
	if (!ret && res.cnt)
		ret = gdrfab_mr_check_descs(ep->domain, res.iov, c->res.desc,
					    res.cnt);
	if (ret)
		return ret;
	a.count = count;
	a.src = src.iov;
	a.src_desc = c->src.desc;
	a.src_cnt = src.cnt;
	a.cmp = cmp.iov;
	a.cmp_desc = c->cmp.desc;
	a.cmp_cnt = cmp.cnt;
	a.res = res.iov;
	a.res_desc = c->res.desc;
	a.res_cnt = res.cnt;
	/* Operands in GPU memory are copied to host memory now, before the
	 * endpoint's lock: the copy is synchronous (the call may return
	 * before the atomic is sent, and the operands may be reused then) and
	 * must not hold up progress on other threads. */
	if (nops)
		ret = gdrfab_copy_in_unlocked(proto, &a.src, &a.src_desc,
					      &a.src_cnt, &src_copy);
	if (!ret && nops == 2)
		ret = gdrfab_copy_in_unlocked(proto, &a.cmp, &a.cmp_desc,
					      &a.cmp_cnt, &cmp_copy);
	if (ret)
		goto out_unlocked;
	q.kind = c->kind;
	q.op = c->op;
	q.datatype = c->datatype;
	q.count = count;
	q.addr = c->addr;
	q.key = c->key;
	q.remote_data = c->flags & FI_REMOTE_CQ_DATA;
	gdrfab_lock_acquire(&ep->lock);
	ret = gdrfab_req_to_peer(proto, c->dest, &req);
	if (ret)
		goto out;
	req->op = GDRFAB_OP_SEND;
	req->context = c->context;
	req->cq_flags = FI_ATOMIC |
			(c->kind == GDRFAB_ATOMIC_WRITE ? FI_WRITE : FI_READ);
	if (c->flags & FI_REMOTE_CQ_DATA)
		req->cq_flags |= FI_REMOTE_CQ_DATA;
	req->op_flags = c->flags;
	req->silent = c->silent;
	req->addr = c->dest;
	req->data = (c->flags & FI_REMOTE_CQ_DATA) ? (uint32_t)c->data : 0;
	gdrfab_stat_inc(&proto->stats, GDRFAB_STAT_atomic_ops);
	if (req->conn->nic_atomics && gdrfab_nic_atomic_eligible(&q))
		ret = gdrfab_atomic_nic_prepare(proto, req, &a);
	else
		ret = gdrfab_atomic_prepare(proto, req, &a);
	if (ret)
		gdrfab_req_free(proto, req);
	else
		gdrfab_atomic_submit(req);
out:
	gdrfab_req_drain(proto);
	gdrfab_lock_release(&ep->lock);
out_unlocked:
	gdrfab_copy_in_done(proto, &src_copy);
	gdrfab_copy_in_done(proto, &cmp_copy);
	return ret;
}

/* ---- the calls: each plain form is its v form with one operand ---- */

/* The rest of a call whose sides, flags and context are in c already:
 * its target and operation; then the atomic. */
static ssize_t atomic_at(struct fid_ep *ep, struct call *c, fi_addr_t dest,
			 uint64_t addr, uint64_t key, enum fi_datatype datatype,
			 enum fi_op op)
{
	c->dest = dest;
	c->addr = addr;
	c->key = key;
	c->datatype = datatype;
	c->op = op;
	return do_atomic(ep_of(ep), c);
}

static ssize_t atomic_writev(struct fid_ep *ep, const struct fi_ioc *iov,
			     void **desc, size_t count, fi_addr_t dest,
			     uint64_t addr, uint64_t key,
			     enum fi_datatype datatype, enum fi_op op,
			     void *context)
{
	struct call c = {.kind = GDRFAB_ATOMIC_WRITE,
			 .src = {iov, desc, count},
			 .flags = ep_of(ep)->tx_op_flags,
			 .context = context};

	return atomic_at(ep, &c, dest, addr, key, datatype, op);
}

static ssize_t atomic_write(struct fid_ep *ep, const void *buf, size_t count,
			    void *desc, fi_addr_t dest, uint64_t addr,
			    uint64_t key, enum fi_datatype datatype,
			    enum fi_op op, void *context)
{
	struct fi_ioc ioc = {.addr = (void *)buf, .count = count};

	return atomic_writev(ep, &ioc, &desc, 1, dest, addr, key, datatype, op,
			     context);
}

/* fi_msg_atomic: one remote segment, whose count must be the operands'.
 * The other sides, if any, are in c already. */
static ssize_t atomic_msg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			  uint64_t flags, struct call *c)
{
	size_t count = 0;

	if (!msg || msg->rma_iov_count != 1 || !msg->rma_iov) {
		GDRFAB_WARN(
			FI_LOG_EP_DATA,
			"atomic message needs exactly one remote segment\n");
		return -FI_EINVAL;
	}
	if (msg->iov_count > GDRFAB_MAX_IOV ||
	    (msg->iov_count && !msg->msg_iov)) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "atomic message: %zu iovecs (at most %d)\n",
			    msg->iov_count, GDRFAB_MAX_IOV);
		return -FI_EINVAL;
	}
	for (size_t i = 0; i < msg->iov_count; i++)
		count += msg->msg_iov[i].count;
	if (count != msg->rma_iov[0].count) {
		GDRFAB_WARN(
			FI_LOG_EP_DATA,
			"atomic message: %zu operands for %zu remote elements\n",
			count, msg->rma_iov[0].count);
		return -FI_EINVAL;
	}
	c->src = (struct iocs){msg->msg_iov, msg->desc, msg->iov_count};
	c->data = msg->data;
	/* FI_INJECT: the operands are copied at the call anyway. */
	c->flags = flags;
	c->context = msg->context;
	return atomic_at(ep, c, msg->addr, msg->rma_iov[0].addr,
			 msg->rma_iov[0].key, msg->datatype, msg->op);
}

static ssize_t atomic_writemsg(struct fid_ep *ep,
			       const struct fi_msg_atomic *msg, uint64_t flags)
{
	struct call c = {.kind = GDRFAB_ATOMIC_WRITE};

	return atomic_msg(ep, msg, flags, &c);
}

static ssize_t atomic_inject(struct fid_ep *ep, const void *buf, size_t count,
			     fi_addr_t dest, uint64_t addr, uint64_t key,
			     enum fi_datatype datatype, enum fi_op op)
{
	struct fi_ioc ioc = {.addr = (void *)buf, .count = count};
	struct call c = {.kind = GDRFAB_ATOMIC_WRITE,
			 .src = {&ioc, NULL, 1},
			 .flags = FI_INJECT,
			 .silent = true};

	if (count * gdrfab_atomic_size(datatype) >
	    ep_of(ep)->info->tx_attr->inject_size) {
		GDRFAB_WARN(
			FI_LOG_EP_DATA,
			"fi_inject_atomic: %zu elements exceed inject_size\n",
			count);
		return -FI_EMSGSIZE;
	}
	return atomic_at(ep, &c, dest, addr, key, datatype, op);
}

static ssize_t atomic_readwritev(struct fid_ep *ep, const struct fi_ioc *iov,
				 void **desc, size_t count,
				 struct fi_ioc *resultv, void **result_desc,
				 size_t result_count, fi_addr_t dest,
				 uint64_t addr, uint64_t key,
				 enum fi_datatype datatype, enum fi_op op,
				 void *context)
{
	struct call c = {.kind = GDRFAB_ATOMIC_FETCH,
			 .src = {iov, desc, count},
			 .res = {resultv, result_desc, result_count},
			 .flags = ep_of(ep)->tx_op_flags,
			 .context = context};

	return atomic_at(ep, &c, dest, addr, key, datatype, op);
}

static ssize_t atomic_readwrite(struct fid_ep *ep, const void *buf,
				size_t count, void *desc, void *result,
				void *result_desc, fi_addr_t dest,
				uint64_t addr, uint64_t key,
				enum fi_datatype datatype, enum fi_op op,
				void *context)
{
	struct fi_ioc ioc = {.addr = (void *)buf, .count = count};
	struct fi_ioc rioc = {.addr = result, .count = count};

	return atomic_readwritev(ep, &ioc, &desc, 1, &rioc, &result_desc, 1,
				 dest, addr, key, datatype, op, context);
}

static ssize_t atomic_readwritemsg(struct fid_ep *ep,
				   const struct fi_msg_atomic *msg,
				   struct fi_ioc *resultv, void **result_desc,
				   size_t result_count, uint64_t flags)
{
	struct call c = {.kind = GDRFAB_ATOMIC_FETCH,
			 .res = {resultv, result_desc, result_count}};

	return atomic_msg(ep, msg, flags, &c);
}

static ssize_t atomic_compwritev(
	struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
	const struct fi_ioc *comparev, void **compare_desc,
	size_t compare_count, struct fi_ioc *resultv, void **result_desc,
	size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
	enum fi_datatype datatype, enum fi_op op, void *context)
{
	struct call c = {.kind = GDRFAB_ATOMIC_COMPARE,
			 .src = {iov, desc, count},
			 .cmp = {comparev, compare_desc, compare_count},
			 .res = {resultv, result_desc, result_count},
			 .flags = ep_of(ep)->tx_op_flags,
			 .context = context};

	return atomic_at(ep, &c, dest, addr, key, datatype, op);
}

static ssize_t
atomic_compwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc,
		 const void *compare, void *compare_desc, void *result,
		 void *result_desc, fi_addr_t dest, uint64_t addr, uint64_t key,
		 enum fi_datatype datatype, enum fi_op op, void *context)
{
	struct fi_ioc ioc = {.addr = (void *)buf, .count = count};
	struct fi_ioc cioc = {.addr = (void *)compare, .count = count};
	struct fi_ioc rioc = {.addr = result, .count = count};

	return atomic_compwritev(ep, &ioc, &desc, 1, &cioc, &compare_desc, 1,
				 &rioc, &result_desc, 1, dest, addr, key,
				 datatype, op, context);
}

static ssize_t atomic_compwritemsg(struct fid_ep *ep,
				   const struct fi_msg_atomic *msg,
				   const struct fi_ioc *comparev,
				   void **compare_desc, size_t compare_count,
				   struct fi_ioc *resultv, void **result_desc,
				   size_t result_count, uint64_t flags)
{
	struct call c = {.kind = GDRFAB_ATOMIC_COMPARE,
			 .cmp = {comparev, compare_desc, compare_count},
			 .res = {resultv, result_desc, result_count}};

	return atomic_msg(ep, msg, flags, &c);
}

/* ---- the valid queries ---- */

static int valid(struct fid_ep *ep_fid, int kind, enum fi_datatype datatype,
		 enum fi_op op, size_t *count)
{
	struct gdrfab_ep *ep = ep_of(ep_fid);
	size_t max;

	if (!gdrfab_atomic_valid(kind, op, datatype))
		return -FI_EOPNOTSUPP;
	/* Before fi_enable the limit follows from the parameters alone. */
	if (ep->proto) {
		max = gdrfab_atomic_max_count(ep->proto, kind, op, datatype);
	} else {
		struct gdrfab_proto p = {.eager_max = gdrfab_params.eager_max};

		max = gdrfab_atomic_max_count(&p, kind, op, datatype);
	}
	if (count)
		*count = max;
	return 0;
}

static int atomic_writevalid(struct fid_ep *ep, enum fi_datatype datatype,
			     enum fi_op op, size_t *count)
{
	return valid(ep, GDRFAB_ATOMIC_WRITE, datatype, op, count);
}

static int atomic_readwritevalid(struct fid_ep *ep, enum fi_datatype datatype,
				 enum fi_op op, size_t *count)
{
	return valid(ep, GDRFAB_ATOMIC_FETCH, datatype, op, count);
}

static int atomic_compwritevalid(struct fid_ep *ep, enum fi_datatype datatype,
				 enum fi_op op, size_t *count)
{
	return valid(ep, GDRFAB_ATOMIC_COMPARE, datatype, op, count);
}

struct fi_ops_atomic gdrfab_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = atomic_write,
	.writev = atomic_writev,
	.writemsg = atomic_writemsg,
	.inject = atomic_inject,
	.readwrite = atomic_readwrite,
	.readwritev = atomic_readwritev,
	.readwritemsg = atomic_readwritemsg,
	.compwrite = atomic_compwrite,
	.compwritev = atomic_compwritev,
	.compwritemsg = atomic_compwritemsg,
	.writevalid = atomic_writevalid,
	.readwritevalid = atomic_readwritevalid,
	.compwritevalid = atomic_compwritevalid,
};

/* fi_query_atomic: flags 0, FI_FETCH_ATOMIC or FI_COMPARE_ATOMIC, with
 * FI_TAGGED (atomic tagged messages) never served. */
int gdrfab_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
			enum fi_op op, struct fi_atomic_attr *attr,
			uint64_t flags)
{
	int kind = GDRFAB_ATOMIC_WRITE;

	(void)domain;
	if (!attr)
		return -FI_EINVAL;
	if (flags & ~(uint64_t)(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC))
		return -FI_EOPNOTSUPP;
	if ((flags & FI_FETCH_ATOMIC) && (flags & FI_COMPARE_ATOMIC))
		return -FI_EINVAL;
	if (flags & FI_FETCH_ATOMIC)
		kind = GDRFAB_ATOMIC_FETCH;
	else if (flags & FI_COMPARE_ATOMIC)
		kind = GDRFAB_ATOMIC_COMPARE;
	if (!gdrfab_atomic_valid(kind, op, datatype))
		return -FI_EOPNOTSUPP;
	attr->size = gdrfab_atomic_size(datatype);
	{
		/* What one request carries (endpoints share the domain's
		 * FI_GDRFAB_EAGER_MAX). */
		struct gdrfab_proto p = {.eager_max = gdrfab_params.eager_max};

		attr->count = gdrfab_atomic_max_count(&p, kind, op, datatype);
	}
	return 0;
}
