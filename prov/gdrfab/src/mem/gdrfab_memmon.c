/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The memory monitor, on userfaultfd (see gdrfab_memmon.h for what it is
 * for). Why userfaultfd: glibc's free, realloc and heap trimming call
 * munmap, mremap, madvise and brk from inside libc, not through the PLT,
 * so interposing those symbols misses exactly the frees that matter, and
 * patching libc's code (what libfabric's memhooks and UCX's bistro do) is
 * fragile. The kernel, by contrast, reports every unmap of a registered
 * range whoever makes it: UFFD_EVENT_UNMAP (munmap, mremap shrinking,
 * brk shrinking, mmap(MAP_FIXED) over it), UFFD_EVENT_REMOVE
 * (madvise(MADV_DONTNEED/MADV_REMOVE)) and UFFD_EVENT_REMAP (mremap moving
 * it away).
 *
 * How it is used, and what that costs:
 * - Ranges are registered in MISSING mode, the only mode these events
 *   need. Their pages are present (pinned by the NIC registration and
 *   populated before it), so no fault reaches the monitor unless the pages
 *   were zapped, which MADV_DONTNEED announces first: the monitor then
 *   unregisters the removed range, so later touches fault normally. A
 *   missing-page fault that still arrives (a range grown in place by
 *   mremap inherits the registration) is answered with a zero page, what
 *   the kernel itself would map into anonymous or shmem memory (only
 *   those can be registered in MISSING mode).
 * - Non-cooperative events make the unmapping thread wait in the kernel
 *   until the event is read, so a thread must always be ready to read:
 *   the monitor thread. Reading and delivering happen under mon.lock, and
 *   subscribers invalidate there without freeing anything: a free could
 *   trim the heap over a registered range, and its event would wait for
 *   the very thread that frees. Deregistration happens later, in the
 *   application's threads.
 * - An UNMAP or REMAP event is queued only after the kernel unmapped the
 *   range, so draining the queue is not enough for a thread that maps the
 *   address anew at that instant: gdrfab_memmon_check asks the kernel
 *   (UFFDIO_ZEROPAGE, answering EAGAIN while such an event is pending and
 *   ENOENT for a range that is not one registered mapping) before a hit
 *   is used (mem/gdrfab_host_cache.c).
 * - Each registered range is a mapping of its own to the kernel
 *   (vm.max_map_count bounds them) and its unmaps wait for the monitor:
 *   a range is unregistered when no watch covers it any more.
 * - UFFD_USER_MODE_ONLY (for unprivileged processes where
 *   vm.unprivileged_userfaultfd is 0) is not used: with it, a kernel access
 *   (read(2) into a buffer) between a MADV_DONTNEED and the monitor's
 *   unregistering fails with EFAULT instead of waiting. Without the right
 *   to open a full userfaultfd, there is no host cache.
 *
 * What it cannot see: shmdt (the kernel sends no event for it), MADV_FREE
 * (glibc does not use it; pinned pages are not reclaimed), and memory
 * userfaultfd cannot register (file mappings other than shmem, another
 * userfaultfd's ranges, device memory): gdrfab_memmon_watch refuses
 * those, and the cache does not keep them.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gdrfab.h"
#include "gdrfab_memmon.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

#define EVENTS                                                                 \
	(UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE |                \
	 UFFD_FEATURE_EVENT_REMAP)

enum { MON_IDLE, MON_RUNNING, MON_FAILED };

static struct {
	pthread_mutex_t lock; /* reading the fd, delivering, subs */
	pthread_mutex_t start_lock;
	int state;
	int err;
	char why[192];
	int uffd, stop_fd;
	pthread_t thread;
	struct gdrfab_list subs;
	struct gdrfab_list watches;
	_Atomic uint64_t events;
	atomic_bool forked;
	bool atfork_set;
} mon = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.start_lock = PTHREAD_MUTEX_INITIALIZER,
	.uffd = -1,
	.stop_fd = -1,
	.subs = {&mon.subs, &mon.subs},
	.watches = {&mon.watches, &mon.watches},
};

static uintptr_t page_size(void)
{
	static uintptr_t ps;

	if (!ps)
		ps = (uintptr_t)sysconf(_SC_PAGESIZE);
	return ps;
}

static void deliver(uintptr_t start, uintptr_t end)
{
	struct gdrfab_list *it;

	atomic_fetch_add(&mon.events, 1);
	for (it = mon.subs.next; it != &mon.subs; it = it->next) {
		struct gdrfab_memmon_sub *s =
			gdrfab_list_entry(it, struct gdrfab_memmon_sub, entry);

		s->invalidate(s->ctx, start, end);
	}
}

static void unregister_range(uintptr_t start, uintptr_t len)
{
	struct uffdio_range r = {.start = start, .len = len};

	/* Fails only where the range is already gone: nothing to do. */
	(void)ioctl(mon.uffd, UFFDIO_UNREGISTER, &r);
}

/* A missing-page fault in a watched range: the pages were zapped, so
 * whatever covered them is stale; the fault gets the zero page the kernel
 * would give anonymous or shmem memory, or, failing that, the page stops
 * being watched (which wakes the faulting thread to fault normally). */
static void on_fault(uintptr_t addr)
{
	uintptr_t ps = page_size(), page = addr & ~(ps - 1);
	struct uffdio_zeropage z = {.range = {.start = page, .len = ps}};
	struct uffdio_range wake = {.start = page, .len = ps};

	deliver(page, page + ps);
	if (!ioctl(mon.uffd, UFFDIO_ZEROPAGE, &z))
		return;
	if (errno == EEXIST)
		(void)ioctl(mon.uffd, UFFDIO_WAKE, &wake);
	else
		unregister_range(page, ps);
}

static void handle(const struct uffd_msg *m)
{
	switch (m->event) {
	case UFFD_EVENT_UNMAP:
		deliver(m->arg.remove.start, m->arg.remove.end);
		break;
	case UFFD_EVENT_REMOVE:
		deliver(m->arg.remove.start, m->arg.remove.end);
		unregister_range(m->arg.remove.start,
				 m->arg.remove.end - m->arg.remove.start);
		break;
	case UFFD_EVENT_REMAP:
		deliver(m->arg.remap.from,
			m->arg.remap.from + m->arg.remap.len);
		break;
	case UFFD_EVENT_PAGEFAULT: on_fault(m->arg.pagefault.address); break;
	default: break;
	}
}

/* Reads and delivers whatever is queued; mon.lock held. */
static void drain_locked(void)
{
	struct uffd_msg msgs[16];

	for (;;) {
		ssize_t n = read(mon.uffd, msgs, sizeof(msgs));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < (ssize_t)sizeof(msgs[0]))
			return; /* EAGAIN: nothing queued */
		for (size_t i = 0; i < (size_t)n / sizeof(msgs[0]); i++)
			handle(&msgs[i]);
	}
}

bool gdrfab_memmon_active(void)
{
	return atomic_load_explicit((_Atomic int *)&mon.state,
				    memory_order_acquire) == MON_RUNNING &&
	       !atomic_load(&mon.forked);
}

uint64_t gdrfab_memmon_sync(void)
{
	uint64_t n;

	if (!gdrfab_memmon_active())
		return atomic_load(&mon.events);
	pthread_mutex_lock(&mon.lock);
	drain_locked();
	n = atomic_load(&mon.events);
	pthread_mutex_unlock(&mon.lock);
	return n;
}

void gdrfab_memmon_hold(void)
{
	pthread_mutex_lock(&mon.lock);
	if (gdrfab_memmon_active())
		drain_locked();
}

void gdrfab_memmon_release(void)
{
	pthread_mutex_unlock(&mon.lock);
}

/*
 * UFFDIO_ZEROPAGE over the range, as a question without side effect on
 * mapped memory: the kernel answers ENOENT unless the whole range lies in
 * one userfaultfd-registered mapping (a mapping made anew at a freed
 * address is not registered); EAGAIN while an unmap, remove or remap of
 * a registered range is under way (from before the unmap until its event
 * has been read: the window in which an event is not yet queued); and
 * EEXIST at the first page already present, which a pinned range's first
 * page is. A missing page before it would get the zero page, which is
 * what reading it would give anyway.
 */
enum gdrfab_memmon_check gdrfab_memmon_check(const void *addr, size_t len)
{
	uintptr_t ps = page_size(), a = (uintptr_t)addr;
	uintptr_t start = a & ~(ps - 1), end = (a + len + ps - 1) & ~(ps - 1);
	struct uffdio_zeropage z = {
		.range = {.start = start, .len = end - start},
		.mode = UFFDIO_ZEROPAGE_MODE_DONTWAKE,
	};

	if (!gdrfab_memmon_active())
		return GDRFAB_MEMMON_UNWATCHED;
	if (!ioctl(mon.uffd, UFFDIO_ZEROPAGE, &z))
		return GDRFAB_MEMMON_UNWATCHED; /* nothing was there */
	switch (errno) {
	case EEXIST: return GDRFAB_MEMMON_WATCHED;
	case EAGAIN: return GDRFAB_MEMMON_CHANGING;
	default: return GDRFAB_MEMMON_UNWATCHED;
	}
}

uint64_t gdrfab_memmon_events(void)
{
	return atomic_load(&mon.events);
}

static void *monitor_thread(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd p[2] = {{.fd = mon.uffd, .events = POLLIN},
				      {.fd = mon.stop_fd, .events = POLLIN}};

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		if (p[1].revents)
			return NULL;
		gdrfab_memmon_sync();
	}
}

/* fork: the child has no monitor thread and shares the parent's
 * userfaultfd (whose ranges are not the child's): its caches stop caching
 * host memory. The lock is held across fork so the child's copy is free. */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&mon.lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&mon.lock);
}

static void atfork_child(void)
{
	atomic_store(&mon.forked, true);
	pthread_mutex_unlock(&mon.lock);
}

static int fail(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(mon.why, sizeof(mon.why), fmt, ap);
	va_end(ap);
	if (mon.uffd >= 0)
		close(mon.uffd);
	if (mon.stop_fd >= 0)
		close(mon.stop_fd);
	mon.uffd = mon.stop_fd = -1;
	mon.err = err;
	mon.state = MON_FAILED;
	return err;
}

static int open_uffd(void)
{
	struct uffdio_api api = {.api = UFFD_API, .features = EVENTS};
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (fd < 0) {
		int err = errno;

		if (err == EPERM)
			return fail(
				-FI_EPERM,
				"userfaultfd is refused to this process (vm.unprivileged_userfaultfd=0 and no CAP_SYS_PTRACE, or a seccomp filter)");
		return fail(-FI_ENOSYS, "userfaultfd: %s", strerror(err));
	}
	mon.uffd = fd;
	if (ioctl(fd, UFFDIO_API, &api) || (api.features & EVENTS) != EVENTS)
		return fail(
			-FI_ENOSYS,
			"the kernel's userfaultfd lacks the unmap, remove and remap events");
	return 0;
}

static int start_locked(void)
{
	sigset_t all, old;
	int ret;

	if (atomic_load(&mon.forked))
		return fail(-FI_EOPNOTSUPP, "started in a forked child");
	ret = open_uffd();
	if (ret)
		return ret;
	mon.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (mon.stop_fd < 0)
		return fail(-FI_ENOMEM, "eventfd: %s", strerror(errno));
	if (!mon.atfork_set) {
		if (pthread_atfork(atfork_prepare, atfork_parent, atfork_child))
			return fail(-FI_ENOMEM, "pthread_atfork failed");
		mon.atfork_set = true;
	}
	/* The thread takes no signal: a handler run there could unmap a
	 * watched range and wait for itself. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&mon.thread, NULL, monitor_thread, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		return fail(-FI_ENOMEM, "pthread_create: %s", strerror(ret));
	atomic_store_explicit((_Atomic int *)&mon.state, MON_RUNNING,
			      memory_order_release);
	return 0;
}

int gdrfab_memmon_start(const char **why)
{
	int ret = 0;

	pthread_mutex_lock(&mon.start_lock);
	if (mon.state == MON_IDLE)
		ret = start_locked();
	else if (mon.state == MON_FAILED)
		ret = mon.err;
	pthread_mutex_unlock(&mon.start_lock);
	if (ret && why)
		*why = mon.why;
	return ret;
}

void gdrfab_memmon_stop(void)
{
	uint64_t one = 1;

	pthread_mutex_lock(&mon.start_lock);
	if (mon.state == MON_RUNNING && !atomic_load(&mon.forked)) {
		if (write(mon.stop_fd, &one, sizeof(one)) == sizeof(one))
			pthread_join(mon.thread, NULL);
		/* Closing the userfaultfd unregisters every range and
		 * completes any event still queued. */
		close(mon.uffd);
		close(mon.stop_fd);
		mon.uffd = mon.stop_fd = -1;
	}
	/* Closing forgot every range: so do the watches still listed. */
	pthread_mutex_lock(&mon.lock);
	while (!gdrfab_list_empty(&mon.watches)) {
		struct gdrfab_list *it = mon.watches.next;

		gdrfab_list_remove(it);
		gdrfab_list_init(it);
	}
	pthread_mutex_unlock(&mon.lock);
	atomic_store((_Atomic int *)&mon.state, MON_IDLE);
	pthread_mutex_unlock(&mon.start_lock);
}

void gdrfab_memmon_subscribe(struct gdrfab_memmon_sub *sub)
{
	pthread_mutex_lock(&mon.lock);
	gdrfab_list_push_tail(&mon.subs, &sub->entry);
	pthread_mutex_unlock(&mon.lock);
}

void gdrfab_memmon_unsubscribe(struct gdrfab_memmon_sub *sub)
{
	pthread_mutex_lock(&mon.lock);
	gdrfab_list_remove(&sub->entry);
	pthread_mutex_unlock(&mon.lock);
}

int gdrfab_memmon_watch(struct gdrfab_memmon_watch *w, const void *addr,
			size_t len)
{
	uintptr_t ps = page_size(), a = (uintptr_t)addr;
	uintptr_t start = a & ~(ps - 1), end = (a + len + ps - 1) & ~(ps - 1);
	struct uffdio_register reg = {
		.range = {.start = start, .len = end - start},
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	int ret = 0;

	gdrfab_list_init(&w->entry);
	w->start = start;
	w->end = end;
	if (!len || !gdrfab_memmon_active())
		return -FI_EINVAL;
	/* Present pages first, so that registering for the NIC (which
	 * faults pages in) does not fault through the monitor. */
	(void)madvise((void *)start, end - start, MADV_POPULATE_READ);
	pthread_mutex_lock(&mon.lock);
	if (ioctl(mon.uffd, UFFDIO_REGISTER, &reg))
		ret = errno == ENOMEM ? -FI_EFAULT : -FI_EINVAL;
	else
		gdrfab_list_push_tail(&mon.watches, &w->entry);
	pthread_mutex_unlock(&mon.lock);
	return ret;
}

/* The watch, other than skip, overlapping [from, end) that starts first;
 * NULL if none. mon.lock held. */
static struct gdrfab_memmon_watch *
first_overlap(const struct gdrfab_memmon_watch *skip, uintptr_t from,
	      uintptr_t end)
{
	struct gdrfab_memmon_watch *best = NULL;
	struct gdrfab_list *it;

	for (it = mon.watches.next; it != &mon.watches; it = it->next) {
		struct gdrfab_memmon_watch *w = gdrfab_list_entry(
			it, struct gdrfab_memmon_watch, entry);

		if (w == skip || w->end <= from || w->start >= end)
			continue;
		if (!best || w->start < best->start)
			best = w;
	}
	return best;
}

void gdrfab_memmon_unwatch(struct gdrfab_memmon_watch *w)
{
	uintptr_t at;

	pthread_mutex_lock(&mon.lock);
	if (gdrfab_list_empty(&w->entry)) {
		pthread_mutex_unlock(&mon.lock);
		return;
	}
	gdrfab_list_remove(&w->entry);
	gdrfab_list_init(&w->entry);
	/* Unregisters the gaps between the other watches over its range.
	 * Where the range was unmapped meanwhile, this finds nothing
	 * registered there, or a new mapping that only another watch (which
	 * covers it, so it is skipped) can have registered. */
	for (at = w->start; at < w->end && gdrfab_memmon_active();) {
		struct gdrfab_memmon_watch *o = first_overlap(w, at, w->end);

		if (!o) {
			unregister_range(at, w->end - at);
			break;
		}
		if (o->start > at)
			unregister_range(at, o->start - at);
		at = o->end > at ? o->end : at + 1;
	}
	pthread_mutex_unlock(&mon.lock);
}
