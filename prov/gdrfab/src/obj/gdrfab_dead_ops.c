/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The class ops of closed objects. A closed endpoint's msg, tagged and RMA
 * tables would reach its freed protocol state, a closed CQ's read its
 * destroyed lock: once retired, each such table is replaced by one whose
 * every entry logs the call and returns -FI_EINVAL (calls that cannot
 * return an error code return 0 or a message). Fabrics and domains keep
 * theirs: their constructors refuse a closed parent (gdrfab_fid_is), the
 * rest are -FI_ENOSYS stubs that touch nothing. Atomics and collectives
 * are -FI_ENOSYS stubs already.
 */
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "gdrfab.h"
#include "gdrfab_quarantine.h"

/* The stubs take each table's exact parameters and use only the first. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

/* DEAD(ret, table, entry, first parameter, other parameters...): a stub
 * named dead_<table>_<entry> that reports fi_<entry> on the object. */
#define DEAD(type, tab, name, first, ...)                                      \
	static type dead_##tab##_##name(first obj, __VA_ARGS__)                \
	{                                                                      \
		return gdrfab_dead_call((const struct fid *)obj, "fi_" #name); \
	}
#define DEAD1(type, tab, name, first)                                          \
	static type dead_##tab##_##name(first obj)                             \
	{                                                                      \
		return gdrfab_dead_call((const struct fid *)obj, "fi_" #name); \
	}

/* fi_ops_msg */
DEAD(ssize_t, msg, recv, struct fid_ep *, void *buf, size_t len, void *desc,
     fi_addr_t src, void *ctx)
DEAD(ssize_t, msg, recvv, struct fid_ep *, const struct iovec *iov, void **desc,
     size_t count, fi_addr_t src, void *ctx)
DEAD(ssize_t, msg, recvmsg, struct fid_ep *, const struct fi_msg *msg,
     uint64_t flags)
DEAD(ssize_t, msg, send, struct fid_ep *, const void *buf, size_t len,
     void *desc, fi_addr_t dest, void *ctx)
DEAD(ssize_t, msg, sendv, struct fid_ep *, const struct iovec *iov, void **desc,
     size_t count, fi_addr_t dest, void *ctx)
DEAD(ssize_t, msg, sendmsg, struct fid_ep *, const struct fi_msg *msg,
     uint64_t flags)
DEAD(ssize_t, msg, inject, struct fid_ep *, const void *buf, size_t len,
     fi_addr_t dest)
DEAD(ssize_t, msg, senddata, struct fid_ep *, const void *buf, size_t len,
     void *desc, uint64_t data, fi_addr_t dest, void *ctx)
DEAD(ssize_t, msg, injectdata, struct fid_ep *, const void *buf, size_t len,
     uint64_t data, fi_addr_t dest)

static struct fi_ops_msg dead_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = dead_msg_recv,
	.recvv = dead_msg_recvv,
	.recvmsg = dead_msg_recvmsg,
	.send = dead_msg_send,
	.sendv = dead_msg_sendv,
	.sendmsg = dead_msg_sendmsg,
	.inject = dead_msg_inject,
	.senddata = dead_msg_senddata,
	.injectdata = dead_msg_injectdata,
};

/* fi_ops_tagged */
DEAD(ssize_t, tagged, trecv, struct fid_ep *, void *buf, size_t len, void *desc,
     fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx)
DEAD(ssize_t, tagged, trecvv, struct fid_ep *, const struct iovec *iov,
     void **desc, size_t count, fi_addr_t src, uint64_t tag, uint64_t ignore,
     void *ctx)
DEAD(ssize_t, tagged, trecvmsg, struct fid_ep *,
     const struct fi_msg_tagged *msg, uint64_t flags)
DEAD(ssize_t, tagged, tsend, struct fid_ep *, const void *buf, size_t len,
     void *desc, fi_addr_t dest, uint64_t tag, void *ctx)
DEAD(ssize_t, tagged, tsendv, struct fid_ep *, const struct iovec *iov,
     void **desc, size_t count, fi_addr_t dest, uint64_t tag, void *ctx)
DEAD(ssize_t, tagged, tsendmsg, struct fid_ep *,
     const struct fi_msg_tagged *msg, uint64_t flags)
DEAD(ssize_t, tagged, tinject, struct fid_ep *, const void *buf, size_t len,
     fi_addr_t dest, uint64_t tag)
DEAD(ssize_t, tagged, tsenddata, struct fid_ep *, const void *buf, size_t len,
     void *desc, uint64_t data, fi_addr_t dest, uint64_t tag, void *ctx)
DEAD(ssize_t, tagged, tinjectdata, struct fid_ep *, const void *buf, size_t len,
     uint64_t data, fi_addr_t dest, uint64_t tag)

static struct fi_ops_tagged dead_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = dead_tagged_trecv,
	.recvv = dead_tagged_trecvv,
	.recvmsg = dead_tagged_trecvmsg,
	.send = dead_tagged_tsend,
	.sendv = dead_tagged_tsendv,
	.sendmsg = dead_tagged_tsendmsg,
	.inject = dead_tagged_tinject,
	.senddata = dead_tagged_tsenddata,
	.injectdata = dead_tagged_tinjectdata,
};

/* fi_ops_rma */
DEAD(ssize_t, rma, read, struct fid_ep *, void *buf, size_t len, void *desc,
     fi_addr_t src, uint64_t addr, uint64_t key, void *ctx)
DEAD(ssize_t, rma, readv, struct fid_ep *, const struct iovec *iov, void **desc,
     size_t count, fi_addr_t src, uint64_t addr, uint64_t key, void *ctx)
DEAD(ssize_t, rma, readmsg, struct fid_ep *, const struct fi_msg_rma *msg,
     uint64_t flags)
DEAD(ssize_t, rma, write, struct fid_ep *, const void *buf, size_t len,
     void *desc, fi_addr_t dest, uint64_t addr, uint64_t key, void *ctx)
DEAD(ssize_t, rma, writev, struct fid_ep *, const struct iovec *iov,
     void **desc, size_t count, fi_addr_t dest, uint64_t addr, uint64_t key,
     void *ctx)
DEAD(ssize_t, rma, writemsg, struct fid_ep *, const struct fi_msg_rma *msg,
     uint64_t flags)
DEAD(ssize_t, rma, inject_write, struct fid_ep *, const void *buf, size_t len,
     fi_addr_t dest, uint64_t addr, uint64_t key)
DEAD(ssize_t, rma, writedata, struct fid_ep *, const void *buf, size_t len,
     void *desc, uint64_t data, fi_addr_t dest, uint64_t addr, uint64_t key,
     void *ctx)
DEAD(ssize_t, rma, inject_writedata, struct fid_ep *, const void *buf,
     size_t len, uint64_t data, fi_addr_t dest, uint64_t addr, uint64_t key)

static struct fi_ops_rma dead_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = dead_rma_read,
	.readv = dead_rma_readv,
	.readmsg = dead_rma_readmsg,
	.write = dead_rma_write,
	.writev = dead_rma_writev,
	.writemsg = dead_rma_writemsg,
	.inject = dead_rma_inject_write,
	.writedata = dead_rma_writedata,
	.injectdata = dead_rma_inject_writedata,
};

/* fi_ops_ep */
DEAD(ssize_t, ep, cancel, fid_t, void *ctx)
DEAD(int, ep, getopt, fid_t, int level, int name, void *val, size_t *len)
DEAD(int, ep, setopt, fid_t, int level, int name, const void *val, size_t len)
DEAD(int, ep, tx_context, struct fid_ep *, int index, struct fi_tx_attr *attr,
     struct fid_ep **tx, void *ctx)
DEAD(int, ep, rx_context, struct fid_ep *, int index, struct fi_rx_attr *attr,
     struct fid_ep **rx, void *ctx)
DEAD1(ssize_t, ep, rx_size_left, struct fid_ep *)
DEAD1(ssize_t, ep, tx_size_left, struct fid_ep *)

static struct fi_ops_ep dead_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = dead_ep_cancel,
	.getopt = dead_ep_getopt,
	.setopt = dead_ep_setopt,
	.tx_ctx = dead_ep_tx_context,
	.rx_ctx = dead_ep_rx_context,
	.rx_size_left = dead_ep_rx_size_left,
	.tx_size_left = dead_ep_tx_size_left,
};

/* fi_ops_cm (an endpoint's; listen and reject take a passive endpoint,
 * which gdrfab never makes, but the table must be whole). */
DEAD(int, cm, setname, fid_t, void *addr, size_t len)
DEAD(int, cm, getname, fid_t, void *addr, size_t *len)
DEAD(int, cm, getpeer, struct fid_ep *, void *addr, size_t *len)
DEAD(int, cm, connect, struct fid_ep *, const void *addr, const void *param,
     size_t len)
DEAD1(int, cm, listen, struct fid_pep *)
DEAD(int, cm, accept, struct fid_ep *, const void *param, size_t len)
DEAD(int, cm, reject, struct fid_pep *, fid_t handle, const void *param,
     size_t len)
DEAD(int, cm, shutdown, struct fid_ep *, uint64_t flags)
DEAD(int, cm, join, struct fid_ep *, const void *addr, uint64_t flags,
     struct fid_mc **mc, void *ctx)

static struct fi_ops_cm dead_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = dead_cm_setname,
	.getname = dead_cm_getname,
	.getpeer = dead_cm_getpeer,
	.connect = dead_cm_connect,
	.listen = dead_cm_listen,
	.accept = dead_cm_accept,
	.reject = dead_cm_reject,
	.shutdown = dead_cm_shutdown,
	.join = dead_cm_join,
};

/* fi_ops_cq */
DEAD(ssize_t, cq, cq_read, struct fid_cq *, void *buf, size_t count)
DEAD(ssize_t, cq, cq_readfrom, struct fid_cq *, void *buf, size_t count,
     fi_addr_t *src)
DEAD(ssize_t, cq, cq_readerr, struct fid_cq *, struct fi_cq_err_entry *buf,
     uint64_t flags)
DEAD(ssize_t, cq, cq_sread, struct fid_cq *, void *buf, size_t count,
     const void *cond, int timeout)
DEAD(ssize_t, cq, cq_sreadfrom, struct fid_cq *, void *buf, size_t count,
     fi_addr_t *src, const void *cond, int timeout)
DEAD1(int, cq, cq_signal, struct fid_cq *)

static const char *dead_strerror(const struct fid *fid, const char *call)
{
	gdrfab_dead_call(fid, call);
	return "the object was closed";
}

static const char *dead_cq_strerror(struct fid_cq *cq, int prov_errno,
				    const void *err_data, char *buf, size_t len)
{
	return dead_strerror(&cq->fid, "fi_cq_strerror");
}

static struct fi_ops_cq dead_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = dead_cq_cq_read,
	.readfrom = dead_cq_cq_readfrom,
	.readerr = dead_cq_cq_readerr,
	.sread = dead_cq_cq_sread,
	.sreadfrom = dead_cq_cq_sreadfrom,
	.signal = dead_cq_cq_signal,
	.strerror = dead_cq_strerror,
};

/* fi_ops_cntr: the reads cannot return an error; they log and read 0. */
static uint64_t dead_cntr_read(struct fid_cntr *cntr)
{
	gdrfab_dead_call(&cntr->fid, "fi_cntr_read");
	return 0;
}

static uint64_t dead_cntr_readerr(struct fid_cntr *cntr)
{
	gdrfab_dead_call(&cntr->fid, "fi_cntr_readerr");
	return 0;
}

DEAD(int, cntr, cntr_add, struct fid_cntr *, uint64_t value)
DEAD(int, cntr, cntr_set, struct fid_cntr *, uint64_t value)
DEAD(int, cntr, cntr_wait, struct fid_cntr *, uint64_t threshold, int timeout)
DEAD(int, cntr, cntr_adderr, struct fid_cntr *, uint64_t value)
DEAD(int, cntr, cntr_seterr, struct fid_cntr *, uint64_t value)

static struct fi_ops_cntr dead_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = dead_cntr_read,
	.readerr = dead_cntr_readerr,
	.add = dead_cntr_cntr_add,
	.set = dead_cntr_cntr_set,
	.wait = dead_cntr_cntr_wait,
	.adderr = dead_cntr_cntr_adderr,
	.seterr = dead_cntr_cntr_seterr,
};

/* fi_ops_eq */
DEAD(ssize_t, eq, eq_read, struct fid_eq *, uint32_t *event, void *buf,
     size_t len, uint64_t flags)
DEAD(ssize_t, eq, eq_readerr, struct fid_eq *, struct fi_eq_err_entry *buf,
     uint64_t flags)
DEAD(ssize_t, eq, eq_write, struct fid_eq *, uint32_t event, const void *buf,
     size_t len, uint64_t flags)
DEAD(ssize_t, eq, eq_sread, struct fid_eq *, uint32_t *event, void *buf,
     size_t len, int timeout, uint64_t flags)

static const char *dead_eq_strerror(struct fid_eq *eq, int prov_errno,
				    const void *err_data, char *buf, size_t len)
{
	return dead_strerror(&eq->fid, "fi_eq_strerror");
}

static struct fi_ops_eq dead_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = dead_eq_eq_read,
	.readerr = dead_eq_eq_readerr,
	.write = dead_eq_eq_write,
	.sread = dead_eq_eq_sread,
	.strerror = dead_eq_strerror,
};

/* fi_ops_av */
DEAD(int, av, av_insert, struct fid_av *, const void *addr, size_t count,
     fi_addr_t *fi_addr, uint64_t flags, void *ctx)
DEAD(int, av, av_insertsvc, struct fid_av *, const char *node,
     const char *service, fi_addr_t *fi_addr, uint64_t flags, void *ctx)
DEAD(int, av, av_insertsym, struct fid_av *, const char *node, size_t nodecnt,
     const char *service, size_t svccnt, fi_addr_t *fi_addr, uint64_t flags,
     void *ctx)
DEAD(int, av, av_remove, struct fid_av *, fi_addr_t *fi_addr, size_t count,
     uint64_t flags)
DEAD(int, av, av_lookup, struct fid_av *, fi_addr_t fi_addr, void *addr,
     size_t *len)
DEAD(int, av, av_set, struct fid_av *, struct fi_av_set_attr *attr,
     struct fid_av_set **set, void *ctx)

static const char *dead_av_straddr(struct fid_av *av, const void *addr,
				   char *buf, size_t *len)
{
	return dead_strerror(&av->fid, "fi_av_straddr");
}

static struct fi_ops_av dead_av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = dead_av_av_insert,
	.insertsvc = dead_av_av_insertsvc,
	.insertsym = dead_av_av_insertsym,
	.remove = dead_av_av_remove,
	.lookup = dead_av_av_lookup,
	.straddr = dead_av_straddr,
	.av_set = dead_av_av_set,
};

void gdrfab_dead_ops_install(struct fid *fid)
{
	switch (fid->fclass) {
	case FI_CLASS_EP: {
		struct fid_ep *ep = (struct fid_ep *)fid;

		ep->ops = &dead_ep_ops;
		ep->cm = &dead_cm_ops;
		ep->msg = &dead_msg_ops;
		ep->tagged = &dead_tagged_ops;
		ep->rma = &dead_rma_ops;
		break;
	}
	case FI_CLASS_CQ: ((struct fid_cq *)fid)->ops = &dead_cq_ops; break;
	case FI_CLASS_CNTR:
		((struct fid_cntr *)fid)->ops = &dead_cntr_ops;
		break;
	case FI_CLASS_EQ: ((struct fid_eq *)fid)->ops = &dead_eq_ops; break;
	case FI_CLASS_AV: ((struct fid_av *)fid)->ops = &dead_av_ops; break;
	default: break; /* fabric, domain, MR: see the top of the file */
	}
}
