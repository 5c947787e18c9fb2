/* SPDX-License-Identifier: BSD-2-Clause */
/* API misuse on the control path: NULL pointers where libfabric passes them
 * through, unknown flags and attributes, wrong object types, calls on
 * closed objects, double closes and closes in the wrong order. Each case
 * asserts the code fi_*(3) or fi_gdrfab(7) gives; test_errors.c has the
 * plain bad-argument cases, test_misuse_data.c the data calls. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <rdma/fi_ext_gdrfab.h>

#include "misuse_tally.h"
#include "vm_helpers.h"

static void misuse_fini(void)
{
	misuse_tally_flush();
	vm_rxe0_close();
}

TestSuite(misuse, .init = vm_rxe0_open, .fini = misuse_fini, .timeout = 120);

#define BIG_FLAG (1ULL << 15) /* a flag bit no call of gdrfab knows */

Test(misuse, fabric_and_eq)
{
	struct fi_eq_attr attr = {.wait_obj = FI_WAIT_NONE};
	struct fi_eq_err_entry err;
	struct test_domain t = {0};
	struct fid_domain *domain;
	struct fid_eq *eq;
	uint32_t event;
	char buf[64];
	int fd;

	MISUSE(fi_domain(vm_rxe0.fabric, NULL, &domain, NULL), -FI_EINVAL);
	MISUSE(fi_domain(vm_rxe0.fabric, vm_rxe0.info, NULL, NULL), -FI_EINVAL);
	MISUSE(fi_eq_open(vm_rxe0.fabric, &attr, NULL, NULL), -FI_EINVAL);
	attr.flags = BIG_FLAG;
	MISUSE(fi_eq_open(vm_rxe0.fabric, &attr, &eq, NULL), -FI_EBADFLAGS);
	attr.flags = 0;
	attr.wait_obj = (enum fi_wait_obj)77;
	MISUSE(fi_eq_open(vm_rxe0.fabric, &attr, &eq, NULL), -FI_EINVAL);
	attr.wait_obj = FI_WAIT_YIELD;
	MISUSE(fi_eq_open(vm_rxe0.fabric, &attr, &eq, NULL), -FI_ENOSYS);
	attr.wait_obj = FI_WAIT_NONE;
	MISUSE(fi_eq_open(vm_rxe0.fabric, &attr, &eq, NULL), 0);
	MISUSE(fi_eq_read(eq, &event, buf, sizeof(buf), BIG_FLAG),
	       -FI_EBADFLAGS);
	MISUSE(fi_eq_read(eq, &event, buf, sizeof(buf), 0), -FI_EAGAIN);
	MISUSE(fi_eq_readerr(eq, NULL, 0), -FI_EINVAL);
	MISUSE(fi_eq_readerr(eq, &err, 0), -FI_EAGAIN);
	MISUSE(fi_eq_write(eq, FI_NOTIFY, NULL, 16, 0), -FI_EINVAL);
	MISUSE(fi_eq_sread(eq, &event, buf, sizeof(buf), 0, 0), -FI_ENOSYS);
	MISUSE(fi_control(&eq->fid, FI_GETWAIT, NULL), -FI_EINVAL);
	MISUSE(fi_control(&eq->fid, FI_GETWAIT, &fd), -FI_ENODATA);
	/* A fabric with an open EQ (or domain) is busy. */
	MISUSE(fi_close(&vm_rxe0.fabric->fid), -FI_EBUSY);
	MISUSE(fi_close(&eq->fid), 0);
	MISUSE(fi_close(&eq->fid), -FI_EINVAL);
	MISUSE(fi_eq_read(eq, &event, buf, sizeof(buf), 0), -FI_EINVAL);
	MISUSE(fi_eq_write(eq, FI_NOTIFY, buf, 8, 0), -FI_EINVAL);
	MISUSE(fi_control(&eq->fid, FI_GETWAIT, &fd), -FI_EINVAL);
	MISUSE(fi_trywait(vm_rxe0.fabric, (struct fid *[]){&eq->fid}, 1),
	       -FI_EINVAL);
	MISUSE(fi_trywait(vm_rxe0.fabric, NULL, 1), -FI_EINVAL);
	MISUSE(fi_trywait(vm_rxe0.fabric, (struct fid *[]){NULL}, 1),
	       -FI_EINVAL);
	MISUSE(fi_trywait(vm_rxe0.fabric,
			  (struct fid *[]){&vm_rxe0.domain->fid}, 1),
	       -FI_EINVAL);
	/* A closed fabric: closing again, or opening objects on it. */
	test_domain_open(&t, "rxe1");
	MISUSE(fi_close(&t.fabric->fid), -FI_EBUSY);
	MISUSE(fi_close(&t.domain->fid), 0);
	MISUSE(fi_close(&t.domain->fid), -FI_EINVAL);
	MISUSE(fi_close(&t.fabric->fid), 0);
	MISUSE(fi_close(&t.fabric->fid), -FI_EINVAL);
	MISUSE(fi_domain(t.fabric, t.info, &domain, NULL), -FI_EINVAL);
	MISUSE(fi_eq_open(t.fabric, &attr, &eq, NULL), -FI_EINVAL);
	t.domain = NULL;
	t.fabric = NULL;
	test_domain_close(&t);
}

/* Objects of a domain keep it open; a closed domain opens nothing. */
Test(misuse, domain_close_order)
{
	static char buf[64];
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT};
	struct fid_domain *d;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	struct fid_ep *ep;
	struct fid_mr *mr;

	cr_assert_eq(fi_domain(vm_rxe0.fabric, vm_rxe0.info, &d, NULL), 0);
	MISUSE(fi_av_open(d, &av_attr, &av, NULL), 0);
	MISUSE(fi_cq_open(d, &cq_attr, &cq, NULL), 0);
	MISUSE(fi_cntr_open(d, NULL, &cntr, NULL), 0);
	MISUSE(fi_mr_reg(d, buf, sizeof(buf), FI_SEND, 0, 0, 0, &mr, NULL), 0);
	MISUSE(fi_endpoint(d, vm_rxe0.info, &ep, NULL), 0);
	MISUSE(fi_ep_bind(ep, &av->fid, 0), 0);
	MISUSE(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
	MISUSE(fi_ep_bind(ep, &cntr->fid, FI_SEND), 0);
	MISUSE(fi_enable(ep), 0);
	/* Bound to a live endpoint: busy, and nothing is freed. */
	MISUSE(fi_close(&d->fid), -FI_EBUSY);
	MISUSE(fi_close(&av->fid), -FI_EBUSY);
	MISUSE(fi_close(&cq->fid), -FI_EBUSY);
	MISUSE(fi_close(&cntr->fid), -FI_EBUSY);
	MISUSE(fi_close(&ep->fid), 0);
	MISUSE(fi_close(&d->fid), -FI_EBUSY); /* the AV, CQ, counter, MR */
	MISUSE(fi_close(&av->fid), 0);
	MISUSE(fi_close(&cq->fid), 0);
	MISUSE(fi_close(&cntr->fid), 0);
	MISUSE(fi_close(&d->fid), -FI_EBUSY); /* the MR */
	MISUSE(fi_close(&mr->fid), 0);
	MISUSE(fi_close(&d->fid), 0);
	/* Every object was closed once: a second close is refused. */
	MISUSE(fi_close(&ep->fid), -FI_EINVAL);
	MISUSE(fi_close(&av->fid), -FI_EINVAL);
	MISUSE(fi_close(&cq->fid), -FI_EINVAL);
	MISUSE(fi_close(&cntr->fid), -FI_EINVAL);
	MISUSE(fi_close(&mr->fid), -FI_EINVAL);
	MISUSE(fi_close(&d->fid), -FI_EINVAL);
	MISUSE(fi_av_open(d, &av_attr, &av, NULL), -FI_EINVAL);
	MISUSE(fi_cq_open(d, &cq_attr, &cq, NULL), -FI_EINVAL);
	MISUSE(fi_cntr_open(d, NULL, &cntr, NULL), -FI_EINVAL);
	MISUSE(fi_endpoint(d, vm_rxe0.info, &ep, NULL), -FI_EINVAL);
	MISUSE(fi_mr_reg(d, buf, sizeof(buf), FI_SEND, 0, 0, 0, &mr, NULL),
	       -FI_EINVAL);
}

Test(misuse, cq)
{
	struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_CONTEXT};
	struct fi_cq_err_entry err;
	struct fi_cq_entry entry;
	struct fid_cq *cq;
	int fd;

	MISUSE(fi_cq_open(vm_rxe0.domain, &attr, NULL, NULL), -FI_EINVAL);
	attr.flags = BIG_FLAG;
	MISUSE(fi_cq_open(vm_rxe0.domain, &attr, &cq, NULL), -FI_EBADFLAGS);
	attr.flags = 0;
	attr.wait_obj = (enum fi_wait_obj)77;
	MISUSE(fi_cq_open(vm_rxe0.domain, &attr, &cq, NULL), -FI_EINVAL);
	attr.wait_obj = FI_WAIT_NONE;
	attr.wait_cond = (enum fi_cq_wait_cond)9;
	MISUSE(fi_cq_open(vm_rxe0.domain, &attr, &cq, NULL), -FI_EINVAL);
	attr.wait_cond = FI_CQ_COND_NONE;
	MISUSE(fi_cq_open(vm_rxe0.domain, &attr, &cq, NULL), 0);
	MISUSE(fi_cq_read(cq, NULL, 1), -FI_EINVAL);
	MISUSE(fi_cq_read(cq, &entry, 0), -FI_EAGAIN);
	MISUSE(fi_cq_readfrom(cq, &entry, 1, NULL), -FI_EAGAIN);
	MISUSE(fi_cq_readerr(cq, NULL, 0), -FI_EINVAL);
	MISUSE(fi_cq_readerr(cq, &err, 0), -FI_EAGAIN);
	MISUSE(fi_cq_sread(cq, &entry, 1, NULL, 0), -FI_ENOSYS);
	MISUSE(fi_control(&cq->fid, FI_GETWAIT, NULL), -FI_EINVAL);
	MISUSE(fi_control(&cq->fid, FI_GETWAIT, &fd), -FI_ENODATA);
	MISUSE(fi_cq_signal(cq), 0);
	MISUSE(fi_close(&cq->fid), 0);
	MISUSE(fi_cq_read(cq, &entry, 1), -FI_EINVAL);
	MISUSE(fi_cq_readerr(cq, &err, 0), -FI_EINVAL);
	MISUSE(fi_cq_sread(cq, &entry, 1, NULL, 0), -FI_EINVAL);
	MISUSE(fi_cq_signal(cq), -FI_EINVAL);
	MISUSE(fi_control(&cq->fid, FI_GETWAIT, &fd), -FI_EINVAL);
	MISUSE(fi_close(&cq->fid), -FI_EINVAL);
	/* A blocking CQ with nothing in it: a zero timeout returns. */
	attr.wait_obj = FI_WAIT_FD;
	MISUSE(fi_cq_open(vm_rxe0.domain, &attr, &cq, NULL), 0);
	MISUSE(fi_cq_sread(cq, &entry, 1, NULL, 0), -FI_EAGAIN);
	MISUSE(fi_trywait(vm_rxe0.fabric, (struct fid *[]){&cq->fid}, 1), 0);
	MISUSE(fi_close(&cq->fid), 0);
}

Test(misuse, cntr)
{
	struct fi_cntr_attr attr = {.events = FI_CNTR_EVENTS_COMP,
				    .wait_obj = FI_WAIT_NONE};
	struct fid_cntr *cntr;
	int fd;

	MISUSE(fi_cntr_open(vm_rxe0.domain, &attr, NULL, NULL), -FI_EINVAL);
	attr.events = (enum fi_cntr_events)5;
	MISUSE(fi_cntr_open(vm_rxe0.domain, &attr, &cntr, NULL), -FI_ENOSYS);
	attr.events = FI_CNTR_EVENTS_COMP;
	attr.wait_obj = (enum fi_wait_obj)77;
	MISUSE(fi_cntr_open(vm_rxe0.domain, &attr, &cntr, NULL), -FI_EINVAL);
	attr.wait_obj = FI_WAIT_NONE;
	MISUSE(fi_cntr_open(vm_rxe0.domain, &attr, &cntr, NULL), 0);
	MISUSE(fi_cntr_wait(cntr, 1, 0), -FI_EINVAL);
	MISUSE(fi_control(&cntr->fid, FI_GETWAIT, NULL), -FI_EINVAL);
	MISUSE(fi_control(&cntr->fid, FI_GETWAIT, &fd), -FI_ENODATA);
	MISUSE(fi_cntr_add(cntr, UINT64_MAX), 0);
	MISUSE(fi_cntr_add(cntr, 2), 0); /* wraps, as an unsigned count does */
	MISUSE(fi_cntr_read(cntr), 1);
	MISUSE(fi_close(&cntr->fid), 0);
	MISUSE(fi_cntr_add(cntr, 1), -FI_EINVAL);
	MISUSE(fi_cntr_set(cntr, 1), -FI_EINVAL);
	MISUSE(fi_cntr_adderr(cntr, 1), -FI_EINVAL);
	MISUSE(fi_cntr_seterr(cntr, 1), -FI_EINVAL);
	MISUSE(fi_cntr_wait(cntr, 1, 0), -FI_EINVAL);
	MISUSE(fi_cntr_read(cntr), 0);
	MISUSE(fi_cntr_readerr(cntr), 0);
	MISUSE(fi_close(&cntr->fid), -FI_EINVAL);
	/* A blocking counter below its threshold times out. */
	attr.wait_obj = FI_WAIT_FD;
	MISUSE(fi_cntr_open(vm_rxe0.domain, &attr, &cntr, NULL), 0);
	MISUSE(fi_cntr_wait(cntr, 1, 0), -FI_ETIMEDOUT);
	MISUSE(fi_close(&cntr->fid), 0);
}

Test(misuse, av)
{
	struct fi_av_attr attr = {.type = FI_AV_TABLE};
	uint8_t name[FI_GDRFAB_ADDR_LEN], back[FI_GDRFAB_ADDR_LEN];
	fi_addr_t fa = FI_ADDR_NOTAVAIL, two[2];
	size_t len = 0;
	struct fid_av *av;
	char str[128];

	memcpy(name, vm_rxe0.info->src_addr, sizeof(name));
	name[7] = 9; /* an endpoint's QP: a port's address is no peer */
	MISUSE(fi_av_open(vm_rxe0.domain, NULL, &av, NULL), -FI_EINVAL);
	MISUSE(fi_av_open(vm_rxe0.domain, &attr, NULL, NULL), -FI_EINVAL);
	attr.flags = BIG_FLAG;
	MISUSE(fi_av_open(vm_rxe0.domain, &attr, &av, NULL), -FI_EBADFLAGS);
	attr.flags = 0;
	MISUSE(fi_av_open(vm_rxe0.domain, &attr, &av, NULL), 0);
	MISUSE(fi_av_insert(av, name, 0, &fa, 0, NULL), 0);
	MISUSE(fi_av_insert(av, NULL, 0, NULL, 0, NULL), 0);
	MISUSE(fi_av_insert(av, name, 1, &fa, FI_SYNC_ERR, NULL), -FI_EINVAL);
	MISUSE(fi_av_insert(av, name, 1, NULL, 0, NULL), 1);
	MISUSE(fi_av_lookup(av, 0, back, NULL), -FI_EINVAL);
	MISUSE(fi_av_lookup(av, 0, NULL, &(size_t){8}), -FI_EINVAL);
	/* A zero-length buffer learns the size (fi_av(3)). */
	MISUSE(fi_av_lookup(av, 0, NULL, &len), 0);
	cr_assert_eq(len, FI_GDRFAB_ADDR_LEN);
	MISUSE(fi_av_lookup(av, FI_ADDR_NOTAVAIL, back, &len), -FI_EINVAL);
	MISUSE(fi_av_remove(av, NULL, 1, 0), -FI_EINVAL);
	MISUSE(fi_av_remove(av, &fa, 0, 0), 0);
	MISUSE(fi_av_remove(av, &(fi_addr_t){0}, 1, BIG_FLAG), -FI_EBADFLAGS);
	MISUSE(fi_av_remove(av, &(fi_addr_t){FI_ADDR_NOTAVAIL}, 1, 0),
	       -FI_EINVAL);
	/* No host by that name, and no second one to count up to. */
	MISUSE(fi_av_insertsym(av, "192.0.2.", 2, "7", 1, two, 0, NULL), 0);
	cr_assert_eq(two[0], FI_ADDR_NOTAVAIL);
	cr_assert_eq(two[1], FI_ADDR_NOTAVAIL);
	MISUSE(fi_av_insertsym(av, "192.0.2.2", 1, "x", 1, two, 0, NULL),
	       -FI_EINVAL);
	len = sizeof(str);
	cr_assert_eq(fi_av_straddr(av, NULL, str, &len), str);
	cr_assert_str_eq(str, "(invalid gdrfab address)");
	misuse_cases++;
	cr_assert_null(fi_av_straddr(av, name, str, NULL));
	misuse_cases++;
	MISUSE(fi_close(&av->fid), 0);
	MISUSE(fi_av_insert(av, name, 1, &fa, 0, NULL), -FI_EINVAL);
	MISUSE(fi_av_lookup(av, 0, back, &len), -FI_EINVAL);
	MISUSE(fi_av_remove(av, &(fi_addr_t){0}, 1, 0), -FI_EINVAL);
	MISUSE(fi_close(&av->fid), -FI_EINVAL);
}

Test(misuse, mr)
{
	static char buf[4096];
	struct iovec iov = {buf, sizeof(buf)};
	struct fi_mr_attr attr = {
		.mr_iov = &iov, .iov_count = 1, .access = FI_SEND};
	struct fid_cq *cq;
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT};
	struct fid_mr *mr;

	MISUSE(fi_mr_reg(vm_rxe0.domain, buf, sizeof(buf), FI_SEND, 0, 0, 0,
			 NULL, NULL),
	       -FI_EINVAL);
	MISUSE(fi_mr_regv(vm_rxe0.domain, &iov, 0, FI_SEND, 0, 0, 0, &mr, NULL),
	       -FI_EINVAL);
	MISUSE(fi_mr_regv(vm_rxe0.domain, NULL, 1, FI_SEND, 0, 0, 0, &mr, NULL),
	       -FI_EINVAL);
	attr.iface = (enum fi_hmem_iface)42;
	MISUSE(fi_mr_regattr(vm_rxe0.domain, &attr, 0, &mr), -FI_ENOSYS);
	attr.iface = FI_HMEM_SYSTEM;
	attr.auth_key_size = 8;
	MISUSE(fi_mr_regattr(vm_rxe0.domain, &attr, 0, &mr), -FI_EINVAL);
	attr.auth_key_size = 0;
	MISUSE(fi_mr_regattr(vm_rxe0.domain, &attr, FI_HMEM_DEVICE_ONLY, &mr),
	       -FI_EINVAL);
	MISUSE(fi_mr_regattr(vm_rxe0.domain, &attr, BIG_FLAG, &mr),
	       -FI_EBADFLAGS);
	/* Registering nothing works: zero-length transfers use no key. */
	MISUSE(fi_mr_reg(vm_rxe0.domain, buf, 0, FI_SEND, 0, 0, 0, &mr, NULL),
	       0);
	MISUSE(fi_close(&mr->fid), 0);
	MISUSE(fi_mr_reg(vm_rxe0.domain, buf, sizeof(buf), FI_SEND, 0, 0, 0,
			 &mr, NULL),
	       0);
	cr_assert_eq(fi_cq_open(vm_rxe0.domain, &cq_attr, &cq, NULL), 0);
	MISUSE(fi_mr_bind(mr, &cq->fid, 0), -FI_ENOSYS);
	MISUSE(fi_mr_enable(mr), 0);
	MISUSE(fi_mr_refresh(mr, &iov, 1, 0), -FI_ENOSYS);
	MISUSE(fi_close(&mr->fid), 0);
	MISUSE(fi_close(&mr->fid), -FI_EINVAL);
	MISUSE(fi_mr_bind(mr, &cq->fid, 0), -FI_EINVAL);
	MISUSE(fi_mr_enable(mr), -FI_EINVAL);
	MISUSE(fi_close(&cq->fid), 0);
}

/* An endpoint before fi_enable, with wrong objects, and after close. */
Test(misuse, endpoint_control)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT};
	struct test_domain other = {0};
	struct fid_cq *cq, *foreign;
	struct fid_cntr *cntr;
	struct fid_ep *ep;
	char buf[64];
	size_t len = sizeof(buf);
	uint64_t flags;

	MISUSE(fi_endpoint(vm_rxe0.domain, vm_rxe0.info, NULL, NULL),
	       -FI_EINVAL);
	MISUSE(fi_endpoint(vm_rxe0.domain, vm_rxe0.info, &ep, NULL), 0);
	cr_assert_eq(fi_cq_open(vm_rxe0.domain, &cq_attr, &cq, NULL), 0);
	cr_assert_eq(fi_cntr_open(vm_rxe0.domain, NULL, &cntr, NULL), 0);
	test_domain_open(&other, "rxe1");
	cr_assert_eq(fi_cq_open(other.domain, &cq_attr, &foreign, NULL), 0);
	/* Data calls before fi_enable: the endpoint is in the wrong state. */
	MISUSE(fi_send(ep, buf, 8, NULL, 0, NULL), -FI_EOPBADSTATE);
	MISUSE(fi_recv(ep, buf, 8, NULL, 0, NULL), -FI_EOPBADSTATE);
	MISUSE(fi_tsend(ep, buf, 8, NULL, 0, 1, NULL), -FI_EOPBADSTATE);
	MISUSE(fi_trecv(ep, buf, 8, NULL, 0, 1, 0, NULL), -FI_EOPBADSTATE);
	MISUSE(fi_inject(ep, buf, 8, 0), -FI_EOPBADSTATE);
	MISUSE(fi_read(ep, buf, 8, NULL, 0, 0, 1, NULL), -FI_EOPBADSTATE);
	MISUSE(fi_write(ep, buf, 8, NULL, 0, 0, 1, NULL), -FI_EOPBADSTATE);
	MISUSE(fi_cancel(&ep->fid, buf), -FI_ENOENT);
	/* Binding: nothing, objects that do not bind, another domain's. */
	MISUSE(fi_ep_bind(ep, NULL, 0), -FI_EINVAL);
	MISUSE(fi_ep_bind(ep, &vm_rxe0.domain->fid, 0), -FI_EINVAL);
	MISUSE(fi_ep_bind(ep, &vm_rxe0.fabric->fid, 0), -FI_EINVAL);
	MISUSE(fi_ep_bind(ep, &ep->fid, 0), -FI_EINVAL);
	MISUSE(fi_ep_bind(ep, &foreign->fid, FI_TRANSMIT), -FI_EINVAL);
	MISUSE(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | BIG_FLAG), -FI_EBADFLAGS);
	MISUSE(fi_ep_bind(ep, &cntr->fid, 0), -FI_EBADFLAGS);
	MISUSE(fi_ep_bind(ep, &cntr->fid, FI_REMOTE_WRITE | BIG_FLAG),
	       -FI_EBADFLAGS);
	MISUSE(fi_ep_bind(ep, &cntr->fid, FI_SEND), 0);
	MISUSE(fi_ep_bind(ep, &cntr->fid, FI_SEND), -FI_EINVAL);
	/* A closed CQ cannot be bound. */
	MISUSE(fi_close(&foreign->fid), 0);
	MISUSE(fi_ep_bind(ep, &foreign->fid, FI_TRANSMIT), -FI_EINVAL);
	/* Options and op flags. */
	MISUSE(fi_control(&ep->fid, FI_GETOPSFLAG, NULL), -FI_EINVAL);
	flags = FI_TRANSMIT | FI_RECV;
	MISUSE(fi_control(&ep->fid, FI_GETOPSFLAG, &flags), -FI_EINVAL);
	flags = 0;
	MISUSE(fi_control(&ep->fid, FI_SETOPSFLAG, &flags), -FI_EINVAL);
	MISUSE(fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, NULL,
			 sizeof(size_t)),
	       -FI_EINVAL);
	MISUSE(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, buf,
			 NULL),
	       -FI_EINVAL);
	len = 1;
	MISUSE(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, buf,
			 &len),
	       -FI_ETOOSMALL);
	MISUSE(fi_getname(&ep->fid, NULL, NULL), -FI_EINVAL);
	MISUSE(fi_setname(&ep->fid, NULL, 0), -FI_EINVAL);
	MISUSE(fi_setname(&ep->fid, buf, 3), -FI_EINVAL);
	/* Connection-oriented and scalable calls of an RDM endpoint. */
	MISUSE(fi_connect(ep, buf, NULL, 0), -FI_ENOSYS);
	MISUSE(fi_accept(ep, NULL, 0), -FI_ENOSYS);
	MISUSE(fi_shutdown(ep, 0), -FI_ENOSYS);
	len = sizeof(buf);
	MISUSE(fi_getpeer(ep, buf, &len), -FI_ENOSYS);
	MISUSE(ep->ops->rx_size_left(ep), -FI_ENOSYS); /* deprecated call */
	MISUSE(fi_tx_context(ep, 0, NULL, &ep, NULL), -FI_ENOSYS);
	/* Enabling needs an AV. */
	MISUSE(fi_enable(ep), -FI_ENOAV);
	MISUSE(fi_close(&cntr->fid), -FI_EBUSY);
	MISUSE(fi_close(&ep->fid), 0);
	/* A closed endpoint answers every call with -FI_EINVAL. */
	MISUSE(fi_close(&ep->fid), -FI_EINVAL);
	MISUSE(fi_enable(ep), -FI_EINVAL);
	MISUSE(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT), -FI_EINVAL);
	MISUSE(fi_send(ep, buf, 8, NULL, 0, NULL), -FI_EINVAL);
	MISUSE(fi_recv(ep, buf, 8, NULL, 0, NULL), -FI_EINVAL);
	MISUSE(fi_tinject(ep, buf, 8, 0, 1), -FI_EINVAL);
	MISUSE(fi_write(ep, buf, 8, NULL, 0, 0, 1, NULL), -FI_EINVAL);
	MISUSE(fi_cancel(&ep->fid, buf), -FI_EINVAL);
	MISUSE(fi_getname(&ep->fid, buf, &len), -FI_EINVAL);
	MISUSE(fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &len,
			 sizeof(len)),
	       -FI_EINVAL);
	MISUSE(fi_close(&cntr->fid), 0);
	MISUSE(fi_close(&cq->fid), 0);
	test_domain_close(&other);
}
