// SPDX-License-Identifier: BSD-2-Clause
/*
 * With the stand-in backed by the process's own pages (backing=process):
 * gdrfab.ko's mapping and the "GPU" address see the same bytes, including
 * for a memfd mapped PROT_NONE, which is how the CUDA stand-in maps device
 * memory.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kmod_helpers.h"

Test(process, anonymous_memory_shared)
{
	int fd = kt_open();
	uint8_t *gpu = kt_gpu_range(2 * KB64), *p;
	struct gdrfab_ioc_pin pin;
	struct gdrfab_ioc_info info;

	memset(gpu, 0xab, 2 * KB64);
	cr_assert_eq(kt_pin(fd, (uintptr_t)gpu + 5, 2 * KB64 - 10, 0, &pin), 0);
	cr_assert_eq(kt_info(fd, pin.handle, &info), 0);
	cr_assert_eq(info.page_size, 4096);
	cr_assert_eq(info.entries, 2 * KB64 / 4096);
	p = kt_map(fd, &pin, 0, 2 * KB64);
	cr_assert(p != MAP_FAILED);
	cr_assert_eq(p[KB64 + 3], 0xab);
	p[100] = 1;
	gpu[KB64 + 7] = 2;
	cr_assert_eq(gpu[100], 1);
	cr_assert_eq(p[KB64 + 7], 2);
	munmap(p, 2 * KB64);
	close(fd);
	cr_assert_eq(kt_stat("live"), 0);
}

Test(process, memfd_prot_none)
{
	int fd = kt_open(), mfd = memfd_create("gpu", 0);
	uint8_t *gpu, *cpu, *p;
	struct gdrfab_ioc_pin pin;

	cr_assert(mfd >= 0);
	cr_assert_eq(ftruncate(mfd, KB64), 0);
	gpu = kt_gpu_range(KB64);
	cr_assert_eq(mmap(gpu, KB64, PROT_NONE, MAP_SHARED | MAP_FIXED, mfd, 0),
		     gpu);
	cpu = mmap(NULL, KB64, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	cr_assert(cpu != MAP_FAILED);
	cpu[10] = 0x77;
	cr_assert_eq(kt_pin(fd, (uintptr_t)gpu, KB64, 0, &pin), 0);
	p = kt_map(fd, &pin, 0, KB64);
	cr_assert(p != MAP_FAILED);
	cr_assert_eq(p[10], 0x77);
	p[20] = 0x88;
	cr_assert_eq(cpu[20], 0x88);
	munmap(p, KB64);
	close(fd);
	cr_assert_eq(kt_stat("live"), 0);
}
