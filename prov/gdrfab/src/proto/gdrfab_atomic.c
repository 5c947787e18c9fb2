/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Atomics by message: the initiator sends an ATOMIC (target address, key,
 * op, datatype, count, operands, compare values) on the peer's RC
 * connection; the target's data path checks the key as the NIC checks an
 * rkey (gdrfab_mr_keys.c), applies the operation element by element with
 * the CPU's atomic instructions (the operation table, below), and answers with
 * an ATOMIC_RESP carrying the status and, for the fetch and compare families,
 * the values the elements held before. The initiator's request completes
 * at that answer, so its completion always means the operation was applied
 * (FI_DELIVERY_COMPLETE), and a refused one ends in an error completion.
 *
 * One connection's messages are handled in arrival order, so atomics from
 * one initiator to one target are applied in the order they were posted
 * (FI_ORDER_ATOMIC_RAR/RAW/WAR/WAW). A request whose answer finds no
 * request or bounce buffer free waits, copied, in the endpoint's backlog,
 * with every later one, until progress frees them.
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_atomic.h>

#include "gdrfab.h"
#include "gdrfab_atomic.h"
#include "gdrfab_conn.h"
#include "gdrfab_gpu.h"
#include "gdrfab_proto.h"
#include "gdrfab_req.h"
#include "gdrfab_rma.h"

/* ATOMIC_RESP: keeps the fetched bytes in the request until its last
 * steps (0, or -FI_EIO when they cannot be kept). */
static int gdrfab_atomic_result_keep(struct gdrfab_proto *proto,
				     struct gdrfab_req *req, const void *src,
				     size_t len);

/* ---- the operation table ---- */
/*
 * The operation table of gdrfab's atomics: which fi_op and fi_datatype
 * pairs each call family serves, and their application at the target.
 *
 * Each element is one compare-and-swap loop on an integer of the element's
 * width (floats go through their bit pattern), so an element is updated
 * atomically with respect to any other CPU atomic on it, wherever it comes
 * from: another endpoint's progress thread, another process mapping the
 * same memory, or the application itself. Arithmetic on signed integers
 * is done in unsigned types (wrapping, as the NIC's would, never undefined
 * behaviour).
 */

size_t gdrfab_atomic_size(enum fi_datatype datatype)
{
	switch (datatype) {
	case FI_INT8:
	case FI_UINT8: return 1;
	case FI_INT16:
	case FI_UINT16: return 2;
	case FI_INT32:
	case FI_UINT32:
	case FI_FLOAT: return 4;
	case FI_INT64:
	case FI_UINT64:
	case FI_DOUBLE: return 8;
	default: return 0;
	}
}

static bool is_float(enum fi_datatype datatype)
{
	return datatype == FI_FLOAT || datatype == FI_DOUBLE;
}

bool gdrfab_atomic_valid(enum gdrfab_atomic_kind kind, enum fi_op op,
			 enum fi_datatype datatype)
{
	if (!gdrfab_atomic_size(datatype))
		return false;
	switch (op) {
	case FI_BOR:
	case FI_BAND:
	case FI_BXOR:
		/* Bitwise: integers only. */
		return kind != GDRFAB_ATOMIC_COMPARE && !is_float(datatype);
	case FI_MIN:
	case FI_MAX:
	case FI_SUM:
	case FI_PROD:
	case FI_LOR:
	case FI_LAND:
	case FI_LXOR:
	case FI_ATOMIC_WRITE: return kind != GDRFAB_ATOMIC_COMPARE;
	case FI_ATOMIC_READ: return kind == GDRFAB_ATOMIC_FETCH;
	case FI_CSWAP:
	case FI_CSWAP_NE:
	case FI_CSWAP_LE:
	case FI_CSWAP_LT:
	case FI_CSWAP_GE:
	case FI_CSWAP_GT: return kind == GDRFAB_ATOMIC_COMPARE;
	case FI_MSWAP:
		return kind == GDRFAB_ATOMIC_COMPARE && !is_float(datatype);
	default: return false;
	}
}

size_t gdrfab_atomic_operands(enum gdrfab_atomic_kind kind, enum fi_op op)
{
	if (op == FI_ATOMIC_READ)
		return 0;
	return kind == GDRFAB_ATOMIC_COMPARE ? 2 : 1;
}

/* The new value of an element holding old, or false when the operation
 * leaves it as it is. Shared by integers and floats (T), with the
 * wrapping arithmetic done in W for integers. */
#define COMMON_OPS(T, W)                                                       \
	case FI_MIN: *out = src < old ? src : old; return src < old;           \
	case FI_MAX: *out = src > old ? src : old; return src > old;           \
	case FI_SUM: *out = (T)((W)old + (W)src); return true;                 \
	case FI_PROD: *out = (T)((W)old * (W)src); return true;                \
	case FI_LOR: *out = (T)(old || src); return true;                      \
	case FI_LAND: *out = (T)(old && src); return true;                     \
	case FI_LXOR: *out = (T)(!old != !src); return true;                   \
	case FI_ATOMIC_WRITE: *out = src; return true;                         \
	case FI_CSWAP: *out = src; return cmp == old;                          \
	case FI_CSWAP_NE: *out = src; return cmp != old;                       \
	case FI_CSWAP_LE: *out = src; return cmp <= old;                       \
	case FI_CSWAP_LT: *out = src; return cmp < old;                        \
	case FI_CSWAP_GE: *out = src; return cmp >= old;                       \
	case FI_CSWAP_GT:                                                      \
		*out = src;                                                    \
		return cmp > old;

#define INT_CALC(name, T, W)                                                   \
	static bool calc_##name(enum fi_op op, T old, T src, T cmp, T *out)    \
	{                                                                      \
		switch (op) {                                                  \
			COMMON_OPS(T, W)                                       \
		case FI_BOR: *out = (T)(old | src); return true;               \
		case FI_BAND: *out = (T)(old & src); return true;              \
		case FI_BXOR: *out = (T)(old ^ src); return true;              \
		case FI_MSWAP:                                                 \
			*out = (T)((src & cmp) | (old & ~cmp));                \
			return true;                                           \
		default: return false; /* FI_ATOMIC_READ */                    \
		}                                                              \
	}

#define FLOAT_CALC(name, T, W)                                                 \
	static bool calc_##name(enum fi_op op, T old, T src, T cmp, T *out)    \
	{                                                                      \
		switch (op) {                                                  \
			COMMON_OPS(T, W)                                       \
		default: return false; /* FI_ATOMIC_READ */                    \
		}                                                              \
	}

/*
 * The datatypes served, one line each: the fi_datatype, a short name, the
 * C type T, the type W its arithmetic is done in (wider unsigned types for
 * integers: uint16_t * uint16_t would be done in (overflowing) int), the
 * bits B it is swapped as, and its CALC macro.
 */
#define ATOMIC_TYPES(X)                                                        \
	X(FI_INT8, i8, int8_t, uint32_t, uint8_t, INT_CALC)                    \
	X(FI_UINT8, u8, uint8_t, uint32_t, uint8_t, INT_CALC)                  \
	X(FI_INT16, i16, int16_t, uint32_t, uint16_t, INT_CALC)                \
	X(FI_UINT16, u16, uint16_t, uint32_t, uint16_t, INT_CALC)              \
	X(FI_INT32, i32, int32_t, uint64_t, uint32_t, INT_CALC)                \
	X(FI_UINT32, u32, uint32_t, uint64_t, uint32_t, INT_CALC)              \
	X(FI_INT64, i64, int64_t, uint64_t, uint64_t, INT_CALC)                \
	X(FI_UINT64, u64, uint64_t, uint64_t, uint64_t, INT_CALC)              \
	X(FI_FLOAT, flt, float, float, uint32_t, FLOAT_CALC)                   \
	X(FI_DOUBLE, dbl, double, double, uint64_t, FLOAT_CALC)

#define DEFINE_CALC(dt, name, T, W, B, CALC) CALC(name, T, W)
ATOMIC_TYPES(DEFINE_CALC)

/* One element: a compare-and-swap loop on the bits (type B) of a T. */
#define APPLY(name, T, B)                                                      \
	static void apply_##name(enum fi_op op, uint8_t *dst,                  \
				 const uint8_t *src, const uint8_t *cmp,       \
				 uint8_t *old, size_t count)                   \
	{                                                                      \
		for (size_t i = 0; i < count; i++) {                           \
			B *p = (B *)(void *)(dst + i * sizeof(T));             \
			B bits = __atomic_load_n(p, __ATOMIC_ACQUIRE), nbits;  \
			T s = 0, c = 0, o, n;                                  \
                                                                               \
			if (src)                                               \
				memcpy(&s, src + i * sizeof(T), sizeof(T));    \
			if (cmp)                                               \
				memcpy(&c, cmp + i * sizeof(T), sizeof(T));    \
			for (;;) {                                             \
				memcpy(&o, &bits, sizeof(T));                  \
				if (!calc_##name(op, o, s, c, &n))             \
					break;                                 \
				memcpy(&nbits, &n, sizeof(T));                 \
				if (__atomic_compare_exchange_n(               \
					    p, &bits, nbits, false,            \
					    __ATOMIC_ACQ_REL,                  \
					    __ATOMIC_ACQUIRE))                 \
					break;                                 \
			}                                                      \
			if (old)                                               \
				memcpy(old + i * sizeof(T), &bits, sizeof(T)); \
		}                                                              \
	}

#define DEFINE_APPLY(dt, name, T, W, B, CALC) APPLY(name, T, B)
ATOMIC_TYPES(DEFINE_APPLY)

void gdrfab_atomic_apply(enum fi_op op, enum fi_datatype datatype, void *dst,
			 const void *src, const void *cmp, void *old,
			 size_t count)
{
#define APPLY_CASE(dt, name, T, W, B, CALC)                                    \
	case dt: apply_##name(op, dst, src, cmp, old, count); break;

	switch (datatype) {
		ATOMIC_TYPES(APPLY_CASE)
	default: break;
	}
#undef APPLY_CASE
}

/* ---- atomics by message ---- */
#define HDR  sizeof(struct gdrfab_pkt_hdr)
#define WIRE sizeof(struct gdrfab_atomic_wire)
/* Fetched bytes that ride in a control request, with no bounce buffer. */
#define CTRL_ROOM (GDRFAB_CTRL_SIZE - HDR)

size_t gdrfab_atomic_max_count(struct gdrfab_proto *proto, int kind, int op,
			       int datatype)
{
	size_t size = gdrfab_atomic_size(datatype);
	size_t nops = gdrfab_atomic_operands(kind, op);
	size_t max;

	if (!gdrfab_atomic_valid(kind, op, datatype))
		return 0;
	/* The request holds the operands; the answer the fetched values. */
	max = (proto->eager_max - WIRE) / (size * (nops ? nops : 1));
	return GDRFAB_MIN(max, (size_t)UINT32_MAX);
}

/* The operands are host memory here: GPU operands were copied to host
 * memory before the endpoint's lock was taken (gdrfab_atomic_api.c), so
 * no CUDA copy waits under it. */
static void gather(uint8_t **p, const struct iovec *iov, size_t cnt)
{
	for (size_t i = 0; i < cnt; i++) {
		if (iov[i].iov_len)
			memcpy(*p, iov[i].iov_base, iov[i].iov_len);
		*p += iov[i].iov_len;
	}
}

int gdrfab_atomic_prepare(struct gdrfab_proto *proto, struct gdrfab_req *req,
			  const struct gdrfab_atomic_args *a)
{
	size_t nops = gdrfab_atomic_operands(a->kind, a->op);
	struct gdrfab_pkt_hdr *hdr;
	struct gdrfab_atomic_wire *w;
	uint8_t *p;

	req->txbuf = gdrfab_txbuf_alloc(proto);
	if (!req->txbuf)
		return -FI_EAGAIN;
	hdr = (void *)req->txbuf->data;
	memset(hdr, 0, HDR + WIRE);
	hdr->version = GDRFAB_WIRE_VERSION;
	hdr->type = GDRFAB_PKT_ATOMIC;
	hdr->flags =
		(req->cq_flags & FI_REMOTE_CQ_DATA) ? GDRFAB_PKT_CQ_DATA : 0;
	hdr->tag = a->addr;
	hdr->data = req->data;
	w = (void *)(hdr + 1);
	w->key = a->key;
	w->count = (uint32_t)a->count;
	w->op = (uint8_t)a->op;
	w->datatype = (uint8_t)a->datatype;
	w->kind = (uint8_t)a->kind;
	p = (uint8_t *)(w + 1);
	if (nops)
		gather(&p, a->src, a->src_cnt);
	if (nops == 2)
		gather(&p, a->cmp, a->cmp_cnt);
	req->len = (size_t)(p - (uint8_t *)(hdr + 1));
	hdr->size = req->len;
	hdr->msg_id = req->msg_id = ++proto->next_msg_id;
	if (a->kind != GDRFAB_ATOMIC_WRITE) {
		memcpy(req->iov, a->res, a->res_cnt * sizeof(*a->res));
		for (size_t i = 0; i < a->res_cnt; i++)
			req->desc[i] = a->res_desc ? a->res_desc[i] : NULL;
		req->iov_count = a->res_cnt;
	}
	req->rndv = true; /* done at the answer */
	req->atomic = true;
	gdrfab_atomic_add_steps(req);
	return 0;
}

const char *gdrfab_atomic_check_header(const struct gdrfab_pkt_hdr *h,
				       size_t len)
{
	if (h->seg_count || h->size != len - HDR)
		return "atomic length does not match the bytes sent";
	if (h->type == GDRFAB_PKT_ATOMIC)
		return h->size < WIRE || (h->flags & ~GDRFAB_PKT_CQ_DATA)
			       ? "bad atomic request"
			       : NULL;
	return h->flags || h->data >= FI_ERRNO_MAX ? "bad atomic response"
						   : NULL;
}

/* ---- target ---- */
struct apply_args {
	const struct gdrfab_atomic_wire *w;
	const uint8_t *src, *cmp;
	uint8_t *old;
};

static void apply_cb(void *mem, void *arg)
{
	struct apply_args *a = arg;

	gdrfab_atomic_apply(a->w->op, a->w->datatype, mem, a->src, a->cmp,
			    a->old, a->w->count);
}

/* Bytes the answer to a (checked) request carries. */
static size_t answer_len(const struct gdrfab_atomic_wire *w)
{
	if (w->kind == GDRFAB_ATOMIC_WRITE)
		return 0;
	return (size_t)w->count * gdrfab_atomic_size(w->datatype);
}

/* Why a request is malformed, or NULL; *err is the FI_E* to answer. */
static const char *check_request(struct gdrfab_proto *proto,
				 const struct gdrfab_pkt_hdr *h, int *err)
{
	const struct gdrfab_atomic_wire *w = (const void *)(h + 1);
	size_t size = gdrfab_atomic_size(w->datatype);

	*err = FI_EINVAL;
	if (w->reserved || w->kind < GDRFAB_ATOMIC_WRITE ||
	    w->kind > GDRFAB_ATOMIC_COMPARE)
		return "bad atomic request";
	if (!gdrfab_atomic_valid(w->kind, w->op, w->datatype)) {
		*err = FI_EOPNOTSUPP;
		return "operation not supported on this datatype";
	}
	if (!w->count || w->count > proto->eager_max / size)
		return "bad element count";
	if (h->size != WIRE + (uint64_t)w->count * size *
				       gdrfab_atomic_operands(w->kind, w->op))
		return "operands do not match the count";
	if (h->tag % size)
		return "target address not aligned to the datatype";
	return NULL;
}

static void warn_peer(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
		      const struct gdrfab_pkt_hdr *h, const char *why)
{
	const struct gdrfab_atomic_wire *w = (const void *)(h + 1);
	char peer[128];

	gdrfab_addr_to_str(&conn->peer, peer, sizeof(peer));
	GDRFAB_WIRE_WARN(
		proto, FI_LOG_EP_DATA,
		"atomic (op %u, datatype %u, %u elements) at 0x%llx key 0x%llx from %s refused: %s",
		w->op, w->datatype, w->count, (unsigned long long)h->tag,
		(unsigned long long)w->key, peer, why);
}

/* Whether an answer can be sent now (a request, and a bounce buffer for
 * fetched values too many for its control area). */
static bool can_answer(struct gdrfab_proto *proto,
		       const struct gdrfab_pkt_hdr *h)
{
	const struct gdrfab_atomic_wire *w = (const void *)(h + 1);
	int err;

	if (!proto->req_free_cnt)
		return false;
	if (check_request(proto, h, &err) || answer_len(w) <= CTRL_ROOM)
		return true;
	return proto->tx_free != NULL;
}

static void process(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
		    const struct gdrfab_pkt_hdr *h)
{
	const struct gdrfab_atomic_wire *w = (const void *)(h + 1);
	struct gdrfab_req *resp = gdrfab_req_alloc(proto, true);
	struct gdrfab_pkt_hdr *rh;
	struct apply_args args = {.w = w};
	const char *why;
	size_t len = 0, size;
	uint64_t access;
	int err;

	if (!resp) /* can_answer said there is one */
		return;
	resp->op = GDRFAB_OP_CTRL;
	resp->conn = conn;
	conn->refs++;
	rh = (void *)resp->ctrl;
	why = check_request(proto, h, &err);
	if (!why) {
		size = gdrfab_atomic_size(w->datatype);
		len = answer_len(w);
		if (len > CTRL_ROOM) {
			resp->txbuf = gdrfab_txbuf_alloc(proto);
			if (resp->txbuf)
				rh = (void *)resp->txbuf->data;
		}
		args.src = (const uint8_t *)(w + 1);
		args.cmp = args.src + (size_t)w->count * size;
		args.old = len ? (uint8_t *)(rh + 1) : NULL;
		access = w->kind == GDRFAB_ATOMIC_WRITE ? FI_REMOTE_WRITE
			 : w->op == FI_ATOMIC_READ
				 ? FI_REMOTE_READ
				 : FI_REMOTE_READ | FI_REMOTE_WRITE;
		err = FI_ENOMEM;
		why = "no bounce buffer for the answer";
		if (len <= CTRL_ROOM || resp->txbuf)
			err = proto->ops->mr_keys_access(
				proto->env.domain, w->key, h->tag,
				(uint64_t)w->count * size, access, apply_cb,
				&args, &why);
	}
	if (err) {
		warn_peer(proto, conn, h, why);
		len = 0;
	}
	memset(rh, 0, HDR);
	rh->version = GDRFAB_WIRE_VERSION;
	rh->type = GDRFAB_PKT_ATOMIC_RESP;
	rh->data = (uint64_t)err;
	rh->size = len;
	rh->msg_id = h->msg_id;
	if (resp->txbuf)
		resp->len = len;
	else
		resp->ctrl_len = HDR + len;
	gdrfab_req_submit(resp);
	if (!err && (h->flags & GDRFAB_PKT_CQ_DATA))
		gdrfab_report_remote_data(
			proto, FI_ATOMIC | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
			0, (uint32_t)h->data, conn);
}

struct backlog_ent {
	struct gdrfab_list entry;
	struct gdrfab_conn *conn;
	_Alignas(8) uint8_t msg[]; /* header and body as received */
};

void gdrfab_atomic_handle(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
			  const struct gdrfab_pkt_hdr *h)
{
	struct backlog_ent *b;

	if (gdrfab_list_empty(&proto->atomic_backlog) && can_answer(proto, h)) {
		process(proto, conn, h);
		return;
	}
	b = malloc(sizeof(*b) + HDR + h->size);
	if (!b) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "out of memory for a waiting atomic: dropped\n");
		return;
	}
	memcpy(b->msg, h, HDR + h->size);
	b->conn = conn;
	conn->refs++;
	gdrfab_list_push_tail(&proto->atomic_backlog, &b->entry);
	gdrfab_proto_wake(proto);
}

void gdrfab_atomic_backlog_run(struct gdrfab_proto *proto)
{
	while (!gdrfab_list_empty(&proto->atomic_backlog)) {
		struct backlog_ent *b = gdrfab_list_entry(
			proto->atomic_backlog.next, struct backlog_ent, entry);
		const struct gdrfab_pkt_hdr *h = (const void *)b->msg;

		if (b->conn->state != GDRFAB_CONN_FAILED) {
			if (!can_answer(proto, h))
				return;
			process(proto, b->conn, h);
		}
		gdrfab_list_remove(&b->entry);
		gdrfab_conn_put(b->conn);
		free(b);
	}
}

void gdrfab_atomic_backlog_free(struct gdrfab_proto *proto)
{
	while (!gdrfab_list_empty(&proto->atomic_backlog)) {
		struct backlog_ent *b = gdrfab_list_entry(
			proto->atomic_backlog.next, struct backlog_ent, entry);

		gdrfab_list_remove(&b->entry);
		gdrfab_conn_put(b->conn);
		free(b);
	}
}

/* ---- initiator ---- */
void gdrfab_atomic_resp(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
			const struct gdrfab_pkt_hdr *h)
{
	struct gdrfab_list *it, *tmp;

	gdrfab_list_for_each_safe (&conn->rndv_wait, it, tmp) {
		struct gdrfab_req *req =
			gdrfab_list_entry(it, struct gdrfab_req, entry);
		const uint8_t *p = (const uint8_t *)(h + 1);

		if (!req->atomic || req->msg_id != h->msg_id ||
		    !req->fully_posted)
			continue;
		req->fin_received = true;
		/* Applied at the target: NIC atomics held behind it may
		 * go. */
		gdrfab_conn_atomic_answered(req);
		if (h->data && !req->error) {
			req->error = (int)h->data;
			req->prov_errno = h->data == FI_EACCES
						  ? IBV_WC_REM_ACCESS_ERR
						  : IBV_WC_REM_OP_ERR;
		} else if (!req->error &&
			   h->size !=
				   gdrfab_iov_len(req->iov, req->iov_count)) {
			GDRFAB_WIRE_WARN(
				proto, FI_LOG_EP_DATA,
				"atomic answer of %llu bytes for %zu expected",
				(unsigned long long)h->size,
				gdrfab_iov_len(req->iov, req->iov_count));
			req->error = FI_EIO;
		}
		/* Written into the result buffers by the request's last
		 * steps (GPU ones asynchronously, gdrfab_atomic_result_step):
		 * kept until then, the receive buffer goes back now. */
		if (!req->error) {
			int ret = gdrfab_atomic_result_keep(proto, req, p,
							    h->size);

			if (ret)
				req->error = -ret;
		}
		if (!req->wr_pending)
			gdrfab_req_finish(proto, req);
		return;
	}
	GDRFAB_WIRE_WARN(proto, FI_LOG_EP_DATA,
			 "answer for unknown atomic %llu dropped",
			 (unsigned long long)h->msg_id);
}

/* ---- the order between message-borne and NIC atomics ---- */
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

/* ---- an atomic's fetched values ---- */
/*
 * An atomic's fetched values into its result buffers, as one of the
 * request's last steps (gdrfab_finish.c). The values wait in the
 * request's own memory: a NIC atomic's in its control area, where the NIC
 * wrote them; a message-borne atomic's in its bounce buffer, copied there
 * from the ATOMIC_RESP (the peer's answer proves the NIC is done reading
 * the request out of it, and the receive buffer goes back to the SRQ at
 * once). Host result buffers are written at once. GPU ones go through a
 * staging buffer drained by the pipeline's asynchronous copies, whose
 * events progress polls (hmem/gdrfab_stage_pipe.c): the request is parked, and
 * its finishing comes back here when they end. Nothing waits for a copy.
 * Without CUDA permitted there is no way into GPU memory here: the
 * pipeline refuses it (logged) and the atomic ends in an error.
 */

/* Where the fetched values wait, or NULL. */
static const uint8_t *held(const struct gdrfab_req *req)
{
	if (req->op == GDRFAB_OP_NIC_ATOMIC)
		return req->ctrl;
	return req->txbuf ? req->txbuf->data : NULL;
}

static int gdrfab_atomic_result_keep(struct gdrfab_proto *proto,
				     struct gdrfab_req *req, const void *src,
				     size_t len)
{
	if (!len)
		return 0;
	if (!req->txbuf || len > proto->txbuf_size) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "no room for an atomic's %zu fetched bytes\n", len);
		return -FI_EIO;
	}
	memcpy(req->txbuf->data, src, len);
	return 0;
}

int gdrfab_atomic_result_step(struct gdrfab_proto *proto,
			      struct gdrfab_req *req)
{
	size_t len;
	const uint8_t *src;
	int ret;

	if (req->error || proto->closing)
		return 0;
	if (req->staged) {
		/* Back from the copies (or their first pass). */
		if (!gdrfab_stage_drain(proto, req, req->stage.len))
			return -FI_EINPROGRESS;
		return req->stage.err ? -req->stage.err : 0;
	}
	len = gdrfab_iov_len(req->iov, req->iov_count);
	src = held(req);
	if (!len)
		return 0;
	if (!src)
		return -FI_EIO;
	/* No GPU memory, CUDA asked once per entry: the copy trusts it. */
	if (!gdrfab_iov_gpu(proto, req->iov, req->desc, req->iov_count))
		return gdrfab_scatter_host(proto, req->iov, req->desc,
					   req->iov_count, 0, src, len, true);
	/* The staging buffer takes the place of the request's iovec (the
	 * result buffers move to gpu_iov): nothing reads them after. */
	ret = gdrfab_stage_setup(proto, req, req->iov, req->desc,
				 req->iov_count, 0, false);
	if (ret)
		return ret;
	memcpy(req->stage.host, src, len);
	if (!gdrfab_stage_drain(proto, req, len))
		return -FI_EINPROGRESS;
	return req->stage.err ? -req->stage.err : 0;
}

void gdrfab_atomic_add_steps(struct gdrfab_req *req)
{
	gdrfab_req_add_step(req, GDRFAB_STEP_ATOMIC_RESULT,
			    gdrfab_atomic_result_step);
	gdrfab_req_add_step(req, GDRFAB_STEP_RMA_EVENT, gdrfab_rma_event_step);
}
