/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connection messages over the endpoint's UD queue pair: receive slots,
 * sends, and keeping the QP in service.
 *
 * The QP's number is in the endpoint's name, so anyone may send to it. A
 * datagram longer than a receive slot would end that receive in error and
 * move the QP to the error state, so every slot holds the largest payload
 * any port carries (4096 bytes, InfiniBand's largest MTU) after the GRH.
 * Should the QP leave RTS anyway (a device error, a packet crafted below
 * verbs), progress notices it from a failed or flushed completion or an
 * asynchronous event, waits for the QP's work to come back flushed, and
 * resets it to RTS: a reset keeps the QP number, so the endpoint keeps its
 * name. Work requests carry the QP's incarnation, so completions the old
 * one left behind are ignored.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_ah_cache.h"
#include "gdrfab_conn.h"
#include "gdrfab_proto.h"
#include "gdrfab_ud.h"
#include "gdrfab_verbs_ops.h"

#define GRH_LEN	       40
#define UD_MAX_PAYLOAD 4096
/* Receive slots: plenty for the peers that connect between two polls;
 * UD drops what does not fit and the resend timers recover it. */
#define UD_RX_SLOTS	64
#define UD_RX_SLOT_SIZE (GRH_LEN + UD_MAX_PAYLOAD)
/* Transmit slots, one bit each in ud_tx_busy. */
#define UD_TX_SLOTS 64
/* A slot holds the longest message: a REP or RTU with every rail. */
#define UD_MSG_MAX                                                             \
	(sizeof(struct gdrfab_cm_msg) + sizeof(struct gdrfab_cm_rails))
#define UD_TX_SLOT_SIZE ((UD_MSG_MAX + 63) & ~(size_t)63)
#define UD_SEND_FLAG	(1ULL << 63)
/* A QP in error whose work has not all come back flushed after this long
 * is reset anyway; its incarnation tells old completions apart. */
#define UD_FLUSH_WAIT_MS 100

_Static_assert(UD_MSG_MAX <= UD_MAX_PAYLOAD,
	       "a connection message fits any port's MTU");

size_t gdrfab_ud_mem_size(void)
{
	return UD_RX_SLOTS * UD_RX_SLOT_SIZE + UD_TX_SLOTS * UD_TX_SLOT_SIZE;
}

static uint64_t wr_id(struct gdrfab_proto *proto, uint64_t slot)
{
	return (uint64_t)(proto->ud_gen & 0x7fffffff) << 32 | slot;
}

static int post_recv(struct gdrfab_proto *proto, uint64_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(proto->ud_mem + slot * UD_RX_SLOT_SIZE),
		.length = UD_RX_SLOT_SIZE,
		.lkey = proto->ud_mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = wr_id(proto, slot), .sg_list = &sge, .num_sge = 1};
	struct ibv_recv_wr *bad;
	int err = gdrfab_vops->post_recv(proto->ud_qp, &wr, &bad);

	if (!err)
		proto->ud_rx_posted++;
	return err;
}

int gdrfab_ud_post_recvs(struct gdrfab_proto *proto)
{
	proto->ud_owner.noticed = &proto->async_events;
	proto->ud_qp->qp_context = &proto->ud_owner;
	for (unsigned i = 0; i < UD_RX_SLOTS; i++) {
		int err = post_recv(proto, i);

		if (err)
			return gdrfab_errno_to_fi(err);
	}
	return 0;
}

/* The QP is (or may be) out of RTS: stop reposting until it is reset. */
static void mark_broken(struct gdrfab_proto *proto, const char *why)
{
	if (proto->ud_broken)
		return;
	proto->ud_broken = true;
	proto->ud_broken_ms = gdrfab_tick_ms();
	GDRFAB_WIRE_WARN(
		proto, FI_LOG_EP_CTRL,
		"connection QP %u left the ready state (%s): resetting it",
		proto->ud_qp->qp_num, why);
}

bool gdrfab_ud_send(struct gdrfab_proto *proto, const struct gdrfab_addr *peer,
		    bool local, const struct gdrfab_cm_msg *msg)
{
	return gdrfab_ud_send_len(proto, peer, local, msg, sizeof(*msg));
}

bool gdrfab_ud_send_len(struct gdrfab_proto *proto,
			const struct gdrfab_addr *peer, bool local,
			const struct gdrfab_cm_msg *msg, size_t len)
{
	struct ibv_ah *ah;
	unsigned slot;
	void *buf;
	struct ibv_sge sge = {.length = (uint32_t)len,
			      .lkey = proto->ud_mr->lkey};
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;
	int err;

	if (proto->ud_broken)
		return false;
	/* A slot is reused only once its send completed: the NIC reads it
	 * after ibv_post_send returns. With every slot in flight the
	 * message is dropped as UD could drop it, and resent later. */
	if (!~proto->ud_tx_busy)
		return false;
	if (gdrfab_ah_get(proto->env.ah_cache, peer, local, &ah) !=
	    GDRFAB_AH_READY)
		return false;
	slot = (unsigned)__builtin_ctzll(~proto->ud_tx_busy);
	buf = proto->ud_mem + UD_RX_SLOTS * UD_RX_SLOT_SIZE +
	      slot * UD_TX_SLOT_SIZE;
	memcpy(buf, msg, len);
	sge.addr = (uintptr_t)buf;
	wr.wr_id = UD_SEND_FLAG | wr_id(proto, slot);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = ntohl(peer->qpn_be);
	wr.wr.ud.remote_qkey = GDRFAB_UD_QKEY;
	err = gdrfab_vops->post_send(proto->ud_qp, &wr, &bad);
	if (err) {
		GDRFAB_WIRE_WARN(proto, FI_LOG_EP_CTRL,
				 "UD send of connection message %d: %s",
				 msg->type, strerror(err));
		return false;
	}
	proto->ud_tx_busy |= 1ULL << slot;
	return true;
}

static void send_done(struct gdrfab_proto *proto, const struct ibv_wc *wc)
{
	proto->ud_tx_busy &= ~(1ULL << (wc->wr_id & 63));
	if (wc->status == IBV_WC_SUCCESS)
		return;
	if (wc->status == IBV_WC_WR_FLUSH_ERR)
		mark_broken(proto, "send flushed");
	else
		GDRFAB_WIRE_WARN(proto, FI_LOG_EP_CTRL, "UD send: %s",
				 ibv_wc_status_str(wc->status));
}

static void recv_done(struct gdrfab_proto *proto, const struct ibv_wc *wc)
{
	uint64_t slot = wc->wr_id & 0xffffffff;
	uint8_t *buf = proto->ud_mem + slot * UD_RX_SLOT_SIZE;

	proto->ud_rx_posted--;
	if (wc->status == IBV_WC_WR_FLUSH_ERR) {
		mark_broken(proto, "receive flushed");
		return;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		GDRFAB_WIRE_WARN(proto, FI_LOG_EP_CTRL,
				 "UD receive: %s (%u bytes)",
				 ibv_wc_status_str(wc->status), wc->byte_len);
		/* Some devices end only the receive, others the QP too. */
		if (!gdrfab_ud_in_rts(proto->ud_qp)) {
			mark_broken(proto, ibv_wc_status_str(wc->status));
			return;
		}
	} else if (wc->byte_len >= GRH_LEN) {
		gdrfab_conn_handle_cm(proto, buf + GRH_LEN,
				      wc->byte_len - GRH_LEN);
	}
	if (post_recv(proto, slot))
		mark_broken(proto, "receive repost refused");
}

void gdrfab_conn_poll_ud(struct gdrfab_proto *proto)
{
	struct ibv_wc wc[8];
	int n;

	while ((n = gdrfab_vops->poll_cq(proto->ud_cq, 8, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			uint32_t gen =
				(uint32_t)(wc[i].wr_id >> 32) & 0x7fffffff;

			/* Left by an incarnation before the last reset. */
			if (gen != (proto->ud_gen & 0x7fffffff))
				continue;
			if (wc[i].wr_id & UD_SEND_FLAG)
				send_done(proto, &wc[i]);
			else
				recv_done(proto, &wc[i]);
		}
	}
}

void gdrfab_ud_check(struct gdrfab_proto *proto)
{
	int event = atomic_exchange(&proto->ud_owner.event, 0);
	int err;

	if (event)
		mark_broken(proto, ibv_event_type_str(
					   (enum ibv_event_type)(event - 1)));
	if (!proto->ud_broken)
		return;
	/* Wait for the posted work to come back flushed, a while. */
	if ((proto->ud_rx_posted || proto->ud_tx_busy) &&
	    gdrfab_tick_ms() - proto->ud_broken_ms < UD_FLUSH_WAIT_MS)
		return;
	err = gdrfab_ud_reset(proto->ud_qp, proto->env.port_num);
	if (err) {
		GDRFAB_WIRE_WARN(
			proto, FI_LOG_EP_CTRL,
			"connection QP %u cannot be reset: %s; peers cannot connect to this endpoint",
			proto->ud_qp->qp_num, strerror(err));
		return;
	}
	proto->ud_gen++;
	proto->ud_rx_posted = 0;
	proto->ud_tx_busy = 0;
	proto->ud_broken = false;
	for (unsigned i = 0; i < UD_RX_SLOTS; i++) {
		if ((err = post_recv(proto, i))) {
			mark_broken(proto, "receive post refused");
			return;
		}
	}
	GDRFAB_WIRE_WARN(
		proto, FI_LOG_EP_CTRL,
		"connection QP %u is ready again, same number: peers reach this endpoint by its name as before",
		proto->ud_qp->qp_num);
}
