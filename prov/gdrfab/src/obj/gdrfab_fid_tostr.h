/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What gdrfab's objects say of themselves: the tostr entry of their fi_ops
 * (what fi_tostr(fid, FI_TYPE_FID) prints) and the class names the
 * provider's own log lines use. Nothing here calls libfabric's fi_tostr:
 * for FI_TYPE_FID it calls the object's tostr, and fi_tostr's buffer is
 * the one tostr is writing into, so a log line built that way from a
 * tostr, or from a path tostr can reach, recursed (issue 33).
 */
#ifndef GDRFAB_FID_TOSTR_H
#define GDRFAB_FID_TOSTR_H

#include <stddef.h>

#include <rdma/fabric.h>

/* "endpoint", "completion queue", ...; "object" for a class gdrfab has
 * no object of. A constant string. */
const char *gdrfab_fclass_name(size_t fclass);

/* The tostr of every live gdrfab object: appends to the string in buf,
 * which has len bytes of room after it (libfabric's contract), one line
 * such as "gdrfab endpoint on rxe0 (enabled)": the class, the NIC and
 * the state. Truncated to the room given. 0. */
int gdrfab_fid_tostr(const struct fid *fid, char *buf, size_t len);

/* The same for a closed object: "gdrfab endpoint (closed)". */
int gdrfab_dead_fid_tostr(const struct fid *fid, char *buf, size_t len);

#endif /* GDRFAB_FID_TOSTR_H */
