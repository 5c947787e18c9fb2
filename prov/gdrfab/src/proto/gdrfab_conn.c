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
 *
 * Anyone may send to the UD QP, so what a datagram can cost is bounded:
 * a REQ gets a QP only once the address handle to its sender's port is
 * made (off the progress path, gdrfab_ah_cache.c), only while fewer than
 * FI_GDRFAB_HALF_OPEN_MAX connections wait for confirmation, and that QP
 * is reclaimed if the peer does not confirm within the connection
 * timeout. A connected peer's connection is replaced only by a REQ that
 * carries the secret nonce the peer connected with; settings both sides
 * must share are compared, and a REQ that differs is answered REJ.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "gdrfab.h"
#include "gdrfab_ah_cache.h"
#include "gdrfab_atomic.h"
#include "gdrfab_conn.h"
#include "gdrfab_conn_rails.h"
#include "gdrfab_params.h"
#include "gdrfab_proto.h"
#include "gdrfab_proto_stats.h"
#include "gdrfab_rail_back.h"
#include "gdrfab_rc.h"
#include "gdrfab_req.h"
#include "gdrfab_strerror.h"
#include "gdrfab_ud.h"
#include "gdrfab_verbs_ops.h"
#include <stdatomic.h>

#define RESEND_FIRST_MS 20
#define RESEND_MAX_MS	1000
/* How long after a peer's BYE its connection is released: the BYE comes
 * by UD and may overtake its last messages on the RC queue pair. */
#define PEER_LEFT_GRACE_MS 200
/* How long a closing endpoint waits for its BYEs to leave. */
#define FAREWELL_WAIT_MS 20

static void rc_params(struct gdrfab_proto *proto, struct gdrfab_rc_params *p)
{
	const struct gdrfab_proto_env *env = &proto->env;

	memset(p, 0, sizeof(*p));
	p->pd = proto->pd;
	p->cq = proto->cq;
	p->srq = proto->srq;
	p->port_num = env->port_num;
	p->gid_index = env->gid_index;
	p->roce = !env->port_addr.lid_be;
	p->sq_depth = proto->sq_depth;
	p->max_sge = proto->max_sge;
	p->max_rd_atomic = proto->max_rd_atomic;
	p->max_dest_rd_atomic = proto->max_rd_atomic;
	p->remote_atomic = env->nic_atomic_flag != 0;
	p->timeout = gdrfab_rc_timeout_for_ms(gdrfab_params.peer_timeout_ms);
}

/* Whether atomics to this peer may go to the NIC: both devices qualify
 * under FI_GDRFAB_NIC_ATOMICS (the peer said so in cm_flags). */
static void peer_nic_atomics(struct gdrfab_conn *conn, uint16_t cm_flags)
{
	conn->nic_atomics = conn->proto->ops->nic_atomic_pair(
		gdrfab_params.nic_atomics,
		conn->proto->env.dev_attr->atomic_cap, cm_flags);
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

	if (!proto->qpn_table_size || !conn->qp)
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

/* ---- connection messages ---- */

static void cm_fill(struct gdrfab_proto *proto, struct gdrfab_cm_msg *msg,
		    enum gdrfab_cm_type type, const struct gdrfab_addr *dst)
{
	memset(msg, 0, sizeof(*msg));
	msg->version = GDRFAB_WIRE_VERSION;
	msg->type = (uint8_t)type;
	msg->mtu = (uint8_t)proto->port_mtu;
	msg->rd_atomic = (uint8_t)proto->max_rd_atomic;
	msg->eager_max = (uint32_t)proto->eager_max;
	msg->nonce = proto->nonce;
	msg->ns_port = proto->env.ns_port;
	msg->cm_flags = (proto->env.rma_events ? GDRFAB_CM_F_RMA_EVENTS : 0) |
			proto->env.nic_atomic_flag |
			gdrfab_seg_cm_flags(proto->seg_max);
	msg->src = proto->env.name;
	msg->dst = *dst;
}

/* false when not sent (no UD slot or address handle yet): REQ and REP
 * are resent by the timers, RTU when the peer repeats its REP. */
static bool send_cm(struct gdrfab_conn *conn, enum gdrfab_cm_type type)
{
	struct {
		struct gdrfab_cm_msg msg;
		struct gdrfab_cm_rails rails; /* on the wire right after */
	} m;
	size_t trailer = 0;

	cm_fill(conn->proto, &m.msg, type, &conn->peer);
	m.msg.qpn = conn->qp->qp_num;
	m.msg.psn = conn->psn;
	/* Rails: offered by a REQ, listed by a REP or RTU of a pair that
	 * has them; a single-rail endpoint's messages are as they were. */
	if (type == GDRFAB_CM_REQ)
		gdrfab_cm_rails_offer(conn->proto, &m.msg);
	else if (type == GDRFAB_CM_REP || type == GDRFAB_CM_RTU)
		trailer = gdrfab_cm_rails_fill(conn, &m.rails);
	if (trailer)
		m.msg.cm_flags |= GDRFAB_CM_F_RAILS;
	return gdrfab_ud_send_len(conn->proto, &conn->peer, conn->initiated,
				  &m.msg, sizeof(m.msg) + trailer);
}

/* Tells a peer whose REQ we refuse which setting differs. */
static void send_rej(struct gdrfab_proto *proto,
		     const struct gdrfab_cm_msg *req, enum gdrfab_cm_reject why)
{
	struct gdrfab_cm_msg msg;

	cm_fill(proto, &msg, GDRFAB_CM_REJ, &req->src);
	msg.qpn = req->qpn;
	msg.reject = (uint16_t)why;
	gdrfab_ud_send(proto, &req->src, false, &msg);
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
				    const struct gdrfab_addr *peer,
				    bool initiated)
{
	struct gdrfab_rc_params p;
	struct gdrfab_conn *conn = calloc(1, sizeof(*conn));

	if (!conn)
		return NULL;
	rc_params(proto, &p);
	p.qp_context = &conn->owner;
	conn->proto = proto;
	conn->owner.noticed = &proto->async_events;
	conn->initiated = initiated;
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
	gdrfab_list_init(&conn->atomic_hold);
	gdrfab_list_init(&conn->ready_entry);
	conn->qp = gdrfab_rc_create(&p, &conn->max_inline);
	if (!conn->qp)
		goto err;
	if (qpn_insert(proto, conn) ||
	    gdrfab_addrmap_put(&proto->conn_by_name, peer,
			       (uint64_t)(uintptr_t)conn)) {
		qpn_remove(proto, conn);
		goto err;
	}
	gdrfab_list_push_tail(&proto->conns, &conn->entry);
	return conn;
err:
	if (conn->qp)
		gdrfab_vops->destroy_qp(conn->qp);
	free(conn);
	return NULL;
}

static void conn_free(struct gdrfab_conn *conn)
{
	gdrfab_seg_rx_clear(&conn->seg_rx, &conn->proto->rx_pool);
	gdrfab_conn_rails_free(conn);
	qpn_remove(conn->proto, conn);
	gdrfab_list_remove(&conn->entry);
	if (conn->qp && gdrfab_vops->destroy_qp(conn->qp))
		GDRFAB_WARN(FI_LOG_EP_CTRL, "ibv_destroy_qp(RC)\n");
	free(conn);
}

/* A connection to a service address, waiting for the AV to learn the
 * name behind it (no QP yet: nothing can be sent). */
static struct gdrfab_conn *conn_new_resolving(struct gdrfab_proto *proto,
					      const struct gdrfab_addr *svc)
{
	struct gdrfab_conn *conn = calloc(1, sizeof(*conn));

	if (!conn)
		return NULL;
	conn->proto = proto;
	conn->owner.noticed = &proto->async_events;
	conn->initiated = true;
	conn->peer = *svc;
	conn->state = GDRFAB_CONN_RESOLVING;
	conn->fi_addr = FI_ADDR_NOTAVAIL;
	conn->av_generation = UINT64_MAX;
	/* The AV gives up after FI_GDRFAB_CONN_TIMEOUT_MS without an
	 * answer; this is only a backstop. */
	conn->deadline_ms =
		gdrfab_tick_ms() + 2LL * gdrfab_params.conn_timeout_ms;
	conn->refs = 1;
	gdrfab_list_init(&conn->pending);
	gdrfab_list_init(&conn->rndv_wait);
	gdrfab_list_init(&conn->atomic_hold);
	gdrfab_list_init(&conn->ready_entry);
	if (gdrfab_addrmap_put(&proto->conn_by_name, svc,
			       (uint64_t)(uintptr_t)conn)) {
		free(conn);
		return NULL;
	}
	gdrfab_list_push_tail(&proto->conns, &conn->entry);
	return conn;
}

void gdrfab_conn_put(struct gdrfab_conn *conn)
{
	if (!--conn->refs)
		conn_free(conn);
}

static int connect_qp(struct gdrfab_conn *conn, uint32_t remote_qpn,
		      uint32_t remote_psn, enum ibv_mtu remote_mtu,
		      int remote_rd_atomic)
{
	struct gdrfab_rc_params p;
	int err;

	rc_params(conn->proto, &p);
	/* Never more READs in flight than the peer's QP answers at once. */
	p.max_rd_atomic = GDRFAB_MIN(p.max_rd_atomic, remote_rd_atomic);
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

/* The connection leaves ACCEPTING: one half-open fewer. */
static void set_state(struct gdrfab_conn *conn, enum gdrfab_conn_state state)
{
	if (conn->state == GDRFAB_CONN_ACCEPTING)
		conn->proto->half_open--;
	if (state == GDRFAB_CONN_ACCEPTING)
		conn->proto->half_open++;
	conn->state = state;
}

static void established(struct gdrfab_conn *conn)
{
	set_state(conn, GDRFAB_CONN_CONNECTED);
	gdrfab_pstat_inc(conn->proto, GDRFAB_STAT_conn_established);
	conn->last_rx_ms = conn->tx_done_ms = gdrfab_tick_ms();
	gdrfab_conn_kick(conn);
}

/* The connection to a peer, set up on first use. NULL: out of resources,
 * or a connection to itself that its QP refused (logged). */
static struct gdrfab_conn *gdrfab_conn_get(struct gdrfab_proto *proto,
					   const struct gdrfab_addr *peer)
{
	struct gdrfab_conn *conn;
	uint64_t found;

	if (!gdrfab_addrmap_get(&proto->conn_by_name, peer, &found))
		return (struct gdrfab_conn *)(uintptr_t)found;
	conn = conn_new(proto, peer, true);
	if (!conn)
		return NULL;
	if (gdrfab_addr_equal(peer, &proto->env.name)) {
		/* Talking to itself: one QP, connected to itself. */
		if (connect_qp(conn, conn->qp->qp_num, conn->psn,
			       proto->port_mtu, proto->max_rd_atomic)) {
			/* Failing drops the table's reference, the only
			 * one: the connection is gone. */
			gdrfab_conn_fail(conn, FI_EIO, 0);
			return NULL;
		}
		conn->state = GDRFAB_CONN_CONNECTED;
		conn->last_rx_ms = conn->tx_done_ms = gdrfab_tick_ms();
		conn->peer_rma_events = proto->env.rma_events;
		peer_nic_atomics(conn, proto->env.nic_atomic_flag);
		conn->seg_max = gdrfab_seg_pair_max(
			proto->seg_max, gdrfab_seg_cm_flags(proto->seg_max),
			proto->eager_max);
		return conn;
	}
	conn->state = GDRFAB_CONN_CONNECTING;
	gdrfab_pstat_inc(proto, GDRFAB_STAT_conn_requested);
	/* Without an address handle yet, try again at the next tick. */
	conn->next_resend_ms =
		gdrfab_tick_ms() +
		(send_cm(conn, GDRFAB_CM_REQ) ? conn->resend_interval_ms : 1);
	return conn;
}

/* Moves the requests waiting on a resolving connection to the one the
 * answer leads to, and retires it; the caller found the name. */
static void resolve_done(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
			 const struct gdrfab_addr *name)
{
	struct gdrfab_conn *target = gdrfab_conn_get(proto, name);
	struct gdrfab_list *it, *tmp;

	if (!target) {
		gdrfab_conn_fail(conn, FI_ENOMEM, 0);
		return;
	}
	gdrfab_list_for_each_safe (&conn->pending, it, tmp) {
		struct gdrfab_req *req =
			gdrfab_list_entry(it, struct gdrfab_req, entry);

		gdrfab_list_remove(&req->entry);
		req->conn = target;
		target->refs++;
		conn->refs--; /* the request's; the table keeps one */
		if (req->atomic) {
			/* A NIC atomic after it must wait for its answer
			 * (gdrfab_atomic_submit). */
			req->atomic_counted = true;
			target->proto_atomics_out++;
		}
		gdrfab_list_push_tail(&target->pending, &req->entry);
	}
	/* Nothing of the application's is lost: retired quietly. */
	set_state(conn, GDRFAB_CONN_FAILED);
	gdrfab_addrmap_del(&proto->conn_by_name, &conn->peer);
	proto->conn_epoch++;
	gdrfab_list_remove(&conn->entry);
	gdrfab_list_push_tail(&proto->dead, &conn->entry);
	gdrfab_conn_put(conn);
	if (target->state == GDRFAB_CONN_FAILED) {
		/* Its requests fail as a send to it would. */
		gdrfab_list_for_each_safe (&target->pending, it, tmp) {
			struct gdrfab_req *req =
				gdrfab_list_entry(it, struct gdrfab_req, entry);

			gdrfab_list_remove(&req->entry);
			gdrfab_req_fail(proto, req, FI_EHOSTUNREACH,
					GDRFAB_PERR_PEER_UNREACHABLE);
		}
		return;
	}
	gdrfab_conn_kick(target);
}

/* A resolving connection's step, from the timers (and before a request
 * that would overtake its requests): the AV's answer, or giving up. */
static void resolve_step(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
			 long long now)
{
	struct gdrfab_addr name;
	int ret = proto->ops->av_service_status(proto->env.av, &conn->peer,
						&name);

	if (!ret) {
		resolve_done(proto, conn, &name);
		return;
	}
	if (ret == -FI_EAGAIN && now < conn->deadline_ms)
		return;
	gdrfab_conn_fail(conn, FI_EHOSTUNREACH, GDRFAB_PERR_PEER_UNREACHABLE);
}

static struct gdrfab_conn *resolving_conn(struct gdrfab_proto *proto,
					  const struct gdrfab_addr *svc)
{
	uint64_t found;

	if (gdrfab_addrmap_get(&proto->conn_by_name, svc, &found))
		return NULL;
	return (struct gdrfab_conn *)(uintptr_t)found;
}

int gdrfab_conn_for_addr_lookup(struct gdrfab_proto *proto, fi_addr_t fi_addr,
				struct gdrfab_conn **out)
{
	struct gdrfab_conn_cache_ent *e =
		&proto->conn_cache[fi_addr & (GDRFAB_CONN_CACHE - 1)];
	struct gdrfab_addr peer, svc;
	struct gdrfab_conn *conn;
	int ret;

	ret = proto->ops->av_peer(proto->env.av, fi_addr, &peer, &svc);
	if (ret == -FI_EINVAL)
		return ret;
	conn = gdrfab_addr_is_service(&svc) ? resolving_conn(proto, &svc)
					    : NULL;
	if (ret == -FI_EAGAIN) {
		/* Waits for the AV's answer, with the requests before it. */
		if (!conn)
			conn = conn_new_resolving(proto, &svc);
		if (!conn)
			return -FI_ENOMEM;
	} else {
		/* Answered: what still waits for it goes first. */
		if (conn)
			resolve_done(proto, conn, &peer);
		conn = gdrfab_conn_get(proto, &peer);
		if (!conn)
			return -FI_ENOMEM;
	}
	/* A failed connection is in no table: the next call retries. */
	if (conn->state != GDRFAB_CONN_FAILED) {
		e->fi_addr = fi_addr;
		e->av_generation = *proto->env.av_generation;
		e->conn_epoch = proto->conn_epoch;
		e->conn = conn;
	}
	*out = conn;
	return 0;
}

fi_addr_t gdrfab_conn_fi_addr(struct gdrfab_conn *conn)
{
	uint64_t generation = *conn->proto->env.av_generation;

	if (conn->av_generation != generation) {
		conn->fi_addr = conn->proto->ops->av_find(conn->proto->env.av,
							  &conn->peer);
		conn->av_generation = generation;
	}
	return conn->fi_addr;
}

/* Work completion statuses that say the peer's QP, as responder, moved to
 * the error state. */
static bool peer_qp_failed(int prov_errno)
{
	return prov_errno == IBV_WC_REM_ACCESS_ERR ||
	       prov_errno == IBV_WC_REM_INV_REQ_ERR ||
	       prov_errno == IBV_WC_REM_OP_ERR;
}

/* Whether anything of the application's waits on the connection. */
static bool conn_busy(const struct gdrfab_conn *conn)
{
	return !gdrfab_list_empty(&conn->pending) ||
	       !gdrfab_list_empty(&conn->rndv_wait) ||
	       !gdrfab_list_empty(&conn->atomic_hold) || conn->wr_outstanding;
}

/* A connection whose peer closed its endpoint: released, its QP and
 * buffers with it. Quietly when nothing of ours was lost; what still
 * waited on it fails as on any connection the peer reset. */
static void conn_release_left(struct gdrfab_conn *conn)
{
	char peer[128];

	if (conn_busy(conn)) {
		gdrfab_conn_fail(conn, FI_ECONNRESET, GDRFAB_PERR_PEER_CLOSED);
		return;
	}
	gdrfab_addr_to_str(&conn->peer, peer, sizeof(peer));
	GDRFAB_INFO(FI_LOG_EP_CTRL,
		    "%s closed its endpoint: connection released\n", peer);
	conn->quiet_end = true;
	gdrfab_conn_fail(conn, FI_ECONNRESET, GDRFAB_PERR_PEER_CLOSED);
}

void gdrfab_conn_fail(struct gdrfab_conn *conn, int err, int prov_errno)
{
	struct gdrfab_proto *proto = conn->proto;
	struct gdrfab_addr peer_addr;
	bool reconnect;
	struct gdrfab_list *it, *tmp;
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};
	char peer[128];

	if (conn->state == GDRFAB_CONN_FAILED)
		return;
	if (!conn->quiet_end) /* a peer that left is no failure */
		gdrfab_pstat_conn_failed(conn, err);
	gdrfab_addr_to_str(&conn->peer, peer, sizeof(peer));
	if (conn->quiet_end)
		; /* conn_release_left said why */
	else if (conn->state == GDRFAB_CONN_ACCEPTING && !conn->initiated &&
		 gdrfab_list_empty(&conn->pending))
		/* A peer asked and never confirmed: nothing of ours is lost,
		 * and floods of such requests must not flood the log. */
		GDRFAB_WIRE_WARN(proto, FI_LOG_EP_CTRL,
				 "unconfirmed connection from %s dropped: %s",
				 peer, fi_strerror(err));
	else
		gdrfab_conn_fail_log(conn, gdrfab_conn_fi_addr(conn), err,
				     prov_errno);
	set_state(conn, GDRFAB_CONN_FAILED);
	/* A segmented message can never be whole now: the receive it was
	 * filling fails as the connection does. */
	if (conn->seg_rx.recv)
		gdrfab_req_fail(proto, conn->seg_rx.recv, err, prov_errno);
	gdrfab_seg_rx_clear(&conn->seg_rx, &proto->rx_pool);
	conn->fail_err = err;
	conn->fail_prov_errno = prov_errno;
	gdrfab_addrmap_del(&proto->conn_by_name, &conn->peer);
	proto->conn_epoch++; /* no cached fi_addr leads to it now */
	gdrfab_list_remove(&conn->entry);
	gdrfab_list_push_tail(&proto->dead, &conn->entry);
	/* Outstanding work requests come back flushed. */
	if (conn->qp)
		gdrfab_vops->modify_qp(conn->qp, &attr, IBV_QP_STATE);
	gdrfab_conn_rails_error(conn);
	gdrfab_list_for_each_safe (&conn->pending, it, tmp) {
		struct gdrfab_req *req =
			gdrfab_list_entry(it, struct gdrfab_req, entry);

		gdrfab_list_remove(&req->entry);
		gdrfab_req_fail(proto, req, err, prov_errno);
	}
	gdrfab_list_for_each_safe (&conn->rndv_wait, it, tmp) {
		struct gdrfab_req *req =
			gdrfab_list_entry(it, struct gdrfab_req, entry);

		gdrfab_list_remove(&req->entry);
		gdrfab_req_fail(proto, req, err, prov_errno);
	}
	gdrfab_list_for_each_safe (&conn->atomic_hold, it, tmp) {
		struct gdrfab_req *req =
			gdrfab_list_entry(it, struct gdrfab_req, entry);

		gdrfab_list_remove(&req->entry);
		gdrfab_req_fail(proto, req, err, prov_errno);
	}
	reconnect = peer_qp_failed(prov_errno) && !proto->closing;
	peer_addr = conn->peer;
	gdrfab_conn_put(conn);
	/* The peer's NIC refused our access and moved its QP to error too,
	 * which it may not notice until it sends. Connecting anew at once
	 * tells it (our REQ replaces its connection), so that its next
	 * operation does not fail on the dead QP. */
	gdrfab_pstat_inc_if(proto, reconnect, GDRFAB_STAT_reconnects);
	if (reconnect)
		gdrfab_conn_get(proto, &peer_addr);
}

/* ---- CM message handling ---- */

static void peer_name(const struct gdrfab_cm_msg *msg, char *buf, size_t len)
{
	gdrfab_addr_to_str(&msg->src, buf, len);
}

/* Settings the peer must share with us: 0, or what differs (logged). */
static enum gdrfab_cm_reject settings_differ(struct gdrfab_proto *proto,
					     const struct gdrfab_cm_msg *msg)
{
	char peer[128];

	if (msg->eager_max == proto->eager_max)
		return 0;
	peer_name(msg, peer, sizeof(peer));
	GDRFAB_WIRE_WARN(
		proto, FI_LOG_EP_CTRL,
		"connection with %s refused: FI_GDRFAB_EAGER_MAX is %u there and %zu here; every process must use the same value",
		peer, msg->eager_max, proto->eager_max);
	return GDRFAB_REJECT_EAGER_MAX;
}

/* The peer's request says where its endpoint answers name queries: the
 * AV may hold that IP:port, unresolved. Only an address of the sender's
 * own GID counts. */
static void learn_service(struct gdrfab_proto *proto,
			  const struct gdrfab_cm_msg *msg)
{
	struct gdrfab_addr svc;
	uint32_t ip;

	if (!msg->ns_port || !proto->env.av ||
	    !gdrfab_addr_ipv4(&msg->src, &ip))
		return;
	gdrfab_addr_make_service(&svc, ip, msg->ns_port);
	proto->ops->av_learn(proto->env.av, &svc, &msg->src);
}

/* Both sides of the handshake: the QP goes to the peer's, and what the
 * peer said of itself is kept. False when the connection failed. */
static bool take_peer(struct gdrfab_conn *conn, const struct gdrfab_cm_msg *msg)
{
	if (connect_qp(conn, msg->qpn, msg->psn, (enum ibv_mtu)msg->mtu,
		       msg->rd_atomic)) {
		gdrfab_conn_fail(conn, FI_EIO, 0);
		return false;
	}
	conn->peer_nonce = msg->nonce;
	conn->peer_rma_events = msg->cm_flags & GDRFAB_CM_F_RMA_EVENTS;
	peer_nic_atomics(conn, msg->cm_flags);
	conn->seg_max = gdrfab_seg_pair_max(conn->proto->seg_max, msg->cm_flags,
					    conn->proto->eager_max);
	return true;
}

static void accept_req(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
		       const struct gdrfab_cm_msg *msg)
{
	if (!take_peer(conn, msg))
		return;
	gdrfab_conn_rails_accept(conn, msg);
	learn_service(proto, msg);
	set_state(conn, GDRFAB_CONN_ACCEPTING);
	gdrfab_pstat_inc(proto, GDRFAB_STAT_conn_accepted);
	conn->resend_interval_ms = RESEND_FIRST_MS;
	conn->next_resend_ms = gdrfab_tick_ms() + conn->resend_interval_ms;
	conn->deadline_ms = gdrfab_tick_ms() + gdrfab_params.conn_timeout_ms;
	send_cm(conn, GDRFAB_CM_REP);
	(void)proto;
}

/* A REQ from a peer with no connection here (or one just failed). */
static void accept_new(struct gdrfab_proto *proto,
		       const struct gdrfab_cm_msg *msg)
{
	enum gdrfab_cm_reject why = settings_differ(proto, msg);
	struct gdrfab_conn *conn;
	struct ibv_ah *ah;
	char peer[128];

	if (why) {
		send_rej(proto, msg, why);
		return;
	}
	if (proto->half_open >= gdrfab_params.half_open_max) {
		peer_name(msg, peer, sizeof(peer));
		GDRFAB_WIRE_WARN(
			proto, FI_LOG_EP_CTRL,
			"request from %s dropped: %d connections wait for confirmation (FI_GDRFAB_HALF_OPEN_MAX)",
			peer, proto->half_open);
		return;
	}
	/* No QP for a peer we cannot answer yet: it resends. */
	if (gdrfab_ah_get(proto->env.ah_cache, &msg->src, false, &ah) !=
	    GDRFAB_AH_READY)
		return;
	conn = conn_new(proto, &msg->src, false);
	if (conn)
		accept_req(proto, conn, msg);
}

static void handle_req(struct gdrfab_proto *proto,
		       const struct gdrfab_cm_msg *msg)
{
	struct gdrfab_conn *conn = NULL;
	enum gdrfab_cm_reject why;
	char peer[128];
	uint64_t found;

	if (!gdrfab_addrmap_get(&proto->conn_by_name, &msg->src, &found))
		conn = (struct gdrfab_conn *)(uintptr_t)found;
	if (!conn) {
		accept_new(proto, msg);
		return;
	}
	if (conn->state == GDRFAB_CONN_CONNECTING) {
		/* Both sides connecting: the smaller name stays active. */
		if (memcmp(&proto->env.name, &msg->src, sizeof(msg->src)) < 0)
			return;
		if ((why = settings_differ(proto, msg))) {
			send_rej(proto, msg, why);
			gdrfab_conn_fail(conn, FI_ECONNREFUSED,
					 GDRFAB_PERR_SETTINGS);
			return;
		}
		accept_req(proto, conn, msg);
		return;
	}
	/* A confirmed connection answers only to the peer it was made with:
	 * a request naming that peer without its nonce is someone else's. */
	if (conn->state == GDRFAB_CONN_CONNECTED &&
	    msg->nonce != conn->peer_nonce) {
		peer_name(msg, peer, sizeof(peer));
		GDRFAB_WIRE_WARN(
			proto, FI_LOG_EP_CTRL,
			"request naming connected peer %s dropped: wrong nonce (spoofed or stale)",
			peer);
		return;
	}
	if (conn->remote_qpn == msg->qpn && msg->nonce == conn->peer_nonce) {
		send_cm(conn, GDRFAB_CM_REP); /* our REP was lost */
		return;
	}
	/* The peer has a new QP: its old connection is gone. */
	gdrfab_pstat_inc(proto, GDRFAB_STAT_reconnects);
	gdrfab_conn_fail(conn, FI_ECONNRESET, GDRFAB_PERR_PEER_CLOSED);
	accept_new(proto, msg);
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
		       const struct gdrfab_cm_msg *msg,
		       const struct gdrfab_cm_rails *rails)
{
	struct gdrfab_conn *conn = known_conn(proto, msg);

	if (!conn)
		return;
	if (conn->state == GDRFAB_CONN_CONNECTING) {
		if (settings_differ(proto, msg)) {
			gdrfab_conn_fail(conn, FI_ECONNREFUSED,
					 GDRFAB_PERR_SETTINGS);
			return;
		}
		if (!take_peer(conn, msg))
			return;
		gdrfab_conn_rails_on_rep(conn, rails);
		send_cm(conn, GDRFAB_CM_RTU);
		established(conn);
	} else if (conn->state == GDRFAB_CONN_CONNECTED &&
		   conn->remote_qpn == msg->qpn &&
		   conn->peer_nonce == msg->nonce) {
		send_cm(conn, GDRFAB_CM_RTU); /* our RTU was lost */
	}
}

static void handle_rtu(struct gdrfab_proto *proto,
		       const struct gdrfab_cm_msg *msg,
		       const struct gdrfab_cm_rails *rails)
{
	struct gdrfab_conn *conn = known_conn(proto, msg);
	bool rails_up;

	if (!conn || conn->remote_qpn != msg->qpn ||
	    conn->peer_nonce != msg->nonce)
		return;
	/* The requester's first message on rail 0 may overtake its RTU
	 * (UD) and confirm the connection first: its rails still wait for
	 * the RTU's list. */
	if (conn->state == GDRFAB_CONN_CONNECTED && conn->rails &&
	    !conn->rails->up) {
		if (gdrfab_conn_rails_on_rtu(conn, rails))
			gdrfab_send_ctrl(proto, conn, GDRFAB_PKT_NOP,
					 GDRFAB_NOP_RAILS_UP, 0);
		return;
	}
	if (conn->state != GDRFAB_CONN_ACCEPTING)
		return;
	rails_up = gdrfab_conn_rails_on_rtu(conn, rails);
	established(conn);
	/* On rail 0, after everything of ours on it: the requester's
	 * rails may go from when it reads this. */
	if (rails_up)
		gdrfab_send_ctrl(proto, conn, GDRFAB_PKT_NOP,
				 GDRFAB_NOP_RAILS_UP, 0);
}

/* The peer refused our REQ: it names the QP we asked with. */
static void handle_rej(struct gdrfab_proto *proto,
		       const struct gdrfab_cm_msg *msg)
{
	struct gdrfab_conn *conn = known_conn(proto, msg);
	char peer[128];

	if (!conn || conn->state != GDRFAB_CONN_CONNECTING ||
	    conn->qp->qp_num != msg->qpn)
		return;
	peer_name(msg, peer, sizeof(peer));
	GDRFAB_WARN(
		FI_LOG_EP_CTRL,
		"%s refused the connection: FI_GDRFAB_EAGER_MAX is %u there and %zu here; every process must use the same value\n",
		peer, msg->eager_max, proto->eager_max);
	gdrfab_conn_fail(conn, FI_ECONNREFUSED, GDRFAB_PERR_SETTINGS);
}

/* The peer's endpoint closes. Only the connection it was made with: a
 * BYE must name its QP and carry its nonce, so that nobody else can end
 * it. Released by the timers a little later (conn->peer_left_ms). */
static void handle_bye(struct gdrfab_proto *proto,
		       const struct gdrfab_cm_msg *msg)
{
	struct gdrfab_conn *conn = known_conn(proto, msg);

	if (!conn || conn->peer_left_ms ||
	    (conn->state != GDRFAB_CONN_CONNECTED &&
	     conn->state != GDRFAB_CONN_ACCEPTING) ||
	    conn->remote_qpn != msg->qpn || conn->peer_nonce != msg->nonce)
		return;
	conn->peer_left_ms = GDRFAB_MAX(gdrfab_tick_ms(), 1);
}

/* What is wrong with a connection message (rails: the bytes after it),
 * or NULL. */
static const char *check_cm(const struct gdrfab_cm_msg *msg,
			    const struct gdrfab_cm_rails *rails, size_t len)
{
	const char *rails_why;
	char why[128];

	if (len < sizeof(*msg) || len > sizeof(*msg) + sizeof(*rails))
		return "wrong length";
	rails_why = gdrfab_cm_rails_check(msg, rails, len);
	if (rails_why)
		return rails_why;
	if (msg->version != GDRFAB_WIRE_VERSION)
		return "unknown wire version";
	if (msg->type < GDRFAB_CM_REQ || msg->type > GDRFAB_CM_BYE)
		return "unknown type";
	if (msg->mtu < IBV_MTU_256 || msg->mtu > IBV_MTU_4096)
		return "bad MTU";
	if (!msg->qpn || msg->qpn > 0xffffff)
		return "bad QP number";
	if (!msg->rd_atomic)
		return "no READ resources";
	if (msg->type == GDRFAB_CM_REJ ? msg->reject != GDRFAB_REJECT_EAGER_MAX
				       : msg->reject != 0)
		return "bad reject reason";
	if (gdrfab_addr_validate(&msg->src, sizeof(msg->src), why,
				 sizeof(why)) ||
	    !msg->src.qpn_be)
		return "bad source name";
	return NULL;
}

void gdrfab_conn_handle_cm(struct gdrfab_proto *proto, const void *buf,
			   size_t len)
{
	struct {
		struct gdrfab_cm_msg msg;
		struct gdrfab_cm_rails rails; /* on the wire right after */
	} in;
	struct gdrfab_cm_msg msg;
	const struct gdrfab_cm_rails *rails = NULL;
	const char *why;

	/* A copy: the receive slot is reposted while we still act. */
	memset(&in, 0, sizeof(in));
	memcpy(&in, buf, GDRFAB_MIN(len, sizeof(in)));
	msg = in.msg;
	why = check_cm(&msg, &in.rails, len);
	if (why) {
		GDRFAB_WIRE_WARN(proto, FI_LOG_EP_CTRL,
				 "connection message dropped: %s (%zu bytes)",
				 why, len);
		return;
	}
	/* Meant for an earlier endpoint that had our QP number; or read
	 * while this one says farewell, when no connection may start. */
	if (!gdrfab_addr_equal(&msg.dst, &proto->env.name) || proto->closing)
		return;
	if (len > sizeof(msg))
		rails = &in.rails;
	switch (msg.type) {
	case GDRFAB_CM_REQ: handle_req(proto, &msg); break;
	case GDRFAB_CM_REP: handle_rep(proto, &msg, rails); break;
	case GDRFAB_CM_RTU: handle_rtu(proto, &msg, rails); break;
	case GDRFAB_CM_REJ: handle_rej(proto, &msg); break;
	case GDRFAB_CM_BYE: handle_bye(proto, &msg); break;
	}
}

/* The first message from the peer also says its side is connected. */
void gdrfab_conn_rx(struct gdrfab_conn *conn)
{
	conn->last_rx_ms = conn->proto->now_ms; /* from progress */
	if (conn->state == GDRFAB_CONN_ACCEPTING)
		established(conn);
}

/* A NOP at most every interval_ms, so that RC retries notice a dead
 * peer: its NIC must acknowledge it, and a peer whose process is gone
 * never does (the send fails once the retries run out, and with it the
 * connection, which is then released). */
static void gdrfab_conn_keepalive(struct gdrfab_conn *conn,
				  long long interval_ms)
{
	long long now = gdrfab_tick_ms();

	if (now - conn->last_keepalive_ms < interval_ms)
		return;
	conn->last_keepalive_ms = now;
	GDRFAB_INFO(FI_LOG_EP_DATA, "keepalive to QP %u: silent for %lld ms\n",
		    conn->remote_qpn, now - conn->last_rx_ms);
	gdrfab_send_ctrl(conn->proto, conn, GDRFAB_PKT_NOP, 0, 0);
}

/* QPs the NIC moved to the error state without a completion saying so
 * (an access it refused as a responder): their connections fail, and the
 * next operation to the peer connects anew. */
static void async_errors(struct gdrfab_proto *proto)
{
	struct gdrfab_list *it, *tmp;

	if (!atomic_exchange(&proto->async_events, 0))
		return;
	gdrfab_list_for_each_safe (&proto->conns, it, tmp) {
		struct gdrfab_conn *conn =
			gdrfab_list_entry(it, struct gdrfab_conn, entry);
		int event = atomic_exchange(&conn->owner.event, 0);

		if (!event)
			continue;
		GDRFAB_WARN(
			FI_LOG_EP_DATA, "QP %u to QP %u: %s\n",
			conn->qp->qp_num, conn->remote_qpn,
			ibv_event_type_str((enum ibv_event_type)(event - 1)));
		gdrfab_conn_fail(conn, FI_EIO, GDRFAB_PERR_QP_ERROR);
	}
}

/* A port of the device went down or came back since the last look
 * (counted by whichever endpoint read the event): note when. */
static void port_changes(struct gdrfab_proto *proto, long long now)
{
	unsigned seen = atomic_load(proto->env.port_events);

	if (seen == proto->port_events_seen)
		return;
	proto->port_events_seen = seen;
	proto->port_event_ms = now;
}

/* Whether the connection's work requests crossed a port outage and have
 * not moved for the RC retry budget since. A NIC must complete every
 * work request, in error at the latest when its retries run out, and
 * rxe does so within a second of its netdev going down; but once earlier
 * processes have used it, rxe can keep work requests posted across the
 * outage for ever with no completion at all (issue 33). Only work older
 * than a port change is judged: a live peer slow to post receives (RNR,
 * retried for ever) on a link that stayed up is never cut off. */
static bool tx_stalled(const struct gdrfab_conn *conn, long long now)
{
	const struct gdrfab_proto *proto = conn->proto;

	return conn->wr_outstanding &&
	       conn->tx_done_ms < proto->port_event_ms &&
	       now - proto->port_event_ms > gdrfab_params.peer_timeout_ms;
}

static void tx_watch(struct gdrfab_conn *conn, long long now)
{
	if (!conn->wr_outstanding) {
		conn->tx_done_ms = now; /* nothing in flight to judge */
		return;
	}
	if (!tx_stalled(conn, now))
		return;
	GDRFAB_WARN(
		FI_LOG_EP_DATA,
		"QP %u to QP %u: %d work requests posted before the port went down or came back, %lld ms ago, and none completed since: failing the connection\n",
		conn->qp->qp_num, conn->remote_qpn, conn->wr_outstanding,
		now - conn->proto->port_event_ms);
	gdrfab_conn_fail(conn, FI_EIO, GDRFAB_PERR_LINK_STALLED);
}

/* Resends, timeouts and keepalives; at most once a tick of
 * gdrfab_tick_ms. */
void gdrfab_conn_timers(struct gdrfab_proto *proto)
{
	long long now = gdrfab_tick_ms();
	struct gdrfab_list *it, *tmp;

	gdrfab_async_poll(proto->ctx, proto->env.port_events);
	async_errors(proto);
	port_changes(proto, now);
	if (proto->env.av)
		proto->ops->av_progress(proto->env.av);
	gdrfab_ud_check(proto);
	gdrfab_list_for_each_safe (&proto->conns, it, tmp) {
		struct gdrfab_conn *conn =
			gdrfab_list_entry(it, struct gdrfab_conn, entry);
		bool waiting = conn->state == GDRFAB_CONN_CONNECTING ||
			       conn->state == GDRFAB_CONN_ACCEPTING;

		if (conn->state == GDRFAB_CONN_RESOLVING) {
			resolve_step(proto, conn, now);
			continue;
		}

		if (waiting && now >= conn->deadline_ms) {
			/* Unconfirmed and unused: only time ran out. */
			bool unused = conn->state == GDRFAB_CONN_ACCEPTING &&
				      gdrfab_list_empty(&conn->pending);

			gdrfab_conn_fail(
				conn, unused ? FI_ETIMEDOUT : FI_EHOSTUNREACH,
				GDRFAB_PERR_PEER_UNREACHABLE);
			continue;
		}
		if (waiting && now >= conn->next_resend_ms) {
			if (send_cm(conn, conn->state == GDRFAB_CONN_CONNECTING
						  ? GDRFAB_CM_REQ
						  : GDRFAB_CM_REP)) {
				conn->resend_interval_ms =
					GDRFAB_MIN(2 * conn->resend_interval_ms,
						   RESEND_MAX_MS);
				conn->next_resend_ms =
					now + conn->resend_interval_ms;
				gdrfab_pstat_resend(proto);
			} else {
				conn->next_resend_ms = now + 1;
			}
		}
		if (conn->state == GDRFAB_CONN_CONNECTED &&
		    (conn->rma_events_owed[0] || conn->rma_events_owed[1]))
			gdrfab_send_rma_events(proto, conn);
		if (conn->peer_left_ms &&
		    now - conn->peer_left_ms >= PEER_LEFT_GRACE_MS) {
			conn_release_left(conn);
			continue;
		}
		if (conn->state != GDRFAB_CONN_CONNECTED)
			continue;
		tx_watch(conn, now);
		if (conn->state != GDRFAB_CONN_CONNECTED)
			continue;
		/* Rails out after a failure: back once their ports are. */
		if (conn->rails)
			gdrfab_rail_back_timers(conn);
		/* Waiting for its FIN: make sure it still lives. */
		if (!gdrfab_list_empty(&conn->rndv_wait) &&
		    now - conn->last_rx_ms > gdrfab_params.peer_timeout_ms / 2)
			gdrfab_conn_keepalive(conn, 100);
		/* Silent for long: is anyone still there? */
		else if (gdrfab_params.idle_timeout_ms &&
			 now - conn->last_rx_ms > gdrfab_params.idle_timeout_ms)
			gdrfab_conn_keepalive(conn,
					      gdrfab_params.idle_timeout_ms);
	}
}

void gdrfab_conn_atomic_answered(struct gdrfab_req *req)
{
	struct gdrfab_conn *conn = req->conn;
	struct gdrfab_proto *proto;

	if (!req->atomic_counted || !conn)
		return;
	req->atomic_counted = false;
	proto = conn->proto;
	if (--conn->proto_atomics_out || conn->atomic_ready ||
	    gdrfab_list_empty(&conn->atomic_hold) || proto->closing)
		return;
	conn->atomic_ready = true;
	conn->refs++;
	gdrfab_list_push_tail(&proto->atomic_ready, &conn->ready_entry);
	gdrfab_proto_wake(proto);
}

void gdrfab_conn_farewell(struct gdrfab_proto *proto)
{
	long long until = gdrfab_tick_ms() + FAREWELL_WAIT_MS;
	struct gdrfab_list *it, *tmp;

	if (!proto->ud_qp)
		return;
	gdrfab_list_for_each_safe (&proto->conns, it, tmp) {
		struct gdrfab_conn *conn =
			gdrfab_list_entry(it, struct gdrfab_conn, entry);

		if (conn->state != GDRFAB_CONN_CONNECTED || conn->peer_left_ms)
			continue;
		/* All UD send slots in flight: reap some, for a while. */
		while (!send_cm(conn, GDRFAB_CM_BYE) && !proto->ud_broken &&
		       gdrfab_tick_ms() < until)
			gdrfab_conn_poll_ud(proto);
	}
	/* Sends still in flight when the UD QP is destroyed may never
	 * leave: let them, for a while (received messages are dropped:
	 * proto->closing). */
	while (proto->ud_tx_busy && !proto->ud_broken &&
	       gdrfab_tick_ms() < until)
		gdrfab_conn_poll_ud(proto);
}
