/* SPDX-License-Identifier: BSD-2-Clause */
/* What the object layer's fids share (gdrfab_obj_common.h): the checks
 * of wait objects and flags, FI_GETWAIT, the busy check of fi_close, the
 * sleep of a blocking read, and the logging stubs of the connection
 * calls RDM endpoints lack. */
#include <criterion/criterion.h>
#include <unistd.h>

#include "gdrfab.h"
#include "gdrfab_obj_common.h"
#include "gdrfab_objs.h"

#define ALL_BUT_SETS (GDRFAB_WAITOBJ_BASIC | GDRFAB_WAITOBJ_BIT(FI_WAIT_YIELD))

Test(obj_common, wait_objects_are_checked_against_what_the_type_accepts)
{
	/* Accepted, refused as unsupported, refused as no wait object. */
	cr_assert_eq(gdrfab_waitobj_check(FI_LOG_CQ, "t", FI_WAIT_FD, NULL,
					  GDRFAB_WAITOBJ_BASIC),
		     0);
	cr_assert_eq(gdrfab_waitobj_check(FI_LOG_CQ, "t", FI_WAIT_UNSPEC, NULL,
					  GDRFAB_WAITOBJ_BASIC),
		     0);
	cr_assert_eq(gdrfab_waitobj_check(FI_LOG_CQ, "t", FI_WAIT_YIELD, NULL,
					  GDRFAB_WAITOBJ_BASIC),
		     -FI_ENOSYS);
	cr_assert_eq(gdrfab_waitobj_check(FI_LOG_CQ, "t", FI_WAIT_YIELD, NULL,
					  ALL_BUT_SETS),
		     0);
	cr_assert_eq(gdrfab_waitobj_check(
			     FI_LOG_CQ, "t", FI_WAIT_MUTEX_COND, NULL,
			     ~0u & ~GDRFAB_WAITOBJ_BIT(FI_WAIT_MUTEX_COND)),
		     -FI_ENOSYS);
	cr_assert_eq(
		gdrfab_waitobj_check(FI_LOG_CQ, "t", FI_WAIT_POLLFD, NULL, ~0u),
		-FI_EINVAL);
	cr_assert_eq(gdrfab_waitobj_check(FI_LOG_CQ, "t", (enum fi_wait_obj)99,
					  NULL, ~0u),
		     -FI_EINVAL);
	/* FI_WAIT_SET needs a gdrfab wait set, even where sets are
	 * accepted. */
	cr_assert_eq(
		gdrfab_waitobj_check(FI_LOG_CQ, "t", FI_WAIT_SET, NULL, ~0u),
		-FI_EINVAL);
	cr_assert_eq(gdrfab_waitobj_check(FI_LOG_CQ, "t", FI_WAIT_SET, NULL,
					  GDRFAB_WAITOBJ_BASIC),
		     -FI_ENOSYS);
}

Test(obj_common, wait_object_made_and_reported)
{
	struct gdrfab_waitobj w;
	enum fi_wait_obj obj;
	int fd = -1;

	/* UNSPEC means an eventfd. */
	cr_assert_eq(gdrfab_waitobj_open(&w, FI_WAIT_UNSPEC, NULL, NULL), 0);
	cr_assert_eq(w.obj, FI_WAIT_FD);
	cr_assert_geq(w.signal.fd, 0);
	cr_assert_eq(
		gdrfab_waitobj_control(w.signal.fd, w.obj, FI_GETWAIT, &fd), 0);
	cr_assert_eq(fd, w.signal.fd);
	cr_assert_eq(
		gdrfab_waitobj_control(w.signal.fd, w.obj, FI_GETWAITOBJ, &obj),
		0);
	cr_assert_eq(obj, FI_WAIT_FD);
	cr_assert_eq(
		gdrfab_waitobj_control(w.signal.fd, w.obj, FI_GETWAIT, NULL),
		-FI_EINVAL);
	cr_assert_eq(gdrfab_waitobj_control(w.signal.fd, w.obj, FI_ENABLE, &fd),
		     -FI_ENOSYS);
	gdrfab_waitobj_close(&w, NULL);
	cr_assert_eq(w.signal.fd, -1);

	/* No wait object: no fd to give. */
	cr_assert_eq(gdrfab_waitobj_open(&w, FI_WAIT_NONE, NULL, NULL), 0);
	cr_assert_eq(w.signal.fd, -1);
	cr_assert_eq(
		gdrfab_waitobj_control(w.signal.fd, w.obj, FI_GETWAIT, &fd),
		-FI_ENODATA);
	gdrfab_waitobj_close(&w, NULL);
}

Test(obj_common, a_sleep_ends_when_raised_or_timed_out)
{
	struct gdrfab_waitobj w;
	long long start;

	cr_assert_eq(gdrfab_waitobj_open(&w, FI_WAIT_FD, NULL, NULL), 0);
	/* Raised: returns at once, even without a timeout. */
	gdrfab_signal_raise(&w.signal);
	cr_assert_eq(gdrfab_waitobj_sleep(&w, false, -1, gdrfab_now_ms()), 0);
	gdrfab_signal_clear(&w.signal);
	/* Not raised: sleeps until the timeout, then says so. */
	start = gdrfab_now_ms();
	while (gdrfab_waitobj_sleep(&w, false, 30, start) != -FI_ETIMEDOUT)
		;
	cr_assert_geq(gdrfab_now_ms() - start, 30);
	/* With endpoints to progress, one sleep lasts about a millisecond
	 * even when the timeout is forever. */
	start = gdrfab_now_ms();
	cr_assert_eq(gdrfab_waitobj_sleep(&w, true, -1, start), 0);
	cr_assert_lt(gdrfab_now_ms() - start, 1000);
	gdrfab_waitobj_close(&w, NULL);
}

Test(obj_common, flags_and_busy_objects_are_refused)
{
	atomic_int ref;

	cr_assert_eq(gdrfab_obj_flags(FI_LOG_CQ, "t", 0, 0), 0);
	cr_assert_eq(gdrfab_obj_flags(FI_LOG_CQ, "t", FI_AFFINITY, FI_AFFINITY),
		     0);
	cr_assert_eq(gdrfab_obj_flags(FI_LOG_CQ, "t", FI_AFFINITY | FI_PEEK,
				      FI_AFFINITY),
		     -FI_EBADFLAGS);
	atomic_init(&ref, 2);
	cr_assert_eq(gdrfab_obj_busy(FI_LOG_CQ, "cq", &ref, "users"),
		     -FI_EBUSY);
	atomic_store(&ref, 0);
	cr_assert_eq(gdrfab_obj_busy(FI_LOG_CQ, "cq", &ref, "users"), 0);
}

Test(obj_common, fid_header_and_class_check)
{
	static struct fi_ops ops = {.size = sizeof(struct fi_ops)};
	static struct fi_ops other = {.size = sizeof(struct fi_ops)};
	struct fid fid;
	int ctx;

	gdrfab_obj_init(&fid, FI_CLASS_CQ, &ctx, &ops);
	cr_assert_eq(fid.fclass, FI_CLASS_CQ);
	cr_assert_eq(fid.context, &ctx);
	cr_assert(gdrfab_obj_is(&fid, FI_CLASS_CQ, &ops));
	cr_assert_not(gdrfab_obj_is(&fid, FI_CLASS_CNTR, &ops));
	cr_assert_not(gdrfab_obj_is(&fid, FI_CLASS_CQ, &other));
	cr_assert_not(gdrfab_obj_is(NULL, FI_CLASS_CQ, &ops));
}

Test(obj_common, connection_calls_of_rdm_endpoints_say_enosys)
{
	cr_assert_eq(gdrfab_nosys_connect(NULL, NULL, NULL, 0), -FI_ENOSYS);
	cr_assert_eq(gdrfab_nosys_listen(NULL), -FI_ENOSYS);
	cr_assert_eq(gdrfab_nosys_accept(NULL, NULL, 0), -FI_ENOSYS);
	cr_assert_eq(gdrfab_nosys_reject(NULL, NULL, NULL, 0), -FI_ENOSYS);
	cr_assert_eq(gdrfab_nosys_shutdown(NULL, 0), -FI_ENOSYS);
	cr_assert_eq(gdrfab_nosys_join(NULL, NULL, 0, NULL, NULL), -FI_ENOSYS);
	cr_assert_eq(gdrfab_nosys_tx_ctx(NULL, 0, NULL, NULL, NULL),
		     -FI_ENOSYS);
	cr_assert_eq(gdrfab_nosys_rx_ctx(NULL, 0, NULL, NULL, NULL),
		     -FI_ENOSYS);
}
