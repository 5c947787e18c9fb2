/* SPDX-License-Identifier: BSD-2-Clause */
/* Cutting a staged transfer into copies (see gdrfab_stage_sched.h). */
#include "gdrfab_stage.h"

size_t gdrfab_stage_next_piece(const struct iovec *iov, size_t count,
			       size_t *idx, size_t *ioff, size_t off,
			       size_t limit, size_t chunk)
{
	size_t n;

	while (*idx < count && *ioff == iov[*idx].iov_len) {
		(*idx)++;
		*ioff = 0;
	}
	if (*idx >= count || off >= limit || !chunk)
		return 0;
	/* Pieces end on the chunk grid of the host buffer, so that a
	 * chunk the NIC has written is covered by whole copies. */
	n = chunk - off % chunk;
	if (n > iov[*idx].iov_len - *ioff)
		n = iov[*idx].iov_len - *ioff;
	if (n > limit - off)
		n = limit - off;
	*ioff += n;
	return n;
}

size_t gdrfab_stage_piece_grid(size_t off, size_t chunk)
{
	size_t grid = chunk;

	while (grid < GDRFAB_STAGE_GROW * chunk && off >= 2 * grid)
		grid *= 2;
	return grid;
}
