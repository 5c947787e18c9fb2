// SPDX-License-Identifier: BSD-2-Clause
#include "kmod_helpers.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#define STANDIN_DIR "/sys/kernel/debug/nvp2p_standin/"

int kt_open(void)
{
	int fd = open(GDRFAB_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	cr_assert(fd >= 0, "open %s: %s", GDRFAB_DEVICE_PATH, strerror(errno));
	return fd;
}

static int kt_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

int kt_pin(int fd, uint64_t addr, uint64_t len, uint32_t flags,
	   struct gdrfab_ioc_pin *out)
{
	struct gdrfab_ioc_pin pin = {
		.addr = addr, .length = len, .flags = flags};
	int ret = kt_ioctl(fd, GDRFAB_IOC_PIN, &pin);

	if (out)
		*out = pin;
	return ret;
}

int kt_unpin(int fd, uint64_t handle)
{
	struct gdrfab_ioc_unpin u = {.handle = handle};

	return kt_ioctl(fd, GDRFAB_IOC_UNPIN, &u);
}

int kt_info(int fd, uint64_t handle, struct gdrfab_ioc_info *out)
{
	memset(out, 0, sizeof(*out));
	out->handle = handle;
	return kt_ioctl(fd, GDRFAB_IOC_INFO, out);
}

void *kt_map(int fd, const struct gdrfab_ioc_pin *pin, uint64_t off,
	     uint64_t len)
{
	return mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    (off_t)(pin->mmap_offset + off));
}

void *kt_gpu_range(size_t len)
{
	/* Over-allocate, then trim to a 64 KB boundary. */
	uint8_t *p = mmap(NULL, len + KB64, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t a;

	cr_assert(p != MAP_FAILED);
	a = ((uintptr_t)p + KB64 - 1) & ~(uintptr_t)(KB64 - 1);
	if (a > (uintptr_t)p)
		munmap(p, a - (uintptr_t)p);
	munmap((void *)(a + len), (uintptr_t)p + KB64 - a);
	memset((void *)a, 0, len);
	return (void *)a;
}

long kt_stat(const char *name)
{
	FILE *f = fopen(STANDIN_DIR "stats", "r");
	char key[64];
	long v, found = -1;

	cr_assert(f, "stand-in stats: %s", strerror(errno));
	while (fscanf(f, "%63s %ld", key, &v) == 2)
		if (!strcmp(key, name))
			found = v;
	fclose(f);
	cr_assert(found >= 0, "no stand-in counter %s", name);
	return found;
}

static void kt_write(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	n = write(fd, text, strlen(text));
	cr_assert(n == (ssize_t)strlen(text), "write %s: %s", path,
		  strerror(errno));
	close(fd);
}

void kt_revoke(uint64_t addr, unsigned int delay_ms)
{
	char buf[64];

	if (addr)
		snprintf(buf, sizeof(buf), "%llx %u", (unsigned long long)addr,
			 delay_ms);
	else
		snprintf(buf, sizeof(buf), "all %u", delay_ms);
	kt_write(STANDIN_DIR "revoke", buf);
}

void kt_fail_next_get(int err)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%d", err);
	kt_write(STANDIN_DIR "fail_next_get", buf);
}

unsigned long kt_set_param(const char *name, unsigned long value)
{
	char path[128], buf[32];
	unsigned long old = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/gdrfab/parameters/%s", name);
	f = fopen(path, "r");
	cr_assert(f, "%s: %s", path, strerror(errno));
	cr_assert(fscanf(f, "%lu", &old) == 1);
	fclose(f);
	snprintf(buf, sizeof(buf), "%lu", value);
	kt_write(path, buf);
	return old;
}

static __thread sigjmp_buf kt_jmp;
static __thread volatile int kt_armed;

static void kt_on_sigbus(int sig)
{
	(void)sig;
	if (kt_armed)
		siglongjmp(kt_jmp, 1);
	abort();
}

static void kt_catch_sigbus(void)
{
	struct sigaction sa = {.sa_handler = kt_on_sigbus};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

/* One access at p, a load into *val or a store of *val. */
static bool kt_access_faults(volatile uint8_t *p, uint8_t *val, bool store)
{
	kt_catch_sigbus();
	if (sigsetjmp(kt_jmp, 1)) {
		kt_armed = 0;
		return true;
	}
	kt_armed = 1;
	if (store)
		*p = *val;
	else
		*val = *p;
	kt_armed = 0;
	return false;
}

bool kt_load_faults(volatile const uint8_t *p, uint8_t *val)
{
	return kt_access_faults((volatile uint8_t *)p, val, false);
}

bool kt_store_faults(volatile uint8_t *p, uint8_t val)
{
	return kt_access_faults(p, &val, true);
}
