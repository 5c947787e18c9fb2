/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Receive bounce buffers going back to the SRQ. A buffer whose message is
 * handled goes back later, not in the call that found the message: that
 * call's time is the message's latency. They wait in a list
 * (gdrfab_rxbuf_repost_later) until repost_min of them are there
 * (progress flushes then), and go in one post of at most
 * GDRFAB_REPOST_BATCH: each ibv_post_srq_recv takes the SRQ's lock and
 * writes its producer index once, whatever the number of work requests.
 * A few buffers out of hundreds held back cost no RNR; repost_min shrinks
 * with a small SRQ (gdrfab_rxbuf_repost_min).
 */
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_proto.h"
#include "gdrfab_req.h"
#include "gdrfab_verbs_ops.h"

unsigned gdrfab_rxbuf_repost_min(size_t rxbuf_cnt)
{
	size_t n = rxbuf_cnt / 32;

	return (unsigned)GDRFAB_MAX(
		GDRFAB_MIN(n, (size_t)GDRFAB_REPOST_BATCH / 2), (size_t)1);
}

void gdrfab_rxbuf_repost_flush(struct gdrfab_proto *proto)
{
	struct ibv_sge sge[GDRFAB_REPOST_BATCH];
	struct ibv_recv_wr wr[GDRFAB_REPOST_BATCH], *bad;
	struct gdrfab_rxbuf *rb = proto->repost_head;
	int n = 0, err;

	for (; rb; rb = rb->next_repost, n++) {
		sge[n] = (struct ibv_sge){.addr = (uintptr_t)rb->data,
					  .length = (uint32_t)proto->rxbuf_size,
					  .lkey = proto->rx_mr->lkey};
		wr[n] = (struct ibv_recv_wr){.wr_id = (uintptr_t)rb,
					     .sg_list = &sge[n],
					     .num_sge = 1};
		if (n)
			wr[n - 1].next = &wr[n];
	}
	proto->repost_head = NULL;
	proto->repost_cnt = 0;
	if (!n)
		return;
	err = gdrfab_vops->post_srq_recv(proto->srq, wr, &bad);
	if (err)
		GDRFAB_WARN(FI_LOG_EP_DATA, "ibv_post_srq_recv: %s\n",
			    strerror(err));
}

/* At once, with any that wait for the next progress call. */
void gdrfab_rxbuf_repost(struct gdrfab_proto *proto, struct gdrfab_rxbuf *rxbuf)
{
	gdrfab_rxbuf_repost_later(proto, rxbuf);
	gdrfab_rxbuf_repost_flush(proto);
}
