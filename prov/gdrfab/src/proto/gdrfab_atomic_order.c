/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_ORDER_ATOMIC_* between the two ways an atomic travels. A message-borne
 * atomic is applied when the target's process progresses, a NIC atomic as
 * soon as it arrives: a NIC atomic sent after a message-borne one on the
 * same connection could be applied first. So a NIC atomic waits, held on
 * its connection, until every message-borne atomic sent before it has
 * been answered (applied); every atomic submitted while some are held
 * waits behind them, so that none overtakes a held one. The other way
 * round needs nothing: RC executes a NIC atomic at the responder before
 * the messages that follow it are delivered.
 *
 * Held atomics are released from progress (proto->atomic_ready), never
 * from inside the completion handling that answered the last one.
 */
#include "gdrfab.h"
#include "gdrfab_proto.h"

static void start(struct gdrfab_req *req)
{
	struct gdrfab_conn *conn = req->conn;
	const struct gdrfab_proto_env *env = &conn->proto->env;

	if (req->op == GDRFAB_OP_NIC_ATOMIC) {
		atomic_fetch_add(env->atomics_nic, 1);
	} else {
		atomic_fetch_add(env->atomics_proto, 1);
		/* Requests of a connection still resolving its peer move to
		 * the resolved one, which counts them then. */
		if (conn->state != GDRFAB_CONN_RESOLVING) {
			req->atomic_counted = true;
			conn->proto_atomics_out++;
		}
	}
	gdrfab_req_submit(req);
}

void gdrfab_atomic_submit(struct gdrfab_req *req)
{
	struct gdrfab_conn *conn = req->conn;
	bool nic = req->op == GDRFAB_OP_NIC_ATOMIC;

	if (conn->state != GDRFAB_CONN_FAILED &&
	    (!gdrfab_list_empty(&conn->atomic_hold) ||
	     (nic && conn->proto_atomics_out))) {
		if (nic)
			atomic_fetch_add(conn->proto->env.atomics_held, 1);
		gdrfab_list_push_tail(&conn->atomic_hold, &req->entry);
		return;
	}
	start(req);
}

void gdrfab_atomic_answered(struct gdrfab_req *req)
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
}

void gdrfab_atomic_release_run(struct gdrfab_proto *proto)
{
	while (!gdrfab_list_empty(&proto->atomic_ready)) {
		struct gdrfab_conn *conn =
			gdrfab_list_entry(proto->atomic_ready.next,
					  struct gdrfab_conn, ready_entry);

		gdrfab_list_remove(&conn->ready_entry);
		conn->atomic_ready = false;
		while (!gdrfab_list_empty(&conn->atomic_hold)) {
			struct gdrfab_req *req =
				gdrfab_list_entry(conn->atomic_hold.next,
						  struct gdrfab_req, entry);

			if (req->op == GDRFAB_OP_NIC_ATOMIC &&
			    conn->proto_atomics_out)
				break; /* answered later: back here then */
			gdrfab_list_remove(&req->entry);
			start(req);
		}
		gdrfab_conn_put(conn);
	}
}
