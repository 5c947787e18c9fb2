/* SPDX-License-Identifier: BSD-2-Clause */
/* The quarantine of closed objects: a retired fid keeps answering
 * -FI_EINVAL through every ops table, and its memory is freed only once
 * GDRFAB_QUARANTINE_LEN newer ones were retired (or at unload). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "gdrfab_quarantine.h"

/* A bare endpoint fid, as gdrfab's objects begin with one. */
static struct fid_ep *new_ep(void)
{
	struct fid_ep *ep = calloc(1, sizeof(*ep));

	cr_assert_not_null(ep);
	ep->fid.fclass = FI_CLASS_EP;
	return ep;
}

Test(quarantine, a_retired_endpoint_refuses_every_call)
{
	struct fid_ep *ep = new_ep();
	char buf[8];
	size_t len = sizeof(buf);

	cr_assert_not(gdrfab_fid_dead(&ep->fid));
	gdrfab_fid_retire(&ep->fid, ep);
	cr_assert(gdrfab_fid_dead(&ep->fid));
	cr_assert_eq(fi_close(&ep->fid), -FI_EINVAL);
	cr_assert_eq(fi_enable(ep), -FI_EINVAL);
	cr_assert_eq(fi_send(ep, buf, 1, NULL, 0, NULL), -FI_EINVAL);
	cr_assert_eq(fi_trecv(ep, buf, 1, NULL, 0, 0, 0, NULL), -FI_EINVAL);
	cr_assert_eq(fi_inject_write(ep, buf, 1, 0, 0, 0), -FI_EINVAL);
	cr_assert_eq(fi_getname(&ep->fid, buf, &len), -FI_EINVAL);
	cr_assert_eq(fi_cancel(&ep->fid, NULL), -FI_EINVAL);
	cr_assert(!gdrfab_fid_dead(NULL));
	gdrfab_quarantine_fini();
}

Test(quarantine, a_retired_cq_counter_and_eq_refuse_reads)
{
	struct fid_cq *cq = calloc(1, sizeof(*cq));
	struct fid_cntr *cntr = calloc(1, sizeof(*cntr));
	struct fid_eq *eq = calloc(1, sizeof(*eq));
	uint32_t event;
	char buf[64];

	cq->fid.fclass = FI_CLASS_CQ;
	cntr->fid.fclass = FI_CLASS_CNTR;
	eq->fid.fclass = FI_CLASS_EQ;
	gdrfab_fid_retire(&cq->fid, cq);
	gdrfab_fid_retire(&cntr->fid, cntr);
	gdrfab_fid_retire(&eq->fid, eq);
	cr_assert_eq(fi_cq_read(cq, buf, 1), -FI_EINVAL);
	cr_assert_eq(fi_cq_signal(cq), -FI_EINVAL);
	cr_assert_not_null(fi_cq_strerror(cq, 0, NULL, buf, sizeof(buf)));
	cr_assert_eq(fi_cntr_read(cntr), 0);
	cr_assert_eq(fi_cntr_add(cntr, 1), -FI_EINVAL);
	cr_assert_eq(fi_eq_read(eq, &event, buf, sizeof(buf), 0), -FI_EINVAL);
	gdrfab_quarantine_fini();
}

/* The FIFO is bounded: the oldest object is freed by the retirement that
 * pushes it out (LeakSanitizer, and valgrind in the VM, would see a leak
 * otherwise), and the rest at unload. */
Test(quarantine, is_bounded_and_emptied_at_unload)
{
	for (int i = 0; i < 3 * GDRFAB_QUARANTINE_LEN; i++) {
		struct fid_ep *ep = new_ep();

		gdrfab_fid_retire(&ep->fid, ep);
		cr_assert(gdrfab_fid_dead(&ep->fid));
	}
	gdrfab_quarantine_fini();
	gdrfab_quarantine_fini(); /* twice is harmless */
}
