/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The legitimate side of the UD fuzzing run (tests/vm/fuzz/fuzz-ud.sh): a
 * target that echoes tagged pings, and a client that pings it and checks
 * every byte of every echo, while tests/vm/fuzz/fuzz_ud attacks the target's
 * UD QP. Both reach gdrfab through libfabric (FI_PROVIDER=gdrfab,
 * FI_PROVIDER_PATH), as applications do.
 *
 *   fuzz_peer target DEV NAMEFILE
 *   fuzz_peer client DEV TARGET_NAMEFILE NAMEFILE RTTLOG [ROUNDS [HANG_S]]
 *
 * Names go through files, as hex. The client logs one line per round trip,
 * "END_US RTT_US" (CLOCK_REALTIME, so that the driver can cut the log into
 * phases with bash's EPOCHREALTIME), and it survives what an attacker may
 * legitimately cause (a reset connection, a lost echo) by sending again;
 * what it must never see is a wrong byte. Exit status: 0, 1 (setup), 3 (a
 * round trip stalled past HANG_S), 4 (corruption seen). SIGTERM ends either
 * side after a summary line.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <arpa/inet.h>

#include "ex_objs.h"
#include "fuzz_names.h"
#include "gdrfab_addr.h"

#define MAGIC	  0x66757a7aU /* "fuzz" */
#define MAX_LEN	  65536
#define TAG	  7
#define MAX_PEERS 8
/* Without an echo by then the ping is sent again: the attacker may have
 * reset the connection after the ping arrived and before the echo left. */
#define RESEND_MS 5000

/* Each ping starts with this; the bytes after it are pattern(seq). */
struct ping_hdr {
	uint32_t magic;
	uint32_t len;
	uint64_t seq;
	uint8_t name[FUZZ_NAME_MAX];
	uint32_t name_len;
};

/* Sizes cycled through: small eager, eager, rendezvous (over the 8 KiB
 * eager limit), so that every path a message takes is under attack. The
 * smallest still holds the header. */
static const size_t sizes[] = {128, 4096, 32768};
_Static_assert(sizeof(struct ping_hdr) <= 128, "a ping holds its header");

struct fab {
	struct ex_objs objs;
	struct fid_mr *mr;
	uint8_t *buf; /* receive half, then send half */
	uint8_t name[FUZZ_NAME_MAX];
	size_t name_len;
};

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static long long now_us(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static uint8_t pattern(uint64_t seq, size_t i)
{
	return (uint8_t)(seq * 131 + i * 7 + (i >> 8));
}

static void fill(uint8_t *p, size_t len, uint64_t seq, const struct fab *f)
{
	struct ping_hdr h = {.magic = MAGIC, .len = (uint32_t)len, .seq = seq};

	memcpy(h.name, f->name, f->name_len);
	h.name_len = (uint32_t)f->name_len;
	memcpy(p, &h, sizeof(h));
	for (size_t i = sizeof(h); i < len; i++)
		p[i] = pattern(seq, i);
}

/* Whether a message of len bytes is a ping (or its echo) intact. */
static bool intact(const uint8_t *p, size_t len, struct ping_hdr *h)
{
	if (len < sizeof(*h))
		return false;
	memcpy(h, p, sizeof(*h));
	if (h->magic != MAGIC || h->len != len || h->name_len > FUZZ_NAME_MAX)
		return false;
	for (size_t i = sizeof(*h); i < len; i++) {
		if (p[i] != pattern(h->seq, i))
			return false;
	}
	return true;
}

static int fab_open(struct fab *f, const char *dev)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	const char *failed = NULL;
	int ret;

	hints->caps = FI_TAGGED | FI_MSG;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->domain_attr->name = strdup(dev);
	hints->fabric_attr->prov_name = strdup("gdrfab");
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
			 &f->objs.info);
	fi_freeinfo(hints);
	if (ret) {
		fprintf(stderr, "fi_getinfo(%s): %s\n", dev, fi_strerror(-ret));
		return -1;
	}
	f->buf = aligned_alloc(4096, 2 * MAX_LEN);
	f->name_len = sizeof(f->name);
	if (!f->buf ||
	    ex_objs_open(&f->objs, fi_fabric, &av_attr, &cq_attr,
			 FI_TRANSMIT | FI_RECV, &failed) ||
	    fi_getname(&f->objs.ep->fid, f->name, &f->name_len) ||
	    fi_mr_reg(f->objs.domain, f->buf, 2 * MAX_LEN, FI_SEND | FI_RECV, 0,
		      0, 0, &f->mr, NULL)) {
		fprintf(stderr, "opening an endpoint on %s failed%s%s\n", dev,
			failed ? " at " : "", failed ? failed : "");
		return -1;
	}
	return 0;
}

/* Contexts tell the two halves of the buffer apart in completions. */
static int rx_ctx, tx_ctx;

static int post_recv(struct fab *f)
{
	ssize_t ret;

	while ((ret = fi_trecv(f->objs.ep, f->buf, MAX_LEN, fi_mr_desc(f->mr),
			       FI_ADDR_UNSPEC, TAG, 0, &rx_ctx)) == -FI_EAGAIN)
		fi_cq_read(f->objs.cq, NULL, 0);
	return ret ? -1 : 0;
}

static int post_send(struct fab *f, size_t len, fi_addr_t to)
{
	ssize_t ret;

	while ((ret = fi_tsend(f->objs.ep, f->buf + MAX_LEN, len,
			       fi_mr_desc(f->mr), to, TAG, &tx_ctx)) ==
	       -FI_EAGAIN)
		fi_cq_read(f->objs.cq, NULL, 0);
	return ret ? -1 : 0;
}

/* One completion: 1 and *e, 0 when none, -1 and *err_ctx for an error. */
static int poll_cq(struct fab *f, struct fi_cq_tagged_entry *e, void **err_ctx)
{
	ssize_t n = fi_cq_read(f->objs.cq, e, 1);
	struct fi_cq_err_entry err = {0};

	if (n == 1)
		return 1;
	if (n != -FI_EAVAIL)
		return 0;
	fi_cq_readerr(f->objs.cq, &err, 0);
	*err_ctx = err.op_context;
	return -1;
}

/* ---- target: echoes every intact ping to the name inside it ---- */

struct peers {
	uint8_t name[MAX_PEERS][FUZZ_NAME_MAX];
	fi_addr_t addr[MAX_PEERS];
	int n;
};

static fi_addr_t peer_addr(struct fab *f, struct peers *p,
			   const struct ping_hdr *h)
{
	for (int i = 0; i < p->n; i++) {
		if (!memcmp(p->name[i], h->name, h->name_len))
			return p->addr[i];
	}
	if (p->n == MAX_PEERS ||
	    fi_av_insert(f->objs.av, h->name, 1, &p->addr[p->n], 0, NULL) != 1)
		return FI_ADDR_NOTAVAIL;
	memcpy(p->name[p->n], h->name, h->name_len);
	return p->addr[p->n++];
}

static int run_target(struct fab *f)
{
	struct peers peers = {.n = 0};
	long long pings = 0, bad = 0, send_errors = 0;
	bool sending = false;

	if (post_recv(f))
		return 1;
	while (!stop) {
		struct fi_cq_tagged_entry e;
		void *ctx = NULL;
		struct ping_hdr h;
		int r = poll_cq(f, &e, &ctx);

		if (r == 0)
			continue;
		if (r < 0) { /* a reset connection: keep serving */
			if (ctx == &tx_ctx) {
				sending = false;
				send_errors++;
			} else if (post_recv(f)) {
				return 1;
			}
			continue;
		}
		if (e.op_context == &tx_ctx) {
			sending = false;
			continue;
		}
		pings++;
		if (!intact(f->buf, e.len, &h)) {
			bad++;
			if (post_recv(f))
				return 1;
			continue;
		}
		/* One echo in flight at a time: the client waits for it. */
		while (sending && !stop) {
			r = poll_cq(f, &e, &ctx);
			if ((r > 0 && e.op_context == &tx_ctx) ||
			    (r < 0 && ctx == &tx_ctx))
				sending = false;
		}
		memcpy(f->buf + MAX_LEN, f->buf, h.len);
		if (post_recv(f))
			return 1;
		fi_addr_t to = peer_addr(f, &peers, &h);
		if (to != FI_ADDR_NOTAVAIL && !post_send(f, h.len, to))
			sending = true;
	}
	printf("target: pings=%lld corrupt=%lld send_errors=%lld\n", pings, bad,
	       send_errors);
	return bad ? 4 : 0;
}

/* ---- client: ping, wait for the echo, check it ---- */

struct client_stats {
	long long rounds, corrupt, stale, send_errors, resends;
};

/* Waits for the echo of seq; 0, 3 (hang) or 1 (stopped). */
static int one_round(struct fab *f, fi_addr_t target, uint64_t seq, size_t len,
		     long long hang_us, struct client_stats *s)
{
	long long start = now_us(CLOCK_MONOTONIC), sent_at = start;
	bool echoed = false, send_done = false;

	fill(f->buf + MAX_LEN, len, seq, f);
	if (post_send(f, len, target))
		return 1;
	while (!echoed || !send_done) {
		struct fi_cq_tagged_entry e;
		struct ping_hdr h;
		void *ctx = NULL;
		int r = poll_cq(f, &e, &ctx);
		long long now = now_us(CLOCK_MONOTONIC);

		if (stop)
			return 1;
		if (now - start > hang_us)
			return 3;
		if (r == 0 && send_done && now - sent_at > RESEND_MS * 1000LL) {
			s->resends++;
			send_done = false;
			sent_at = now;
			if (post_send(f, len, target))
				return 1;
		}
		if (r == 0)
			continue;
		if (r < 0 && ctx == &tx_ctx) {
			/* Reset under us: the next send reconnects. */
			s->send_errors++;
			usleep(10000);
			sent_at = now_us(CLOCK_MONOTONIC);
			if (post_send(f, len, target))
				return 1;
			continue;
		}
		if (r < 0) {
			if (post_recv(f))
				return 1;
			continue;
		}
		if (e.op_context == &tx_ctx) {
			send_done = true;
			continue;
		}
		if (intact(f->buf, e.len, &h) && h.seq < seq)
			s->stale++; /* the echo of a ping sent twice */
		else if (!intact(f->buf, e.len, &h) || h.seq != seq ||
			 memcmp(f->buf, f->buf + MAX_LEN, len))
			s->corrupt++;
		else
			echoed = true;
		if (post_recv(f))
			return 1;
	}
	return 0;
}

static int run_client(struct fab *f, const char *target_file, FILE *log,
		      long long rounds, long long hang_us)
{
	uint8_t name[FUZZ_NAME_MAX];
	size_t name_len;
	fi_addr_t target;
	struct client_stats s = {0};
	int status = 0;

	if (fuzz_name_read(target_file, name, sizeof(name), &name_len) ||
	    fi_av_insert(f->objs.av, name, 1, &target, 0, NULL) != 1 ||
	    post_recv(f))
		return 1;
	for (uint64_t seq = 1; !stop && (!rounds || s.rounds < rounds); seq++) {
		size_t len = sizes[seq % (sizeof(sizes) / sizeof(sizes[0]))];
		long long t0 = now_us(CLOCK_REALTIME);

		status = one_round(f, target, seq, len, hang_us, &s);
		if (status == 3)
			printf("client: HANG: round trip %llu stalled over %lld s\n",
			       (unsigned long long)seq, hang_us / 1000000);
		if (status)
			break;
		long long t1 = now_us(CLOCK_REALTIME);
		fprintf(log, "%lld %lld\n", t1, t1 - t0);
		s.rounds++;
	}
	if (status == 1 && stop)
		status = 0;
	if (!status && s.corrupt)
		status = 4;
	printf("client: rounds=%lld corrupt=%lld stale=%lld send_errors=%lld resends=%lld\n",
	       s.rounds, s.corrupt, s.stale, s.send_errors, s.resends);
	return status;
}

int main(int argc, char **argv)
{
	struct fab f = {0};
	struct sigaction sa = {.sa_handler = on_term};
	bool target = argc == 4 && !strcmp(argv[1], "target");
	bool client = argc >= 6 && argc <= 8 && !strcmp(argv[1], "client");
	FILE *log = NULL;
	int status;

	if (!target && !client) {
		fprintf(stderr,
			"usage: fuzz_peer target DEV NAMEFILE\n"
			"       fuzz_peer client DEV TARGET_NAMEFILE NAMEFILE RTTLOG [ROUNDS [HANG_S]]\n");
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (fab_open(&f, argv[2]))
		return 1;
	if (fuzz_name_write(argv[target ? 3 : 4], f.name, f.name_len))
		return 1;
	if (target) {
		struct gdrfab_addr a;

		/* The driver looks the UD QP up in the kernel by number. */
		memcpy(&a, f.name, sizeof(a));
		printf("target: ud_qpn=%u\n", ntohl(a.qpn_be));
		status = run_target(&f);
	} else {
		log = fopen(argv[5], "w");
		if (!log)
			return 1;
		setvbuf(log, NULL, _IOLBF, 0);
		status = run_client(&f, argv[3], log,
				    argc > 6 ? atoll(argv[6]) : 0,
				    (argc > 7 ? atoll(argv[7]) : 40) * 1000000);
		fclose(log);
	}
	/* The endpoint before its MR. */
	fi_close(&f.objs.ep->fid);
	f.objs.ep = NULL;
	fi_close(&f.mr->fid);
	ex_objs_close(&f.objs);
	free(f.buf);
	return status;
}
