/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Rate limits for warnings a peer can trigger: a flood of bad packets must
 * not turn into a flood of log lines (each costs a write, under the
 * endpoint's lock). At most GDRFAB_RATELIMIT_BURST lines per second; the
 * next line allowed says how many were left out.
 */
#ifndef GDRFAB_RATELIMIT_H
#define GDRFAB_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

#define GDRFAB_RATELIMIT_BURST 10

struct gdrfab_ratelimit {
	long long window_ms; /* start of the current one-second window */
	unsigned printed;    /* lines in this window */
	uint64_t suppressed; /* left out since the last line printed */
};

/* Whether a warning may be printed at now_ms; *suppressed then holds how
 * many were left out before it (and is reset). */
bool gdrfab_ratelimit_ok(struct gdrfab_ratelimit *rl, long long now_ms,
			 uint64_t *suppressed);

#endif /* GDRFAB_RATELIMIT_H */
