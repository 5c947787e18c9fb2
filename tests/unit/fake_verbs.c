/* SPDX-License-Identifier: BSD-2-Clause */
/* The in-memory verbs device (fake_verbs.h). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "alloc_count.h"
#include "fake_verbs.h"
#include "gdrfab_verbs.h"
#include "gdrfab_verbs_ops.h"
#include "port_fixture.h"

#define MAX_SGE	   16
#define GRH_BYTES  40 /* a UD receive starts with the GRH's room */
#define INLINE_MAX 256

struct fake_recv {
	uint64_t wr_id;
	struct ibv_sge sge[MAX_SGE];
	int num_sge;
};

/* A receive queue (an SRQ's, or a UD QP's own). */
struct recvq {
	struct fake_recv *e;
	size_t head, count, cap;
};

struct fake_cq {
	struct ibv_cq cq;
	struct ibv_wc *wc;
	size_t head, count, cap;
};

struct fake_srq {
	struct ibv_srq srq;
	struct recvq rq;
};

struct fake_qp {
	struct ibv_qp qp;
	enum ibv_qp_state state;
	uint32_t dest_qpn;
	bool sig_all, cut;
	struct recvq rq; /* without an SRQ */
	struct fake_qp *next;
};

struct fake_mr {
	struct ibv_mr mr;
	int access;
	struct fake_mr *next;
};

struct fake_ah {
	struct ibv_ah ah;
	struct ibv_ah_attr attr;
};

struct fake_ctx {
	struct ibv_context ctx;
	int pipe[2];
};

/* A posted send on the wire. */
struct fake_wr {
	struct fake_qp *qp;
	struct ibv_send_wr wr;
	struct ibv_sge sge[MAX_SGE];
	uint8_t inline_data[INLINE_MAX]; /* IBV_SEND_INLINE: copied at post */
	size_t inline_len;
	bool running; /* being carried out: a flush leaves it */
	struct fake_wr *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_device fake_dev[FAKE_VERBS_DEVS_MAX];
static int ndevs = 1; /* fake_verbs_set_devices */
static struct fake_qp *qps;
static struct fake_mr *mrs;
static struct fake_wr *wire, **wire_tail = &wire;
static uint32_t next_qpn = 0x100, next_key = 0x1000;
static bool held[IBV_WR_DRIVER1 + 1];
/* fake_verbs_port_down, fake_verbs_refuse_state */
static bool port_down[FAKE_VERBS_DEVS_MAX];
static int refused_state = -1;
static struct fake_verbs_counts live;

/* The wire's memory per work request: the fake's, not the provider's,
 * so the allocation tests (alloc_count.h) do not count it. */
static void *wire_calloc(size_t n, size_t size)
{
	void *p;

	alloc_count_quiet(true);
	p = calloc(n, size);
	alloc_count_quiet(false);
	return p;
}

static void wire_free(void *p)
{
	alloc_count_quiet(true);
	free(p);
	alloc_count_quiet(false);
}

/* ---- devices, PDs, events ---- */

static struct ibv_device **f_get_device_list(int *num)
{
	struct ibv_device **list = calloc((size_t)ndevs + 1, sizeof(*list));

	if (!list)
		return NULL;
	for (int i = 0; i < ndevs; i++)
		list[i] = &fake_dev[i];
	*num = ndevs;
	return list;
}

static void f_free_device_list(struct ibv_device **list)
{
	free(list);
}

static struct ibv_context *f_open_device(struct ibv_device *dev)
{
	struct fake_ctx *c = calloc(1, sizeof(*c));

	if (!c || pipe(c->pipe)) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->ctx.device = dev;
	c->ctx.async_fd = c->pipe[0];
	c->ctx.num_comp_vectors = 1;
	pthread_mutex_lock(&lock);
	live.ctx++;
	pthread_mutex_unlock(&lock);
	return &c->ctx;
}

static int f_close_device(struct ibv_context *ctx)
{
	struct fake_ctx *c = (struct fake_ctx *)ctx;

	close(c->pipe[0]);
	close(c->pipe[1]);
	free(c);
	pthread_mutex_lock(&lock);
	live.ctx--;
	pthread_mutex_unlock(&lock);
	return 0;
}

static int f_query_device(struct ibv_context *ctx, struct ibv_device_attr *a)
{
	(void)ctx;
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "fake");
	a->max_mr_size = UINT64_MAX;
	a->max_qp = 1 << 16;
	a->max_qp_wr = 1 << 14;
	a->max_sge = MAX_SGE;
	a->max_cq = 1 << 16;
	a->max_cqe = 1 << 16;
	a->max_mr = 1 << 16;
	a->max_pd = 1 << 10;
	a->max_qp_rd_atom = 16;
	a->max_qp_init_rd_atom = 16;
	a->max_srq = 1 << 10;
	a->max_srq_wr = 1 << 14;
	a->max_srq_sge = 1;
	a->atomic_cap = IBV_ATOMIC_NONE; /* atomics go as messages */
	a->phys_port_cnt = 1;
	return 0;
}

static int f_query_port(struct ibv_context *ctx, uint8_t port,
			struct ibv_port_attr *attr)
{
	int dev = (int)(ctx->device - fake_dev);
	bool down;

	memset(attr, 0, sizeof(*attr));
	if (port != 1)
		return EINVAL;
	pthread_mutex_lock(&lock);
	down = dev >= 0 && dev < FAKE_VERBS_DEVS_MAX && port_down[dev];
	pthread_mutex_unlock(&lock);
	attr->state = down ? IBV_PORT_DOWN : IBV_PORT_ACTIVE;
	attr->active_mtu = IBV_MTU_4096;
	attr->max_mtu = IBV_MTU_4096;
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

static int f_discover_ports(struct gdrfab_port_desc **ports)
{
	struct gdrfab_port_desc *p = calloc((size_t)ndevs, sizeof(*p));

	if (!p)
		return -FI_ENOMEM;
	/* Device i's port is 192.0.2.(1 + i): one subnet, one fabric. */
	for (int i = 0; i < ndevs; i++) {
		p[i] = fixture_rxe_port();
		snprintf(p[i].dev_name, sizeof(p[i].dev_name), "%s",
			 fake_dev[i].name);
		snprintf(p[i].link_address, sizeof(p[i].link_address),
			 "192.0.2.%d", 1 + i);
		p[i].gid.raw[15] = (uint8_t)(1 + i);
		p[i].max_msg_sz = 1u << 30;
	}
	*ports = p;
	return ndevs;
}

static struct ibv_pd *f_alloc_pd(struct ibv_context *ctx)
{
	struct ibv_pd *pd = calloc(1, sizeof(*pd));

	if (!pd)
		return NULL;
	pd->context = ctx;
	pthread_mutex_lock(&lock);
	live.pd++;
	pthread_mutex_unlock(&lock);
	return pd;
}

static int f_dealloc_pd(struct ibv_pd *pd)
{
	free(pd);
	pthread_mutex_lock(&lock);
	live.pd--;
	pthread_mutex_unlock(&lock);
	return 0;
}

/* Port events raised by the test and not yet read (fake_verbs.h). */
static enum ibv_event_type port_events[8];
static int port_events_cnt;

void fake_verbs_port_event(enum ibv_event_type type)
{
	pthread_mutex_lock(&lock);
	if (port_events_cnt <
	    (int)(sizeof(port_events) / sizeof(port_events[0])))
		port_events[port_events_cnt++] = type;
	pthread_mutex_unlock(&lock);
}

static int f_get_async_event(struct ibv_context *ctx,
			     struct ibv_async_event *ev)
{
	int ret = -1;

	(void)ctx;
	pthread_mutex_lock(&lock);
	if (port_events_cnt) {
		memset(ev, 0, sizeof(*ev));
		ev->event_type = port_events[0];
		ev->element.port_num = 1;
		port_events_cnt--;
		memmove(port_events, port_events + 1,
			sizeof(port_events[0]) * (size_t)port_events_cnt);
		ret = 0;
	}
	pthread_mutex_unlock(&lock);
	if (ret)
		errno = EAGAIN;
	return ret;
}

static void f_ack_async_event(struct ibv_async_event *ev)
{
	(void)ev;
}

/* ---- completion queues ---- */

static struct ibv_cq *f_create_cq(struct ibv_context *ctx, int cqe,
				  void *cq_context,
				  struct ibv_comp_channel *channel,
				  int comp_vector)
{
	struct fake_cq *c = calloc(1, sizeof(*c));

	(void)channel;
	(void)comp_vector;
	if (!c)
		return NULL;
	c->cap = (size_t)cqe;
	c->wc = calloc(c->cap, sizeof(*c->wc));
	if (!c->wc) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->cq.context = ctx;
	c->cq.cq_context = cq_context;
	c->cq.cqe = cqe;
	pthread_mutex_lock(&lock);
	live.cq++;
	pthread_mutex_unlock(&lock);
	return &c->cq;
}

static int f_destroy_cq(struct ibv_cq *cq)
{
	struct fake_cq *c = (struct fake_cq *)cq;

	free(c->wc);
	free(c);
	pthread_mutex_lock(&lock);
	live.cq--;
	pthread_mutex_unlock(&lock);
	return 0;
}

/* Under lock. */
static void cq_push(struct ibv_cq *cq, const struct ibv_wc *wc)
{
	struct fake_cq *c = (struct fake_cq *)cq;

	if (c->count == c->cap) {
		live.cq_overruns++;
		return;
	}
	c->wc[(c->head + c->count++) % c->cap] = *wc;
}

static int f_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);

static gdrfab_poll_cq_fn f_poll_cq_fn(struct ibv_cq *cq)
{
	(void)cq;
	return f_poll_cq;
}

static int f_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct fake_cq *c = (struct fake_cq *)cq;
	int got = 0;

	pthread_mutex_lock(&lock);
	live.polls++;
	while (got < n && c->count) {
		wc[got++] = c->wc[c->head];
		c->head = (c->head + 1) % c->cap;
		c->count--;
	}
	pthread_mutex_unlock(&lock);
	return got;
}

/* ---- receive queues ---- */

static int rq_push(struct recvq *q, const struct ibv_recv_wr *wr)
{
	struct fake_recv *r;

	if (wr->num_sge > MAX_SGE || wr->num_sge < 0)
		return EINVAL;
	if (q->count == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 64;
		struct fake_recv *e = calloc(cap, sizeof(*e));

		if (!e)
			return ENOMEM;
		for (size_t i = 0; i < q->count; i++)
			e[i] = q->e[(q->head + i) % q->cap];
		free(q->e);
		q->e = e;
		q->head = 0;
		q->cap = cap;
	}
	r = &q->e[(q->head + q->count++) % q->cap];
	r->wr_id = wr->wr_id;
	r->num_sge = wr->num_sge;
	memcpy(r->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(r->sge[0]));
	return 0;
}

static bool rq_pop(struct recvq *q, struct fake_recv *out)
{
	if (!q->count)
		return false;
	*out = q->e[q->head];
	q->head = (q->head + 1) % q->cap;
	q->count--;
	return true;
}

static struct ibv_srq *f_create_srq(struct ibv_pd *pd,
				    struct ibv_srq_init_attr *attr)
{
	struct fake_srq *s = calloc(1, sizeof(*s));

	(void)attr;
	if (!s)
		return NULL;
	s->srq.context = pd->context;
	s->srq.pd = pd;
	s->srq.srq_context = attr->srq_context;
	pthread_mutex_lock(&lock);
	live.srq++;
	pthread_mutex_unlock(&lock);
	return &s->srq;
}

static int f_destroy_srq(struct ibv_srq *srq)
{
	struct fake_srq *s = (struct fake_srq *)srq;

	free(s->rq.e);
	free(s);
	pthread_mutex_lock(&lock);
	live.srq--;
	pthread_mutex_unlock(&lock);
	return 0;
}

static int f_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad)
{
	struct fake_srq *s = (struct fake_srq *)srq;
	int err = 0;

	pthread_mutex_lock(&lock);
	for (; wr && !err; wr = err ? wr : wr->next) {
		err = rq_push(&s->rq, wr);
		if (err)
			*bad = wr;
	}
	pthread_mutex_unlock(&lock);
	return err;
}

/* ---- queue pairs ---- */

static struct fake_qp *qp_by_num(uint32_t qpn)
{
	for (struct fake_qp *q = qps; q; q = q->next)
		if (q->qp.qp_num == qpn)
			return q;
	return NULL;
}

static struct ibv_qp *f_create_qp(struct ibv_pd *pd,
				  struct ibv_qp_init_attr *attr)
{
	struct fake_qp *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->qp.context = pd->context;
	q->qp.qp_context = attr->qp_context;
	q->qp.pd = pd;
	q->qp.send_cq = attr->send_cq;
	q->qp.recv_cq = attr->recv_cq;
	q->qp.srq = attr->srq;
	q->qp.qp_type = attr->qp_type;
	q->qp.state = IBV_QPS_RESET;
	q->state = IBV_QPS_RESET;
	q->sig_all = attr->sq_sig_all;
	if (attr->cap.max_inline_data > INLINE_MAX)
		attr->cap.max_inline_data = INLINE_MAX;
	pthread_mutex_lock(&lock);
	q->qp.qp_num = next_qpn++;
	q->next = qps;
	qps = q;
	live.qp++;
	if (q->qp.qp_type == IBV_QPT_RC)
		live.rc_qp++;
	pthread_mutex_unlock(&lock);
	return &q->qp;
}

/* Under lock: a completion for a send work request. */
static void complete_send(struct fake_wr *w, enum ibv_wc_status st,
			  uint32_t byte_len)
{
	static const enum ibv_wc_opcode op[] = {
		[IBV_WR_RDMA_WRITE] = IBV_WC_RDMA_WRITE,
		[IBV_WR_RDMA_WRITE_WITH_IMM] = IBV_WC_RDMA_WRITE,
		[IBV_WR_SEND] = IBV_WC_SEND,
		[IBV_WR_SEND_WITH_IMM] = IBV_WC_SEND,
		[IBV_WR_RDMA_READ] = IBV_WC_RDMA_READ,
		[IBV_WR_ATOMIC_CMP_AND_SWP] = IBV_WC_COMP_SWAP,
		[IBV_WR_ATOMIC_FETCH_AND_ADD] = IBV_WC_FETCH_ADD,
	};
	struct ibv_wc wc = {
		.wr_id = w->wr.wr_id,
		.status = st,
		.opcode = op[w->wr.opcode],
		.byte_len = byte_len,
		.qp_num = w->qp->qp.qp_num,
	};

	/* Errors complete whether signaled or not (as on a NIC). */
	if (st != IBV_WC_SUCCESS || w->qp->sig_all ||
	    (w->wr.send_flags & IBV_SEND_SIGNALED))
		cq_push(w->qp->qp.send_cq, &wc);
}

static void unlink_wr(struct fake_wr **at)
{
	struct fake_wr *w = *at;

	*at = w->next;
	if (wire_tail == &w->next)
		wire_tail = at;
	wire_free(w);
}

/* Under lock: the QP enters the error state, flushing its queued sends
 * (and the receives of its own queue; an SRQ's are shared, as on a NIC). */
static void qp_error(struct fake_qp *q)
{
	struct fake_recv r;

	q->state = IBV_QPS_ERR;
	q->qp.state = IBV_QPS_ERR;
	for (struct fake_wr **at = &wire; *at;) {
		if ((*at)->qp == q && !(*at)->running) {
			complete_send(*at, IBV_WC_WR_FLUSH_ERR, 0);
			unlink_wr(at);
		} else {
			at = &(*at)->next;
		}
	}
	while (rq_pop(&q->rq, &r)) {
		struct ibv_wc wc = {.wr_id = r.wr_id,
				    .status = IBV_WC_WR_FLUSH_ERR,
				    .opcode = IBV_WC_RECV,
				    .qp_num = q->qp.qp_num};

		cq_push(q->qp.recv_cq, &wc);
	}
}

static int f_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct fake_qp *q = (struct fake_qp *)qp;

	pthread_mutex_lock(&lock);
	if ((mask & IBV_QP_STATE) && (int)attr->qp_state == refused_state &&
	    qp->qp_type == IBV_QPT_RC) {
		pthread_mutex_unlock(&lock);
		return EINVAL;
	}
	if (mask & IBV_QP_DEST_QPN)
		q->dest_qpn = attr->dest_qp_num;
	if (mask & IBV_QP_STATE) {
		if (attr->qp_state == IBV_QPS_ERR) {
			qp_error(q);
		} else if (attr->qp_state == IBV_QPS_RESET) {
			for (struct fake_wr **at = &wire; *at;) {
				if ((*at)->qp == q)
					unlink_wr(at);
				else
					at = &(*at)->next;
			}
			q->rq.count = 0;
			q->cut = false;
		}
		q->state = attr->qp_state;
		q->qp.state = attr->qp_state;
	}
	pthread_mutex_unlock(&lock);
	return 0;
}

static int f_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		      struct ibv_qp_init_attr *init)
{
	struct fake_qp *q = (struct fake_qp *)qp;

	(void)mask;
	memset(init, 0, sizeof(*init));
	pthread_mutex_lock(&lock);
	attr->qp_state = q->state;
	attr->cur_qp_state = q->state;
	attr->dest_qp_num = q->dest_qpn;
	pthread_mutex_unlock(&lock);
	return 0;
}

static int f_destroy_qp(struct ibv_qp *qp)
{
	struct fake_qp *q = (struct fake_qp *)qp;

	pthread_mutex_lock(&lock);
	for (struct fake_wr **at = &wire; *at;) {
		if ((*at)->qp == q)
			unlink_wr(at);
		else
			at = &(*at)->next;
	}
	for (struct fake_qp **at = &qps; *at; at = &(*at)->next) {
		if (*at == q) {
			*at = q->next;
			break;
		}
	}
	live.qp--;
	if (q->qp.qp_type == IBV_QPT_RC)
		live.rc_qp--;
	pthread_mutex_unlock(&lock);
	free(q->rq.e);
	free(q);
	return 0;
}

static int f_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad)
{
	struct fake_qp *q = (struct fake_qp *)qp;
	int err = 0;

	pthread_mutex_lock(&lock);
	if (q->qp.srq || q->state == IBV_QPS_RESET) {
		live.bad_posts++;
		err = EINVAL;
		*bad = wr;
	}
	for (; wr && !err; wr = err ? wr : wr->next) {
		err = rq_push(&q->rq, wr);
		if (err)
			*bad = wr;
	}
	if (!err && q->state == IBV_QPS_ERR)
		qp_error(q);
	pthread_mutex_unlock(&lock);
	return err;
}

/* ---- address handles and memory ---- */

static struct ibv_ah *f_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct fake_ah *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->ah.context = pd->context;
	a->ah.pd = pd;
	a->attr = *attr;
	pthread_mutex_lock(&lock);
	live.ah++;
	pthread_mutex_unlock(&lock);
	return &a->ah;
}

static int f_destroy_ah(struct ibv_ah *ah)
{
	free(ah);
	pthread_mutex_lock(&lock);
	live.ah--;
	pthread_mutex_unlock(&lock);
	return 0;
}

/* Access bits the device refuses (fake_verbs_refuse_access), and how. */
static int refused_bits, refused_errno, refusals;

static struct ibv_mr *f_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
			       int access)
{
	struct fake_mr *m;

	pthread_mutex_lock(&lock);
	if (access & refused_bits) {
		refusals++;
		pthread_mutex_unlock(&lock);
		errno = refused_errno;
		return NULL;
	}
	pthread_mutex_unlock(&lock);
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = len;
	m->access = access;
	pthread_mutex_lock(&lock);
	m->mr.lkey = next_key;
	m->mr.rkey = next_key++;
	m->next = mrs;
	mrs = m;
	live.mr++;
	pthread_mutex_unlock(&lock);
	return &m->mr;
}

static struct ibv_mr *f_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
				      size_t len, uint64_t iova, int fd,
				      int access)
{
	(void)pd;
	(void)offset;
	(void)len;
	(void)iova;
	(void)fd;
	(void)access;
	errno = EOPNOTSUPP; /* no GPU behind the fake */
	return NULL;
}

static int f_dereg_mr(struct ibv_mr *mr)
{
	pthread_mutex_lock(&lock);
	for (struct fake_mr **at = &mrs; *at; at = &(*at)->next) {
		if (&(*at)->mr == mr) {
			*at = (*at)->next;
			break;
		}
	}
	live.mr--;
	pthread_mutex_unlock(&lock);
	free(mr);
	return 0;
}

void fake_verbs_refuse_access(int bits, int err)
{
	pthread_mutex_lock(&lock);
	refused_bits = bits;
	refused_errno = err;
	refusals = 0;
	pthread_mutex_unlock(&lock);
}

int fake_verbs_refusals(void)
{
	int n;

	pthread_mutex_lock(&lock);
	n = refusals;
	pthread_mutex_unlock(&lock);
	return n;
}

int fake_verbs_mr_access(const void *addr)
{
	int access = -1;

	pthread_mutex_lock(&lock);
	for (struct fake_mr *m = mrs; m; m = m->next) {
		if (m->mr.addr == addr) {
			access = m->access;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return access;
}

/* Under lock: the registered bytes [addr, addr+len) under key in pd with
 * access (0 for a local read), or NULL. */
static uint8_t *mr_find(struct ibv_pd *pd, uint32_t key, bool remote,
			uint64_t addr, uint64_t len, int access)
{
	for (struct fake_mr *m = mrs; m; m = m->next) {
		uint64_t start = (uintptr_t)m->mr.addr;

		if ((remote ? m->mr.rkey : m->mr.lkey) != key || m->mr.pd != pd)
			continue;
		if (addr < start || addr + len > start + m->mr.length ||
		    (access && !(m->access & access)))
			return NULL;
		return (uint8_t *)(uintptr_t)addr;
	}
	return NULL;
}

/* ---- posting and carrying out sends ---- */

static size_t sge_len(const struct ibv_sge *sge, int n)
{
	size_t len = 0;

	for (int i = 0; i < n; i++)
		len += sge[i].length;
	return len;
}

static int f_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		       struct ibv_send_wr **bad)
{
	struct fake_qp *q = (struct fake_qp *)qp;
	int err = 0;

	pthread_mutex_lock(&lock);
	for (; wr; wr = wr->next) {
		struct fake_wr *w;

		if (q->state != IBV_QPS_RTS && q->state != IBV_QPS_ERR) {
			err = EINVAL;
		} else if (wr->num_sge > MAX_SGE || wr->num_sge < 0) {
			err = EINVAL;
		} else if ((wr->send_flags & IBV_SEND_INLINE) &&
			   sge_len(wr->sg_list, wr->num_sge) > INLINE_MAX) {
			err = EINVAL;
		}
		w = err ? NULL : wire_calloc(1, sizeof(*w));
		if (!w) {
			err = err ? err : ENOMEM;
			live.bad_posts++;
			*bad = wr;
			break;
		}
		if (wr->opcode == IBV_WR_RDMA_READ ||
		    wr->opcode == IBV_WR_RDMA_WRITE ||
		    wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
			live.rdma_bytes +=
				(long)sge_len(wr->sg_list, wr->num_sge);
		w->qp = q;
		w->wr = *wr;
		w->wr.next = NULL;
		memcpy(w->sge, wr->sg_list,
		       (size_t)wr->num_sge * sizeof(w->sge[0]));
		w->wr.sg_list = w->sge;
		if (wr->send_flags & IBV_SEND_INLINE) {
			/* The buffer is the caller's again on return. */
			for (int i = 0; i < wr->num_sge; i++) {
				memcpy(w->inline_data + w->inline_len,
				       (void *)(uintptr_t)wr->sg_list[i].addr,
				       wr->sg_list[i].length);
				w->inline_len += wr->sg_list[i].length;
			}
		}
		*wire_tail = w;
		wire_tail = &w->next;
		if (q->state == IBV_QPS_ERR)
			qp_error(q);
	}
	pthread_mutex_unlock(&lock);
	return err;
}

enum outcome { WENT, BLOCKED };

/* Under lock: gathers a send's local bytes into buf (room: len). */
static enum ibv_wc_status gather(struct fake_wr *w, uint8_t *buf)
{
	size_t off = 0;

	if (w->wr.send_flags & IBV_SEND_INLINE) {
		memcpy(buf, w->inline_data, w->inline_len);
		return IBV_WC_SUCCESS;
	}
	for (int i = 0; i < w->wr.num_sge; i++) {
		const struct ibv_sge *s = &w->sge[i];
		uint8_t *p = mr_find(w->qp->qp.pd, s->lkey, false, s->addr,
				     s->length, 0);

		if (!p && s->length)
			return IBV_WC_LOC_PROT_ERR;
		memcpy(buf + off, p, s->length);
		off += s->length;
	}
	return IBV_WC_SUCCESS;
}

/* Under lock: scatters len bytes into sges registered for local writes. */
static enum ibv_wc_status scatter(struct ibv_pd *pd, const struct ibv_sge *sge,
				  int n, const uint8_t *src, size_t len)
{
	size_t off = 0;

	if (sge_len(sge, n) < len)
		return IBV_WC_LOC_LEN_ERR;
	for (int i = 0; i < n && off < len; i++) {
		size_t take =
			len - off < sge[i].length ? len - off : sge[i].length;
		uint8_t *p = mr_find(pd, sge[i].lkey, false, sge[i].addr, take,
				     IBV_ACCESS_LOCAL_WRITE);

		if (!p)
			return IBV_WC_LOC_PROT_ERR;
		memcpy(p, src + off, take);
		off += take;
	}
	return IBV_WC_SUCCESS;
}

/* Under lock: the requester's QP and its peer fail as a NIC reports a
 * peer that stopped answering. */
static void fail_wr(struct fake_wr *w, enum ibv_wc_status st)
{
	complete_send(w, st, 0);
}

/* Under lock: carries out a send (SEND, WRITE, READ) on an RC or UD QP. */
static enum outcome execute(struct fake_wr *w)
{
	struct fake_qp *q = w->qp, *dst;
	size_t len =
		w->inline_len ? w->inline_len : sge_len(w->sge, w->wr.num_sge);
	bool ud = q->qp.qp_type == IBV_QPT_UD;
	uint32_t dqpn = ud ? w->wr.wr.ud.remote_qpn : q->dest_qpn;
	struct fake_recv r;
	enum ibv_wc_status st;
	uint8_t *buf;

	dst = qp_by_num(dqpn);
	if (ud && (!dst || dst->state < IBV_QPS_RTR ||
		   dst->qp.qp_type != IBV_QPT_UD)) {
		/* UD: a datagram nobody takes still completes at the sender. */
		complete_send(w, IBV_WC_SUCCESS, 0);
		return WENT;
	}
	if (!ud && (q->cut || !dst || dst->cut || dst->state < IBV_QPS_RTR ||
		    dst->dest_qpn != q->qp.qp_num)) {
		/* RC: nobody acknowledges; the NIC gives up retrying. */
		fail_wr(w, IBV_WC_RETRY_EXC_ERR);
		qp_error(q);
		return WENT;
	}
	if (dst->state == IBV_QPS_ERR && !ud) {
		fail_wr(w, IBV_WC_RETRY_EXC_ERR);
		qp_error(q);
		return WENT;
	}
	switch (w->wr.opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM: {
		struct recvq *rq =
			dst->qp.srq ? &((struct fake_srq *)dst->qp.srq)->rq
				    : &dst->rq;
		struct ibv_wc wc = {.opcode = IBV_WC_RECV,
				    .qp_num = dst->qp.qp_num,
				    .src_qp = q->qp.qp_num};
		size_t hdr = ud ? GRH_BYTES : 0;

		if (!rq->count) {
			if (ud) { /* dropped, as a full UD QP drops */
				complete_send(w, IBV_WC_SUCCESS, 0);
				return WENT;
			}
			return BLOCKED; /* RNR: the NIC retries */
		}
		buf = wire_calloc(1, hdr + len + 1);
		if (!buf)
			return BLOCKED;
		st = gather(w, buf + hdr);
		if (st != IBV_WC_SUCCESS) {
			wire_free(buf);
			fail_wr(w, st);
			qp_error(q);
			return WENT;
		}
		rq_pop(rq, &r);
		wc.wr_id = r.wr_id;
		wc.byte_len = (uint32_t)(hdr + len);
		wc.status =
			scatter(dst->qp.pd, r.sge, r.num_sge, buf, hdr + len);
		if (w->wr.opcode == IBV_WR_SEND_WITH_IMM) {
			wc.wc_flags = IBV_WC_WITH_IMM;
			wc.imm_data = w->wr.imm_data;
		}
		wire_free(buf);
		cq_push(dst->qp.recv_cq, &wc);
		if (wc.status != IBV_WC_SUCCESS) {
			/* The responder refuses it: both QPs break. */
			fail_wr(w, IBV_WC_REM_INV_REQ_ERR);
			if (!ud) {
				qp_error(dst);
				qp_error(q);
			}
			return WENT;
		}
		complete_send(w, IBV_WC_SUCCESS, (uint32_t)len);
		return WENT;
	}
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM: {
		uint8_t *to = mr_find(dst->qp.pd, w->wr.wr.rdma.rkey, true,
				      w->wr.wr.rdma.remote_addr, len,
				      IBV_ACCESS_REMOTE_WRITE);
		struct recvq *rq =
			dst->qp.srq ? &((struct fake_srq *)dst->qp.srq)->rq
				    : &dst->rq;

		if (w->wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM && !rq->count)
			return BLOCKED;
		if (!to && len) {
			fail_wr(w, IBV_WC_REM_ACCESS_ERR);
			qp_error(q);
			qp_error(dst);
			return WENT;
		}
		buf = wire_calloc(1, len + 1);
		if (!buf)
			return BLOCKED;
		st = gather(w, buf);
		if (st == IBV_WC_SUCCESS && len)
			memcpy(to, buf, len);
		wire_free(buf);
		if (st != IBV_WC_SUCCESS) {
			fail_wr(w, st);
			qp_error(q);
			return WENT;
		}
		if (w->wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
			struct ibv_wc wc = {.opcode = IBV_WC_RECV_RDMA_WITH_IMM,
					    .qp_num = dst->qp.qp_num,
					    .src_qp = q->qp.qp_num,
					    .byte_len = (uint32_t)len,
					    .wc_flags = IBV_WC_WITH_IMM,
					    .imm_data = w->wr.imm_data};

			rq_pop(rq, &r);
			wc.wr_id = r.wr_id;
			cq_push(dst->qp.recv_cq, &wc);
		}
		complete_send(w, IBV_WC_SUCCESS, (uint32_t)len);
		return WENT;
	}
	case IBV_WR_RDMA_READ: {
		uint8_t *from = mr_find(dst->qp.pd, w->wr.wr.rdma.rkey, true,
					w->wr.wr.rdma.remote_addr, len,
					IBV_ACCESS_REMOTE_READ);

		if (!from && len) {
			fail_wr(w, IBV_WC_REM_ACCESS_ERR);
			qp_error(q);
			qp_error(dst);
			return WENT;
		}
		st = scatter(q->qp.pd, w->sge, w->wr.num_sge, from, len);
		if (st != IBV_WC_SUCCESS) {
			fail_wr(w, st);
			qp_error(q);
			return WENT;
		}
		complete_send(w, IBV_WC_SUCCESS, (uint32_t)len);
		return WENT;
	}
	default:
		fail_wr(w, IBV_WC_REM_INV_REQ_ERR);
		qp_error(q);
		return WENT;
	}
}

static bool qp_in(struct fake_qp *const *set, int n, const struct fake_qp *q)
{
	for (int i = 0; i < n; i++)
		if (set[i] == q)
			return true;
	return false;
}

bool fake_verbs_step(void)
{
	struct fake_qp *blocked[256];
	int nblocked = 0;
	bool went = false;

	pthread_mutex_lock(&lock);
	for (struct fake_wr **at = &wire; *at; at = &(*at)->next) {
		struct fake_wr *w = *at;

		if (qp_in(blocked, nblocked, w->qp))
			continue;
		if (!held[w->wr.opcode]) {
			enum outcome o;

			w->running = true;
			o = execute(w);
			w->running = false;
			if (o == WENT) {
				/* execute may have flushed others, never w. */
				for (at = &wire; *at != w; at = &(*at)->next)
					;
				unlink_wr(at);
				went = true;
				break;
			}
		}
		if (nblocked < 256)
			blocked[nblocked++] = w->qp;
	}
	pthread_mutex_unlock(&lock);
	return went;
}

int fake_verbs_run(void)
{
	int n = 0;

	while (n < 100000 && fake_verbs_step())
		n++;
	return n;
}

void fake_verbs_hold(enum ibv_wr_opcode op, bool hold)
{
	pthread_mutex_lock(&lock);
	held[op] = hold;
	pthread_mutex_unlock(&lock);
}

int fake_verbs_waiting(enum ibv_wr_opcode op)
{
	int n = 0;

	pthread_mutex_lock(&lock);
	for (struct fake_wr *w = wire; w; w = w->next)
		n += w->wr.opcode == op;
	pthread_mutex_unlock(&lock);
	return n;
}

/* Whether w is on a QP of device dev (any device when dev < 0). */
static bool wr_on_dev(const struct fake_wr *w, int dev)
{
	return dev < 0 || w->qp->qp.context->device - fake_dev == dev;
}

static int fail_waiting(int dev, enum ibv_wr_opcode op,
			enum ibv_wc_status status, bool cut)
{
	int n = 0;

	pthread_mutex_lock(&lock);
	for (;;) {
		struct fake_wr **at = &wire, *w;
		struct fake_qp *q, *peer;

		while (*at && ((*at)->wr.opcode != op || !wr_on_dev(*at, dev)))
			at = &(*at)->next;
		if (!*at)
			break;
		w = *at;
		q = w->qp;
		peer = q->qp.qp_type == IBV_QPT_RC ? qp_by_num(q->dest_qpn)
						   : NULL;
		complete_send(w, status, 0);
		unlink_wr(at);
		qp_error(q);
		if (cut) {
			q->cut = true;
			if (peer)
				peer->cut = true;
		}
		n++;
	}
	pthread_mutex_unlock(&lock);
	return n;
}

int fake_verbs_fail(enum ibv_wr_opcode op, enum ibv_wc_status status, bool cut)
{
	return fail_waiting(-1, op, status, cut);
}

int fake_verbs_fail_on(int dev, enum ibv_wr_opcode op,
		       enum ibv_wc_status status)
{
	return fail_waiting(dev, op, status, false);
}

struct fake_verbs_counts fake_verbs_counts(void)
{
	struct fake_verbs_counts c;

	pthread_mutex_lock(&lock);
	c = live;
	pthread_mutex_unlock(&lock);
	return c;
}

static const struct gdrfab_verbs_ops fake_ops = {
	.get_device_list = f_get_device_list,
	.free_device_list = f_free_device_list,
	.open_device = f_open_device,
	.close_device = f_close_device,
	.query_device = f_query_device,
	.query_port = f_query_port,
	.discover_ports = f_discover_ports,
	.alloc_pd = f_alloc_pd,
	.dealloc_pd = f_dealloc_pd,
	.get_async_event = f_get_async_event,
	.ack_async_event = f_ack_async_event,
	.create_cq = f_create_cq,
	.destroy_cq = f_destroy_cq,
	.create_qp = f_create_qp,
	.modify_qp = f_modify_qp,
	.query_qp = f_query_qp,
	.destroy_qp = f_destroy_qp,
	.create_srq = f_create_srq,
	.destroy_srq = f_destroy_srq,
	.create_ah = f_create_ah,
	.destroy_ah = f_destroy_ah,
	.reg_mr = f_reg_mr,
	.reg_dmabuf_mr = f_reg_dmabuf_mr,
	.dereg_mr = f_dereg_mr,
	.post_send = f_post_send,
	.post_recv = f_post_recv,
	.post_srq_recv = f_post_srq_recv,
	.poll_cq = f_poll_cq,
	.poll_cq_fn = f_poll_cq_fn,
};

void fake_verbs_set_devices(int n)
{
	ndevs = n < 1 ? 1 : n > FAKE_VERBS_DEVS_MAX ? FAKE_VERBS_DEVS_MAX : n;
	gdrfab_verbs_ports_invalidate();
}

void fake_verbs_install(void)
{
	ndevs = 1;
	for (int i = 0; i < FAKE_VERBS_DEVS_MAX; i++) {
		snprintf(fake_dev[i].name, sizeof(fake_dev[i].name), "fake%d",
			 i);
		fake_dev[i].node_type = IBV_NODE_CA;
		fake_dev[i].transport_type = IBV_TRANSPORT_IB;
	}
	memset(held, 0, sizeof(held));
	memset(port_down, 0, sizeof(port_down));
	refused_state = -1;
	fake_verbs_refuse_access(0, 0);
	gdrfab_verbs_ops_set(&fake_ops);
	gdrfab_verbs_ports_invalidate();
}

void fake_verbs_uninstall(void)
{
	gdrfab_verbs_ops_set(NULL);
	gdrfab_verbs_ports_invalidate();
}

void fake_verbs_port_down(int dev, bool down)
{
	pthread_mutex_lock(&lock);
	if (dev >= 0 && dev < FAKE_VERBS_DEVS_MAX)
		port_down[dev] = down;
	pthread_mutex_unlock(&lock);
}

void fake_verbs_refuse_state(int state)
{
	pthread_mutex_lock(&lock);
	refused_state = state;
	pthread_mutex_unlock(&lock);
}
