/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the object layer's fids share, written once: the fid header, the
 * check that refuses to close an object still in use, the wait object of
 * a CQ, counter or EQ (its eventfd, FI_GETWAIT, the sleep of a blocking
 * read, membership of a wait set), and the endpoints bound to a CQ or
 * counter.
 */
#ifndef GDRFAB_OBJ_COMMON_H
#define GDRFAB_OBJ_COMMON_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

#include "gdrfab_eplist.h"
#include "gdrfab_fid_tostr.h"
#include "gdrfab_signal.h"

/* An fi_ops table: the object's close, bind and control, its text
 * (gdrfab_fid_tostr.c), and the entries that no gdrfab object has
 * (gdrfab_nosys.c, which logs the call). */
#define GDRFAB_FI_OPS(close_fn, bind_fn, control_fn)                           \
	{                                                                      \
		.size = sizeof(struct fi_ops), .close = (close_fn),            \
		.bind = (bind_fn), .control = (control_fn),                    \
		.ops_open = gdrfab_nosys_ops_open, .tostr = gdrfab_fid_tostr,  \
		.ops_set = gdrfab_nosys_ops_set,                               \
	}

/* Fills the header every fid starts with. */
void gdrfab_obj_init(struct fid *fid, size_t fclass, void *context,
		     struct fi_ops *ops);
/* Whether fid is a live (not closed) object of class fclass whose fi_ops
 * are ops: one of ours of that kind. */
bool gdrfab_obj_is(const struct fid *fid, size_t fclass,
		   const struct fi_ops *ops);
/* fi_close's check: -FI_EBUSY and the log line "fi_close(what): N users"
 * while *ref counts users, else 0. */
int gdrfab_obj_busy(int subsys, const char *what, atomic_int *ref,
		    const char *users);

/* A call's flags: 0 when all are in allowed, else -FI_EBADFLAGS and the
 * log line "call: unsupported flags 0x...". */
int gdrfab_obj_flags(int subsys, const char *call, uint64_t flags,
		     uint64_t allowed);

/* The endpoints bound to a CQ or counter, progressed by its reads: an
 * endpoint bound twice counts once in *ref. */
int gdrfab_obj_attach_ep(struct gdrfab_eplist *eps, atomic_int *ref,
			 struct gdrfab_ep *ep);
void gdrfab_obj_detach_ep(struct gdrfab_eplist *eps, atomic_int *ref,
			  struct gdrfab_ep *ep);

/* The wait object of a CQ, counter or EQ. */
struct gdrfab_waitobj {
	enum fi_wait_obj obj;	     /* FI_WAIT_UNSPEC was made FI_WAIT_FD */
	struct fid_wait *set;	     /* FI_WAIT_SET: the set it is in */
	struct gdrfab_signal signal; /* FD and SET: an eventfd, else fd -1 */
};

/* The wait objects an object type accepts, as a mask of 1u << obj. */
#define GDRFAB_WAITOBJ_BIT(obj) (1u << (obj))
#define GDRFAB_WAITOBJ_BASIC                                                   \
	(GDRFAB_WAITOBJ_BIT(FI_WAIT_NONE) |                                    \
	 GDRFAB_WAITOBJ_BIT(FI_WAIT_UNSPEC) | GDRFAB_WAITOBJ_BIT(FI_WAIT_FD))

/* Checks what an fi_*_open asked for (call names it in log lines): 0;
 * -FI_ENOSYS for a wait object libfabric knows but accepted lacks;
 * -FI_EINVAL for FI_WAIT_SET without a gdrfab wait set, or a value that
 * is no wait object. */
int gdrfab_waitobj_check(int subsys, const char *call, enum fi_wait_obj obj,
			 const struct fid_wait *set, unsigned accepted);
/* Makes the wait object of a checked request: an eventfd for FD and SET;
 * with SET, member (whose fid header is set) joins the set. Undone by
 * gdrfab_waitobj_close. */
int gdrfab_waitobj_open(struct gdrfab_waitobj *w, enum fi_wait_obj obj,
			struct fid_wait *set, struct fid *member);
void gdrfab_waitobj_close(struct gdrfab_waitobj *w, struct fid *member);
/* FI_GETWAIT (fd; -FI_ENODATA when fd < 0) and FI_GETWAITOBJ (obj);
 * -FI_ENOSYS for any other command. */
int gdrfab_waitobj_control(int fd, enum fi_wait_obj obj, int command,
			   void *arg);
/* One sleep of a blocking read that began at start_ms: 0 once the
 * eventfd was raised, the slice passed or (FI_WAIT_YIELD) the thread
 * yielded; -FI_ETIMEDOUT when timeout_ms (-1: never) has passed; else the
 * wait's error. progress: endpoints progress only when read, so the
 * sleep lasts at most a millisecond. */
int gdrfab_waitobj_sleep(struct gdrfab_waitobj *w, bool progress,
			 int timeout_ms, long long start_ms);

#endif /* GDRFAB_OBJ_COMMON_H */
