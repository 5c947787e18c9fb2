/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The attacker of the UD fuzzing run (tests/vm/fuzz/fuzz-ud.sh): opens its own
 * UD QP on a device, with gdrfab's Q_Key so that the target's QP takes
 * its datagrams, and runs one class of hostile datagrams against the UD QP
 * named in the target's name:
 *
 *   fuzz_ud -d DEV -t TARGET_NAMEFILE -c CLIENT_NAMEFILE [-q CLIENT_RC_QPN]
 *           [-p CLIENT_PSN] [-n COUNT] [-s SECONDS] [-S SEED] CLASS
 *
 * It prints one line: the class, datagrams sent, cases, the REPs the
 * target sent back to invented names, and the wall-clock time (CLOCK_
 * REALTIME, microseconds) of the first and last datagram, which the
 * driver uses to cut the legitimate client's round trips into phases.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fuzz_names.h"
#include "fuzz_ud.h"
#include "gdrfab_ud.h"

#define GRH_LEN	 40
#define TX_SLOTS 256
#define RX_SLOTS 64
#define SEND_ID	 (1ULL << 32)

static long long now_us(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

uint32_t fuzz_rand(struct fuzz *f)
{
	/* xorshift64*: reproducible from -S, which the driver prints. */
	f->rng ^= f->rng >> 12;
	f->rng ^= f->rng << 25;
	f->rng ^= f->rng >> 27;
	return (uint32_t)((f->rng * 0x2545f4914f6cdd1dULL) >> 32);
}

uint32_t fuzz_own_qpn(const struct fuzz *f)
{
	return f->qp->qp_num;
}

static uint8_t *rx_slot(struct fuzz *f, uint64_t i)
{
	return f->mem + TX_SLOTS * f->mtu + i * (GRH_LEN + f->mtu);
}

static void post_recv(struct fuzz *f, uint64_t i)
{
	struct ibv_sge sge = {.addr = (uintptr_t)rx_slot(f, i),
			      .length = (uint32_t)(GRH_LEN + f->mtu),
			      .lkey = f->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1};
	struct ibv_recv_wr *bad;

	if (ibv_post_recv(f->qp, &wr, &bad))
		fprintf(stderr, "fuzz_ud: ibv_post_recv failed\n");
}

/* Reaps send completions and counts the REPs received. */
static void reap(struct fuzz *f)
{
	struct ibv_wc wc[16];
	int n;

	while ((n = ibv_poll_cq(f->cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (wc[i].wr_id & SEND_ID) {
				f->sq_inflight--;
				if (wc[i].status != IBV_WC_SUCCESS)
					f->send_failed++;
				continue;
			}
			if (wc[i].status == IBV_WC_SUCCESS &&
			    wc[i].byte_len ==
				    GRH_LEN + sizeof(struct gdrfab_cm_msg) &&
			    rx_slot(f,
				    wc[i].wr_id)[GRH_LEN +
						 offsetof(struct gdrfab_cm_msg,
							  type)] ==
				    GDRFAB_CM_REP)
				f->reps++;
			post_recv(f, wc[i].wr_id);
		}
	}
}

void fuzz_send(struct fuzz *f, const void *bytes, size_t len)
{
	uint8_t *slot = f->mem + (f->tx_next % TX_SLOTS) * f->mtu;
	struct ibv_sge sge = {.addr = (uintptr_t)slot,
			      .length = (uint32_t)len,
			      .lkey = f->mr->lkey};
	struct ibv_send_wr wr = {
		.wr_id = SEND_ID | f->tx_next,
		.sg_list = &sge,
		.num_sge = len ? 1 : 0,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;

	if (len > f->mtu)
		len = sge.length = (uint32_t)f->mtu;
	/* Completions come in order, so the slot after the last one in
	 * flight is free once fewer than TX_SLOTS are. */
	while (f->sq_inflight >= TX_SLOTS - 1)
		reap(f);
	memcpy(slot, bytes, len);
	wr.wr.ud.ah = f->ah;
	wr.wr.ud.remote_qpn = ntohl(f->target.qpn_be);
	wr.wr.ud.remote_qkey = GDRFAB_UD_QKEY;
	if (ibv_post_send(f->qp, &wr, &bad)) {
		f->send_failed++;
		return;
	}
	f->tx_next++;
	f->sq_inflight++;
	f->last_us = now_us(CLOCK_REALTIME);
	if (!f->sent++)
		f->first_us = f->last_us;
}

void fuzz_pace(struct fuzz *f, long i)
{
	static long long start;
	long long due;

	if (i == 0)
		start = now_us(CLOCK_MONOTONIC);
	due = start + (long long)(f->seconds * 1e6 * (double)i /
				  (double)(f->count ? f->count : 1));
	for (;;) {
		long long left = due - now_us(CLOCK_MONOTONIC);

		reap(f);
		if (left <= 0)
			return;
		usleep(left > 2000 ? 2000 : (useconds_t)left);
	}
}

void fuzz_drain(struct fuzz *f, int ms)
{
	long long end = now_us(CLOCK_MONOTONIC) + ms * 1000LL;

	while (now_us(CLOCK_MONOTONIC) < end) {
		reap(f);
		usleep(1000);
	}
}

static int to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
				.port_num = 1,
				.qkey = GDRFAB_UD_QKEY};

	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_QKEY))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/* The GID index of our own address: the one in the client's name, since
 * the client runs on this device too. */
static int own_gid_index(struct fuzz *f, const struct ibv_port_attr *port)
{
	for (int i = 0; i < port->gid_tbl_len; i++) {
		union ibv_gid gid;

		if (!ibv_query_gid(f->ctx, 1, i, &gid) &&
		    !memcmp(gid.raw, f->client.gid, 16))
			return i;
	}
	return -1;
}

static int open_verbs(struct fuzz *f, const char *dev)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_port_attr port;
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = TX_SLOTS,
			.max_recv_wr = RX_SLOTS,
			.max_send_sge = 1,
			.max_recv_sge = 1},
	};
	struct ibv_ah_attr ah = {.is_global = 1, .port_num = 1};
	size_t mem_len;
	int gid_index;

	for (int i = 0; list && list[i]; i++) {
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			f->ctx = ibv_open_device(list[i]);
	}
	ibv_free_device_list(list);
	if (!f->ctx || ibv_query_port(f->ctx, 1, &port)) {
		fprintf(stderr, "fuzz_ud: cannot open %s\n", dev);
		return -1;
	}
	f->mtu = 128u << port.active_mtu;
	gid_index = own_gid_index(f, &port);
	mem_len = TX_SLOTS * f->mtu + RX_SLOTS * (GRH_LEN + f->mtu);
	f->mem = calloc(1, mem_len);
	f->pd = ibv_alloc_pd(f->ctx);
	f->cq = f->pd ? ibv_create_cq(f->ctx, TX_SLOTS + RX_SLOTS, NULL, NULL,
				      0)
		      : NULL;
	init.send_cq = init.recv_cq = f->cq;
	f->qp = f->cq ? ibv_create_qp(f->pd, &init) : NULL;
	f->mr = f->qp && f->mem ? ibv_reg_mr(f->pd, f->mem, mem_len,
					     IBV_ACCESS_LOCAL_WRITE)
				: NULL;
	if (gid_index < 0 || !f->mr || to_rts(f->qp)) {
		fprintf(stderr, "fuzz_ud: UD QP on %s: setup failed%s\n", dev,
			gid_index < 0 ? " (the client's GID is not here)" : "");
		return -1;
	}
	memcpy(ah.grh.dgid.raw, f->target.gid, 16);
	ah.grh.sgid_index = (uint8_t)gid_index;
	ah.grh.hop_limit = 64;
	f->ah = ibv_create_ah(f->pd, &ah);
	if (!f->ah) {
		fprintf(stderr, "fuzz_ud: no address handle to the target\n");
		return -1;
	}
	for (uint64_t i = 0; i < RX_SLOTS; i++)
		post_recv(f, i);
	return 0;
}

static int read_addr(const char *path, struct gdrfab_addr *a)
{
	uint8_t name[FUZZ_NAME_MAX];
	size_t len;

	if (fuzz_name_read(path, name, sizeof(name), &len))
		return -1;
	if (len != sizeof(*a)) {
		fprintf(stderr, "fuzz_ud: %s: %zu bytes, not a gdrfab name\n",
			path, len);
		return -1;
	}
	memcpy(a, name, len);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: fuzz_ud -d DEV -t TARGET_NAMEFILE -c CLIENT_NAMEFILE [-q CLIENT_RC_QPN] [-p CLIENT_PSN] [-n COUNT] [-s SECONDS] [-S SEED] CLASS\nclasses: %s\n",
		fuzz_class_names);
	exit(2);
}

int main(int argc, char **argv)
{
	struct fuzz f = {.count = -1, .rng = 0x9e3779b97f4a7c15ULL};
	const char *dev = NULL, *tfile = NULL, *cfile = NULL, *cls;
	int opt;

	while ((opt = getopt(argc, argv, "d:t:c:q:p:n:s:S:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 't': tfile = optarg; break;
		case 'c': cfile = optarg; break;
		case 'q':
			f.client_qpn = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'p':
			f.client_psn = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'n': f.count = atol(optarg); break;
		case 's': f.seconds = atof(optarg); break;
		case 'S': f.rng = strtoull(optarg, NULL, 0) | 1; break;
		default: usage();
		}
	}
	if (!dev || !tfile || !cfile || optind != argc - 1)
		usage();
	cls = argv[optind];
	if (read_addr(tfile, &f.target) || read_addr(cfile, &f.client) ||
	    open_verbs(&f, dev))
		return 1;
	if (!fuzz_run_class(&f, cls))
		usage();
	fuzz_drain(&f, 200);
	printf("fuzz_ud: %s: sent=%ld cases=%ld send_failed=%ld reps=%ld first_us=%lld last_us=%lld\n",
	       cls, f.sent, f.cases, f.send_failed, f.reps, f.first_us,
	       f.last_us);
	ibv_destroy_ah(f.ah);
	ibv_destroy_qp(f.qp);
	ibv_dereg_mr(f.mr);
	ibv_destroy_cq(f.cq);
	ibv_dealloc_pd(f.pd);
	ibv_close_device(f.ctx);
	free(f.mem);
	return 0;
}
