/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where the counters go when an endpoint or a domain closes
 * (FI_GDRFAB_STATS): nowhere, stderr, or a file per process.
 */
#ifndef GDRFAB_STATS_OUT_H
#define GDRFAB_STATS_OUT_H

#include <stdbool.h>

#include "gdrfab_stats_fmt.h"

/* Whether FI_GDRFAB_STATS asks for tables at close. */
bool gdrfab_stats_wanted(void);
/* Prints the table (scope "endpoint" or "domain", nic the device) where
 * FI_GDRFAB_STATS says; a file is appended to, so that every endpoint
 * and domain of the process lands in it. Failures are logged. */
void gdrfab_stats_emit(const char *scope, const char *nic,
		       const struct fi_gdrfab_stats *s);

#endif /* GDRFAB_STATS_OUT_H */
