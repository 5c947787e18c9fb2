/* SPDX-License-Identifier: BSD-2-Clause */
/* Helpers for the tests of gdrfab.ko against the p2p stand-in (in the VM). */
#ifndef KMOD_HELPERS_H
#define KMOD_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gdrfab/gdrfab_ioctl.h"

#define KB64 (64 * 1024ULL)

/* open(/dev/gdrfab); asserts. */
int kt_open(void);
/* The ioctls: 0 or -errno. */
int kt_pin(int fd, uint64_t addr, uint64_t len, uint32_t flags,
	   struct gdrfab_ioc_pin *out);
int kt_unpin(int fd, uint64_t handle);
int kt_info(int fd, uint64_t handle, struct gdrfab_ioc_info *out);
/* mmap of a pinned region (shared, read/write); MAP_FAILED on error. */
void *kt_map(int fd, const struct gdrfab_ioc_pin *pin, uint64_t off,
	     uint64_t len);

/* A 64 KB-aligned anonymous range to use as "GPU" addresses. */
void *kt_gpu_range(size_t len);

/* The stand-in's counter by name (gets, puts, revoked, live, ...). */
long kt_stat(const char *name);
/* Revokes tables covering addr (0: all) with a delay inside the callback. */
void kt_revoke(uint64_t addr, unsigned int delay_ms);
/* The next get_pages fails with -err. */
void kt_fail_next_get(int err);
/* Writes a gdrfab.ko parameter; returns the old value. */
unsigned long kt_set_param(const char *name, unsigned long value);

/*
 * Loads (or stores) one byte at p, catching SIGBUS: true when it faulted.
 * *val gets what was read.
 */
bool kt_load_faults(volatile const uint8_t *p, uint8_t *val);
bool kt_store_faults(volatile uint8_t *p, uint8_t val);

#endif
