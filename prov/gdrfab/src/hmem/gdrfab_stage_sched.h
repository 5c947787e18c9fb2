/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Cutting a staged transfer into copies: pure arithmetic, kept apart so
 * that unit tests check it without CUDA or a NIC.
 */
#ifndef GDRFAB_STAGE_SCHED_H
#define GDRFAB_STAGE_SCHED_H

#include <stddef.h>
#include <sys/uio.h>

/* The next copy of a staged transfer whose host buffer holds the iovec's
 * bytes back to back: it starts at host offset off, which is byte *ioff
 * of iov[*idx], and ends at the next multiple of chunk, at the end of
 * that iovec entry, or at limit, whichever comes first. Advances *idx and
 * *ioff past it (skipping empty entries) and returns its length: 0 when
 * off has reached limit or the iovec's end. */
size_t gdrfab_stage_next_piece(const struct iovec *iov, size_t count,
			       size_t *idx, size_t *ioff, size_t off,
			       size_t limit, size_t chunk);

#endif /* GDRFAB_STAGE_SCHED_H */
