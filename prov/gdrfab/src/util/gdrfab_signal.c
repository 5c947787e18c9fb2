/* SPDX-License-Identifier: BSD-2-Clause */
/* eventfd-based wait objects shared by CQs, EQs and counters. */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_eq.h>

#include "gdrfab.h"
#include "gdrfab_signal.h"

int gdrfab_signal_init(struct gdrfab_signal *sig)
{
	sig->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (sig->fd < 0) {
		GDRFAB_WARN(FI_LOG_CORE, "eventfd: %s\n", strerror(errno));
		return -FI_EMFILE;
	}
	return 0;
}

void gdrfab_signal_fini(struct gdrfab_signal *sig)
{
	if (sig->fd >= 0)
		close(sig->fd);
	sig->fd = -1;
}

void gdrfab_signal_write(struct gdrfab_signal *sig)
{
	uint64_t one = 1;

	if (write(sig->fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		GDRFAB_WARN(FI_LOG_CORE, "eventfd write: %s\n",
			    strerror(errno));
}

void gdrfab_signal_read(struct gdrfab_signal *sig)
{
	uint64_t value;

	if (read(sig->fd, &value, sizeof(value)) < 0 && errno != EAGAIN)
		GDRFAB_WARN(FI_LOG_CORE, "eventfd read: %s\n", strerror(errno));
}

int gdrfab_signal_wait(struct gdrfab_signal *sig, int timeout_ms)
{
	struct pollfd pfd = {.fd = sig->fd, .events = POLLIN};
	int ret;

	if (sig->fd < 0)
		return -FI_EINVAL;
	do {
		ret = poll(&pfd, 1, timeout_ms);
	} while (ret < 0 && errno == EINTR);
	if (ret < 0)
		return -FI_EOTHER;
	return ret ? 0 : -FI_EAGAIN;
}

static long long clock_ms(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long gdrfab_now_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

/* The coarse clock is read from the vDSO page without touching the clock
 * source, which matters where that is slow to read (an HPET, as in a TCG
 * VM, costs a system call and an emulated device access per read) since
 * the data path reads it on every progress call. Its tick (1-10 ms) is
 * finer than any of the data path's timers needs. */
long long gdrfab_tick_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC_COARSE);
}

int gdrfab_timeout_left(int timeout_ms, long long start_ms)
{
	long long left;

	if (timeout_ms < 0)
		return -1;
	left = timeout_ms - (gdrfab_now_ms() - start_ms);
	return left > 0 ? (int)left : 0;
}

const char *gdrfab_wait_obj_str(int wait_obj)
{
	switch (wait_obj) {
	case FI_WAIT_NONE: return "FI_WAIT_NONE";
	case FI_WAIT_UNSPEC: return "FI_WAIT_UNSPEC";
	case FI_WAIT_SET: return "FI_WAIT_SET";
	case FI_WAIT_FD: return "FI_WAIT_FD";
	case FI_WAIT_MUTEX_COND: return "FI_WAIT_MUTEX_COND";
	case FI_WAIT_YIELD: return "FI_WAIT_YIELD";
	case FI_WAIT_POLLFD: return "FI_WAIT_POLLFD";
	default: return "unknown wait object";
	}
}
