/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Endpoint names handed between the processes of the UD fuzzing run
 * (fuzz_peer, fuzz_ud) through files, as one line of hex: no process
 * needs a socket, and the driver can print them.
 */
#ifndef FUZZ_NAMES_H
#define FUZZ_NAMES_H

#include <stddef.h>
#include <stdint.h>

#define FUZZ_NAME_MAX 64

/* 0 or -1 (printed on stderr). The write is atomic (rename), so that a
 * reader polling for the file never sees half a name. */
int fuzz_name_write(const char *path, const uint8_t *name, size_t len);
int fuzz_name_read(const char *path, uint8_t *name, size_t max, size_t *len);

#endif /* FUZZ_NAMES_H */
