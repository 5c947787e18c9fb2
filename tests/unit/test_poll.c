/* SPDX-License-Identifier: BSD-2-Clause */
/* Poll sets and wait sets over CQs and counters (no endpoints: entries
 * and counts are written as the data path would). */
#include <criterion/criterion.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include "gdrfab.h"
#include "gdrfab_objs.h"

static struct fi_ops dummy_ops = {.size = sizeof(struct fi_ops)};
static struct gdrfab_domain domain, other;
static struct gdrfab_fabric fabric;
static struct fid_cq *cq;
static struct fid_cntr *cntr;
static struct fid_poll *ps;
static int cq_ctx, cntr_ctx;

static void fake(struct gdrfab_domain *d)
{
	memset(d, 0, sizeof(*d));
	d->fabric = &fabric;
	d->fid.fid.fclass = FI_CLASS_DOMAIN;
	d->fid.fid.ops = &dummy_ops;
	atomic_init(&d->ref, 0);
}

static void setup(void)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT};
	struct fi_cntr_attr cntr_attr = {.events = FI_CNTR_EVENTS_COMP};

	memset(&fabric, 0, sizeof(fabric));
	fabric.fid.fid.fclass = FI_CLASS_FABRIC;
	fabric.fid.fid.ops = &dummy_ops;
	fabric.fid.api_version = FI_VERSION(1, 17);
	atomic_init(&fabric.ref, 0);
	fake(&domain);
	fake(&other);
	cr_assert_eq(gdrfab_cq_open(&domain.fid, &cq_attr, &cq, &cq_ctx), 0);
	cr_assert_eq(
		gdrfab_cntr_open(&domain.fid, &cntr_attr, &cntr, &cntr_ctx), 0);
	cr_assert_eq(gdrfab_poll_open(&domain.fid, NULL, &ps), 0);
}

static void teardown(void)
{
	if (ps)
		cr_assert_eq(fi_close(&ps->fid), 0);
	cr_assert_eq(fi_close(&cntr->fid), 0);
	cr_assert_eq(fi_close(&cq->fid), 0);
	cr_assert_eq(atomic_load(&domain.ref), 0);
}

TestSuite(poll, .init = setup, .fini = teardown, .timeout = 30);

static void complete(int n)
{
	struct fi_cq_tagged_entry e = {.flags = FI_SEND};

	for (int i = 0; i < n; i++)
		cr_assert_eq(gdrfab_cq_write(gdrfab_container_of(
						     cq, struct gdrfab_cq, fid),
					     &e, FI_ADDR_NOTAVAIL),
			     0);
}

/* fabtests' functional/poll.c: CQs and counters in one set, the CQ's or
 * counter's context returned while it has something new. */
Test(poll, reports_what_has_events)
{
	void *ctx[4];
	struct fi_cq_entry out;

	cr_assert_eq(fi_poll_add(ps, &cq->fid, 0), 0);
	cr_assert_eq(fi_poll_add(ps, &cntr->fid, 0), 0);
	cr_assert_eq(fi_poll(ps, ctx, 4), 0, "nothing yet");
	complete(2);
	cr_assert_eq(fi_poll(ps, ctx, 4), 1);
	cr_assert_eq(ctx[0], &cq_ctx);
	cr_assert_eq(fi_poll(ps, ctx, 4), 1, "the CQ still holds entries");
	cr_assert_eq(fi_cq_read(cq, &out, 1), 1);
	cr_assert_eq(fi_cq_read(cq, &out, 1), 1);
	cr_assert_eq(fi_poll(ps, ctx, 4), 0, "drained");
	cr_assert_eq(fi_cntr_add(cntr, 1), 0);
	cr_assert_eq(fi_poll(ps, ctx, 4), 1);
	cr_assert_eq(ctx[0], &cntr_ctx);
	cr_assert_eq(fi_poll(ps, ctx, 4), 0, "a count is reported once");
	cr_assert_eq(fi_cntr_adderr(cntr, 1), 0);
	complete(1);
	cr_assert_eq(fi_poll(ps, ctx, 4), 2, "errors count too");
	cr_assert_eq(fi_poll(ps, ctx, 1), 1, "no more than asked");
	cr_assert_eq(fi_cq_read(cq, &out, 1), 1);
	cr_assert_eq(fi_poll_del(ps, &cq->fid, 0), 0);
	cr_assert_eq(fi_poll_del(ps, &cntr->fid, 0), 0);
}

Test(poll, membership_rules)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT};
	struct fid_cq *foreign;
	void *ctx[1];

	cr_assert_eq(fi_poll_add(ps, &cq->fid, 0), 0);
	cr_assert_eq(fi_poll_add(ps, &cq->fid, 0), -FI_EALREADY);
	cr_assert_eq(fi_close(&cq->fid), -FI_EBUSY, "held by the set");
	cr_assert_eq(fi_poll_add(ps, &cntr->fid, 1), -FI_EBADFLAGS);
	cr_assert_eq(fi_poll_add(ps, NULL, 0), -FI_EINVAL);
	cr_assert_eq(fi_poll_add(ps, &domain.fid.fid, 0), -FI_EINVAL);
	cr_assert_eq(gdrfab_cq_open(&other.fid, &cq_attr, &foreign, NULL), 0);
	cr_assert_eq(fi_poll_add(ps, &foreign->fid, 0), -FI_EINVAL,
		     "another domain's CQ");
	cr_assert_eq(fi_close(&foreign->fid), 0);
	cr_assert_eq(fi_poll_del(ps, &cntr->fid, 0), -FI_ENOENT);
	cr_assert_eq(fi_poll(ps, ctx, -1), -FI_EINVAL);
	cr_assert_eq(fi_poll(ps, NULL, 1), -FI_EINVAL);
	/* Closing the set lets go of its members. */
	cr_assert_eq(fi_close(&ps->fid), 0);
	ps = NULL;
}

static void *add_later(void *arg)
{
	usleep(50000);
	fi_cntr_add(arg, 3);
	return NULL;
}

/* A wait set over a CQ and a counter: fi_wait returns once either has
 * something, times out otherwise; FI_GETWAIT gives a pollable fd. */
Test(poll, wait_sets)
{
	struct fi_wait_attr wattr = {.wait_obj = FI_WAIT_UNSPEC};
	struct fid_wait *ws;
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT,
				     .wait_obj = FI_WAIT_SET};
	struct fi_cntr_attr cntr_attr = {.events = FI_CNTR_EVENTS_COMP,
					 .wait_obj = FI_WAIT_SET};
	struct fid_cq *wcq;
	struct fid_cntr *wcntr;
	struct fi_cq_entry out;
	struct fi_cq_tagged_entry e = {.flags = FI_RECV};
	pthread_t t;
	int fd;

	cr_assert_eq(gdrfab_wait_open(&fabric.fid, &wattr, &ws), 0);
	cq_attr.wait_set = ws;
	cntr_attr.wait_set = ws;
	cr_assert_eq(gdrfab_cq_open(&domain.fid, &cq_attr, &wcq, NULL), 0);
	cr_assert_eq(gdrfab_cntr_open(&domain.fid, &cntr_attr, &wcntr, NULL),
		     0);
	cr_assert_eq(fi_wait(ws, 20), -FI_ETIMEDOUT);
	cr_assert_eq(fi_close(&ws->fid), -FI_EBUSY, "still used");
	cr_assert_eq(fi_control(&ws->fid, FI_GETWAIT, &fd), 0);
	cr_assert_eq(
		gdrfab_cq_write(gdrfab_container_of(wcq, struct gdrfab_cq, fid),
				&e, FI_ADDR_NOTAVAIL),
		0);
	{
		struct pollfd p = {.fd = fd, .events = POLLIN};

		cr_assert_eq(poll(&p, 1, 0), 1, "the set's fd is readable");
	}
	cr_assert_eq(fi_wait(ws, -1), 0);
	cr_assert_eq(fi_cq_read(wcq, &out, 1), 1);
	cr_assert_eq(fi_wait(ws, 10), -FI_ETIMEDOUT);
	pthread_create(&t, NULL, add_later, wcntr);
	cr_assert_eq(fi_wait(ws, 5000), 0, "woken by the counter");
	pthread_join(t, NULL);
	cr_assert_eq(fi_cntr_read(wcntr), 3);
	cr_assert_eq(fi_wait(ws, 10), -FI_ETIMEDOUT, "reported once");
	cr_assert_eq(fi_close(&wcq->fid), 0);
	cr_assert_eq(fi_close(&wcntr->fid), 0);
	cr_assert_eq(fi_close(&ws->fid), 0);
	cq_attr.wait_set = NULL;
	cr_assert_eq(gdrfab_cq_open(&domain.fid, &cq_attr, &wcq, NULL),
		     -FI_EINVAL);
	wattr.wait_obj = FI_WAIT_MUTEX_COND;
	cr_assert_eq(gdrfab_wait_open(&fabric.fid, &wattr, &ws), -FI_ENOSYS);
}
