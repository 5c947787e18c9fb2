/* SPDX-License-Identifier: BSD-2-Clause */
/* Logging on: the paths that log about an object (a call it does not
 * offer, a call on a closed object) name it without asking libfabric's
 * fi_tostr(FI_TYPE_FID), which calls the object's own tostr, which used
 * to log through fi_tostr again, recursing until the stack ran out. Each
 * test runs in a fresh process (Criterion) whose libfabric is started
 * with FI_LOG_LEVEL=debug before any call, so every warning is formatted. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>

#include "gdrfab_fid_tostr.h"
#include "gdrfab_objs.h"
#include "gdrfab_quarantine.h"

/* Starts libfabric's logging at debug: the first fi_getinfo reads
 * FI_LOG_LEVEL (where the suite already runs with it, logging_on.c
 * started it). Asking for a provider that does not exist keeps it from
 * opening any NIC. */
static void logging_on(void)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;

	cr_assert_not_null(hints);
	setenv("FI_LOG_LEVEL", "debug", 1);
	hints->fabric_attr->prov_name = strdup("gdrfab-test-none");
	(void)fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

TestSuite(fid_tostr, .init = logging_on);

static struct fid_ep *new_ep(struct fi_ops *ops)
{
	struct fid_ep *ep = calloc(1, sizeof(struct gdrfab_ep));

	cr_assert_not_null(ep);
	ep->fid.fclass = FI_CLASS_EP;
	ep->fid.ops = ops;
	return ep;
}

Test(fid_tostr, a_call_on_a_closed_object_logs_without_recursing)
{
	struct fid_ep *ep = new_ep(NULL);
	char buf[256] = "";

	gdrfab_fid_retire(&ep->fid, ep);
	cr_assert_eq(fi_close(&ep->fid), -FI_EINVAL);
	cr_assert_eq(fi_control(&ep->fid, FI_GETWAIT, buf), -FI_EINVAL);
	cr_assert_str_eq(fi_tostr(&ep->fid, FI_TYPE_FID),
			 "gdrfab endpoint (closed)");
	cr_assert_eq(ep->fid.ops->tostr(&ep->fid, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "gdrfab endpoint (closed)");
	gdrfab_quarantine_fini();
}

Test(fid_tostr, a_call_an_object_lacks_logs_without_recursing)
{
	struct fi_ops ops =
		GDRFAB_FI_OPS(NULL, gdrfab_nosys_bind, gdrfab_nosys_control);
	struct fid_ep *ep = new_ep(&ops);
	void *unused;

	cr_assert_eq(fi_control(&ep->fid, FI_GETWAIT, &unused), -FI_ENOSYS);
	cr_assert_eq(fi_open_ops(&ep->fid, "x", 0, &unused, NULL), -FI_ENOSYS);
	cr_assert_str_eq(fi_tostr(&ep->fid, FI_TYPE_FID),
			 "gdrfab endpoint (not enabled)");
	free(ep);
}

/* fi_tostr of a fid inside a larger string (libfabric hands tostr the
 * start of its buffer and the room left after what it holds): the
 * object's text is appended, never written over what is there. */
Test(fid_tostr, appends_after_what_the_buffer_holds)
{
	char buf[64] = "handle: ";
	struct fid fid = {.fclass = FI_CLASS_WAIT};

	cr_assert_eq(gdrfab_fid_tostr(&fid, buf, sizeof(buf) - strlen(buf)), 0);
	cr_assert_str_eq(buf, "handle: gdrfab wait set");
	/* Truncated to the room given, and still a string. */
	strcpy(buf, "0123456789");
	cr_assert_eq(gdrfab_fid_tostr(&fid, buf, 6), 0);
	cr_assert_str_eq(buf, "0123456789gdrfa");
}

Test(fid_tostr, names_every_class)
{
	cr_assert_str_eq(gdrfab_fclass_name(FI_CLASS_FABRIC), "fabric");
	cr_assert_str_eq(gdrfab_fclass_name(FI_CLASS_DOMAIN), "domain");
	cr_assert_str_eq(gdrfab_fclass_name(FI_CLASS_EP), "endpoint");
	cr_assert_str_eq(gdrfab_fclass_name(FI_CLASS_CQ), "completion queue");
	cr_assert_str_eq(gdrfab_fclass_name(FI_CLASS_CNTR), "counter");
	cr_assert_str_eq(gdrfab_fclass_name(FI_CLASS_EQ), "event queue");
	cr_assert_str_eq(gdrfab_fclass_name(FI_CLASS_AV), "address vector");
	cr_assert_str_eq(gdrfab_fclass_name(FI_CLASS_MR), "memory region");
	cr_assert_str_eq(gdrfab_fclass_name(FI_CLASS_POLL), "poll set");
	cr_assert_str_eq(gdrfab_fclass_name(FI_CLASS_WAIT), "wait set");
	cr_assert_str_eq(gdrfab_fclass_name(9999), "object");
}
