/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connections, made on demand: the first operation to a peer creates an RC
 * QP and sends a REQ to the peer's UD QP (named in its address); the peer
 * connects its own RC QP and answers REP; the first side connects and says
 * RTU. UD is unreliable, so REQ and REP are resent until answered or until
 * FI_GDRFAB_CONN_TIMEOUT_MS. When both sides connect at once, the side with
 * the smaller name stays active and the other answers its REQ. A REQ from a
 * known peer with a new QP means the peer lost its old connection: ours is
 * failed and replaced. An endpoint's connection to itself is one QP
 * connected to itself.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "gdrfab.h"
#include "gdrfab_objs.h"
#include "gdrfab_params.h"
#include "gdrfab_proto.h"
#include "gdrfab_rc.h"
#include "gdrfab_strerror.h"
#include "gdrfab_ud.h"

#define GRH_LEN 40
/* Enough receive slots for 128 peers connecting at once between two polls;
 * UD drops what does not fit and the resend timer recovers it. */
#define UD_RX_SLOTS 128
/* One bit each in ud_tx_busy. */
#define UD_TX_SLOTS	64
#define UD_SLOT_SIZE	(GRH_LEN + sizeof(struct gdrfab_cm_msg))
#define UD_SEND_FLAG	(1ULL << 63)
#define RESEND_FIRST_MS 20
#define RESEND_MAX_MS	1000

static void rc_params(struct gdrfab_proto *proto, struct gdrfab_rc_params *p)
{
	struct gdrfab_domain *domain = proto->ep->domain;

	memset(p, 0, sizeof(*p));
	p->pd = proto->pd;
	p->cq = proto->cq;
	p->srq = proto->srq;
	p->port_num = domain->port_num;
	p->gid_index = domain->gid_index;
	p->roce = !domain->port_addr.lid_be;
	p->sq_depth = proto->sq_depth;
	p->max_sge = proto->max_sge;
	p->max_rd_atomic = proto->max_rd_atomic;
	p->timeout = gdrfab_rc_timeout_for_ms(gdrfab_params.peer_timeout_ms);
}

/* ---- RC QP number -> connection (open addressing, linear probing) ---- */

static size_t qpn_slot(struct gdrfab_proto *proto, uint32_t qpn)
{
	return (qpn * 2654435761u) & (proto->qpn_table_size - 1);
}

static int qpn_insert(struct gdrfab_proto *proto, struct gdrfab_conn *conn);

static int qpn_grow(struct gdrfab_proto *proto)
{
	struct gdrfab_conn **old = proto->qpn_table;
	size_t old_size = proto->qpn_table_size;

	proto->qpn_table_size = old_size ? old_size * 2 : 64;
	proto->qpn_table = calloc(proto->qpn_table_size, sizeof(*old));
	if (!proto->qpn_table) {
		proto->qpn_table = old;
		proto->qpn_table_size = old_size;
		return -FI_ENOMEM;
	}
	proto->qpn_used = 0;
	for (size_t i = 0; i < old_size; i++) {
		if (old[i])
			qpn_insert(proto, old[i]);
	}
	free(old);
	return 0;
}

/* Keeps the table at most half full, so probe runs stay short. */
static int qpn_insert(struct gdrfab_proto *proto, struct gdrfab_conn *conn)
{
	size_t i;

	if (2 * (proto->qpn_used + 1) > proto->qpn_table_size &&
	    qpn_grow(proto))
		return -FI_ENOMEM;
	i = qpn_slot(proto, conn->qp->qp_num);
	while (proto->qpn_table[i])
		i = (i + 1) & (proto->qpn_table_size - 1);
	proto->qpn_table[i] = conn;
	proto->qpn_used++;
	return 0;
}

static void qpn_remove(struct gdrfab_proto *proto, struct gdrfab_conn *conn)
{
	size_t mask = proto->qpn_table_size - 1, i, j;

	if (!proto->qpn_table_size)
		return;
	i = qpn_slot(proto, conn->qp->qp_num);
	while (proto->qpn_table[i] && proto->qpn_table[i] != conn)
		i = (i + 1) & mask;
	if (!proto->qpn_table[i])
		return;
	proto->qpn_table[i] = NULL;
	proto->qpn_used--;
	/* Re-place the rest of the probe run. */
	for (j = (i + 1) & mask; proto->qpn_table[j]; j = (j + 1) & mask) {
		struct gdrfab_conn *c = proto->qpn_table[j];

		proto->qpn_table[j] = NULL;
		proto->qpn_used--;
		qpn_insert(proto, c);
	}
}

struct gdrfab_conn *gdrfab_conn_by_qpn(struct gdrfab_proto *proto, uint32_t qpn)
{
	size_t mask = proto->qpn_table_size - 1, i;

	if (!proto->qpn_table_size)
		return NULL;
	for (i = qpn_slot(proto, qpn); proto->qpn_table[i];
	     i = (i + 1) & mask) {
		if (proto->qpn_table[i]->qp->qp_num == qpn)
			return proto->qpn_table[i];
	}
	return NULL;
}

/* ---- UD messages ---- */

int gdrfab_ud_post_recvs(struct gdrfab_proto *proto)
{
	for (unsigned i = 0; i < UD_RX_SLOTS; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)(proto->ud_mem + i * UD_SLOT_SIZE),
			.length = UD_SLOT_SIZE,
			.lkey = proto->ud_mr->lkey,
		};
		struct ibv_recv_wr wr = {
			.wr_id = i, .sg_list = &sge, .num_sge = 1};
		struct ibv_recv_wr *bad;
		int err = ibv_post_recv(proto->ud_qp, &wr, &bad);

		if (err)
			return gdrfab_errno_to_fi(err);
	}
	return 0;
}

size_t gdrfab_ud_mem_size(void)
{
	return (UD_RX_SLOTS + UD_TX_SLOTS) * UD_SLOT_SIZE;
}

static void ud_repost(struct gdrfab_proto *proto, uint64_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(proto->ud_mem + slot * UD_SLOT_SIZE),
		.length = UD_SLOT_SIZE,
		.lkey = proto->ud_mr->lkey,
	};
	struct ibv_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1};
	struct ibv_recv_wr *bad;
	int err = ibv_post_recv(proto->ud_qp, &wr, &bad);

	if (err)
		GDRFAB_WARN(FI_LOG_EP_CTRL, "UD repost: %s\n", strerror(err));
}

static void send_cm(struct gdrfab_conn *conn, enum gdrfab_cm_type type)
{
	struct gdrfab_proto *proto = conn->proto;
	unsigned slot;
	struct gdrfab_cm_msg *msg;
	struct ibv_sge sge = {.length = sizeof(*msg),
			      .lkey = proto->ud_mr->lkey};
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;
	int err;

	/* A slot is reused only once its send completed: the NIC reads it
	 * after ibv_post_send returns. With every slot in flight the message
	 * is dropped as UD could drop it; REQ is resent by the timer, REP and
	 * RTU when the peer repeats what they answer. */
	if (!~proto->ud_tx_busy) {
		GDRFAB_DBG(FI_LOG_EP_CTRL,
			   "every UD send slot in flight: CM message %d "
			   "dropped, resent later\n",
			   type);
		return;
	}
	slot = (unsigned)__builtin_ctzll(~proto->ud_tx_busy);
	msg = (void *)(proto->ud_mem + (UD_RX_SLOTS + slot) * UD_SLOT_SIZE);
	sge.addr = (uintptr_t)msg;
	wr.wr_id = UD_SEND_FLAG | slot;
	memset(msg, 0, sizeof(*msg));
	msg->version = GDRFAB_WIRE_VERSION;
	msg->type = (uint8_t)type;
	msg->mtu = (uint8_t)proto->port_mtu;
	msg->qpn = conn->qp->qp_num;
	msg->psn = conn->psn;
	msg->src = proto->ep->name;
	msg->dst = conn->peer;
	wr.wr.ud.ah = conn->ah;
	wr.wr.ud.remote_qpn = ntohl(conn->peer.qpn_be);
	wr.wr.ud.remote_qkey = GDRFAB_UD_QKEY;
	err = ibv_post_send(proto->ud_qp, &wr, &bad);
	if (err)
		GDRFAB_WARN(FI_LOG_EP_CTRL, "UD send of CM message %d: %s\n",
			    type, strerror(err));
	else
		proto->ud_tx_busy |= 1ULL << slot;
}

/* ---- lifecycle ---- */

static uint32_t random_psn(void)
{
	uint32_t psn;

	if (getrandom(&psn, sizeof(psn), GRND_NONBLOCK) != sizeof(psn))
		psn = (uint32_t)gdrfab_tick_ms();
	return psn & 0xffffff;
}

static struct gdrfab_conn *conn_new(struct gdrfab_proto *proto,
				    const struct gdrfab_addr *peer)
{
	struct gdrfab_rc_params p;
	struct gdrfab_conn *conn = calloc(1, sizeof(*conn));

	if (!conn)
		return NULL;
	rc_params(proto, &p);
	conn->proto = proto;
	conn->peer = *peer;
	conn->psn = random_psn();
	conn->sq_avail = proto->sq_depth;
	conn->fi_addr = FI_ADDR_NOTAVAIL;
	conn->av_generation = UINT64_MAX;
	conn->resend_interval_ms = RESEND_FIRST_MS;
	conn->deadline_ms = gdrfab_tick_ms() + gdrfab_params.conn_timeout_ms;
	conn->refs = 1;
	gdrfab_list_init(&conn->pending);
	gdrfab_list_init(&conn->rndv_wait);
	conn->qp = gdrfab_rc_create(&p, &conn->max_inline);
	if (!conn->qp)
		goto err;
	conn->ah = gdrfab_rc_create_ah(&p, peer);
	if (!conn->ah || qpn_insert(proto, conn) ||
	    gdrfab_addrmap_put(&proto->conn_by_name, peer,
			       (uint64_t)(uintptr_t)conn)) {
		qpn_remove(proto, conn);
		goto err;
	}
	gdrfab_list_push_tail(&proto->conns, &conn->entry);
	return conn;
err:
	if (conn->ah)
		ibv_destroy_ah(conn->ah);
	if (conn->qp)
		ibv_destroy_qp(conn->qp);
	free(conn);
	return NULL;
}

static void conn_free(struct gdrfab_conn *conn)
{
	qpn_remove(conn->proto, conn);
	gdrfab_list_remove(&conn->entry);
	if (ibv_destroy_qp(conn->qp))
		GDRFAB_WARN(FI_LOG_EP_CTRL, "ibv_destroy_qp(RC)\n");
	if (ibv_destroy_ah(conn->ah))
		GDRFAB_WARN(FI_LOG_EP_CTRL, "ibv_destroy_ah\n");
	free(conn);
}

void gdrfab_conn_put(struct gdrfab_conn *conn)
{
	if (!--conn->refs)
		conn_free(conn);
}

static int connect_qp(struct gdrfab_conn *conn, uint32_t remote_qpn,
		      uint32_t remote_psn, enum ibv_mtu remote_mtu)
{
	struct gdrfab_rc_params p;
	int err;

	rc_params(conn->proto, &p);
	conn->remote_qpn = remote_qpn;
	conn->path_mtu = GDRFAB_MIN(conn->proto->port_mtu, remote_mtu);
	err = gdrfab_rc_connect(conn->qp, &p, &conn->peer, remote_qpn,
				remote_psn, conn->psn, conn->path_mtu);
	if (err) {
		char peer[128];

		gdrfab_addr_to_str(&conn->peer, peer, sizeof(peer));
		GDRFAB_WARN(FI_LOG_EP_CTRL, "connecting RC QP to %s: %s\n",
			    peer, strerror(err));
	}
	return err;
}

static void established(struct gdrfab_conn *conn)
{
	conn->state = GDRFAB_CONN_CONNECTED;
	conn->last_rx_ms = gdrfab_tick_ms();
	gdrfab_conn_kick(conn);
}

struct gdrfab_conn *gdrfab_conn_get(struct gdrfab_proto *proto,
				    const struct gdrfab_addr *peer)
{
	struct gdrfab_conn *conn;
	uint64_t found;

	if (!gdrfab_addrmap_get(&proto->conn_by_name, peer, &found))
		return (struct gdrfab_conn *)(uintptr_t)found;
	conn = conn_new(proto, peer);
	if (!conn)
		return NULL;
	if (gdrfab_addr_equal(peer, &proto->ep->name)) {
		/* Talking to itself: one QP, connected to itself. */
		if (connect_qp(conn, conn->qp->qp_num, conn->psn,
			       proto->port_mtu)) {
			/* Failing drops the table's reference, the only
			 * one: the connection is gone. */
			gdrfab_conn_fail(conn, FI_EIO, 0);
			return NULL;
		}
		conn->state = GDRFAB_CONN_CONNECTED;
		conn->last_rx_ms = gdrfab_tick_ms();
		return conn;
	}
	conn->state = GDRFAB_CONN_CONNECTING;
	conn->next_resend_ms = gdrfab_tick_ms() + conn->resend_interval_ms;
	send_cm(conn, GDRFAB_CM_REQ);
	return conn;
}

int gdrfab_conn_for_addr(struct gdrfab_proto *proto, fi_addr_t fi_addr,
			 struct gdrfab_conn **out)
{
	struct gdrfab_av *av = proto->ep->av;
	struct gdrfab_conn_cache_ent *e =
		&proto->conn_cache[fi_addr & (GDRFAB_CONN_CACHE - 1)];
	struct gdrfab_addr peer;
	struct gdrfab_conn *conn;

	if (e->fi_addr == fi_addr && e->conn_epoch == proto->conn_epoch &&
	    e->av_generation == av->generation) {
		*out = e->conn;
		return 0;
	}
	if (gdrfab_av_get_addr(av, fi_addr, &peer))
		return -FI_EINVAL;
	conn = gdrfab_conn_get(proto, &peer);
	if (!conn)
		return -FI_ENOMEM;
	/* A failed connection is in no table: the next call retries. */
	if (conn->state != GDRFAB_CONN_FAILED) {
		e->fi_addr = fi_addr;
		e->av_generation = av->generation;
		e->conn_epoch = proto->conn_epoch;
		e->conn = conn;
	}
	*out = conn;
	return 0;
}

fi_addr_t gdrfab_conn_fi_addr(struct gdrfab_conn *conn)
{
	struct gdrfab_av *av = conn->proto->ep->av;

	if (conn->av_generation != av->generation) {
		conn->fi_addr = gdrfab_av_find(av, &conn->peer);
		conn->av_generation = av->generation;
	}
	return conn->fi_addr;
}

void gdrfab_conn_fail(struct gdrfab_conn *conn, int err, int prov_errno)
{
	struct gdrfab_proto *proto = conn->proto;
	struct gdrfab_list *it, *tmp;
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};
	char peer[128];

	if (conn->state == GDRFAB_CONN_FAILED)
		return;
	gdrfab_addr_to_str(&conn->peer, peer, sizeof(peer));
	GDRFAB_WARN(FI_LOG_EP_DATA, "connection to %s failed: %s (%s)\n", peer,
		    fi_strerror(err),
		    gdrfab_prov_strerror(prov_errno, NULL, 0));
	conn->state = GDRFAB_CONN_FAILED;
	gdrfab_addrmap_del(&proto->conn_by_name, &conn->peer);
	proto->conn_epoch++; /* no cached fi_addr leads to it now */
	gdrfab_list_remove(&conn->entry);
	gdrfab_list_push_tail(&proto->dead, &conn->entry);
	/* Outstanding work requests come back flushed. */
	ibv_modify_qp(conn->qp, &attr, IBV_QP_STATE);
	gdrfab_list_for_each_safe(&conn->pending, it, tmp)
	{
		struct gdrfab_req *req =
			gdrfab_list_entry(it, struct gdrfab_req, entry);

		gdrfab_list_remove(&req->entry);
		gdrfab_req_fail(proto, req, err, prov_errno);
	}
	gdrfab_list_for_each_safe(&conn->rndv_wait, it, tmp)
	{
		struct gdrfab_req *req =
			gdrfab_list_entry(it, struct gdrfab_req, entry);

		gdrfab_list_remove(&req->entry);
		gdrfab_req_fail(proto, req, err, prov_errno);
	}
	gdrfab_conn_put(conn);
}

/* ---- CM message handling ---- */

static void accept_req(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
		       const struct gdrfab_cm_msg *msg)
{
	if (connect_qp(conn, msg->qpn, msg->psn, (enum ibv_mtu)msg->mtu)) {
		gdrfab_conn_fail(conn, FI_EIO, 0);
		return;
	}
	conn->state = GDRFAB_CONN_ACCEPTING;
	conn->resend_interval_ms = RESEND_FIRST_MS;
	conn->next_resend_ms = gdrfab_tick_ms() + conn->resend_interval_ms;
	conn->deadline_ms = gdrfab_tick_ms() + gdrfab_params.conn_timeout_ms;
	send_cm(conn, GDRFAB_CM_REP);
	(void)proto;
}

static void handle_req(struct gdrfab_proto *proto,
		       const struct gdrfab_cm_msg *msg)
{
	struct gdrfab_conn *conn = NULL;
	uint64_t found;

	if (!gdrfab_addrmap_get(&proto->conn_by_name, &msg->src, &found))
		conn = (struct gdrfab_conn *)(uintptr_t)found;
	if (conn && conn->state == GDRFAB_CONN_CONNECTING) {
		/* Both sides connecting: the smaller name stays active. */
		if (memcmp(&proto->ep->name, &msg->src, sizeof(msg->src)) < 0)
			return;
		accept_req(proto, conn, msg);
		return;
	}
	if (conn && conn->remote_qpn == msg->qpn) {
		send_cm(conn, GDRFAB_CM_REP); /* our REP was lost */
		return;
	}
	if (conn) /* the peer has a new QP: its old connection is gone */
		gdrfab_conn_fail(conn, FI_ECONNRESET, GDRFAB_PERR_PEER_CLOSED);
	conn = conn_new(proto, &msg->src);
	if (!conn)
		return;
	accept_req(proto, conn, msg);
}

static struct gdrfab_conn *known_conn(struct gdrfab_proto *proto,
				      const struct gdrfab_cm_msg *msg)
{
	uint64_t found;

	if (gdrfab_addrmap_get(&proto->conn_by_name, &msg->src, &found))
		return NULL;
	return (struct gdrfab_conn *)(uintptr_t)found;
}

static void handle_rep(struct gdrfab_proto *proto,
		       const struct gdrfab_cm_msg *msg)
{
	struct gdrfab_conn *conn = known_conn(proto, msg);

	if (!conn)
		return;
	if (conn->state == GDRFAB_CONN_CONNECTING) {
		if (connect_qp(conn, msg->qpn, msg->psn,
			       (enum ibv_mtu)msg->mtu)) {
			gdrfab_conn_fail(conn, FI_EIO, 0);
			return;
		}
		send_cm(conn, GDRFAB_CM_RTU);
		established(conn);
	} else if (conn->state == GDRFAB_CONN_CONNECTED &&
		   conn->remote_qpn == msg->qpn) {
		send_cm(conn, GDRFAB_CM_RTU); /* our RTU was lost */
	}
}

static void handle_rtu(struct gdrfab_proto *proto,
		       const struct gdrfab_cm_msg *msg)
{
	struct gdrfab_conn *conn = known_conn(proto, msg);

	if (conn && conn->state == GDRFAB_CONN_ACCEPTING &&
	    conn->remote_qpn == msg->qpn)
		established(conn);
}

/* What is wrong with a connection message, or NULL. */
static const char *check_cm(const struct gdrfab_cm_msg *msg, size_t len)
{
	char why[128];

	if (len != sizeof(*msg))
		return "wrong length";
	if (msg->version != GDRFAB_WIRE_VERSION)
		return "unknown wire version";
	if (msg->type < GDRFAB_CM_REQ || msg->type > GDRFAB_CM_RTU)
		return "unknown type";
	if (msg->mtu < IBV_MTU_256 || msg->mtu > IBV_MTU_4096)
		return "bad MTU";
	if (!msg->qpn || msg->qpn > 0xffffff)
		return "bad QP number";
	if (gdrfab_addr_validate(&msg->src, sizeof(msg->src), why, sizeof(why)))
		return "bad source name";
	return NULL;
}

void gdrfab_conn_handle_cm(struct gdrfab_proto *proto, const void *buf,
			   size_t len)
{
	const struct gdrfab_cm_msg *msg = buf;
	const char *why = check_cm(msg, len);

	if (why) {
		GDRFAB_WIRE_WARN(proto, FI_LOG_EP_CTRL,
				 "connection message dropped: %s (%zu bytes)",
				 why, len);
		return;
	}
	/* Meant for an earlier endpoint that had our QP number. */
	if (!gdrfab_addr_equal(&msg->dst, &proto->ep->name))
		return;
	switch (msg->type) {
	case GDRFAB_CM_REQ: handle_req(proto, msg); break;
	case GDRFAB_CM_REP: handle_rep(proto, msg); break;
	case GDRFAB_CM_RTU: handle_rtu(proto, msg); break;
	}
}

void gdrfab_conn_poll_ud(struct gdrfab_proto *proto)
{
	struct ibv_wc wc[8];
	int n;

	while ((n = ibv_poll_cq(proto->ud_cq, 8, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (wc[i].wr_id & UD_SEND_FLAG) {
				proto->ud_tx_busy &=
					~(1ULL << (wc[i].wr_id & 63));
				if (wc[i].status != IBV_WC_SUCCESS)
					GDRFAB_WARN(FI_LOG_EP_CTRL,
						    "UD send: %s\n",
						    ibv_wc_status_str(
							    wc[i].status));
				continue;
			}
			if (wc[i].status == IBV_WC_SUCCESS &&
			    wc[i].byte_len >= GRH_LEN)
				gdrfab_conn_handle_cm(
					proto,
					proto->ud_mem +
						wc[i].wr_id * UD_SLOT_SIZE +
						GRH_LEN,
					wc[i].byte_len - GRH_LEN);
			if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
				ud_repost(proto, wc[i].wr_id);
		}
	}
}

/* The first message from the peer also says its side is connected. */
void gdrfab_conn_rx(struct gdrfab_conn *conn)
{
	conn->last_rx_ms = gdrfab_tick_ms();
	if (conn->state == GDRFAB_CONN_ACCEPTING)
		established(conn);
}

/* Resends, timeouts and keepalives; at most once a tick of
 * gdrfab_tick_ms. */
void gdrfab_conn_timers(struct gdrfab_proto *proto)
{
	long long now = gdrfab_tick_ms();
	struct gdrfab_list *it, *tmp;

	gdrfab_list_for_each_safe(&proto->conns, it, tmp)
	{
		struct gdrfab_conn *conn =
			gdrfab_list_entry(it, struct gdrfab_conn, entry);
		bool waiting = conn->state == GDRFAB_CONN_CONNECTING ||
			       (conn->state == GDRFAB_CONN_ACCEPTING &&
				!gdrfab_list_empty(&conn->pending));

		if (waiting && now >= conn->deadline_ms) {
			gdrfab_conn_fail(conn, FI_EHOSTUNREACH,
					 GDRFAB_PERR_PEER_UNREACHABLE);
			continue;
		}
		if (waiting && now >= conn->next_resend_ms) {
			send_cm(conn, conn->state == GDRFAB_CONN_CONNECTING
					      ? GDRFAB_CM_REQ
					      : GDRFAB_CM_REP);
			conn->resend_interval_ms = GDRFAB_MIN(
				2 * conn->resend_interval_ms, RESEND_MAX_MS);
			conn->next_resend_ms = now + conn->resend_interval_ms;
		}
		if (conn->state == GDRFAB_CONN_CONNECTED &&
		    !gdrfab_list_empty(&conn->rndv_wait) &&
		    now - conn->last_rx_ms > gdrfab_params.peer_timeout_ms / 2)
			gdrfab_conn_keepalive(conn);
	}
}

void gdrfab_conn_destroy_all(struct gdrfab_proto *proto)
{
	struct gdrfab_list *it, *tmp;

	gdrfab_list_for_each_safe(&proto->conns, it, tmp) gdrfab_conn_fail(
		gdrfab_list_entry(it, struct gdrfab_conn, entry), FI_ECANCELED,
		GDRFAB_PERR_CANCELED);
}
