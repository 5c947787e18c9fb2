// SPDX-License-Identifier: BSD-2-Clause
/*
 * CPU mappings of pinned regions: reads and writes, revocation with live
 * mappings (SIGBUS, never a stale read of the stand-in's poison), unpin,
 * close and exit with live pins, fork.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kmod_helpers.h"

#define POISON 0x5a

static void fill(uint8_t *p, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static void check(const uint8_t *p, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(p[i], (uint8_t)(seed + i * 7), "byte %zu", i);
}

Test(map, write_read_two_mappings)
{
	int fd = kt_open();
	uint8_t *gpu = kt_gpu_range(2 * KB64);
	struct gdrfab_ioc_pin pin;
	uint8_t *a, *b, *half;

	cr_assert_eq(kt_pin(fd, (uintptr_t)gpu, 2 * KB64, 0, &pin), 0);
	a = kt_map(fd, &pin, 0, 2 * KB64);
	b = kt_map(fd, &pin, 0, 2 * KB64);
	half = kt_map(fd, &pin, KB64, KB64);
	cr_assert(a != MAP_FAILED && b != MAP_FAILED && half != MAP_FAILED);
	fill(a, 2 * KB64, 3);
	check(b, 2 * KB64, 3);
	check(half, KB64, (uint8_t)(3 + KB64 * 7));
	munmap(a, 2 * KB64);
	munmap(b, 2 * KB64);
	munmap(half, KB64);
	cr_assert_eq(kt_unpin(fd, pin.handle), 0);
	cr_assert_eq(kt_stat("live"), 0);
	close(fd);
}

/* The region revoked under a live, already faulted-in mapping. */
Test(map, revoke_live_mapping_sigbus)
{
	int fd = kt_open();
	uint8_t *gpu = kt_gpu_range(KB64);
	struct gdrfab_ioc_pin pin;
	struct gdrfab_ioc_info info;
	uint8_t *p, v = 0;
	uint64_t gen;
	long late;

	cr_assert_eq(
		kt_pin(fd, (uintptr_t)gpu, KB64, GDRFAB_PIN_REVOCABLE, &pin),
		0);
	cr_assert_eq(kt_info(fd, pin.handle, &info), 0);
	cr_assert_eq(info.flags & GDRFAB_REGION_PERSISTENT, 0);
	gen = info.generation;
	p = kt_map(fd, &pin, 0, KB64);
	cr_assert(p != MAP_FAILED);
	fill(p, KB64, 9);
	check(p, KB64, 9);

	kt_revoke((uintptr_t)gpu, 0);
	cr_assert_eq(kt_info(fd, pin.handle, &info), 0);
	cr_assert_eq(info.state, GDRFAB_REGION_REVOKED);
	cr_assert_eq(info.generation, gen + 1);
	for (size_t off = 0; off < KB64; off += 4096) {
		bool faulted = kt_load_faults(p + off, &v);

		cr_assert(faulted, "read %#x after revocation: %#x%s", off, v,
			  v == POISON ? " (the freed page's poison)" : "");
		cr_assert(kt_store_faults(p + off, 1));
	}
	cr_assert_eq(kt_map(fd, &pin, 0, KB64), MAP_FAILED,
		     "mapping a revoked region");
	/* Unpinning a revoked region must not call put_pages. */
	late = kt_stat("put_after_callback");
	cr_assert_eq(kt_unpin(fd, pin.handle), 0);
	cr_assert_eq(kt_stat("put_after_callback"), late,
		     "put_pages for a region whose callback had run");
	munmap(p, KB64);
	cr_assert_eq(kt_stat("live"), 0);
	close(fd);
}

/* Mapped but never touched: no PTE exists for the zap to find. */
Test(map, revoke_before_first_fault)
{
	int fd = kt_open();
	uint8_t *gpu = kt_gpu_range(KB64);
	struct gdrfab_ioc_pin pin;
	uint8_t *p, v;

	cr_assert_eq(
		kt_pin(fd, (uintptr_t)gpu, KB64, GDRFAB_PIN_REVOCABLE, &pin),
		0);
	p = kt_map(fd, &pin, 0, KB64);
	cr_assert(p != MAP_FAILED);
	kt_revoke(0, 0);
	cr_assert(kt_load_faults(p, &v), "read %#x", v);
	munmap(p, KB64);
	close(fd);
	cr_assert_eq(kt_stat("live"), 0);
}

Test(map, unpin_kills_mapping)
{
	int fd = kt_open();
	uint8_t *gpu = kt_gpu_range(KB64);
	struct gdrfab_ioc_pin pin;
	uint8_t *p, v;

	for (int revocable = 0; revocable < 2; revocable++) {
		cr_assert_eq(kt_pin(fd, (uintptr_t)gpu, KB64,
				    revocable ? GDRFAB_PIN_REVOCABLE : 0, &pin),
			     0);
		p = kt_map(fd, &pin, 0, KB64);
		cr_assert(p != MAP_FAILED);
		p[5] = 42;
		cr_assert_eq(kt_unpin(fd, pin.handle), 0);
		cr_assert(kt_load_faults(p + 5, &v), "read %#x after unpin", v);
		munmap(p, KB64);
	}
	cr_assert_eq(kt_stat("live"), 0);
	close(fd);
}

Test(map, persistent_not_revoked)
{
	int fd = kt_open();
	uint8_t *gpu = kt_gpu_range(KB64);
	struct gdrfab_ioc_pin pin;
	uint8_t *p, v;

	cr_assert_eq(kt_pin(fd, (uintptr_t)gpu, KB64, 0, &pin), 0);
	p = kt_map(fd, &pin, 0, KB64);
	p[0] = 7;
	kt_revoke(0, 0);
	cr_assert_not(kt_load_faults(p, &v));
	cr_assert_eq(v, 7);
	munmap(p, KB64);
	close(fd);
	cr_assert_eq(kt_stat("live"), 0);
}

/* close() with a live mapping: the mapping keeps the file; munmap ends it. */
Test(map, close_then_munmap)
{
	int fd = kt_open();
	uint8_t *gpu = kt_gpu_range(KB64);
	struct gdrfab_ioc_pin pin;
	uint8_t *p;

	cr_assert_eq(kt_pin(fd, (uintptr_t)gpu, KB64, 0, &pin), 0);
	cr_assert_eq(
		kt_pin(fd, (uintptr_t)gpu, KB64, GDRFAB_PIN_REVOCABLE, NULL),
		0);
	p = kt_map(fd, &pin, 0, KB64);
	fill(p, 64, 1);
	close(fd);
	check(p, 64, 1);
	cr_assert_eq(kt_stat("live"), 2);
	munmap(p, KB64);
	cr_assert_eq(kt_stat("live"), 0, "the last unmap released the pins");
}

/* A forked child gets no mapping and can do nothing with the parent's fd. */
Test(map, fork_child_gets_nothing)
{
	int fd = kt_open();
	uint8_t *gpu = kt_gpu_range(KB64);
	struct gdrfab_ioc_pin pin;
	uint8_t *p;
	pid_t pid;
	int status;

	cr_assert_eq(
		kt_pin(fd, (uintptr_t)gpu, KB64, GDRFAB_PIN_REVOCABLE, &pin),
		0);
	p = kt_map(fd, &pin, 0, KB64);
	p[0] = 11;
	pid = fork();
	if (pid == 0) {
		struct gdrfab_ioc_version v;
		struct gdrfab_ioc_info info;
		int bad = 0;

		bad |= ioctl(fd, GDRFAB_IOC_VERSION, &v) != -1 ||
		       errno != EPERM;
		bad |= kt_pin(fd, (uintptr_t)gpu, KB64, 0, NULL) != -EPERM;
		bad |= kt_info(fd, pin.handle, &info) != -EPERM;
		bad |= kt_unpin(fd, pin.handle) != -EPERM;
		bad |= kt_map(fd, &pin, 0, KB64) != MAP_FAILED ||
		       errno != EPERM;
		/* VM_DONTCOPY: the parent's mapping is not in the child. */
		bad |= mincore(p, 4096, (unsigned char[1]){0}) != -1 ||
		       errno != ENOMEM;
		close(fd);
		_exit(bad ? 1 : 0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the child could use the parent's file or mapping");
	cr_assert_eq(p[0], 11, "the parent's mapping survives the child");
	cr_assert_eq(kt_unpin(fd, pin.handle), 0);
	munmap(p, KB64);
	close(fd);
	cr_assert_eq(kt_stat("live"), 0);
}

/*
 * A process exits with live pins and mappings. The persistent pin is put
 * back on close; the revocable one cannot be (put_pages needs the pinning
 * process), so it stays armed until the driver revokes it, as it does when
 * the process's GPU memory goes, and the module stays loaded until then.
 */
static long module_refs(void)
{
	FILE *f = fopen("/sys/module/gdrfab/refcnt", "r");
	long n = -1;

	cr_assert(f);
	cr_assert_eq(fscanf(f, "%ld", &n), 1);
	fclose(f);
	return n;
}

Test(map, exit_with_live_pins)
{
	long live = kt_stat("live"), refs = module_refs();
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		int fd = kt_open();
		uint8_t *gpu = kt_gpu_range(2 * KB64);
		struct gdrfab_ioc_pin pin;
		uint8_t *p;

		if (kt_pin(fd, (uintptr_t)gpu, KB64, 0, &pin))
			_exit(2);
		p = kt_map(fd, &pin, 0, KB64);
		if (p == MAP_FAILED)
			_exit(3);
		p[1] = 1;
		if (kt_pin(fd, (uintptr_t)gpu + KB64, KB64,
			   GDRFAB_PIN_REVOCABLE, &pin))
			_exit(4);
		p = kt_map(fd, &pin, 0, KB64);
		if (p == MAP_FAILED)
			_exit(5);
		p[1] = 1;
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d",
		  WEXITSTATUS(status));
	cr_assert_eq(kt_stat("live"), live + 1,
		     "only the revocable pin is left");
	cr_assert_eq(module_refs(), refs + 1,
		     "the armed callback does not hold the module");
	kt_revoke(0, 0);
	cr_assert_eq(kt_stat("live"), live);
	cr_assert_eq(module_refs(), refs);
	cr_assert_eq(kt_stat("violations"), 0);
}
