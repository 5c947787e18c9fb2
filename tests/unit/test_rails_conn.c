/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connections over rails (gdrfab_conn_rails.h), on the fake verbs with
 * two devices: two endpoints of rail-set domains agree on two rails in
 * their one exchange, each side's rail-1 QP connected to the other's and
 * marked up on both sides (the requester once the acceptor said so); an
 * endpoint of two rails and one of a single NIC connect, whichever
 * starts, and use rail 0 alone, with no rail QP left on either side; and
 * every rail QP and CQ is gone when they close. A peer's rails in the
 * connection messages are checked field by field.
 */
#include <criterion/criterion.h>
#include <stddef.h>
#include <string.h>

#include "fake_verbs.h"
#include "gdrfab.h"
#include "gdrfab_conn.h"
#include "gdrfab_conn_rails.h"
#include "gdrfab_objs.h"
#include "gdrfab_proto.h"
#include "gdrfab_verbs_ops.h"
#include "proto_fixture.h"

/* Side i's connection to the other side (its only one). */
static struct gdrfab_conn *conn_of(struct pf *f, int i)
{
	struct gdrfab_ep *ep =
		gdrfab_container_of(f->s[i].ep, struct gdrfab_ep, fid);
	struct gdrfab_proto *proto = ep->proto;

	cr_assert(!gdrfab_list_empty(&proto->conns), "side %d: no connection",
		  i);
	return gdrfab_list_entry(proto->conns.next, struct gdrfab_conn, entry);
}

static uint32_t dest_qpn(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;

	memset(&attr, 0, sizeof(attr));
	cr_assert_eq(gdrfab_vops->query_qp(qp, &attr, IBV_QP_DEST_QPN, &init),
		     0);
	return attr.dest_qp_num;
}

Test(rails_conn, two_rail_pair_connects_both_rails)
{
	static const char *const dom[2] = {"fake0+fake1", "fake1+fake0"};
	struct gdrfab_conn *c[2];
	struct pf f;

	pf_open_domains(&f, 2, dom);
	pf_connect(&f);
	pf_drive(&f, 20); /* the acceptor's word that its rails are up */
	for (int i = 0; i < 2; i++) {
		c[i] = conn_of(&f, i);
		cr_assert_eq(c[i]->state, GDRFAB_CONN_CONNECTED, "side %d", i);
		cr_assert(c[i]->rails, "side %d has no rails", i);
		cr_expect_eq(c[i]->rails->more, 1, "side %d", i);
		cr_expect(c[i]->rails->up, "side %d: rails not up", i);
	}
	/* Rail 0 pairs with rail 0, rail 1 with rail 1. */
	cr_expect_eq(dest_qpn(c[0]->qp), c[1]->qp->qp_num);
	cr_expect_eq(dest_qpn(c[0]->rails->qp[0]), c[1]->rails->qp[0]->qp_num);
	cr_expect_eq(dest_qpn(c[1]->rails->qp[0]), c[0]->rails->qp[0]->qp_num);
	/* Each rail QP is on its rail's device: side 0's rail 1 is fake1. */
	cr_expect_str_eq(c[0]->rails->qp[0]->pd->context->device->name,
			 "fake1");
	cr_expect_str_eq(c[1]->rails->qp[0]->pd->context->device->name,
			 "fake0");
	/* Messages still flow on rail 0. */
	pf_connect(&f);
	pf_close(&f);
}

static void single_and_double(const char *const dom[2])
{
	struct pf f;

	pf_open_domains(&f, 2, dom);
	pf_connect(&f); /* side 0 asks */
	pf_drive(&f, 20);
	for (int i = 0; i < 2; i++) {
		struct gdrfab_conn *c = conn_of(&f, i);

		cr_expect_eq(c->state, GDRFAB_CONN_CONNECTED, "side %d", i);
		cr_expect_null(c->rails, "side %d made rails", i);
	}
	pf_connect(&f);
	pf_close(&f);
}

Test(rails_conn, two_rails_asking_one_rail)
{
	static const char *const dom[2] = {"fake0+fake1", "fake1"};

	single_and_double(dom);
}

Test(rails_conn, one_rail_asking_two_rails)
{
	static const char *const dom[2] = {"fake1", "fake0+fake1"};

	single_and_double(dom);
}

/* A peer's rails are checked before anything is made of them: a REQ's
 * count, a trailer's length, count and QPs; a message without the flag
 * is as before, whatever the field earlier builds called reserved. */
Test(rails_conn, cm_rails_checked)
{
	struct {
		struct gdrfab_cm_msg msg;
		struct gdrfab_cm_rails rails;
	} m;
	size_t one = sizeof(m.msg) + offsetof(struct gdrfab_cm_rails, rail) +
		     sizeof(struct gdrfab_cm_rail);

	memset(&m, 0, sizeof(m));
	m.msg.type = GDRFAB_CM_REQ;
	cr_expect_null(gdrfab_cm_rails_check(&m.msg, &m.rails, sizeof(m.msg)));
	m.msg.rails = 3; /* no flag: not read */
	cr_expect_null(gdrfab_cm_rails_check(&m.msg, &m.rails, sizeof(m.msg)));
	m.msg.cm_flags = GDRFAB_CM_F_RAILS;
	cr_expect_null(gdrfab_cm_rails_check(&m.msg, &m.rails, sizeof(m.msg)));
	m.msg.rails = 1;
	cr_expect_not_null(
		gdrfab_cm_rails_check(&m.msg, &m.rails, sizeof(m.msg)));
	m.msg.rails = GDRFAB_CM_RAILS_MAX + 1;
	cr_expect_not_null(
		gdrfab_cm_rails_check(&m.msg, &m.rails, sizeof(m.msg)));
	m.msg.rails = 2;
	cr_expect_not_null(gdrfab_cm_rails_check(&m.msg, &m.rails, one),
			   "a REQ has no trailer");

	m.msg.type = GDRFAB_CM_REP;
	m.msg.rails = 0;
	m.rails.count = 1;
	m.rails.rail[0] = (struct gdrfab_cm_rail){
		.qpn = 0x123, .psn = 7, .port_num = 1, .mtu = IBV_MTU_1024};
	cr_expect_null(gdrfab_cm_rails_check(&m.msg, &m.rails, one));
	cr_expect_not_null(gdrfab_cm_rails_check(&m.msg, &m.rails, one + 4),
			   "longer than its count");
	cr_expect_not_null(
		gdrfab_cm_rails_check(&m.msg, &m.rails, sizeof(m.msg)),
		"flagged REP without its trailer");
	m.rails.count = 0;
	cr_expect_not_null(gdrfab_cm_rails_check(&m.msg, &m.rails, one));
	m.rails.count = GDRFAB_CM_RAILS_MAX;
	cr_expect_not_null(gdrfab_cm_rails_check(&m.msg, &m.rails, one));
	m.rails.count = 1;
	m.rails.rail[0].qpn = 0;
	cr_expect_not_null(gdrfab_cm_rails_check(&m.msg, &m.rails, one));
	m.rails.rail[0].qpn = 0x1000000;
	cr_expect_not_null(gdrfab_cm_rails_check(&m.msg, &m.rails, one));
	m.rails.rail[0].qpn = 0x123;
	m.rails.rail[0].mtu = 0;
	cr_expect_not_null(gdrfab_cm_rails_check(&m.msg, &m.rails, one));
	m.rails.rail[0].mtu = IBV_MTU_1024;
	m.rails.reserved[1] = 1;
	cr_expect_not_null(gdrfab_cm_rails_check(&m.msg, &m.rails, one));
	m.rails.reserved[1] = 0;
	m.msg.rails = 2;
	cr_expect_not_null(gdrfab_cm_rails_check(&m.msg, &m.rails, one),
			   "a rail count on a REP");
}
