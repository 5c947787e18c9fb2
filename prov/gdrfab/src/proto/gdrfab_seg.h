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

#include "gdrfab_sizepool.h"
#include "gdrfab_wire.h"

struct gdrfab_req;

/* The message a connection receives in pieces: RC keeps a queue pair's
 * order and the sender posts a message's packets back to back, so there
 * is at most one. Its bytes go straight into the receive it matched at
 * its first packet (recv: one of host memory, taken off the posted list
 * then), or, with none such, into buf, to be matched when whole. */
struct gdrfab_seg_rx {
	/* The first packet's header (size: the whole message). */
	struct gdrfab_pkt_hdr hdr;
	size_t got; /* bytes of it received so far */
	uint8_t *buf;
	/* recv: the receive filled in place; off: where the message starts
	 * in it; fit: the message's bytes it holds (fewer: truncated); host:
	 * its buffers were found host memory (not asked again); err: the
	 * first copy's error (FI_E*, negative), reported at the end. Not a
	 * reference: a failing connection fails the receive
	 * (gdrfab_conn_fail). */
	struct gdrfab_req *recv;
	size_t off, fit;
	bool host;
	int err;
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
	return s->buf != NULL || s->recv != NULL;
}
/* Whether a message's first packet (header h, n bytes after it;
 * check_header checked that 0 < n < h->size) may start: NULL, or why it
 * is refused (the caller fails the connection): too large for the
 * pair's limit seg_max or not above eager_max, or a first piece larger
 * than eager_max. */
const char *gdrfab_seg_rx_check(const struct gdrfab_pkt_hdr *h, size_t n,
				size_t seg_max, size_t eager_max);
/* Starts a checked message into a buffer of its size taken from pool
 * (the endpoint's rx_pool), its first n bytes at payload copied: NULL,
 * or why not (no memory). */
const char *gdrfab_seg_rx_start(struct gdrfab_seg_rx *s,
				struct gdrfab_sizepool *pool,
				const struct gdrfab_pkt_hdr *h,
				const uint8_t *payload, size_t n);
/* Starts a checked message into the receive recv, of which it takes fit
 * bytes from off; its first n bytes counted (the caller copies them). */
void gdrfab_seg_rx_start_in(struct gdrfab_seg_rx *s,
			    const struct gdrfab_pkt_hdr *h, size_t n,
			    struct gdrfab_req *recv, size_t off, size_t fit,
			    bool host);
/* Takes a continuation's n bytes: copied into buf, or only counted when
 * a receive is filled in place (the caller copies them from the offset
 * got had before). NULL, or why it is refused (none in reassembly,
 * empty, larger than eager_max or past the announced size). *complete:
 * the message is whole (take it with gdrfab_seg_rx_take). */
const char *gdrfab_seg_rx_append(struct gdrfab_seg_rx *s, const uint8_t *p,
				 size_t n, size_t eager_max, bool *complete);
/* Hands over the whole message: its header (as an EAGER message's, of
 * its full size, so that matching and delivery treat it as one) and its
 * bytes (the caller's to put back into the pool they came from; NULL for one
 * filled in place, whose receive and the rest the caller read before); the
 * connection has none in reassembly after. */
uint8_t *gdrfab_seg_rx_take(struct gdrfab_seg_rx *s, struct gdrfab_pkt_hdr *h);
/* Forgets a message in reassembly (its connection failed, and failed its
 * receive, or is freed), its buffer put back into pool. */
void gdrfab_seg_rx_clear(struct gdrfab_seg_rx *s, struct gdrfab_sizepool *pool);

#endif /* GDRFAB_SEG_H */
