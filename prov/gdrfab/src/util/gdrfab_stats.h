/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What an endpoint did, counted as it happens: messages by path, RMA, GPU
 * buffers by GPUDirect or staging, connections, errors, and a small table
 * per peer. Always on, so each count is a plain increment: the endpoint's
 * counters live in its protocol state and are only touched under the
 * endpoint's lock, which every counting place already holds (no atomic,
 * no branch but the peer table's). The public view, its reading through
 * fi_open_ops and the table printed at close are struct fi_gdrfab_stats
 * (rdma/fi_ext_gdrfab.h) and gdrfab_stats_fmt.h.
 */
#ifndef GDRFAB_STATS_H
#define GDRFAB_STATS_H

#include <stdint.h>

#include <rdma/fi_ext_gdrfab.h>

/* Every counter, in the order of struct fi_gdrfab_stats's fields from
 * tx_eager_msgs to endpoints (gdrfab_stats_fmt.c checks that at compile
 * time), and so in the order the table prints them. */
#define GDRFAB_STATS_LIST(X)                                                   \
	X(tx_eager_msgs)                                                       \
	X(tx_eager_bytes)                                                      \
	X(tx_rndv_msgs)                                                        \
	X(tx_rndv_bytes)                                                       \
	X(rx_eager_msgs)                                                       \
	X(rx_eager_bytes)                                                      \
	X(rx_rndv_msgs)                                                        \
	X(rx_rndv_bytes)                                                       \
	X(rx_unexpected_msgs)                                                  \
	X(rma_write_ops)                                                       \
	X(rma_write_bytes)                                                     \
	X(rma_read_ops)                                                        \
	X(rma_read_bytes)                                                      \
	X(rma_emulated_ops)                                                    \
	X(atomic_ops)                                                          \
	X(gpu_direct_ops)                                                      \
	X(gpu_direct_bytes)                                                    \
	X(gpu_staged_ops)                                                      \
	X(gpu_staged_bytes)                                                    \
	X(gpu_copied_ops)                                                      \
	X(gpu_copied_bytes)                                                    \
	X(conn_requested)                                                      \
	X(conn_accepted)                                                       \
	X(conn_established)                                                    \
	X(conn_failed)                                                         \
	X(conn_resends)                                                        \
	X(reconnects)                                                          \
	X(err_completions)                                                     \
	X(err_verbs)                                                           \
	X(err_unreachable)                                                     \
	X(err_timeout)                                                         \
	X(err_truncated)                                                       \
	X(err_canceled)                                                        \
	X(err_other)                                                           \
	X(mr_cache_hits)                                                       \
	X(mr_cache_misses)                                                     \
	X(mr_cache_evictions)                                                  \
	X(mr_cache_host_hits)                                                  \
	X(mr_cache_host_misses)                                                \
	X(gpu_path)                                                            \
	X(endpoints)

enum gdrfab_stat {
#define GDRFAB_STAT_ENUM(name) GDRFAB_STAT_##name,
	GDRFAB_STATS_LIST(GDRFAB_STAT_ENUM)
#undef GDRFAB_STAT_ENUM
		GDRFAB_STAT_COUNT
};

/* A peer's row: key is its fi_addr + 1, 0 while the row is free (so a
 * zeroed table is empty). FI_ADDR_NOTAVAIL's key is 0 too: it counts in
 * a free row without taking it, and what a free row holds belongs to
 * other (gdrfab_stats_export; a peer that takes the row moves it there
 * first), which keeps the hit one compare. 64 bytes: the row's address
 * is a shift. */
struct gdrfab_stat_peer {
	uint64_t key;
	uint64_t tx_msgs, tx_bytes, rx_msgs, rx_bytes, errors;
	uint64_t pad[2];
};

/* A power of two: a peer's row is its fi_addr's low bits, so that the
 * lookup is one load and one compare. AV indices are dense (MPI inserts
 * ranks in order), so the first FI_GDRFAB_STATS_PEERS peers each get a
 * row; a peer whose row another holds counts in other. */
#define GDRFAB_STAT_PEERS FI_GDRFAB_STATS_PEERS

/* A rail's share of a rail-set endpoint's traffic (struct
 * fi_gdrfab_rail_stats without its name, which is fixed: kept apart, so
 * that the row a piece counts in stays four words), and the times a
 * connection took it back after a failure (fi_gdrfab_stats' rail_back). */
struct gdrfab_stat_rail {
	uint64_t stripe_ops, stripe_bytes, errors, back;
};

struct gdrfab_stats {
	uint64_t c[GDRFAB_STAT_COUNT];
	struct gdrfab_stat_peer peers[GDRFAB_STAT_PEERS];
	struct gdrfab_stat_peer other;
	/* Rails: 0 for an endpoint of one NIC (nothing counted), else its
	 * domain's rails, rail 0 first (gdrfab_stats_rails_init). */
	size_t nrails;
	struct gdrfab_stat_rail rails[FI_GDRFAB_STATS_RAILS];
	char rail_name[FI_GDRFAB_STATS_RAILS][FI_GDRFAB_RAIL_NAME_LEN];
};

static inline void gdrfab_stat_inc(struct gdrfab_stats *s, enum gdrfab_stat id)
{
	s->c[id]++;
}

static inline void gdrfab_stat_add(struct gdrfab_stats *s, enum gdrfab_stat id,
				   uint64_t n)
{
	s->c[id] += n;
}

/* An operation of n bytes: its count and its bytes (id, id + 1). */
static inline void gdrfab_stat_op(struct gdrfab_stats *s, enum gdrfab_stat id,
				  uint64_t n)
{
	s->c[id]++;
	s->c[id + 1] += n;
}

/* A free row taken by the peer of key: what it held goes to other. */
struct gdrfab_stat_peer *gdrfab_stat_peer_take(struct gdrfab_stats *s,
					       struct gdrfab_stat_peer *p,
					       uint64_t key);

/* The row of the peer at fi_addr (taken if free), or other. */
static inline struct gdrfab_stat_peer *gdrfab_stat_peer(struct gdrfab_stats *s,
							uint64_t fi_addr)
{
	struct gdrfab_stat_peer *p =
		&s->peers[fi_addr & (GDRFAB_STAT_PEERS - 1)];
	uint64_t key = fi_addr + 1;

	if (p->key == key)
		return p;
	if (!p->key)
		return gdrfab_stat_peer_take(s, p, key);
	return &s->other;
}

static inline void gdrfab_stat_peer_tx(struct gdrfab_stats *s, uint64_t fi_addr,
				       uint64_t n)
{
	struct gdrfab_stat_peer *p = gdrfab_stat_peer(s, fi_addr);

	p->tx_msgs++;
	p->tx_bytes += n;
}

static inline void gdrfab_stat_peer_rx(struct gdrfab_stats *s, uint64_t fi_addr,
				       uint64_t n)
{
	struct gdrfab_stat_peer *p = gdrfab_stat_peer(s, fi_addr);

	p->rx_msgs++;
	p->rx_bytes += n;
}

static inline void gdrfab_stat_peer_error(struct gdrfab_stats *s,
					  uint64_t fi_addr)
{
	gdrfab_stat_peer(s, fi_addr)->errors++;
}

/* Names the endpoint's n rails (names[i] the NIC of rail i, NULL: "?");
 * n of 1 (one NIC) or more than FI_GDRFAB_STATS_RAILS counts none. */
void gdrfab_stats_rails_init(struct gdrfab_stats *s, size_t n,
			     const char *const *names);

/* A piece of n bytes of a striped message posted on rail (below
 * nrails: striping happens only on endpoints of several rails). */
static inline void gdrfab_stat_rail_piece(struct gdrfab_stats *s, size_t rail,
					  uint64_t n)
{
	s->rails[rail].stripe_ops++;
	s->rails[rail].stripe_bytes += n;
}

/* A failed work completion on rail (none counted with no rails). */
static inline void gdrfab_stat_rail_error(struct gdrfab_stats *s, size_t rail)
{
	if (rail < s->nrails)
		s->rails[rail].errors++;
}

/* A connection took rail back after a failure (gdrfab_rail_back.h). */
static inline void gdrfab_stat_rail_back(struct gdrfab_stats *s, size_t rail)
{
	if (rail < s->nrails)
		s->rails[rail].back++;
}

/* An error completion written for the application (the object layer's
 * one report point): err is its FI_E* (positive), prov_errno its
 * provider's value. */
void gdrfab_stats_count_error(struct gdrfab_stats *s, int err, int prov_errno);

#endif /* GDRFAB_STATS_H */
