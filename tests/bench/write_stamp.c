/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * LD_PRELOADed by tests/bench/lat-parts.sh: times the write(2) that rxe's
 * user library makes to post a send (librxe copies the work request into
 * the send queue, then asks the kernel to run it with a write on the
 * device's file). So lat_parts can tell a send call's own time (before
 * the write) from the kernel's (the write), which on rxe runs the whole
 * delivery: the sender's packet, the receiver's copy and completion, the
 * acknowledgement. A NIC with a doorbell makes no such write; nothing is
 * stamped there.
 */
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lat_parts_clock.h"

/* lat_parts sets write_stamp_armed before a send; the first write after
 * it is stamped (entry and return) and disarms it. */
volatile int write_stamp_armed;
volatile uint64_t write_stamp_in, write_stamp_out;

ssize_t write(int fd, const void *buf, size_t len)
{
	int armed = write_stamp_armed;
	uint64_t in = armed ? lat_parts_ticks() : 0;
	/* The system call itself: libc's write is the function replaced. */
	ssize_t ret = (ssize_t)syscall(SYS_write, fd, buf, len);

	if (armed) {
		write_stamp_out = lat_parts_ticks();
		write_stamp_in = in;
		write_stamp_armed = 0;
	}
	return ret;
}
