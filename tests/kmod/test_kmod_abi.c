// SPDX-License-Identifier: BSD-2-Clause
/* /dev/gdrfab's ioctls: every error path, rounding, caps, versions. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kmod_helpers.h"

Test(abi, version)
{
	int fd = kt_open();
	struct gdrfab_ioc_version v = {0};

	cr_assert_eq(ioctl(fd, GDRFAB_IOC_VERSION, &v), 0);
	cr_assert_eq(GDRFAB_ABI_VERSION_MAJOR(v.abi_version), GDRFAB_ABI_MAJOR);
	cr_assert_eq(v.pin_flags, GDRFAB_PIN_FLAGS_ALL);
	cr_assert(v.max_regions > 0 && v.max_pinned_bytes > 0);
	cr_assert(v.features & GDRFAB_FEATURE_PERSISTENT);
	close(fd);
}

Test(abi, bad_arguments)
{
	int fd = kt_open();
	struct gdrfab_ioc_pin pin = {.addr = 0x10000, .length = 4096};
	struct gdrfab_ioc_info info;
	long gets = kt_stat("gets");

	cr_assert_eq(kt_pin(fd, 0x10000, 0, 0, NULL), -EINVAL, "zero length");
	cr_assert_eq(kt_pin(fd, UINT64_MAX - 100, 4096, 0, NULL), -EINVAL,
		     "wrapping range");
	cr_assert_eq(kt_pin(fd, UINT64_MAX - 0x20000, 0x10000, 0, NULL),
		     -EINVAL, "range that wraps once rounded");
	cr_assert_eq(kt_pin(fd, 1ULL << 62, 4096, 0, NULL), -EINVAL,
		     "kernel address");
	cr_assert_eq(kt_pin(fd, 0x10000, 4096, 0x80, NULL), -EINVAL,
		     "unknown flag");
	pin.reserved = 1;
	cr_assert_eq(ioctl(fd, GDRFAB_IOC_PIN, &pin), -1);
	cr_assert_eq(errno, EINVAL, "reserved field set");
	cr_assert_eq(ioctl(fd, GDRFAB_IOC_PIN, (void *)8), -1);
	cr_assert_eq(errno, EFAULT);
	cr_assert_eq(ioctl(fd, GDRFAB_IOC_INFO, (void *)8), -1);
	cr_assert_eq(errno, EFAULT);
	cr_assert_eq(ioctl(fd, _IO(GDRFAB_IOC_MAGIC, 99), 0), -1);
	cr_assert_eq(errno, ENOTTY);
	cr_assert_eq(kt_unpin(fd, 12345), -ENOENT);
	cr_assert_eq(kt_info(fd, 12345, &info), -ENOENT);
	cr_assert_eq(kt_stat("gets"), gets, "bad pins reached the driver");
	close(fd);
}

Test(abi, rounds_to_64k)
{
	int fd = kt_open();
	uint8_t *gpu = kt_gpu_range(4 * KB64);
	struct gdrfab_ioc_pin pin;
	struct gdrfab_ioc_info info;

	cr_assert_eq(kt_pin(fd, (uintptr_t)gpu + 100, 10, 0, &pin), 0);
	cr_assert_eq(pin.pinned_addr, (uintptr_t)gpu);
	cr_assert_eq(pin.pinned_length, KB64);
	cr_assert_eq(kt_info(fd, pin.handle, &info), 0);
	cr_assert_eq(info.pinned_length, KB64);
	cr_assert_eq(info.state, GDRFAB_REGION_PINNED);
	cr_assert(info.flags & GDRFAB_REGION_PERSISTENT);
	cr_assert(info.page_size == 4096 || info.page_size == KB64);
	cr_assert_eq(info.entries * (uint64_t)info.page_size, KB64);
	cr_assert_eq(info.pt_version >> 16,
		     strtoul(getenv("GDRFAB_KT_MAJOR") ?: "2", NULL, 0));
	/* Across a boundary: two granules. */
	cr_assert_eq(kt_pin(fd, (uintptr_t)gpu + KB64 - 1, 2, 0, &pin), 0);
	cr_assert_eq(pin.pinned_length, 2 * KB64);
	close(fd);
	cr_assert_eq(kt_stat("live"), 0, "close left pins");
}

Test(abi, caps_per_file)
{
	int fd = kt_open(), fd2 = kt_open();
	uint8_t *gpu = kt_gpu_range(8 * KB64);
	unsigned long old = kt_set_param("max_regions", 2);
	struct gdrfab_ioc_pin pin;
	int ret;

	cr_assert_eq(kt_pin(fd, (uintptr_t)gpu, 1, 0, NULL), 0);
	cr_assert_eq(kt_pin(fd, (uintptr_t)gpu, 1, 0, &pin), 0);
	cr_assert_eq(kt_pin(fd, (uintptr_t)gpu, 1, 0, NULL), -ENOSPC);
	ret = kt_pin(fd2, (uintptr_t)gpu, 1, 0, NULL);
	cr_assert_eq(ret, 0, "the cap is per file: %d", ret);
	cr_assert_eq(kt_unpin(fd, pin.handle), 0);
	cr_assert_eq(kt_pin(fd, (uintptr_t)gpu, 1, 0, NULL), 0,
		     "unpin gives the slot back");
	kt_set_param("max_regions", old);

	close(fd);
	close(fd2);

	fd = kt_open();
	old = kt_set_param("max_pinned_bytes", 3 * KB64);
	ret = kt_pin(fd, (uintptr_t)gpu, 2 * KB64, 0, NULL);
	cr_assert_eq(ret, 0, "%d", ret);
	cr_assert_eq(kt_pin(fd, (uintptr_t)gpu, 2 * KB64, 0, NULL), -ENOSPC);
	ret = kt_pin(fd, (uintptr_t)gpu, 1, 0, NULL);
	cr_assert_eq(ret, 0, "up to the cap exactly: %d", ret);
	cr_assert_eq(kt_pin(fd, (uintptr_t)gpu, 1, 0, NULL), -ENOSPC);
	kt_set_param("max_pinned_bytes", old);
	close(fd);
	cr_assert_eq(kt_stat("live"), 0);
}

Test(abi, driver_failure)
{
	int fd = kt_open();
	uint8_t *gpu = kt_gpu_range(KB64);
	long live = kt_stat("live");

	kt_fail_next_get(ENOMEM);
	cr_assert_eq(kt_pin(fd, (uintptr_t)gpu, 1, 0, NULL), -ENOMEM);
	kt_fail_next_get(ENOMEM);
	cr_assert_eq(kt_pin(fd, (uintptr_t)gpu, 1, GDRFAB_PIN_REVOCABLE, NULL),
		     -ENOMEM);
	cr_assert_eq(kt_stat("live"), live);
	cr_assert_eq(kt_pin(fd, (uintptr_t)gpu, 1, 0, NULL), 0, "recovers");
	close(fd);
}

/* Loaded with table_major=3: no table of an unknown layout is used or kept. */
Test(badversion, refused_and_returned)
{
	int fd = kt_open();
	uint8_t *gpu = kt_gpu_range(KB64);

	cr_assert_eq(kt_pin(fd, (uintptr_t)gpu, 1, 0, NULL), -EPROTO);
	cr_assert_eq(kt_pin(fd, (uintptr_t)gpu, 1, GDRFAB_PIN_REVOCABLE, NULL),
		     -EPROTO);
	cr_assert_eq(kt_stat("live"), 0, "rejected tables were not put back");
	close(fd);
}

Test(abi, mmap_errors)
{
	int fd = kt_open();
	uint8_t *gpu = kt_gpu_range(2 * KB64);
	struct gdrfab_ioc_pin pin;
	void *p;

	cr_assert_eq(kt_pin(fd, (uintptr_t)gpu, 2 * KB64, 0, &pin), 0);
	p = mmap(NULL, KB64, PROT_READ, MAP_PRIVATE, fd,
		 (off_t)pin.mmap_offset);
	cr_assert_eq(p, MAP_FAILED, "private mappings are refused");
	cr_assert_eq(kt_map(fd, &pin, 0, 3 * KB64), MAP_FAILED,
		     "past the region");
	cr_assert_eq(kt_map(fd, &pin, KB64, 2 * KB64), MAP_FAILED,
		     "offset plus length past the region");
	cr_assert_eq(mmap(NULL, KB64, PROT_READ, MAP_SHARED, fd,
			  (off_t)(pin.mmap_offset + 8 * KB64)),
		     MAP_FAILED, "no region there");
	p = kt_map(fd, &pin, KB64, KB64);
	cr_assert_neq(p, MAP_FAILED, "the second half alone");
	munmap(p, KB64);
	cr_assert_eq(kt_unpin(fd, pin.handle), 0);
	cr_assert_eq(kt_map(fd, &pin, 0, KB64), MAP_FAILED, "after unpin");
	close(fd);
}
