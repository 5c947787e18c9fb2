/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What anyone who knows an endpoint's name can send to its connection QP,
 * and what a peer with other settings asks: oversized datagrams, requests
 * from ports nobody answers for, from invented names, naming a connected
 * peer without its secret, a QP driven to the error state. The endpoint
 * must stay reachable by its name, spend bounded resources, never wait in
 * progress, and keep its live connections.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <rdma/fi_cm.h>

#include "gdrfab_params.h"
#include "gdrfab_rc.h"
#include "gdrfab_ud.h"
#include "wire_helpers.h"

TestSuite(hostile, .init = wire_setup, .fini = wire_teardown, .timeout = 120);

static struct wep c; /* a third endpoint, on rxe0 like a */

/* Reads one entry from w's CQ, progressing a, b and c; 1, 0 on
 * timeout. */
static int poll3(struct wep *w, struct fi_cq_tagged_entry *e, int ms)
{
	for (int i = 0; i < ms * 10; i++) {
		if (fi_cq_read(w->objs.cq, e, 1) == 1)
			return 1;
		fi_cq_read(a.objs.cq, NULL, 0);
		fi_cq_read(b.objs.cq, NULL, 0);
		if (c.objs.cq)
			fi_cq_read(c.objs.cq, NULL, 0);
		usleep(100);
	}
	return 0;
}

/* Progresses a and b for about ms milliseconds. */
static void progress_for(int ms)
{
	struct fi_cq_tagged_entry e;

	cr_assert_eq(poll3(&b, &e, ms), 0, "unexpected completion at b");
}

/* A new endpoint connects to b by b's name and a message arrives. */
static void a_new_peer_reaches_b(void)
{
	uint8_t name[FI_GDRFAB_ADDR_LEN];
	size_t len = sizeof(name);
	char got[8], msg[8] = "new";
	struct fi_cq_tagged_entry e;
	fi_addr_t to_b;

	wep_open(&c, "rxe0");
	fi_getname(&b.objs.ep->fid, name, &len);
	cr_assert_eq(fi_av_insert(c.objs.av, name, 1, &to_b, 0, NULL), 1);
	cr_assert_eq(
		fi_recv(b.objs.ep, got, sizeof(got), NULL, FI_ADDR_UNSPEC, got),
		0);
	cr_assert_eq(fi_send(c.objs.ep, msg, 4, NULL, to_b, NULL), 0);
	cr_assert(poll3(&b, &e, 20000), "b cannot be reached any more");
	cr_assert_str_eq(got, "new");
	cr_assert(poll3(&c, &e, 20000));
	wep_close(&c);
	memset(&c, 0, sizeof(c));
}

/* A REQ to b as gdrfab sends it, from the given name. */
static struct gdrfab_cm_msg req_from(const struct gdrfab_addr *src)
{
	struct gdrfab_proto *pb = gep(&b)->proto;
	struct gdrfab_cm_msg m;
	uint32_t qpn;

	cr_assert_eq(getrandom(&qpn, sizeof(qpn), 0), (ssize_t)sizeof(qpn));
	memset(&m, 0, sizeof(m));
	m.version = GDRFAB_WIRE_VERSION;
	m.type = GDRFAB_CM_REQ;
	m.mtu = IBV_MTU_1024;
	m.rd_atomic = 1;
	m.qpn = (qpn & 0xfffff) + 1;
	m.eager_max = (uint32_t)pb->eager_max;
	cr_assert_eq(getrandom(&m.nonce, sizeof(m.nonce), 0),
		     (ssize_t)sizeof(m.nonce));
	m.src = *src;
	m.dst = gep(&b)->name;
	return m;
}

/* A name on a's port that no endpoint has. */
static struct gdrfab_addr invented_name(void)
{
	struct gdrfab_addr n = gep(&a)->name;
	uint32_t id;

	cr_assert_eq(getrandom(&id, sizeof(id), 0), (ssize_t)sizeof(id));
	n.ep_id_be = id;
	return n;
}

static int count_conns(struct gdrfab_proto *proto, enum gdrfab_conn_state state)
{
	struct gdrfab_list *it;
	int n = 0;

	for (it = proto->conns.next; it != &proto->conns; it = it->next) {
		if (gdrfab_list_entry(it, struct gdrfab_conn, entry)->state ==
		    state)
			n++;
	}
	return n;
}

static struct gdrfab_conn *conn_to(struct gdrfab_proto *proto,
				   const struct gdrfab_addr *peer)
{
	uint64_t found;

	if (gdrfab_addrmap_get(&proto->conn_by_name, peer, &found))
		return NULL;
	return (struct gdrfab_conn *)(uintptr_t)found;
}

/* Sends len bytes of junk from a raw UD QP on a's port to b's UD QP. */
static void send_datagram(size_t len)
{
	struct gdrfab_domain *d = gep(&a)->domain;
	struct gdrfab_rc_params p = {.port_num = d->port_num,
				     .gid_index = d->gid_index,
				     .roce = !d->port_addr.lid_be};
	struct gdrfab_addr to = gep(&b)->name;
	static uint8_t buf[8192];
	struct ibv_ah_attr attr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	struct ibv_mr *mr;
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = (uint32_t)len};
	struct ibv_send_wr wr = {.sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED};
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	const struct gdrfab_ud_port port = {
		.dev = d->info->domain_attr->name,
		.ctx = d->ctx,
		.pd = d->pd,
		.port_num = d->port_num,
		.max_qp_wr = d->dev_attr.max_qp_wr,
		.max_cqe = d->dev_attr.max_cqe,
	};

	memset(buf, 0xa5, sizeof(buf));
	cr_assert_eq(gdrfab_ud_create(&port, &cq, &qp), 0);
	gdrfab_rc_ah_attr(&attr, &p, &to);
	ah = ibv_create_ah(d->pd, &attr);
	mr = ibv_reg_mr(d->pd, buf, sizeof(buf), 0);
	cr_assert(ah && mr);
	sge.lkey = mr->lkey;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = ntohl(to.qpn_be);
	wr.wr.ud.remote_qkey = GDRFAB_UD_QKEY;
	cr_assert_eq(ibv_post_send(qp, &wr, &bad), 0);
	while (ibv_poll_cq(cq, 1, &wc) == 0)
		;
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s",
		     ibv_wc_status_str(wc.status));
	ibv_dereg_mr(mr);
	ibv_destroy_ah(ah);
	gdrfab_ud_destroy(cq, qp);
}

Test(hostile, the_largest_datagrams_leave_the_connection_qp_ready)
{
	struct gdrfab_proto *pb = gep(&b)->proto;
	struct ibv_port_attr port;

	cr_assert_eq(ibv_query_port(gep(&a)->domain->ctx,
				    gep(&a)->domain->port_num, &port),
		     0);
	/* As large as the port lets a datagram be, and a few others. */
	send_datagram((size_t)128 << port.active_mtu);
	send_datagram(sizeof(struct gdrfab_cm_msg) + 1);
	send_datagram(1);
	progress_for(200);
	cr_assert(gdrfab_ud_in_rts(pb->ud_qp), "the UD QP left RTS");
	cr_assert_eq(pb->ud_gen, 0, "the UD QP had to be reset");
	a_new_peer_reaches_b();
	expect_only_good_message();
}

Test(hostile, a_connection_qp_found_in_error_is_reset_keeping_its_name)
{
	struct gdrfab_proto *pb = gep(&b)->proto;
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};
	uint32_t qpn = pb->ud_qp->qp_num;

	/* However it got there: the device, a packet crafted below
	 * verbs. */
	cr_assert_eq(ibv_modify_qp(pb->ud_qp, &attr, IBV_QP_STATE), 0);
	for (int i = 0; i < 50 && pb->ud_gen == 0; i++)
		progress_for(20);
	cr_assert_eq(pb->ud_gen, 1, "the UD QP was not reset");
	cr_assert(gdrfab_ud_in_rts(pb->ud_qp));
	cr_assert_eq(pb->ud_qp->qp_num, qpn);
	cr_assert_eq(ntohl(gep(&b)->name.qpn_be), qpn);
	a_new_peer_reaches_b();
	expect_only_good_message();
}

Test(hostile, a_request_from_a_port_nobody_answers_for_costs_no_qp)
{
	struct gdrfab_proto *pb = gep(&b)->proto;
	struct gdrfab_addr bogus = invented_name();
	struct gdrfab_cm_msg m;
	struct ibv_ah *ah;

	/* ::ffff:192.0.2.77, on the VM's link but no host's. */
	memset(bogus.gid, 0, 16);
	bogus.gid[10] = bogus.gid[11] = 0xff;
	bogus.gid[12] = 192, bogus.gid[13] = 0, bogus.gid[14] = 2;
	bogus.gid[15] = 77;
	m = req_from(&bogus);
	for (int i = 0; i < 5; i++)
		gdrfab_conn_handle_cm(pb, &m, sizeof(m));
	/* Handled without waiting for the address: no QP yet, the address
	 * being resolved (or already given up) off the progress path. */
	cr_assert_null(conn_to(pb, &bogus));
	cr_assert_neq(
		gdrfab_ah_get(&gep(&b)->domain->ah_cache, &bogus, false, &ah),
		GDRFAB_AH_READY);
	cr_assert_eq(pb->half_open, 0);
	expect_only_good_message();
}

Test(hostile, unconfirmed_connections_are_capped_and_reclaimed)
{
	struct gdrfab_proto *pb = gep(&b)->proto;

	gdrfab_params.half_open_max = 4;
	gdrfab_params.conn_timeout_ms = 300;
	for (int i = 0; i < 10; i++) {
		struct gdrfab_addr n = invented_name();
		struct gdrfab_cm_msg m = req_from(&n);

		gdrfab_conn_handle_cm(pb, &m, sizeof(m));
	}
	cr_assert_eq(pb->half_open, 4);
	cr_assert_eq(count_conns(pb, GDRFAB_CONN_ACCEPTING), 4);
	progress_for(800);
	cr_assert_eq(pb->half_open, 0);
	cr_assert_eq(count_conns(pb, GDRFAB_CONN_ACCEPTING), 0);
	cr_assert_eq(count_conns(pb, GDRFAB_CONN_CONNECTED), 1, "a's is kept");
	expect_only_good_message();
}

Test(hostile, a_request_naming_a_connected_peer_without_its_nonce_is_dropped)
{
	struct gdrfab_proto *pb = gep(&b)->proto;
	struct gdrfab_conn *before = conn_to(pb, &gep(&a)->name);
	struct gdrfab_cm_msg m = req_from(&gep(&a)->name);

	cr_assert_not_null(before);
	cr_assert_eq(before->state, GDRFAB_CONN_CONNECTED);
	gdrfab_conn_handle_cm(pb, &m, sizeof(m));
	cr_assert_eq(conn_to(pb, &gep(&a)->name), before);
	cr_assert_eq(before->state, GDRFAB_CONN_CONNECTED);
	expect_only_good_message();
}

Test(hostile, a_connected_peer_with_a_new_qp_replaces_its_connection)
{
	struct gdrfab_proto *pb = gep(&b)->proto;
	struct gdrfab_conn *now;
	struct gdrfab_cm_msg m = req_from(&gep(&a)->name);
	uint32_t qpn_before = conn_to(pb, &gep(&a)->name)->remote_qpn;

	/* What a does when it lost its side: the same nonce, a new QP. The
	 * connection is told by the QP it answers (a new one may sit where
	 * the old one was freed). */
	m.nonce = gep(&a)->proto->nonce;
	if (m.qpn == qpn_before)
		m.qpn = qpn_before % 0xfffff + 1;
	gdrfab_conn_handle_cm(pb, &m, sizeof(m));
	now = conn_to(pb, &gep(&a)->name);
	cr_assert_not_null(now);
	cr_assert_eq(now->remote_qpn, m.qpn, "the old connection stayed");
	cr_assert_eq(now->state, GDRFAB_CONN_ACCEPTING);
}

static void refused_for_eager_size(void)
{
	uint8_t name[FI_GDRFAB_ADDR_LEN];
	size_t len = sizeof(name), def = gdrfab_params.eager_max;
	struct fi_cq_err_entry err = {0};
	struct fi_cq_tagged_entry e;
	fi_addr_t to_b;

	gdrfab_params.eager_max = 4 * def;
	wep_open(&c, "rxe0");
	gdrfab_params.eager_max = def;
	fi_getname(&b.objs.ep->fid, name, &len);
	cr_assert_eq(fi_av_insert(c.objs.av, name, 1, &to_b, 0, NULL), 1);
	cr_assert_eq(fi_send(c.objs.ep, "x", 2, NULL, to_b, NULL), 0);
	/* Refused at once, well before the connection timeout. */
	for (int i = 0; i < 50000 && fi_cq_read(c.objs.cq, &e, 1) != -FI_EAVAIL;
	     i++) {
		fi_cq_read(b.objs.cq, NULL, 0);
		usleep(100);
	}
	cr_assert_eq(fi_cq_readerr(c.objs.cq, &err, 0), 1);
	cr_assert_eq(err.err, FI_ECONNREFUSED, "%s", fi_strerror(err.err));
	wep_close(&c);
	memset(&c, 0, sizeof(c));
}

Test(hostile, peers_with_other_eager_sizes_are_refused_naming_the_setting)
{
	char *log = capture_stderr(refused_for_eager_size);

	cr_assert(strstr(log, "refused the connection: FI_GDRFAB_EAGER_MAX"),
		  "log: %s", log);
	cr_assert(strstr(log, "connection with gdrfab://"), "log: %s", log);
	expect_only_good_message();
}
