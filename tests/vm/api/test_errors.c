/* SPDX-License-Identifier: BSD-2-Clause */
/* Bad arguments get the documented -FI_E* code, never a crash. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <rdma/fi_ext_gdrfab.h>

#include "vm_helpers.h"

TestSuite(errors, .init = vm_rxe0_open, .fini = vm_rxe0_close);

Test(errors, fabric_and_domain_need_real_names)
{
	struct fi_fabric_attr attr = *vm_rxe0.info->fabric_attr;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fi_info *info;

	attr.name = "RoCE-198.51.100.0/24";
	cr_assert_eq(fi_fabric(&attr, &fabric, NULL), -FI_ENODATA);
	info = fi_dupinfo(vm_rxe0.info);
	free(info->domain_attr->name);
	info->domain_attr->name = strdup("rxe9");
	cr_assert_eq(fi_domain(vm_rxe0.fabric, info, &domain, NULL),
		     -FI_ENODEV);
	free(info->src_addr);
	info->src_addr = NULL;
	info->src_addrlen = 0;
	free(info->fabric_attr->name);
	info->fabric_attr->name = strdup("IB-0x1");
	cr_assert_eq(fi_domain(vm_rxe0.fabric, info, &domain, NULL),
		     -FI_EINVAL);
	fi_freeinfo(info);
}

Test(errors, object_attributes)
{
	struct fi_cq_attr cq_attr = {.format = (enum fi_cq_format)42};
	struct fi_av_attr av_attr = {.type = (enum fi_av_type)9};
	struct fi_cntr_attr cntr_attr = {.events = FI_CNTR_EVENTS_COMP,
					 .wait_obj = FI_WAIT_SET};
	struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_MUTEX_COND};
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_cntr *cntr;
	struct fid_eq *eq;

	cr_assert_eq(fi_cq_open(vm_rxe0.domain, &cq_attr, &cq, NULL),
		     -FI_EINVAL);
	cr_assert_eq(fi_cq_open(vm_rxe0.domain, NULL, &cq, NULL), -FI_EINVAL);
	cr_assert_eq(fi_av_open(vm_rxe0.domain, &av_attr, &av, NULL),
		     -FI_EINVAL);
	av_attr.type = FI_AV_TABLE;
	av_attr.rx_ctx_bits = 2;
	cr_assert_eq(fi_av_open(vm_rxe0.domain, &av_attr, &av, NULL),
		     -FI_ENOSYS);
	av_attr.rx_ctx_bits = 0;
	av_attr.name = "shared";
	cr_assert_eq(fi_av_open(vm_rxe0.domain, &av_attr, &av, NULL),
		     -FI_ENOSYS);
	av_attr.name = NULL;
	av_attr.flags = FI_EVENT;
	cr_assert_eq(fi_av_open(vm_rxe0.domain, &av_attr, &av, NULL),
		     -FI_ENOSYS);
	cr_assert_eq(fi_cntr_open(vm_rxe0.domain, &cntr_attr, &cntr, NULL),
		     -FI_EINVAL, "FI_WAIT_SET without a wait set");
	cntr_attr.wait_obj = FI_WAIT_NONE;
	cntr_attr.flags = 1;
	cr_assert_eq(fi_cntr_open(vm_rxe0.domain, &cntr_attr, &cntr, NULL),
		     -FI_EBADFLAGS);
	cr_assert_eq(fi_eq_open(vm_rxe0.fabric, &eq_attr, &eq, NULL),
		     -FI_ENOSYS);
	cr_assert_eq(fi_eq_open(vm_rxe0.fabric, NULL, &eq, NULL), -FI_EINVAL);
}

Test(errors, unsupported_domain_objects)
{
	struct fid_ep *ep;
	struct fid_stx *stx;
	struct fid_pep *pep;

	cr_assert_eq(fi_scalable_ep(vm_rxe0.domain, vm_rxe0.info, &ep, NULL),
		     -FI_ENOSYS);
	cr_assert_eq(fi_stx_context(vm_rxe0.domain, NULL, &stx, NULL),
		     -FI_ENOSYS);
	cr_assert_eq(fi_srx_context(vm_rxe0.domain, NULL, &ep, NULL),
		     -FI_ENOSYS);
	cr_assert_eq(fi_passive_ep(vm_rxe0.fabric, vm_rxe0.info, &pep, NULL),
		     -FI_ENOSYS);
	/* Atomics are served (test_atomic.c); a NULL attr or a type they
	 * do not serve is refused, not a crash. */
	{
		struct fi_atomic_attr aattr;

		cr_assert_eq(fi_query_atomic(vm_rxe0.domain, FI_INT32, FI_SUM,
					     NULL, 0),
			     -FI_EINVAL);
		cr_assert_eq(fi_query_atomic(vm_rxe0.domain, FI_LONG_DOUBLE,
					     FI_SUM, &aattr, 0),
			     -FI_EOPNOTSUPP);
	}
}

Test(errors, memory_registration_arguments)
{
	static char buf[4096];
	struct iovec iov[2] = {{buf, 2048}, {buf + 2048, 2048}};
	struct fi_mr_attr attr = {
		.mr_iov = iov, .iov_count = 1, .iface = FI_HMEM_CUDA};
	struct fid_mr *mr;

	cr_assert_eq(fi_mr_reg(vm_rxe0.domain, buf, sizeof(buf), 1ULL << 60, 0,
			       0, 0, &mr, NULL),
		     -FI_EINVAL, "unknown access bit");
	cr_assert_eq(fi_mr_reg(vm_rxe0.domain, NULL, 64, FI_SEND, 0, 0, 0, &mr,
			       NULL),
		     -FI_EINVAL);
	cr_assert_eq(fi_mr_reg(vm_rxe0.domain, buf, sizeof(buf), FI_SEND, 0, 0,
			       FI_RMA_EVENT, &mr, NULL),
		     -FI_EBADFLAGS);
	cr_assert_eq(
		fi_mr_regv(vm_rxe0.domain, iov, 2, FI_SEND, 0, 0, 0, &mr, NULL),
		-FI_EINVAL, "mr_iov_limit is 1");
	cr_assert_eq(fi_mr_regattr(vm_rxe0.domain, &attr, 0, &mr), -FI_ENOSYS,
		     "FI_HMEM is not advertised yet");
	cr_assert_eq(fi_mr_regattr(vm_rxe0.domain, NULL, 0, &mr), -FI_EINVAL);
	/* An address range that is not mapped: verbs refuses to pin it. */
	cr_assert_lt(fi_mr_reg(vm_rxe0.domain, (void *)0x1000, 4096, FI_RECV, 0,
			       0, 0, &mr, NULL),
		     0);
}

Test(errors, av_rejects_foreign_and_malformed_names)
{
	struct fi_av_attr attr = {.type = FI_AV_TABLE};
	struct fid_av *av;
	uint8_t names[2][FI_GDRFAB_ADDR_LEN];
	fi_addr_t fa[2] = {0, 0};
	int errors[2] = {-1, -1};
	char back[FI_GDRFAB_ADDR_LEN];
	size_t len = sizeof(back);

	cr_assert_eq(fi_av_open(vm_rxe0.domain, &attr, &av, NULL), 0);
	memcpy(names[0], vm_rxe0.info->src_addr, FI_GDRFAB_ADDR_LEN);
	names[0][7] = 9; /* an endpoint's QP: a port's address is no peer */
	memcpy(names[1], names[0], FI_GDRFAB_ADDR_LEN);
	names[1][0] = 77; /* unknown format version */
	cr_assert_eq(fi_av_insert(av, names, 2, fa, FI_SYNC_ERR, errors), 1);
	cr_assert_eq(errors[0], 0);
	cr_assert_eq(errors[1], FI_EINVAL);
	cr_assert_eq(fa[1], FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_av_insert(av, NULL, 1, fa, 0, NULL), -FI_EINVAL);
	cr_assert_eq(fi_av_insert(av, names, 1, fa, FI_EVENT, NULL),
		     -FI_EBADFLAGS);
	cr_assert_eq(fi_av_insertsvc(av, NULL, "7", fa, 0, NULL), -FI_EINVAL);
	/* A port's address (qpn 0) names no endpoint. */
	memcpy(names[1], vm_rxe0.info->src_addr, FI_GDRFAB_ADDR_LEN);
	cr_assert_eq(fi_av_insert(av, names[1], 1, fa, 0, NULL), 0);
	cr_assert_eq(fi_av_lookup(av, 5, back, &len), -FI_EINVAL);
	cr_assert_eq(fi_av_remove(av, &(fi_addr_t){5}, 1, 0), -FI_EINVAL);
	cr_assert_eq(fi_close(&av->fid), 0);
}

Test(errors, endpoint_state_machine)
{
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT};
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fid_mr *mr;
	static char buf[64];
	char name[FI_GDRFAB_ADDR_LEN];
	size_t len = sizeof(name);

	cr_assert_eq(fi_av_open(vm_rxe0.domain, &av_attr, &av, NULL), 0);
	cr_assert_eq(fi_cq_open(vm_rxe0.domain, &cq_attr, &cq, NULL), 0);
	cr_assert_eq(fi_mr_reg(vm_rxe0.domain, buf, sizeof(buf), FI_SEND, 0, 0,
			       0, &mr, NULL),
		     0);
	cr_assert_eq(fi_endpoint(vm_rxe0.domain, vm_rxe0.info, &ep, NULL), 0);
	cr_assert_eq(fi_getname(&ep->fid, name, &len), -FI_EOPBADSTATE);
	cr_assert_eq(fi_enable(ep), -FI_ENOAV);
	cr_assert_eq(fi_ep_bind(ep, &av->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(ep, &av->fid, 0), -FI_EINVAL, "second AV");
	cr_assert_eq(fi_enable(ep), -FI_ENOCQ);
	cr_assert_eq(fi_ep_bind(ep, &mr->fid, 0), -FI_EINVAL, "not bindable");
	cr_assert_eq(fi_ep_bind(ep, &cq->fid, 0), -FI_EBADFLAGS);
	cr_assert_eq(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(fi_ep_bind(ep, &cq->fid, FI_RECV), -FI_EINVAL);
	cr_assert_eq(fi_enable(ep), 0);
	cr_assert_eq(fi_enable(ep), 0, "enabling twice is harmless");
	cr_assert_eq(fi_ep_bind(ep, &cq->fid, FI_RECV), -FI_EOPBADSTATE);
	cr_assert_eq(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, 12345, name, &len),
		     -FI_ENOPROTOOPT);
	cr_assert_eq(fi_setopt(&ep->fid, 99, FI_OPT_MIN_MULTI_RECV, name, 8),
		     -FI_ENOPROTOOPT);
	cr_assert_eq(fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
			       name, 3),
		     -FI_EINVAL);
	cr_assert_eq(fi_close(&ep->fid), 0);
	cr_assert_eq(fi_close(&mr->fid), 0);
	cr_assert_eq(fi_close(&cq->fid), 0);
	cr_assert_eq(fi_close(&av->fid), 0);
}

Test(errors, endpoint_info_must_fit_the_provider)
{
	struct fi_info *info = fi_dupinfo(vm_rxe0.info);
	struct fid_ep *ep;

	cr_assert_eq(fi_endpoint(vm_rxe0.domain, NULL, &ep, NULL), -FI_EINVAL);
	info->ep_attr->type = FI_EP_MSG;
	cr_assert_eq(fi_endpoint(vm_rxe0.domain, info, &ep, NULL), -FI_EINVAL);
	info->ep_attr->type = FI_EP_RDM;
	info->caps |= FI_COLLECTIVE; /* not offered */
	cr_assert_eq(fi_endpoint(vm_rxe0.domain, info, &ep, NULL), -FI_EINVAL);
	fi_freeinfo(info);
}

Test(errors, data_operations_not_offered_fail_cleanly)
{
	struct test_ep e;
	static char buf[64];
	fi_addr_t dest = 0;

	test_ep_open(&vm_rxe0, &e, FI_AV_TABLE);
	if (!(vm_rxe0.info->caps & FI_MSG)) {
		cr_assert_eq(fi_send(e.ep, buf, 8, NULL, dest, NULL),
			     -FI_ENOSYS);
		cr_assert_eq(fi_recv(e.ep, buf, 8, NULL, dest, NULL),
			     -FI_ENOSYS);
		cr_assert_eq(fi_inject(e.ep, buf, 8, dest), -FI_ENOSYS);
	}
	if (!(vm_rxe0.info->caps & FI_TAGGED)) {
		cr_assert_eq(fi_tsend(e.ep, buf, 8, NULL, dest, 1, NULL),
			     -FI_ENOSYS);
		cr_assert_eq(fi_trecv(e.ep, buf, 8, NULL, dest, 1, 0, NULL),
			     -FI_ENOSYS);
	}
	if (!(vm_rxe0.info->caps & FI_RMA)) {
		cr_assert_eq(fi_read(e.ep, buf, 8, NULL, dest, 0, 0, NULL),
			     -FI_ENOSYS);
		cr_assert_eq(fi_write(e.ep, buf, 8, NULL, dest, 0, 0, NULL),
			     -FI_ENOSYS);
	}
	/* Atomics are served (test_atomic.c), but not on every datatype. */
	cr_assert_eq(fi_atomic(e.ep, buf, 1, NULL, dest, 0, 0,
			       FI_LONG_DOUBLE_COMPLEX, FI_SUM, NULL),
		     -FI_EOPNOTSUPP);
	cr_assert_eq(fi_barrier(e.ep, 0, NULL), -FI_ENOSYS);
	cr_assert_eq(fi_cancel(&e.ep->fid, buf), -FI_ENOENT);
	test_ep_close(&e);
}

/* tostr, as fi_tostr(fid, FI_TYPE_FID) calls it: appended to what the
 * buffer holds, starting with want. */
static void expect_tostr(struct fid *fid, const char *want)
{
	char text[128] = "fid: ";

	cr_assert_eq(fid->ops->tostr(fid, text, sizeof(text) - strlen(text)),
		     0);
	cr_assert_eq(strncmp(text + 5, want, strlen(want)), 0,
		     "\"%s\" does not start \"fid: %s\"", text, want);
	cr_assert_str_eq(fi_tostr(fid, FI_TYPE_FID), text + 5);
}

/* Every ops table entry is a function: the generic calls an object does
 * not implement answer -FI_ENOSYS (with a log line), never jump to 0;
 * every object prints what it is. */
Test(errors, every_object_answers_every_generic_call)
{
	struct test_ep e;
	struct fid_cntr *cntr;
	struct fid_eq *eq;
	struct fid_mr *mr;
	struct fi_cntr_attr cntr_attr = {.events = FI_CNTR_EVENTS_COMP};
	struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_NONE};
	static char buf[64];
	void *ops;

	test_ep_open(&vm_rxe0, &e, FI_AV_TABLE);
	cr_assert_eq(fi_cntr_open(vm_rxe0.domain, &cntr_attr, &cntr, NULL), 0);
	cr_assert_eq(fi_eq_open(vm_rxe0.fabric, &eq_attr, &eq, NULL), 0);
	cr_assert_eq(fi_mr_reg(vm_rxe0.domain, buf, sizeof(buf), FI_SEND, 0, 0,
			       0, &mr, NULL),
		     0);
	struct fid *fids[] = {&vm_rxe0.fabric->fid,
			      &vm_rxe0.domain->fid,
			      &e.av->fid,
			      &e.cq->fid,
			      &cntr->fid,
			      &eq->fid,
			      &e.ep->fid,
			      &mr->fid,
			      &vm_rxe0.info->nic->fid};
	/* What each prints (issue 33): its class, and its NIC. */
	const char *names[] = {"gdrfab fabric ",
			       "gdrfab domain rxe0 port ",
			       "gdrfab address vector on rxe0 (table)",
			       "gdrfab completion queue on rxe0",
			       "gdrfab counter on rxe0 (value 0, errors 0)",
			       "gdrfab event queue",
			       "gdrfab endpoint on rxe0 (enabled)",
			       "gdrfab memory region on rxe0 (host, 64 bytes)",
			       NULL};
	for (size_t i = 0; i < sizeof(fids) / sizeof(fids[0]); i++) {
		cr_assert_eq(fi_open_ops(fids[i], "no-such-ops", 0, &ops, NULL),
			     -FI_ENOSYS, "fid %zu", i);
		cr_assert_lt(fi_control(fids[i], 0x7fff, NULL), 0, "fid %zu",
			     i);
		if (fids[i]->fclass != FI_CLASS_NIC) /* fi_info's layout */
			expect_tostr(fids[i], names[i]);
		cr_assert_eq(fi_set_ops(fids[i], "no-such-ops", 0, buf, NULL),
			     -FI_ENOSYS, "fid %zu", i);
	}
	cr_assert_eq(e.cq->fid.ops->bind(&e.cq->fid, &e.av->fid, 0),
		     -FI_ENOSYS);
	cr_assert_eq(vm_rxe0.fabric->fid.ops->bind(&vm_rxe0.fabric->fid,
						   &e.av->fid, 0),
		     -FI_ENOSYS);
	cr_assert_eq(fi_mr_unmap_key(vm_rxe0.domain, 1), -FI_ENOSYS);
	/* The calls that crashed with logging on (issue 33), which the suite
	 * also runs with FI_LOG_LEVEL=debug (tests/vm/vm-suites.sh). */
	int fd;
	cr_assert_eq(fi_control(&e.av->fid, FI_GETWAIT, &fd), -FI_ENOSYS);
	cr_assert_eq(fi_control(&vm_rxe0.fabric->fid, FI_GETWAIT, &fd),
		     -FI_ENOSYS);
	cr_assert_eq(fi_mr_unmap_key(vm_rxe0.domain, 1234), -FI_ENOSYS);
	/* The "2" variants take no flags gdrfab knows; without, they work. */
	struct fid_domain *d2;
	struct fid_ep *ep2;
	cr_assert_eq(
		fi_domain2(vm_rxe0.fabric, vm_rxe0.info, &d2, 1ULL << 60, NULL),
		-FI_EBADFLAGS);
	cr_assert_eq(fi_endpoint2(vm_rxe0.domain, vm_rxe0.info, &ep2,
				  1ULL << 60, NULL),
		     -FI_EBADFLAGS);
	cr_assert_eq(fi_domain2(vm_rxe0.fabric, vm_rxe0.info, &d2, 0, NULL), 0);
	fi_close(&d2->fid);
	fi_close(&mr->fid);
	fi_close(&eq->fid);
	fi_close(&cntr->fid);
	test_ep_close(&e);
}
