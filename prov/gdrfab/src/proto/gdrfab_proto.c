/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An endpoint's protocol state: its shared RC completion queue and SRQ,
 * bounce buffers, request slab and connection table; made by fi_enable,
 * driven by progress (reads of its CQs and counters), torn down by close.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "gdrfab.h"
#include "gdrfab_atomic.h"
#include "gdrfab_conn.h"
#include "gdrfab_conn_rails.h"
#include "gdrfab_gpu.h"
#include "gdrfab_msg.h"
#include "gdrfab_params.h"
#include "gdrfab_proto.h"
#include "gdrfab_proto_stats.h"
#include "gdrfab_req.h"
#include "gdrfab_stage.h"
#include "gdrfab_ud.h"
#include "gdrfab_verbs_ops.h"

#define POLL_BATCH  GDRFAB_POLL_BATCH
#define POLL_ROUNDS 4 /* bound one progress call */
#define CQ_MARGIN   16
/* A busy loop polls the UD CQ (connection setup) every this many calls
 * besides once per ms: 64 calls take microseconds natively, and an
 * empty poll pays the whole path on each of them. */
#define UD_POLL_EVERY 64

static void *alloc_region(size_t len)
{
	void *p = NULL;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (posix_memalign(&p, page, (len + page - 1) / page * page))
		return NULL;
	memset(p, 0, len);
	return p;
}

static struct ibv_mr *reg(struct gdrfab_proto *proto, void *p, size_t len,
			  int access, const char *what)
{
	struct ibv_mr *mr = gdrfab_vops->reg_mr(proto->pd, p, len, access);

	if (!mr)
		GDRFAB_WARN(FI_LOG_EP_CTRL,
			    "registering %s (%zu bytes): %s%s\n", what, len,
			    strerror(errno),
			    errno == ENOMEM ? " (ulimit -l too low?)" : "");
	return mr;
}

static void set_limits(struct gdrfab_proto *proto)
{
	const struct gdrfab_proto_env *env = &proto->env;
	const struct ibv_device_attr *a = env->dev_attr;

	proto->eager_max = gdrfab_params.eager_max;
	proto->inject_max = proto->eager_max;
	proto->seg_max = gdrfab_params.seg_max > proto->eager_max
				 ? gdrfab_params.seg_max
				 : 0;
	proto->max_wr_len = env->max_msg_sz ? env->max_msg_sz : 1u << 30;
	proto->max_sge = GDRFAB_MAX(1, GDRFAB_MIN(a->max_sge, GDRFAB_MAX_IOV));
	/* A connection's send queue: the endpoint's transmit depth bounds
	 * what is in flight over all of them (its requests), so each needs
	 * far less, and each slot is memory per connected peer (issue 33:
	 * 1,024 slots made a peer cost 1.1 MB on rxe). */
	proto->sq_depth = (int)GDRFAB_MIN(
		GDRFAB_MIN(proto->env.tx_size, gdrfab_params.qp_depth),
		(size_t)a->max_qp_wr);
	proto->sq_depth = GDRFAB_MAX(proto->sq_depth, 8);
	proto->max_rd_atomic = GDRFAB_MAX(
		1, GDRFAB_MIN(16, GDRFAB_MIN(a->max_qp_rd_atom,
					     a->max_qp_init_rd_atom)));
	proto->port_mtu = env->active_mtu;
}

static int create_queues(struct gdrfab_proto *proto)
{
	const struct ibv_device_attr *a = proto->env.dev_attr;
	struct ibv_srq_init_attr srq_attr = {
		.attr = {.max_wr = (uint32_t)proto->rxbuf_cnt, .max_sge = 1}};
	int cqe = (int)GDRFAB_MIN((size_t)a->max_cqe, proto->rxbuf_cnt + 8192);

	proto->cq = gdrfab_vops->create_cq(proto->ctx, cqe, NULL, NULL, 0);
	if (!proto->cq) {
		GDRFAB_WARN(FI_LOG_EP_CTRL, "ibv_create_cq(%d): %s\n", cqe,
			    strerror(errno));
		return -FI_ENOMEM;
	}
	/* A table without the entry (a test's) is called as ever. */
	proto->poll_cq = gdrfab_vops->poll_cq_fn
				 ? gdrfab_vops->poll_cq_fn(proto->cq)
				 : gdrfab_vops->poll_cq;
	/* The CQ is shared by every QP: never let more work requests be
	 * outstanding than it has room for. */
	proto->cq_credits = cqe - (int)proto->rxbuf_cnt - CQ_MARGIN;
	if (proto->cq_credits < 8) {
		GDRFAB_WARN(
			FI_LOG_EP_CTRL,
			"a CQ of %d entries leaves no room for sends beside %zu receive buffers: lower FI_GDRFAB_RX_BUFS\n",
			cqe, proto->rxbuf_cnt);
		return -FI_EINVAL;
	}
	proto->srq = gdrfab_vops->create_srq(proto->pd, &srq_attr);
	if (!proto->srq) {
		GDRFAB_WARN(FI_LOG_EP_CTRL, "ibv_create_srq(%zu): %s\n",
			    proto->rxbuf_cnt, strerror(errno));
		return -FI_ENOMEM;
	}
	return gdrfab_rails_cqs_create(proto);
}

static int create_buffers(struct gdrfab_proto *proto)
{
	size_t hdr = sizeof(struct gdrfab_pkt_hdr);

	proto->rxbuf_size =
		hdr + GDRFAB_MAX(proto->eager_max, (size_t)GDRFAB_CTRL_SIZE);
	proto->rx_mem = alloc_region(proto->rxbuf_cnt * proto->rxbuf_size);
	proto->rxbufs = calloc(proto->rxbuf_cnt, sizeof(*proto->rxbufs));
	proto->txbuf_size = hdr + proto->eager_max;
	proto->tx_mem = alloc_region(proto->txbuf_cnt * proto->txbuf_size);
	proto->txbufs = calloc(proto->txbuf_cnt, sizeof(*proto->txbufs));
	proto->reqs = alloc_region(proto->req_cnt * sizeof(*proto->reqs));
	proto->ud_mem = alloc_region(gdrfab_ud_mem_size());
	if (gdrfab_itx_init(proto, GDRFAB_MAX(proto->env.tx_size, 1)))
		return -FI_ENOMEM;
	if (!proto->rx_mem || !proto->rxbufs || !proto->tx_mem ||
	    !proto->txbufs || !proto->reqs || !proto->ud_mem)
		return -FI_ENOMEM;
	proto->rx_mr =
		reg(proto, proto->rx_mem, proto->rxbuf_cnt * proto->rxbuf_size,
		    IBV_ACCESS_LOCAL_WRITE, "receive buffers");
	proto->tx_mr =
		reg(proto, proto->tx_mem, proto->txbuf_cnt * proto->txbuf_size,
		    0, "transmit buffers");
	proto->req_mr =
		reg(proto, proto->reqs, proto->req_cnt * sizeof(*proto->reqs),
		    IBV_ACCESS_LOCAL_WRITE, "requests");
	proto->ud_mr = reg(proto, proto->ud_mem, gdrfab_ud_mem_size(),
			   IBV_ACCESS_LOCAL_WRITE, "connection messages");
	if (!proto->rx_mr || !proto->tx_mr || !proto->req_mr || !proto->ud_mr)
		return -FI_ENOMEM;
	for (size_t i = 0; i < proto->txbuf_cnt; i++) {
		proto->txbufs[i].data = proto->tx_mem + i * proto->txbuf_size;
		gdrfab_txbuf_free(proto, &proto->txbufs[i]);
	}
	for (size_t i = 0; i < proto->req_cnt; i++) {
		gdrfab_list_init(&proto->reqs[i].live);
		gdrfab_list_init(&proto->reqs[i].finish_entry);
		gdrfab_list_push_tail(&proto->free_reqs, &proto->reqs[i].entry);
	}
	proto->req_free_cnt = proto->req_cnt;
	return 0;
}

static int post_receives(struct gdrfab_proto *proto)
{
	for (size_t i = 0; i < proto->rxbuf_cnt; i++) {
		struct gdrfab_rxbuf *rb = &proto->rxbufs[i];
		struct ibv_sge sge = {
			.addr = (uintptr_t)(proto->rx_mem +
					    i * proto->rxbuf_size),
			.length = (uint32_t)proto->rxbuf_size,
			.lkey = proto->rx_mr->lkey,
		};
		struct ibv_recv_wr wr = {
			.wr_id = (uintptr_t)rb, .sg_list = &sge, .num_sge = 1};
		struct ibv_recv_wr *bad;
		int err;

		rb->wr.kind = GDRFAB_WR_RXBUF;
		rb->data = (uint8_t *)(uintptr_t)sge.addr;
		err = gdrfab_vops->post_srq_recv(proto->srq, &wr, &bad);
		if (err) {
			GDRFAB_WARN(FI_LOG_EP_CTRL, "ibv_post_srq_recv: %s\n",
				    strerror(err));
			return gdrfab_errno_to_fi(err);
		}
	}
	return gdrfab_ud_post_recvs(proto);
}

int gdrfab_proto_create(const struct gdrfab_proto_env *env,
			const struct gdrfab_proto_ops *ops,
			struct gdrfab_proto **out)
{
	struct gdrfab_proto *proto = calloc(1, sizeof(*proto));
	int ret;

	if (!proto) {
		gdrfab_ud_destroy(env->ud_cq, env->ud_qp);
		return -FI_ENOMEM;
	}
	proto->env = *env;
	proto->ops = ops;
	proto->ctx = env->ctx;
	proto->pd = env->pd;
	proto->ud_qp = env->ud_qp;
	proto->ud_cq = env->ud_cq;
	gdrfab_pstat_rails_init(proto); /* names its rails' NICs */
	gdrfab_list_init(&proto->conns);
	gdrfab_list_init(&proto->dead);
	gdrfab_list_init(&proto->posted_msg);
	gdrfab_list_init(&proto->posted_tag);
	gdrfab_list_init(&proto->unexp_msg);
	gdrfab_list_init(&proto->unexp_tag);
	gdrfab_list_init(&proto->free_reqs);
	gdrfab_list_init(&proto->live);
	gdrfab_list_init(&proto->finished);
	gdrfab_stage_pool_init(&proto->stage_pool, proto->pd);
	proto->stage_can_post = gdrfab_conn_kick;
	gdrfab_list_init(&proto->atomic_backlog);
	gdrfab_list_init(&proto->atomic_ready);
	set_limits(proto);
	if (getrandom(&proto->nonce, sizeof(proto->nonce), 0) !=
	    sizeof(proto->nonce)) {
		GDRFAB_WARN(FI_LOG_EP_CTRL, "getrandom: %s\n", strerror(errno));
		gdrfab_ud_destroy(env->ud_cq, env->ud_qp);
		free(proto);
		return -FI_EOTHER;
	}
	proto->conn_epoch = 1; /* the zeroed cache entries hold nothing */
	proto->rxbuf_cnt = GDRFAB_MIN(gdrfab_params.rx_bufs,
				      (size_t)env->dev_attr->max_srq_wr);
	proto->repost_min = gdrfab_rxbuf_repost_min(proto->rxbuf_cnt);
	proto->txbuf_cnt = gdrfab_params.tx_bufs;
	proto->req_cnt = env->tx_size + env->rx_size + GDRFAB_CTRL_RESERVE;
	proto->req_clear_len = offsetof(struct gdrfab_req, step_fn);
	ret = gdrfab_addrmap_init(&proto->conn_by_name);
	if (!ret)
		ret = create_queues(proto);
	if (!ret)
		ret = create_buffers(proto);
	if (!ret)
		ret = post_receives(proto);
	/* FI_OPT_CUDA_API_PERMITTED=false set before fi_enable (as
	 * aws-ofi-nccl does): the loopback QP is made here, not on the
	 * data path. */
	if (!ret && !env->cuda_api_permitted && (env->caps & FI_HMEM))
		ret = gdrfab_loop_open(proto);
	/* The flush QP too, where writes into GPU memory are flushed by a
	 * READ. Without it (logged) such data is reported as failed, as a
	 * failed flush is: the endpoint still serves everything else. */
	if (!ret && env->flush_by_read)
		(void)gdrfab_loop_flush_open(proto);
	if (ret)
		gdrfab_proto_destroy(proto);
	else
		*out = proto;
	return ret;
}

static void free_conns(struct gdrfab_list *list)
{
	while (!gdrfab_list_empty(list)) {
		struct gdrfab_conn *conn = gdrfab_list_entry(
			list->next, struct gdrfab_conn, entry);

		/* Every reference goes with the endpoint. */
		conn->refs = 1;
		gdrfab_conn_put(conn);
	}
}

void gdrfab_proto_destroy(struct gdrfab_proto *proto)
{
	proto->closing = true;
	gdrfab_conn_farewell(proto);
	/* The UD QP goes first: its async events name proto->ud_owner, and
	 * destroying it waits for any being read to be acknowledged. */
	gdrfab_ud_destroy(proto->ud_cq, proto->ud_qp);
	proto->ud_cq = NULL;
	proto->ud_qp = NULL;
	/* Unexpected messages and requests hold connections: free them
	 * first (requests still in flight hold temporary registrations),
	 * then every connection, whatever its count. */
	gdrfab_loop_close(proto); /* its QP reads payloads freed below */
	gdrfab_recv_flush_all(proto);
	gdrfab_atomic_backlog_free(proto);
	while (!gdrfab_list_empty(&proto->live)) {
		struct gdrfab_req *req = gdrfab_list_entry(
			proto->live.next, struct gdrfab_req, live);

		req->conn = NULL;
		gdrfab_req_free(proto, req);
	}
	gdrfab_stage_pool_fini(&proto->stage_pool);
	free_conns(&proto->conns);
	free_conns(&proto->dead);
	gdrfab_addrmap_fini(&proto->conn_by_name);
	/* Last of what may hold its blocks: unexpected messages, loopback
	 * copies' requests, connections' reassembly. */
	if (gdrfab_sizepool_fini(&proto->rx_pool))
		GDRFAB_WARN(FI_LOG_EP_CTRL,
			    "receive memory still in use at close: leaked\n");
	if (proto->srq)
		gdrfab_vops->destroy_srq(proto->srq);
	if (proto->cq)
		gdrfab_vops->destroy_cq(proto->cq);
	gdrfab_rails_cqs_destroy(proto);
	if (proto->rx_mr)
		gdrfab_vops->dereg_mr(proto->rx_mr);
	if (proto->tx_mr)
		gdrfab_vops->dereg_mr(proto->tx_mr);
	if (proto->req_mr)
		gdrfab_vops->dereg_mr(proto->req_mr);
	if (proto->ud_mr)
		gdrfab_vops->dereg_mr(proto->ud_mr);
	free(proto->copy_spare);
	free(proto->qpn_table);
	free(proto->rx_mem);
	free(proto->rxbufs);
	free(proto->tx_mem);
	free(proto->txbufs);
	free(proto->reqs);
	free(proto->ud_mem);
	free(proto->itx);
	free(proto);
}

/* Inlined in progress's loop; gdrfab_proto_handle_wc is the same for a
 * caller that polled the CQ itself (the wire tests). */
static inline void handle_wc(struct gdrfab_proto *proto,
			     const struct ibv_wc *wc)
{
	struct gdrfab_wr_ctx *ctx = (void *)(uintptr_t)wc->wr_id;

	if (ctx->kind == GDRFAB_WR_RXBUF)
		gdrfab_recv_wc(proto, (void *)ctx, wc);
	else if (ctx->kind == GDRFAB_WR_ITX)
		gdrfab_itx_wc(proto, (void *)ctx, wc);
	else
		gdrfab_req_send_wc(proto, (void *)ctx, wc);
	/* What the event ended is reported before the next event's
	 * reports, in the order they happened. */
	gdrfab_req_drain(proto);
}

void gdrfab_proto_handle_wc(struct gdrfab_proto *proto, const struct ibv_wc *wc)
{
	handle_wc(proto, wc);
}

/* Whether anything besides the CQ and the clock may want this call:
 * receive buffers to give back, requests to finish, staged copies, the
 * loopback engine, atomics held back, other rails' CQs. */
static inline bool side_work(const struct gdrfab_proto *proto)
{
	return proto->repost_cnt >= proto->repost_min ||
	       !gdrfab_list_empty(&proto->finished) ||
	       gdrfab_stage_pool_busy(&proto->stage_pool) || proto->loop ||
	       !gdrfab_list_empty(&proto->atomic_ready) ||
	       !gdrfab_list_empty(&proto->atomic_backlog) ||
	       proto->env.nrails > 1;
}

/* Handles n completions progress polled into proto->wc, then polls again
 * while batches come full, at most POLL_ROUNDS batches in all. */
static void handle_polled(struct gdrfab_proto *proto, int n)
{
	for (int round = 1;; round++) {
		for (int i = 0; i < n; i++)
			handle_wc(proto, &proto->wc[i]);
		if (n < POLL_BATCH || round == POLL_ROUNDS)
			break;
		n = gdrfab_vops->poll_cq(proto->cq, POLL_BATCH, proto->wc);
		if (n <= 0)
			break;
	}
}

/* Rails beyond rail 0 (a rail-set domain): their QPs' completions, the
 * same work request contexts as rail 0's. */
static void poll_rails(struct gdrfab_proto *proto)
{
	struct ibv_wc wc[POLL_BATCH];

	for (size_t r = 0; r + 1 < proto->env.nrails; r++) {
		int n = gdrfab_vops->poll_cq(proto->rail_cq[r], POLL_BATCH, wc);

		/* Only a striped request's pieces go on a rail. */
		for (int i = 0; i < n; i++) {
			gdrfab_req_rail_wc(proto, r + 1,
					   (void *)(uintptr_t)wc[i].wr_id,
					   &wc[i]);
			gdrfab_req_drain(proto);
		}
	}
}

/* Calls since the last full call, this one included, and the UD CQ's turn
 * and the clock's bound brought up to date with them (the quick path
 * counts for neither: a store per empty poll). */
static void count_quick_calls(struct gdrfab_proto *proto)
{
	unsigned calls = (unsigned)(proto->quick_given - proto->quick_left);

	/* This call itself counts in gdrfab_tick_now and below. */
	if (calls > 1) {
		gdrfab_tick_count(&proto->tick, calls - 1);
		proto->ud_poll_skips += calls - 1;
	}
}

/* Everything progress does, in order; polled: completions the caller
 * already took from the CQ (-1: none taken, poll it here). */
static void progress_full(struct gdrfab_proto *proto, int polled)
{
	long long now;
	int n;

	count_quick_calls(proto);
	if (proto->repost_cnt >= proto->repost_min)
		gdrfab_rxbuf_repost_flush(proto);
	/* One clock read per call: the handlers of its events take the
	 * time from proto->now_ms. */
	now = gdrfab_tick_now(&proto->tick);
	proto->now_ms = now;
	/* Connection setup is rare and not in a hurry: its UD CQ is polled
	 * once per clock tick, or every UD_POLL_EVERY calls of a busy
	 * loop, not on every call. */
	if (now != proto->ud_poll_ms ||
	    ++proto->ud_poll_skips >= UD_POLL_EVERY) {
		proto->ud_poll_ms = now;
		proto->ud_poll_skips = 0;
		gdrfab_conn_poll_ud(proto);
	}
	gdrfab_req_drain(proto);
	n = polled >= 0
		    ? polled
		    : gdrfab_vops->poll_cq(proto->cq, POLL_BATCH, proto->wc);
	if (n > 0)
		handle_polled(proto, n);
	/* One test of a field for an endpoint of one NIC. */
	if (proto->env.nrails > 1)
		poll_rails(proto);
	/* Staging and the loopback QP are idle on most endpoints: tested
	 * here, so that an empty poll calls neither. */
	if (gdrfab_stage_pool_busy(&proto->stage_pool)) {
		gdrfab_stage_progress(proto);
		gdrfab_req_drain(proto);
	}
	if (proto->loop) {
		gdrfab_loop_progress(proto);
		gdrfab_req_drain(proto);
	}
	if (!gdrfab_list_empty(&proto->atomic_ready))
		gdrfab_atomic_release_run(proto);
	if (!gdrfab_list_empty(&proto->atomic_backlog))
		gdrfab_atomic_backlog_run(proto);
	if (now != proto->last_timer_ms) {
		proto->last_timer_ms = now;
		gdrfab_conn_timers(proto);
	}
	gdrfab_req_drain(proto);
	/* The next calls' budget, from what this one left: the one place
	 * that reads every queue, so that work made inside this call (its
	 * handlers make some, and may wake or not) is never missed. It
	 * lasts until the UD CQ's turn: a loop that only polls still polls
	 * the UD CQ every UD_POLL_EVERY calls, as a busy one does. */
	proto->quick_left =
		side_work(proto)
			? 0
			: UD_POLL_EVERY - 1 - (int)proto->ud_poll_skips;
	proto->quick_given = proto->quick_left;
}

/* Most calls come from a loop polling an empty CQ. When nothing else
 * waits (the budget, which whatever makes work empties), the clock has
 * not moved (so no timer is due and the UD CQ was polled at this ms), and
 * the UD CQ's turn in a busy loop has not come (the budget again: it
 * lasts until then), the call is one poll of the CQ
 * (gdrfab_proto_poll_quick); anything else takes the whole path, in the
 * same order as ever (what this poll took is handled first there, as the
 * poll would have come before everything but the work checked for
 * here). */
void gdrfab_proto_progress(struct gdrfab_proto *proto)
{
	int n = gdrfab_proto_poll_quick(proto);

	if (n)
		progress_full(proto, n);
}

void gdrfab_proto_progress_polled(struct gdrfab_proto *proto, int n)
{
	progress_full(proto, n);
}
