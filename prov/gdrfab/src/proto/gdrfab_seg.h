/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Segmented eager messages (issue 34): a message of eager_max < len <=
 * seg_max goes as a GDRFAB_PKT_SEG packet (header and first bytes) and
 * continuations (GDRFAB_IMM_SEG, bytes alone), every piece through the
 * bounce buffers, instead of a rendezvous's round trip and READ. What
 * the two ends agree on (the pair's limit, from the connection
 * messages) and the receiver's reassembly of one message per connection
 * live here; the sender's posting is gdrfab_post.c's, the delivery of a
 * whole message gdrfab_recv.c's, as an eager message's.
 */
#ifndef GDRFAB_SEG_H
#define GDRFAB_SEG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gdrfab_wire.h"

/* The message a connection reassembles: RC keeps a queue pair's order
 * and the sender posts a message's packets back to back, so there is
 * at most one. */
struct gdrfab_seg_rx {
	/* The first packet's header (size: the whole message). */
	struct gdrfab_pkt_hdr hdr;
	uint8_t *buf; /* the bytes so far; NULL: none in reassembly */
	size_t got;
};

/* The cm_flags bits that announce a segment limit of seg_max bytes
 * (GDRFAB_CM_SEG_MASK; 0 for none). */
uint16_t gdrfab_seg_cm_flags(size_t seg_max);
/* The pair's limit: the smaller of ours (local) and the one the peer
 * announced in its cm_flags, or 0 (no segmented messages either way)
 * when it does not exceed eager_max. Both ends compute the same. */
size_t gdrfab_seg_pair_max(size_t local, uint16_t peer_cm_flags,
			   size_t eager_max);

/* Whether a message is in reassembly. */
static inline bool gdrfab_seg_rx_busy(const struct gdrfab_seg_rx *s)
{
	return s->buf != NULL;
}
/* Starts a message from its first packet (header h, n bytes at
 * payload; check_header checked that 0 < n < h->size). NULL, or why the
 * packet is refused (the caller fails the connection): too large for
 * the pair's limit seg_max or not above eager_max, a first piece larger
 * than eager_max, or no memory for it. */
const char *gdrfab_seg_rx_start(struct gdrfab_seg_rx *s,
				const struct gdrfab_pkt_hdr *h,
				const uint8_t *payload, size_t n,
				size_t seg_max, size_t eager_max);
/* Appends a continuation's n bytes. NULL, or why it is refused (none in
 * reassembly, empty, larger than eager_max or past the announced size).
 * *complete: the message is whole (take it with gdrfab_seg_rx_take). */
const char *gdrfab_seg_rx_append(struct gdrfab_seg_rx *s, const uint8_t *p,
				 size_t n, size_t eager_max, bool *complete);
/* Hands over the whole message: its header (as an EAGER message's, of
 * its full size, so that matching and delivery treat it as one) and its
 * bytes (the caller's to free); the connection has none in reassembly
 * after. */
uint8_t *gdrfab_seg_rx_take(struct gdrfab_seg_rx *s, struct gdrfab_pkt_hdr *h);
/* Forgets a message in reassembly (its connection failed or is freed). */
void gdrfab_seg_rx_clear(struct gdrfab_seg_rx *s);

#endif /* GDRFAB_SEG_H */
