/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Closed objects are kept, poisoned, for a while before their memory is
 * freed: a descriptor of a closed MR, a second fi_close or a call on a
 * closed endpoint then finds valid memory whose ops answer -FI_EINVAL
 * with a log line, instead of reading freed memory. The quarantine is a
 * bounded FIFO for the process; beyond it, misuse stays undefined.
 */
#ifndef GDRFAB_QUARANTINE_H
#define GDRFAB_QUARANTINE_H

#include <stdbool.h>

#include <rdma/fabric.h>

/* Closed objects kept before their memory is freed (process-wide). */
#define GDRFAB_QUARANTINE_LEN 256

/* Poisons a closed object whose resources are already released: every ops
 * table of it answers -FI_EINVAL from now on. mem (the allocation holding
 * fid) is freed once GDRFAB_QUARANTINE_LEN newer objects were retired, or
 * when the provider unloads. */
void gdrfab_fid_retire(struct fid *fid, void *mem);

/* Whether fid is a retired (closed) gdrfab object. */
bool gdrfab_fid_dead(const struct fid *fid);

/* Frees every retired object (the provider unloads). */
void gdrfab_quarantine_fini(void);

/* fi_ops of a closed object: every entry logs and returns -FI_EINVAL. */
extern struct fi_ops gdrfab_dead_fi_ops;

/* Points a closed object's class ops (data calls, CQ reads, AV inserts)
 * at tables that answer like gdrfab_dead_fi_ops (gdrfab_dead_ops.c). */
void gdrfab_dead_ops_install(struct fid *fid);

/* Logs a call on a closed object and returns -FI_EINVAL. */
int gdrfab_dead_call(const struct fid *fid, const char *call);

#endif /* GDRFAB_QUARANTINE_H */
