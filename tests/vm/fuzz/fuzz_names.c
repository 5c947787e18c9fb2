/* SPDX-License-Identifier: BSD-2-Clause */
/* Endpoint names in files, as hex (see fuzz_names.h). */
#include <stdio.h>
#include <string.h>

#include "fuzz_names.h"

int fuzz_name_write(const char *path, const uint8_t *name, size_t len)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f) {
		perror(tmp);
		return -1;
	}
	for (size_t i = 0; i < len; i++)
		fprintf(f, "%02x", name[i]);
	fprintf(f, "\n");
	if (fclose(f) || rename(tmp, path)) {
		perror(path);
		return -1;
	}
	return 0;
}

int fuzz_name_read(const char *path, uint8_t *name, size_t max, size_t *len)
{
	FILE *f = fopen(path, "r");
	unsigned byte;

	if (!f) {
		perror(path);
		return -1;
	}
	for (*len = 0; *len < max && fscanf(f, "%2x", &byte) == 1; (*len)++)
		name[*len] = (uint8_t)byte;
	fclose(f);
	if (!*len) {
		fprintf(stderr, "%s: no name in it\n", path);
		return -1;
	}
	return 0;
}
