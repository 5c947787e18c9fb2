/* SPDX-License-Identifier: BSD-2-Clause */
/* Rails of an endpoint and of its connections (gdrfab_conn_rails.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "gdrfab.h"
#include "gdrfab_conn_rails.h"
#include "gdrfab_params.h"
#include "gdrfab_proto.h"
#include "gdrfab_rail_back.h"
#include "gdrfab_rc.h"
#include "gdrfab_verbs_ops.h"

/* A rail's CQ holds every completion its QPs may have outstanding: one
 * per send slot of each connection, bounded as rail 0's is by the
 * endpoint's transmit depth. */
#define RAIL_CQ_MIN 256

int gdrfab_rails_cqs_create(struct gdrfab_proto *proto)
{
	for (size_t i = 1; i < proto->env.nrails; i++) {
		const struct gdrfab_proto_rail *r =
			&proto->env.more_rails[i - 1];
		int cqe = (int)GDRFAB_MIN(
			(size_t)r->dev_attr->max_cqe,
			GDRFAB_MAX(proto->env.tx_size, (size_t)RAIL_CQ_MIN));

		proto->rail_cq[i - 1] =
			gdrfab_vops->create_cq(r->ctx, cqe, NULL, NULL, 0);
		if (!proto->rail_cq[i - 1]) {
			GDRFAB_WARN(FI_LOG_EP_CTRL,
				    "ibv_create_cq(%d) on rail %zu: %s\n", cqe,
				    i, strerror(errno));
			return -FI_ENOMEM;
		}
		/* Never more work requests outstanding on the rail, over all
		 * its connections, than its CQ has room for. */
		proto->rail_cq_credits[i - 1] = cqe;
	}
	return 0;
}

void gdrfab_rails_cqs_destroy(struct gdrfab_proto *proto)
{
	for (size_t i = 0; i < GDRFAB_CM_RAILS_MAX - 1; i++) {
		if (proto->rail_cq[i])
			gdrfab_vops->destroy_cq(proto->rail_cq[i]);
		proto->rail_cq[i] = NULL;
	}
}

void gdrfab_cm_rails_offer(const struct gdrfab_proto *proto,
			   struct gdrfab_cm_msg *msg)
{
	if (proto->env.nrails < 2)
		return;
	msg->cm_flags |= GDRFAB_CM_F_RAILS;
	msg->rails = (uint16_t)proto->env.nrails;
}

static size_t trailer_len(size_t count)
{
	return offsetof(struct gdrfab_cm_rails, rail) +
	       count * sizeof(struct gdrfab_cm_rail);
}

const char *gdrfab_cm_rails_check(const struct gdrfab_cm_msg *msg,
				  const struct gdrfab_cm_rails *t, size_t len)
{
	bool flagged = msg->cm_flags & GDRFAB_CM_F_RAILS;
	bool trailed = msg->type == GDRFAB_CM_REP || msg->type == GDRFAB_CM_RTU;

	if (!flagged || !trailed) {
		if (len != sizeof(*msg))
			return "wrong length";
		/* Without the flag the field is read by no one, as earlier
		 * builds never read it. */
		if (!flagged)
			return NULL;
		if (msg->type == GDRFAB_CM_REQ &&
		    (msg->rails < 2 || msg->rails > GDRFAB_CM_RAILS_MAX))
			return "bad rail count";
		return NULL;
	}
	if (msg->rails)
		return "a rail count outside a REQ";
	if (len < sizeof(*msg))
		return "wrong length";
	return gdrfab_cm_rails_check_trailer(t, len - sizeof(*msg));
}

const char *gdrfab_cm_rails_check_trailer(const struct gdrfab_cm_rails *t,
					  size_t len)
{
	if (len < trailer_len(1))
		return "wrong length";
	if (!t->count || t->count > GDRFAB_CM_RAILS_MAX - 1 || t->reserved[0] ||
	    t->reserved[1] || t->reserved[2])
		return "bad rail count";
	if (len != trailer_len(t->count))
		return "wrong length";
	for (size_t i = 0; i < t->count; i++) {
		if (!t->rail[i].qpn || t->rail[i].qpn > 0xffffff ||
		    t->rail[i].psn > 0xffffff)
			return "bad rail QP";
		if (t->rail[i].mtu < IBV_MTU_256 ||
		    t->rail[i].mtu > IBV_MTU_4096 || !t->rail[i].port_num)
			return "bad rail port";
	}
	return NULL;
}

size_t gdrfab_cm_rails_fill(const struct gdrfab_conn *conn,
			    struct gdrfab_cm_rails *out)
{
	const struct gdrfab_conn_rails *cr = conn->rails;

	if (!cr)
		return 0;
	memset(out, 0, sizeof(*out));
	out->count = (uint8_t)cr->more;
	for (size_t i = 0; i < cr->more; i++) {
		const struct gdrfab_proto_rail *r =
			&conn->proto->env.more_rails[i];

		out->rail[i].qpn = cr->qp[i]->qp_num;
		out->rail[i].psn = cr->psn[i];
		memcpy(out->rail[i].gid, r->port_addr.gid, 16);
		out->rail[i].lid_be = r->port_addr.lid_be;
		out->rail[i].port_num = r->port_num;
		out->rail[i].mtu = (uint8_t)r->active_mtu;
	}
	return trailer_len(cr->more);
}

/* Rail i's (1-based) QP settings: its PD, CQ and port; no receive queue
 * (nothing but RDMA READs and WRITEs goes on it) and no NIC atomics
 * (those stay on rail 0 with the messages they are ordered against). */
static void rail_params(const struct gdrfab_proto *proto, size_t i,
			struct gdrfab_rc_params *p)
{
	const struct gdrfab_proto_rail *r = &proto->env.more_rails[i - 1];

	memset(p, 0, sizeof(*p));
	p->pd = r->pd;
	p->cq = proto->rail_cq[i - 1];
	p->port_num = r->port_num;
	p->gid_index = r->gid_index;
	p->roce = !r->port_addr.lid_be;
	p->sq_depth = proto->sq_depth;
	p->max_sge = proto->max_sge;
	p->max_rd_atomic = proto->max_rd_atomic;
	p->max_dest_rd_atomic = proto->max_rd_atomic;
	p->timeout = gdrfab_rc_timeout_for_ms(gdrfab_params.peer_timeout_ms);
}

static uint32_t rail_psn(void)
{
	uint32_t psn;

	if (getrandom(&psn, sizeof(psn), GRND_NONBLOCK) != sizeof(psn))
		psn = (uint32_t)gdrfab_tick_ms() * 2654435761u;
	return psn & 0xffffff;
}

/* Makes more rail QPs for conn (in INIT); false, none left, when one
 * cannot be made. */
static bool rails_make(struct gdrfab_conn *conn, size_t more)
{
	struct gdrfab_conn_rails *cr = calloc(1, sizeof(*cr));

	if (!cr)
		return false;
	conn->rails = cr;
	for (size_t i = 1; i <= more; i++) {
		struct gdrfab_rc_params p;

		rail_params(conn->proto, i, &p);
		p.qp_context = &conn->owner;
		cr->qp[i - 1] = gdrfab_rc_create(&p, NULL);
		if (!cr->qp[i - 1]) {
			gdrfab_conn_rails_free(conn);
			return false;
		}
		cr->psn[i - 1] = rail_psn();
		cr->sq_avail[i - 1] = conn->proto->sq_depth;
		cr->more = i;
	}
	return true;
}

bool gdrfab_conn_rails_connect(struct gdrfab_conn *conn,
			       const struct gdrfab_cm_rails *peer)
{
	struct gdrfab_conn_rails *cr = conn->rails;

	for (size_t i = 0; i < cr->more; i++)
		cr->peer_psn[i] = peer->rail[i].psn;
	for (size_t i = 1; i <= cr->more; i++) {
		const struct gdrfab_cm_rail *pr = &peer->rail[i - 1];
		const struct gdrfab_proto_rail *r =
			&conn->proto->env.more_rails[i - 1];
		struct gdrfab_addr addr = {.version = GDRFAB_ADDR_VERSION,
					   .port_num = pr->port_num,
					   .lid_be = pr->lid_be};
		struct gdrfab_rc_params p;
		enum ibv_mtu mtu =
			GDRFAB_MIN(r->active_mtu, (enum ibv_mtu)pr->mtu);
		int err;

		memcpy(addr.gid, pr->gid, 16);
		rail_params(conn->proto, i, &p);
		err = gdrfab_rc_connect(cr->qp[i - 1], &p, &addr, pr->qpn,
					pr->psn, cr->psn[i - 1], mtu);
		if (err) {
			GDRFAB_DBG(FI_LOG_EP_CTRL,
				   "connecting rail %zu's QP to QP %u: %s\n", i,
				   pr->qpn, strerror(err));
			return false;
		}
	}
	return true;
}

void gdrfab_conn_rails_accept(struct gdrfab_conn *conn,
			      const struct gdrfab_cm_msg *req)
{
	size_t ours = conn->proto->env.nrails, more;

	if (conn->rails || ours < 2 || !(req->cm_flags & GDRFAB_CM_F_RAILS))
		return;
	more = GDRFAB_MIN(ours, (size_t)req->rails) - 1;
	if (!rails_make(conn, more))
		GDRFAB_WARN(
			FI_LOG_EP_CTRL,
			"no QPs for %zu more rails: this peer uses rail 0 alone\n",
			more);
}

void gdrfab_conn_rails_on_rep(struct gdrfab_conn *conn,
			      const struct gdrfab_cm_rails *peer)
{
	gdrfab_conn_rails_free(conn); /* a repeated REP makes them anew */
	if (!peer || conn->proto->env.nrails < 2)
		return;
	/* The acceptor never offers more than our REQ said. */
	if (peer->count > conn->proto->env.nrails - 1) {
		GDRFAB_WARN(
			FI_LOG_EP_CTRL,
			"peer offers %u more rails, we have %zu: rail 0 alone\n",
			peer->count, conn->proto->env.nrails - 1);
		return;
	}
	if (!rails_make(conn, peer->count) ||
	    !gdrfab_conn_rails_connect(conn, peer)) {
		GDRFAB_WARN(
			FI_LOG_EP_CTRL,
			"rails not connected: this peer uses rail 0 alone\n");
		gdrfab_conn_rails_free(conn);
		return;
	}
	conn->rails->requester = true;
}

bool gdrfab_conn_rails_on_rtu(struct gdrfab_conn *conn,
			      const struct gdrfab_cm_rails *peer)
{
	struct gdrfab_conn_rails *cr = conn->rails;

	if (!cr)
		return false;
	if (peer && peer->count == cr->more &&
	    !gdrfab_conn_rails_connect(conn, peer)) {
		GDRFAB_WARN(
			FI_LOG_EP_CTRL,
			"rails not connected: this peer uses rail 0 alone\n");
		peer = NULL;
	}
	if (!peer || peer->count != cr->more) {
		/* The requester kept rail 0 alone, or we cannot follow: its
		 * rails never hear they are up, so it never uses them. */
		gdrfab_conn_rails_free(conn);
		return false;
	}
	cr->up = true;
	return true;
}

void gdrfab_conn_rails_up(struct gdrfab_conn *conn)
{
	struct gdrfab_conn_rails *cr = conn->rails;

	if (!cr)
		return;
	if (cr->back == GDRFAB_RAILS_ACCEPTED)
		gdrfab_rail_back_done(conn);
	else if (cr->back == GDRFAB_RAILS_STEADY)
		cr->up = true;
	/* Else a late word of an exchange left since: they stay out. */
}

bool gdrfab_conn_rails_drained(const struct gdrfab_conn *conn)
{
	const struct gdrfab_conn_rails *cr = conn->rails;

	for (size_t i = 0; i < cr->more; i++) {
		if (cr->sq_avail[i] != conn->proto->sq_depth)
			return false;
	}
	return true;
}

bool gdrfab_conn_rails_reset(struct gdrfab_conn *conn)
{
	struct gdrfab_conn_rails *cr = conn->rails;

	for (size_t i = 1; i <= cr->more; i++) {
		struct gdrfab_rc_params p;
		uint32_t psn;
		int err;

		rail_params(conn->proto, i, &p);
		p.qp_context = &conn->owner;
		err = gdrfab_rc_reset(cr->qp[i - 1], &p);
		if (err) {
			GDRFAB_DBG(FI_LOG_EP_CTRL,
				   "resetting rail %zu's QP %u: %s\n", i,
				   cr->qp[i - 1]->qp_num, strerror(err));
			return false;
		}
		/* A new PSN: nothing the old connection left on the wire
		 * is taken for the new one's; never the old one, so that
		 * the peer tells a new ACCEPT from a copy of the last. */
		psn = rail_psn();
		cr->psn[i - 1] =
			psn == cr->psn[i - 1] ? (psn + 1) & 0xffffff : psn;
	}
	return true;
}

void gdrfab_conn_rails_error(struct gdrfab_conn *conn)
{
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};

	for (size_t i = 0; conn->rails && i < conn->rails->more; i++)
		gdrfab_vops->modify_qp(conn->rails->qp[i], &attr, IBV_QP_STATE);
}

void gdrfab_conn_rail_error(struct gdrfab_conn *conn, size_t rail)
{
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};

	gdrfab_vops->modify_qp(conn->rails->qp[rail - 1], &attr, IBV_QP_STATE);
}

void gdrfab_conn_rails_free(struct gdrfab_conn *conn)
{
	struct gdrfab_conn_rails *cr = conn->rails;

	if (!cr)
		return;
	for (size_t i = 0; i < GDRFAB_CM_RAILS_MAX - 1; i++) {
		if (cr->qp[i] && gdrfab_vops->destroy_qp(cr->qp[i]))
			GDRFAB_WARN(FI_LOG_EP_CTRL,
				    "ibv_destroy_qp(RC, rail %zu)\n", i + 1);
	}
	free(cr);
	conn->rails = NULL;
}
