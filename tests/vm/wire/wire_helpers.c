/* SPDX-License-Identifier: BSD-2-Clause */
/* The fixture of the tests linked to gdrfab's code (see wire_helpers.h). */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_cm.h>

#include "gdrfab.h"
#include "gdrfab_info.h"
#include "gdrfab_lock.h"
#include "gdrfab_proto.h"
#include "wire_helpers.h"

struct wep a, b;

void wep_open(struct wep *w, const char *dev)
{
	struct fi_info *hints = fi_allocinfo(), *all, *i;
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	const char *failed = NULL;
	int ret;

	hints->domain_attr->mr_mode = GDRFAB_MR_MODE;
	cr_assert_eq(
		gdrfab_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &all),
		0);
	for (i = all; i && strcmp(i->domain_attr->name, dev); i = i->next)
		;
	cr_assert_not_null(i);
	w->objs.info = fi_dupinfo(i);
	fi_freeinfo(all);
	fi_freeinfo(hints);
	/* gdrfab's own entry point: this program links its code. */
	ret = ex_objs_open(&w->objs, gdrfab_fabric_open, &av_attr, &cq_attr,
			   FI_TRANSMIT | FI_RECV, &failed);
	cr_assert_eq(ret, 0, "%s: %s", failed, fi_strerror(-ret));
}

void wep_close(struct wep *w)
{
	ex_objs_close(&w->objs);
}

struct gdrfab_ep *gep(struct wep *w)
{
	return gdrfab_container_of(w->objs.ep, struct gdrfab_ep, fid);
}

/* Reads one entry from w's CQ, progressing both; 1, 0 on timeout. */
int poll_one(struct wep *w, struct fi_cq_tagged_entry *e, int ms)
{
	for (int i = 0; i < ms * 10; i++) {
		if (fi_cq_read(w->objs.cq, e, 1) == 1)
			return 1;
		fi_cq_read(a.objs.cq, NULL, 0);
		fi_cq_read(b.objs.cq, NULL, 0);
		usleep(100);
	}
	return 0;
}

void wire_setup(void)
{
	size_t len = FI_GDRFAB_ADDR_LEN;
	uint8_t na[32], nb[32];
	char msg[8] = "hello", got[8];
	struct fi_cq_tagged_entry e;

	struct fi_info *none = NULL;

	if (access("/sys/class/infiniband/rxe0", F_OK))
		cr_skip_test("no rxe0/rxe1: run inside tests/vm/runner/vm-run");
	/* Initialise libfabric's logging, at warning level or the more
	 * verbose level the caller asked for (the logged run of these
	 * suites, at debug), for the log checks below. */
	setenv("FI_LOG_LEVEL", "warn", 0);
	fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &none);
	fi_freeinfo(none);
	wep_open(&a, "rxe0");
	wep_open(&b, "rxe1");
	fi_getname(&a.objs.ep->fid, na, &len);
	fi_getname(&b.objs.ep->fid, nb, &len);
	fi_av_insert(a.objs.av, nb, 1, &a.peer, 0, NULL);
	fi_av_insert(b.objs.av, na, 1, &b.peer, 0, NULL);
	/* Establish the connection with one good message. */
	cr_assert_eq(fi_recv(b.objs.ep, got, 8, NULL, FI_ADDR_UNSPEC, NULL), 0);
	cr_assert_eq(fi_send(a.objs.ep, msg, 6, NULL, a.peer, NULL), 0);
	cr_assert(poll_one(&b, &e, 20000));
	cr_assert(poll_one(&a, &e, 20000));
}

void wire_teardown(void)
{
	wep_close(&b);
	wep_close(&a);
}

/* The work request ID of a raw send: no gdrfab context is at 1. */
#define RAW_WR_ID 1

/* Posts raw bytes on a's connection to b, as a SEND, or a SEND with
 * immediate data imm when with_imm. */
static void raw_post(const void *bytes, size_t len, bool with_imm, uint32_t imm)
{
	struct gdrfab_proto *proto = gep(&a)->proto;
	struct gdrfab_conn *conn =
		gdrfab_list_entry(proto->conns.next, struct gdrfab_conn, entry);
	static uint8_t buf[16384];
	struct ibv_mr *mr;
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = (uint32_t)len};
	struct ibv_send_wr wr = {.sg_list = &sge,
				 .num_sge = 1,
				 .opcode = with_imm ? IBV_WR_SEND_WITH_IMM
						    : IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED,
				 .imm_data = htonl(imm)};
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	cr_assert_eq(conn->state, GDRFAB_CONN_CONNECTED);
	cr_assert_leq(len, sizeof(buf));
	memcpy(buf, bytes, len);
	mr = ibv_reg_mr(proto->pd, buf, sizeof(buf), 0);
	cr_assert_not_null(mr);
	sge.lkey = mr->lkey;
	/* Sent outside gdrfab's accounting: wait for it here. What else
	 * the CQ holds meanwhile (a FIN b answers with) is gdrfab's. */
	wr.wr_id = RAW_WR_ID;
	cr_assert_eq(ibv_post_send(conn->qp, &wr, &bad), 0);
	conn->sq_avail--;
	for (;;) {
		if (ibv_poll_cq(proto->cq, 1, &wc) == 0) {
			fi_cq_read(b.objs.cq, NULL, 0);
			continue;
		}
		if (wc.wr_id == RAW_WR_ID)
			break;
		gdrfab_lock_acquire(proto->env.lock);
		gdrfab_proto_handle_wc(proto, &wc);
		gdrfab_lock_release(proto->env.lock);
	}
	conn->sq_avail++;
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	ibv_dereg_mr(mr);
	/* b may now hold another last header than a's sends think
	 * (GDRFAB_IMM_REPEAT): a's next message carries its header. */
	conn->tx_memo.valid = false;
}

void raw_send(const void *bytes, size_t len)
{
	raw_post(bytes, len, false, 0);
}

void raw_send_imm(const void *bytes, size_t len, uint32_t imm)
{
	raw_post(bytes, len, true, imm);
}

/* After the bad messages, b must deliver exactly the good one. */
void expect_only_good_message(void)
{
	char got[64], msg[8] = "after";
	struct fi_cq_tagged_entry e;

	cr_assert_eq(
		fi_recv(b.objs.ep, got, sizeof(got), NULL, FI_ADDR_UNSPEC, got),
		0);
	cr_assert_eq(fi_send(a.objs.ep, msg, 6, NULL, a.peer, NULL), 0);
	cr_assert(poll_one(&b, &e, 20000), "b stopped receiving");
	cr_assert_eq(e.len, 6, "a malformed message was delivered (%zu bytes)",
		     e.len);
	cr_assert_str_eq(got, "after");
	cr_assert(poll_one(&a, &e, 20000));
	cr_assert_eq(poll_one(&b, &e, 100), 0, "more was delivered");
}

/* Runs fn with stderr going to a file; returns what was written. */
char *capture_stderr(void (*fn)(void))
{
	static char text[8192];
	FILE *f = tmpfile();
	int saved = dup(2);
	size_t n;

	fflush(stderr);
	dup2(fileno(f), 2);
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	return text;
}
