/* SPDX-License-Identifier: BSD-2-Clause */
/* Segmented eager messages: the pair's limit and the receiver's
 * reassembly (gdrfab_seg.h). */
#include <string.h>

#include "gdrfab_params.h"
#include "gdrfab_seg.h"

uint16_t gdrfab_seg_cm_flags(size_t seg_max)
{
	size_t units = seg_max / GDRFAB_SEG_UNIT;

	if (units > GDRFAB_CM_SEG_MASK >> GDRFAB_CM_SEG_SHIFT)
		units = GDRFAB_CM_SEG_MASK >> GDRFAB_CM_SEG_SHIFT;
	return (uint16_t)(units << GDRFAB_CM_SEG_SHIFT);
}

size_t gdrfab_seg_pair_max(size_t local, uint16_t peer_cm_flags,
			   size_t eager_max)
{
	size_t peer = (size_t)((peer_cm_flags & GDRFAB_CM_SEG_MASK) >>
			       GDRFAB_CM_SEG_SHIFT) *
		      GDRFAB_SEG_UNIT;
	/* Ours as announced: in whole units, as the peer reads it. */
	size_t mine =
		(size_t)(gdrfab_seg_cm_flags(local) >> GDRFAB_CM_SEG_SHIFT) *
		GDRFAB_SEG_UNIT;
	size_t pair = mine < peer ? mine : peer;

	return pair > eager_max ? pair : 0;
}

const char *gdrfab_seg_rx_check(const struct gdrfab_pkt_hdr *h, size_t n,
				size_t seg_max, size_t eager_max)
{
	if (h->size > seg_max)
		return "a segmented message larger than the pair's limit";
	if (h->size <= eager_max)
		return "a segmented message within the eager limit";
	if (n > eager_max)
		return "a segmented message's first piece exceeds the eager limit";
	return NULL;
}

const char *gdrfab_seg_rx_start(struct gdrfab_seg_rx *s,
				struct gdrfab_sizepool *pool,
				const struct gdrfab_pkt_hdr *h,
				const uint8_t *payload, size_t n)
{
	s->buf = gdrfab_sizepool_get(pool, h->size);
	if (!s->buf)
		return "no memory to reassemble a segmented message";
	s->hdr = *h;
	memcpy(s->buf, payload, n);
	s->got = n;
	return NULL;
}

void gdrfab_seg_rx_start_in(struct gdrfab_seg_rx *s,
			    const struct gdrfab_pkt_hdr *h, size_t n,
			    struct gdrfab_req *recv, size_t off, size_t fit,
			    bool host)
{
	s->hdr = *h;
	s->got = n;
	s->recv = recv;
	s->off = off;
	s->fit = fit;
	s->host = host;
	s->err = 0;
}

const char *gdrfab_seg_rx_append(struct gdrfab_seg_rx *s, const uint8_t *p,
				 size_t n, size_t eager_max, bool *complete)
{
	*complete = false;
	if (!gdrfab_seg_rx_busy(s))
		return "a continuation with no segmented message in reassembly";
	if (!n || n > eager_max)
		return "a continuation of no bytes or more than the eager limit";
	if (n > s->hdr.size - s->got)
		return "a continuation past the segmented message's size";
	if (s->buf)
		memcpy(s->buf + s->got, p, n);
	s->got += n;
	*complete = s->got == s->hdr.size;
	return NULL;
}

uint8_t *gdrfab_seg_rx_take(struct gdrfab_seg_rx *s, struct gdrfab_pkt_hdr *h)
{
	uint8_t *buf = s->buf;

	*h = s->hdr;
	h->type = GDRFAB_PKT_EAGER;
	s->buf = NULL;
	s->recv = NULL;
	s->got = 0;
	return buf;
}

void gdrfab_seg_rx_clear(struct gdrfab_seg_rx *s, struct gdrfab_sizepool *pool)
{
	gdrfab_sizepool_put(pool, s->buf);
	s->buf = NULL;
	s->recv = NULL;
	s->got = 0;
}
