// SPDX-License-Identifier: BSD-2-Clause
/*
 * Revocation racing unpin, mmap, munmap and faults, thousands of times. A
 * bug shows as a stale read (the stand-in's poison), a stand-in contract
 * violation (put_pages after the callback returned, a table freed twice or
 * never), a hang, or a WARN/BUG in dmesg (vm-run --check-dmesg).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kmod_helpers.h"

#define POISON 0x5a

static atomic_bool stop;

static void *revoker(void *arg)
{
	unsigned int i = 0;

	(void)arg;
	while (!atomic_load(&stop)) {
		/* Every few rounds, sleep inside the callback's lock. */
		kt_revoke(0, (i++ % 8) == 0 ? 1 : 0);
		if (i % 3)
			usleep(50);
	}
	return NULL;
}

static int iterations(void)
{
	const char *s = getenv("GDRFAB_KT_RACE_ITERS");

	return s ? atoi(s) : 3000;
}

Test(race, revoke_vs_unpin_mmap_munmap, .timeout = 600)
{
	int fd = kt_open();
	uint8_t *gpu = kt_gpu_range(4 * KB64);
	int n = iterations(), faults = 0, reads = 0, lost = 0;
	pthread_t t;

	atomic_store(&stop, false);
	cr_assert_eq(pthread_create(&t, NULL, revoker, NULL), 0);
	for (int i = 0; i < n; i++) {
		struct gdrfab_ioc_pin pin;
		uint64_t len = KB64 * (1 + i % 4);
		uint8_t *p, v;
		int ret;

		ret = kt_pin(fd, (uintptr_t)gpu, len, GDRFAB_PIN_REVOCABLE,
			     &pin);
		if (ret == -EAGAIN) { /* revoked before pin returned */
			lost++;
			continue;
		}
		cr_assert_eq(ret, 0, "pin %d: %d", i, ret);
		p = kt_map(fd, &pin, 0, len);
		if (p == MAP_FAILED) { /* revoked before mmap */
			lost++;
			cr_assert_eq(kt_unpin(fd, pin.handle), 0);
			continue;
		}
		for (uint64_t off = 0; off < len; off += 4096 * 5) {
			if (kt_store_faults(p + off, 0x11)) {
				faults++;
				continue;
			}
			if (kt_load_faults(p + off, &v)) {
				faults++;
				continue;
			}
			reads++;
			cr_assert(v == 0x11 || v == 0,
				  "iteration %d read %#x at %#lx%s", i, v,
				  (unsigned long)off,
				  v == POISON ? ": freed memory" : "");
		}
		/* Vary the order of munmap and unpin. */
		if (i % 2) {
			munmap(p, len);
			cr_assert_eq(kt_unpin(fd, pin.handle), 0);
		} else {
			cr_assert_eq(kt_unpin(fd, pin.handle), 0);
			munmap(p, len);
		}
	}
	atomic_store(&stop, true);
	pthread_join(t, NULL);
	close(fd);
	cr_log_info(
		"race: %d iterations, %d reads, %d faults, %d lost pins, %ld revoked, put_pages issued during/after a callback: %ld/%ld",
		n, reads, faults, lost, kt_stat("revoked"),
		kt_stat("put_during_callback"), kt_stat("put_after_callback"));
	cr_assert(reads > 0 && faults > 0, "the race was not exercised");
	cr_assert_eq(kt_stat("violations"), 0);
	cr_assert_eq(kt_stat("live"), 0);
}

/* Two threads of one owner pin, map and unpin while a third revokes. */
static void *pinner(void *arg)
{
	int fd = *(int *)arg, n = iterations() / 2;
	uint8_t *gpu = kt_gpu_range(KB64);

	for (int i = 0; i < n; i++) {
		struct gdrfab_ioc_pin pin;
		uint8_t *p, v;

		if (kt_pin(fd, (uintptr_t)gpu, KB64, GDRFAB_PIN_REVOCABLE,
			   &pin))
			continue;
		p = kt_map(fd, &pin, 0, KB64);
		if (p != MAP_FAILED) {
			if (!kt_load_faults(p + 64, &v) && v == POISON)
				return (void *)1;
			munmap(p, KB64);
		}
		kt_unpin(fd, pin.handle);
	}
	return NULL;
}

Test(race, threads_share_a_file, .timeout = 600)
{
	int fd = kt_open();
	pthread_t r, a, b;
	void *ra, *rb;

	atomic_store(&stop, false);
	cr_assert_eq(pthread_create(&r, NULL, revoker, NULL), 0);
	cr_assert_eq(pthread_create(&a, NULL, pinner, &fd), 0);
	cr_assert_eq(pthread_create(&b, NULL, pinner, &fd), 0);
	pthread_join(a, &ra);
	pthread_join(b, &rb);
	atomic_store(&stop, true);
	pthread_join(r, NULL);
	cr_assert_null(ra, "stale read");
	cr_assert_null(rb, "stale read");
	close(fd);
	cr_assert_eq(kt_stat("violations"), 0);
	cr_assert_eq(kt_stat("live"), 0);
}
