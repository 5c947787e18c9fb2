/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The counters' public form (struct fi_gdrfab_stats) made, summed, printed
 * as a table and read back. Nothing here needs the provider: the
 * gdrfab_stat tool, which sums a job's tables, is built from this file
 * alone.
 *
 * The table (one per endpoint or domain closed, appended to the file that
 * FI_GDRFAB_STATS names):
 *   gdrfab stats: SCOPE NIC host=HOST pid=PID
 *     counter                        value
 *     tx_eager_msgs                     12      (every counter, in order)
 *     peer   fi_addr  tx_msgs  tx_bytes  rx_msgs  rx_bytes  errors
 *     peer         3       12        96       12        96       0
 *     peer     other  ...                   (only when not zero)
 *     rail  index nic   stripe_ops  stripe_bytes  errors  back
 *     rail      0 rxe0          16      8388608       0     0
 *     rail      1 rxe2          16      8388608       0     1
 *                         (rail rows: a rail-set domain's only)
 *   end
 */
#ifndef GDRFAB_STATS_FMT_H
#define GDRFAB_STATS_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <rdma/fabric.h>

#include "gdrfab_stats.h"

/* A counter's name (its field's in struct fi_gdrfab_stats), or NULL. */
const char *gdrfab_stats_name(unsigned id);
/* The counter of that name, or -1. */
int gdrfab_stats_lookup(const char *name);
/* A counter of the public struct by its id. */
uint64_t *gdrfab_stats_field(struct fi_gdrfab_stats *s, unsigned id);

/* The public form of an endpoint's counters (a whole struct). */
void gdrfab_stats_export(const struct gdrfab_stats *s,
			 struct fi_gdrfab_stats *out);
/* Adds src to dst: counters summed (gpu_path kept where dst has none),
 * peers merged by fi_addr (those that find no room go to peer_other). */
void gdrfab_stats_sum(struct fi_gdrfab_stats *dst,
		      const struct fi_gdrfab_stats *src);
/* The row of the rail whose NIC is name (added when new; the last row,
 * renamed "other", once every row is taken). */
struct fi_gdrfab_rail_stats *gdrfab_stats_rail_row(struct fi_gdrfab_stats *s,
						   const char *name);
/* Copies a whole struct into an application's, as far as its size says
 * (fi_gdrfab_stats_ops.read): 0 or -FI_EINVAL. */
int gdrfab_stats_copy_out(const struct fi_gdrfab_stats *all,
			  struct fi_gdrfab_stats *out);

/* Prints the table; title is "SCOPE NIC host=HOST pid=PID" or any
 * words, the first of which is the scope. 0, or -1 on a write error. */
int gdrfab_stats_print(FILE *f, const char *title,
		       const struct fi_gdrfab_stats *s);

/* Reads the tables in f, calling fn for each complete one with its scope
 * (the title's first word) and counters. Returns the tables read, or -1
 * when a table is malformed (line says which line). */
typedef void (*gdrfab_stats_fn)(const char *scope,
				const struct fi_gdrfab_stats *s, void *arg);
int gdrfab_stats_parse(FILE *f, gdrfab_stats_fn fn, void *arg, int *line);

/* The file FI_GDRFAB_STATS=pattern names for this process: %h is the
 * host name, %p the process id, %% a percent sign; a pattern without %p
 * gets ".%h.%p" appended, so that a job's processes never share a file.
 * 0, or -1 when it does not fit in len. */
int gdrfab_stats_path(const char *pattern, const char *host, long pid,
		      char *out, size_t len);

#endif /* GDRFAB_STATS_FMT_H */
