/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Small host<->GPU copies through gdrfab.ko: /dev/gdrfab pins a window of
 * the GPU allocation and maps it for the CPU, and the copy is a memcpy
 * through that mapping instead of a CUDA copy and stream synchronisation.
 * Without the module (or past FI_GDRFAB_KMOD_COPY_MAX) the callers fall
 * back to CUDA; the first fallback for want of the module is logged once.
 */
#ifndef GDRFAB_KMOD_H
#define GDRFAB_KMOD_H

#include <stdbool.h>
#include <stddef.h>

/* Copies len bytes into (to_device) or out of GPU memory at gpu through
 * the module's mapping. true when done; false when the caller must copy
 * with CUDA (no module, too large, a pin that failed). */
bool gdrfab_kmod_copy(void *gpu, void *host, size_t len, bool to_device);

/* Unmaps and unpins everything (provider unload). */
void gdrfab_kmod_fini(void);

#endif /* GDRFAB_KMOD_H */
