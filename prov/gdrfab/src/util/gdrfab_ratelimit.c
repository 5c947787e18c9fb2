/* SPDX-License-Identifier: BSD-2-Clause */
/* A per-second budget for warnings about what peers send. */
#include "gdrfab_ratelimit.h"

bool gdrfab_ratelimit_ok(struct gdrfab_ratelimit *rl, long long now_ms,
			 uint64_t *suppressed)
{
	if (now_ms - rl->window_ms >= 1000 || now_ms < rl->window_ms) {
		rl->window_ms = now_ms;
		rl->printed = 0;
	}
	if (rl->printed >= GDRFAB_RATELIMIT_BURST) {
		rl->suppressed++;
		return false;
	}
	rl->printed++;
	*suppressed = rl->suppressed;
	rl->suppressed = 0;
	return true;
}
