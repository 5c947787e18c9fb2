/* SPDX-License-Identifier: BSD-2-Clause */
/* Every object opened and closed in every supported mode, over rxe. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_ext_gdrfab.h>

#include "vm_helpers.h"

TestSuite(objects, .init = vm_rxe0_open, .fini = vm_rxe0_close);

Test(objects, both_domains_open_at_once)
{
	struct test_domain t1;

	test_domain_open(&t1, "rxe1");
	test_domain_close(&t1);
}

Test(objects, cq_in_every_format_and_wait_object)
{
	static const enum fi_cq_format formats[] = {
		FI_CQ_FORMAT_UNSPEC, FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG,
		FI_CQ_FORMAT_DATA, FI_CQ_FORMAT_TAGGED};
	static const enum fi_wait_obj waits[] = {FI_WAIT_NONE, FI_WAIT_UNSPEC,
						 FI_WAIT_FD, FI_WAIT_YIELD};

	for (size_t f = 0; f < 5; f++) {
		for (size_t w = 0; w < 4; w++) {
			struct fi_cq_attr attr = {.format = formats[f],
						  .wait_obj = waits[w],
						  .size = 16};
			struct fid_cq *cq;
			struct fi_cq_tagged_entry e;
			int fd = -1, ret;

			cr_assert_eq(
				fi_cq_open(vm_rxe0.domain, &attr, &cq, NULL),
				0);
			cr_assert_eq(fi_cq_read(cq, &e, 1), -FI_EAGAIN);
			ret = fi_control(&cq->fid, FI_GETWAIT, &fd);
			if (waits[w] == FI_WAIT_FD ||
			    waits[w] == FI_WAIT_UNSPEC) {
				cr_assert_eq(ret, 0);
				cr_assert_geq(fd, 0);
				cr_assert_eq(fi_cq_sread(cq, &e, 1, NULL, 5),
					     -FI_EAGAIN);
			}
			cr_assert_eq(fi_close(&cq->fid), 0);
		}
	}
}

Test(objects, cq_sread_and_trywait_through_the_fabric)
{
	struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_CONTEXT,
				  .wait_obj = FI_WAIT_FD};
	struct fid_cq *cq;
	struct fid *fids[1];
	struct pollfd pfd = {.events = POLLIN};

	cr_assert_eq(fi_cq_open(vm_rxe0.domain, &attr, &cq, NULL), 0);
	fids[0] = &cq->fid;
	cr_assert_eq(fi_trywait(vm_rxe0.fabric, fids, 1), 0);
	cr_assert_eq(fi_control(&cq->fid, FI_GETWAIT, &pfd.fd), 0);
	cr_assert_eq(poll(&pfd, 1, 10), 0);
	cr_assert_eq(fi_cq_signal(cq), 0);
	cr_assert_eq(poll(&pfd, 1, 10), 1, "signal wakes the fd");
	cr_assert_eq(fi_close(&cq->fid), 0);
}

Test(objects, eq_write_read_peek_and_errors)
{
	struct fi_eq_attr attr = {.wait_obj = FI_WAIT_FD};
	struct fid_eq *eq;
	uint32_t event = 0;
	char buf[64];

	cr_assert_eq(fi_eq_open(vm_rxe0.fabric, &attr, &eq, NULL), 0);
	cr_assert_eq(fi_eq_read(eq, &event, buf, sizeof(buf), 0), -FI_EAGAIN);
	cr_assert_eq(fi_eq_sread(eq, &event, buf, sizeof(buf), 10, 0),
		     -FI_EAGAIN);
	cr_assert_eq(fi_eq_write(eq, FI_NOTIFY, "hello", 6, 0), 6);
	cr_assert_eq(fi_eq_read(eq, &event, buf, 3, 0), -FI_ETOOSMALL);
	cr_assert_eq(fi_eq_read(eq, &event, buf, sizeof(buf), FI_PEEK), 6);
	cr_assert_eq(fi_eq_sread(eq, &event, buf, sizeof(buf), 1000, 0), 6);
	cr_assert_eq(event, FI_NOTIFY);
	cr_assert_str_eq(buf, "hello");
	cr_assert_eq(fi_eq_read(eq, &event, buf, sizeof(buf), 0), -FI_EAGAIN);
	cr_assert_str_eq(fi_eq_strerror(eq, 1, NULL, buf, sizeof(buf)),
			 "local length error");
	cr_assert_eq(fi_close(&eq->fid), 0);

	attr.wait_obj = FI_WAIT_NONE;
	cr_assert_eq(fi_eq_open(vm_rxe0.fabric, &attr, &eq, NULL), 0);
	cr_assert_eq(fi_eq_sread(eq, &event, buf, sizeof(buf), 10, 0),
		     -FI_ENOSYS);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(objects, counters_count_and_wait)
{
	static const enum fi_wait_obj waits[] = {FI_WAIT_UNSPEC, FI_WAIT_FD,
						 FI_WAIT_YIELD, FI_WAIT_NONE};

	for (size_t w = 0; w < 4; w++) {
		struct fi_cntr_attr attr = {.events = FI_CNTR_EVENTS_COMP,
					    .wait_obj = waits[w]};
		struct fid_cntr *cntr;

		cr_assert_eq(fi_cntr_open(vm_rxe0.domain, &attr, &cntr, NULL),
			     0);
		cr_assert_eq(fi_cntr_read(cntr), 0);
		cr_assert_eq(fi_cntr_add(cntr, 5), 0);
		cr_assert_eq(fi_cntr_read(cntr), 5);
		cr_assert_eq(fi_cntr_set(cntr, 2), 0);
		cr_assert_eq(fi_cntr_read(cntr), 2);
		cr_assert_eq(fi_cntr_adderr(cntr, 3), 0);
		cr_assert_eq(fi_cntr_readerr(cntr), 3);
		cr_assert_eq(fi_cntr_seterr(cntr, 0), 0);
		cr_assert_eq(fi_cntr_readerr(cntr), 0);
		if (waits[w] != FI_WAIT_NONE) {
			cr_assert_eq(fi_cntr_wait(cntr, 2, 100), 0);
			cr_assert_eq(fi_cntr_wait(cntr, 3, 10), -FI_ETIMEDOUT);
		} else {
			cr_assert_eq(fi_cntr_wait(cntr, 2, 10), -FI_EINVAL);
		}
		cr_assert_eq(fi_close(&cntr->fid), 0);
	}
	{
		struct fid_cntr *cntr;

		cr_assert_eq(fi_cntr_open(vm_rxe0.domain, NULL, &cntr, NULL), 0,
			     "NULL attr means defaults");
		cr_assert_eq(fi_close(&cntr->fid), 0);
	}
}

Test(objects, host_memory_registration)
{
	static const uint64_t accesses[] = {0,
					    FI_SEND,
					    FI_RECV,
					    FI_READ | FI_WRITE,
					    FI_REMOTE_READ,
					    FI_REMOTE_WRITE,
					    FI_SEND | FI_RECV | FI_READ |
						    FI_WRITE | FI_REMOTE_READ |
						    FI_REMOTE_WRITE};
	static char buf[1 << 16];
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};

	for (size_t i = 0; i < sizeof(accesses) / sizeof(accesses[0]); i++) {
		struct fid_mr *mr, *mr2, *mr3;
		struct fi_mr_attr attr = {.mr_iov = &iov,
					  .iov_count = 1,
					  .access = accesses[i],
					  .iface = FI_HMEM_SYSTEM};

		cr_assert_eq(fi_mr_reg(vm_rxe0.domain, buf, sizeof(buf),
				       accesses[i], 0, 0, 0, &mr, NULL),
			     0);
		cr_assert_neq(fi_mr_key(mr), FI_KEY_NOTAVAIL);
		cr_assert_not_null(fi_mr_desc(mr));
		cr_assert_eq(fi_mr_regv(vm_rxe0.domain, &iov, 1, accesses[i], 0,
					0, 0, &mr2, NULL),
			     0);
		cr_assert_eq(fi_mr_regattr(vm_rxe0.domain, &attr, 0, &mr3), 0);
		/* rxe gives MRs without remote access the rkey 0. */
		if (accesses[i] & (FI_REMOTE_READ | FI_REMOTE_WRITE))
			cr_assert_neq(fi_mr_key(mr), fi_mr_key(mr2));
		cr_assert_eq(fi_close(&mr3->fid), 0);
		cr_assert_eq(fi_close(&mr2->fid), 0);
		cr_assert_eq(fi_close(&mr->fid), 0);
	}
}

Test(objects, av_table_and_map)
{
	static const enum fi_av_type types[] = {FI_AV_UNSPEC, FI_AV_TABLE,
						FI_AV_MAP};

	for (size_t i = 0; i < 3; i++) {
		struct test_ep a, b;
		char name_a[64], name_b[64], back[64], text[128];
		size_t la = sizeof(name_a), lb = sizeof(name_b);
		size_t lback = sizeof(back), ltext = sizeof(text);
		fi_addr_t fa[3];

		test_ep_open(&vm_rxe0, &a, types[i]);
		test_ep_open(&vm_rxe0, &b, types[i]);
		cr_assert_eq(fi_getname(&a.ep->fid, name_a, &la), 0);
		cr_assert_eq(fi_getname(&b.ep->fid, name_b, &lb), 0);
		cr_assert_eq(la, FI_GDRFAB_ADDR_LEN);
		cr_assert_neq(memcmp(name_a, name_b, la), 0,
			      "two endpoints, two names");
		cr_assert_eq(fi_av_insert(a.av, name_a, 1, &fa[0], 0, NULL), 1);
		cr_assert_eq(fi_av_insert(a.av, name_b, 1, &fa[1], 0, NULL), 1);
		cr_assert_eq(fi_av_insert(a.av, name_b, 1, &fa[2], 0, NULL), 1);
		if (types[i] == FI_AV_MAP) {
			cr_assert_eq(fa[2], fa[1], "map: same name, same addr");
		} else {
			cr_assert_eq(fa[0], 0);
			cr_assert_eq(fa[1], 1);
			cr_assert_eq(fa[2], 2, "table: insertion order");
		}
		cr_assert_eq(fi_av_lookup(a.av, fa[1], back, &lback), 0);
		cr_assert_eq(lback, FI_GDRFAB_ADDR_LEN);
		cr_assert_eq(memcmp(back, name_b, lback), 0);
		fi_av_straddr(a.av, name_a, text, &ltext);
		cr_assert_eq(
			strncmp(text, "gdrfab://::ffff:192.0.2.1/lid=0/", 32),
			0, "%s", text);
		cr_assert_eq(ltext, strlen(text) + 1);
		cr_assert_eq(fi_av_remove(a.av, &fa[1], 1, 0), 0);
		cr_assert_eq(fi_av_remove(a.av, &fa[2], 1, 0), 0);
		cr_assert_eq(fi_av_lookup(a.av, fa[1], back, &lback),
			     -FI_EINVAL, "removed");
		test_ep_close(&b);
		test_ep_close(&a);
	}
}

Test(objects, endpoint_name_is_the_port_plus_a_queue_pair)
{
	struct test_ep e;
	uint8_t name[FI_GDRFAB_ADDR_LEN];
	size_t len = sizeof(name);
	uint32_t qpn;

	test_ep_open(&vm_rxe0, &e, FI_AV_TABLE);
	cr_assert_eq(fi_getname(&e.ep->fid, name, &len), 0);
	cr_assert_eq(
		memcmp(name + 8, (uint8_t *)vm_rxe0.info->src_addr + 8, 16), 0,
		"GID of the port");
	memcpy(&qpn, name + 4, 4);
	cr_assert_neq(ntohl(qpn), 0, "UD queue pair number");
	len = 4;
	cr_assert_eq(fi_getname(&e.ep->fid, name, &len), -FI_ETOOSMALL);
	cr_assert_eq(len, FI_GDRFAB_ADDR_LEN);
	test_ep_close(&e);
}

Test(objects, setname_before_enable_keeps_the_chosen_id)
{
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT};
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	uint8_t want[FI_GDRFAB_ADDR_LEN], got[FI_GDRFAB_ADDR_LEN];
	size_t len = sizeof(got);

	memcpy(want, vm_rxe0.info->src_addr, sizeof(want));
	want[24] = 0xab; /* ep_id */
	cr_assert_eq(fi_av_open(vm_rxe0.domain, &av_attr, &av, NULL), 0);
	cr_assert_eq(fi_cq_open(vm_rxe0.domain, &cq_attr, &cq, NULL), 0);
	cr_assert_eq(fi_endpoint(vm_rxe0.domain, vm_rxe0.info, &ep, NULL), 0);
	cr_assert_eq(fi_setname(&ep->fid, want, sizeof(want)), 0);
	cr_assert_eq(fi_ep_bind(ep, &av->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT), 0);
	cr_assert_eq(fi_ep_bind(ep, &cq->fid, FI_RECV), 0);
	cr_assert_eq(fi_enable(ep), 0);
	cr_assert_eq(fi_getname(&ep->fid, got, &len), 0);
	cr_assert_eq(got[24], 0xab);
	cr_assert_eq(fi_setname(&ep->fid, want, sizeof(want)), -FI_EOPBADSTATE);
	cr_assert_eq(fi_close(&ep->fid), 0);
	cr_assert_eq(fi_close(&cq->fid), 0);
	cr_assert_eq(fi_close(&av->fid), 0);
}

Test(objects, endpoint_with_counters_eq_and_options)
{
	struct fi_av_attr av_attr = {.type = FI_AV_MAP};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA};
	struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_NONE};
	struct fid_av *av;
	struct fid_cq *txcq, *rxcq;
	struct fid_cntr *cntr;
	struct fid_eq *eq;
	struct fid_ep *ep;
	size_t min = 0, len = sizeof(min);
	uint64_t flags;

	cr_assert_eq(fi_av_open(vm_rxe0.domain, &av_attr, &av, NULL), 0);
	cr_assert_eq(fi_cq_open(vm_rxe0.domain, &cq_attr, &txcq, NULL), 0);
	cr_assert_eq(fi_cq_open(vm_rxe0.domain, &cq_attr, &rxcq, NULL), 0);
	cr_assert_eq(fi_cntr_open(vm_rxe0.domain, NULL, &cntr, NULL), 0);
	cr_assert_eq(fi_eq_open(vm_rxe0.fabric, &eq_attr, &eq, NULL), 0);
	cr_assert_eq(fi_endpoint(vm_rxe0.domain, vm_rxe0.info, &ep, NULL), 0);
	cr_assert_eq(fi_ep_bind(ep, &av->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(ep, &txcq->fid,
				FI_TRANSMIT | FI_SELECTIVE_COMPLETION),
		     0);
	cr_assert_eq(fi_ep_bind(ep, &rxcq->fid, FI_RECV), 0);
	cr_assert_eq(fi_ep_bind(ep, &cntr->fid,
				FI_SEND | FI_RECV | FI_READ | FI_WRITE),
		     0);
	cr_assert_eq(fi_ep_bind(ep, &eq->fid, 0), 0);
	cr_assert_eq(fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
			       &(size_t){4096}, sizeof(size_t)),
		     0);
	cr_assert_eq(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
			       &min, &len),
		     0);
	cr_assert_eq(min, 4096);
	flags = FI_TRANSMIT | FI_COMPLETION;
	cr_assert_eq(fi_control(&ep->fid, FI_SETOPSFLAG, &flags), 0);
	flags = FI_TRANSMIT;
	cr_assert_eq(fi_control(&ep->fid, FI_GETOPSFLAG, &flags), 0);
	cr_assert(flags & FI_COMPLETION);
	cr_assert_eq(fi_enable(ep), 0);
	/* Objects in use cannot be closed under the endpoint. */
	cr_assert_eq(fi_close(&txcq->fid), -FI_EBUSY);
	cr_assert_eq(fi_close(&cntr->fid), -FI_EBUSY);
	cr_assert_eq(fi_close(&av->fid), -FI_EBUSY);
	cr_assert_eq(fi_close(&eq->fid), -FI_EBUSY);
	cr_assert_eq(fi_close(&vm_rxe0.domain->fid), -FI_EBUSY);
	cr_assert_eq(fi_close(&vm_rxe0.fabric->fid), -FI_EBUSY);
	cr_assert_eq(fi_close(&ep->fid), 0);
	cr_assert_eq(fi_close(&eq->fid), 0);
	cr_assert_eq(fi_close(&cntr->fid), 0);
	cr_assert_eq(fi_close(&rxcq->fid), 0);
	cr_assert_eq(fi_close(&txcq->fid), 0);
	cr_assert_eq(fi_close(&av->fid), 0);
}

Test(objects, many_endpoints_open_and_close)
{
	struct test_ep eps[16];

	for (int i = 0; i < 16; i++)
		test_ep_open(&vm_rxe0, &eps[i], FI_AV_TABLE);
	for (int i = 15; i >= 0; i--)
		test_ep_close(&eps[i]);
}
