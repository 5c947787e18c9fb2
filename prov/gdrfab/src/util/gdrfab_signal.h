/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The wait object behind FI_WAIT_FD CQs, EQs and counters: an eventfd that
 * is readable while the queue has something to read (or after a signal).
 */
#ifndef GDRFAB_SIGNAL_H
#define GDRFAB_SIGNAL_H

struct gdrfab_signal {
	int fd; /* -1: no wait object */
};

int gdrfab_signal_init(struct gdrfab_signal *sig);
void gdrfab_signal_fini(struct gdrfab_signal *sig);
void gdrfab_signal_write(struct gdrfab_signal *sig);
void gdrfab_signal_read(struct gdrfab_signal *sig);
/* Makes the fd readable. Inline: most CQs have no wait object, and every
 * completion written asks. */
static inline void gdrfab_signal_raise(struct gdrfab_signal *sig)
{
	if (sig->fd >= 0)
		gdrfab_signal_write(sig);
}
/* Makes the fd unreadable again (the queue was drained). */
static inline void gdrfab_signal_clear(struct gdrfab_signal *sig)
{
	if (sig->fd >= 0)
		gdrfab_signal_read(sig);
}
/* Waits up to timeout_ms (-1: forever) for the fd to become readable.
 * Returns 0, -FI_EAGAIN on timeout, or a negative FI_E* code. */
int gdrfab_signal_wait(struct gdrfab_signal *sig, int timeout_ms);

/* Milliseconds left of a timeout that began at start_ms (-1: forever). */
int gdrfab_timeout_left(int timeout_ms, long long start_ms);
/* Milliseconds of CLOCK_MONOTONIC: for the timeouts of blocking calls. */
long long gdrfab_now_ms(void);
/* Milliseconds of the coarse monotonic clock (no system call): for the
 * data path's timers (connection setup, keepalives, peer timeouts). */
long long gdrfab_tick_ms(void);

/* "FI_WAIT_SET" etc., for log lines (libfabric 1.17's fi_tostr has no
 * wait-object type). */
const char *gdrfab_wait_obj_str(int wait_obj);

#endif /* GDRFAB_SIGNAL_H */
