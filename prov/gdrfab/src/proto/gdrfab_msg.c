/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sends and receives (the object layer's fi_ops_msg and fi_ops_tagged,
 * obj/gdrfab_msg_api.c, call here): argument checks, then a request that goes
 * eager (copied into a bounce buffer, up to FI_GDRFAB_EAGER_MAX) or
 * rendezvous (a header naming the source buffer; the receiver reads it).
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_tagged.h>

#include "gdrfab.h"
#include "gdrfab_conn.h"
#include "gdrfab_gpu.h"
#include "gdrfab_lock.h"
#include "gdrfab_mr_desc.h"
#include "gdrfab_msg.h"
#include "gdrfab_proto.h"
#include "gdrfab_proto_stats.h"
#include "gdrfab_req.h"
#include "gdrfab_strerror.h"
#include "gdrfab_stripe.h"

/* The checks of gdrfab_check_iov again, saying which failed (out of
 * line: the check every data call makes then saves no registers for the
 * log calls). */
static __attribute__((noinline)) int refuse_iov(struct gdrfab_proto *proto,
						const struct iovec *iov,
						size_t count, const char *call)
{
	if (count > GDRFAB_MAX_IOV || (count && !iov)) {
		GDRFAB_WARN(FI_LOG_EP_DATA, "%s: %zu iovecs (at most %d)\n",
			    call, count, GDRFAB_MAX_IOV);
		return -FI_EINVAL;
	}
	for (size_t i = 0, sum = 0; i < count; i++) {
		size_t len = iov[i].iov_len;

		if (!iov[i].iov_base && len) {
			GDRFAB_WARN(FI_LOG_EP_DATA,
				    "%s: NULL buffer of %zu bytes\n", call,
				    len);
			return -FI_EINVAL;
		}
		if (len > UINTPTR_MAX - (uintptr_t)iov[i].iov_base) {
			GDRFAB_WARN(
				FI_LOG_EP_DATA,
				"%s: iovec %zu (%zu bytes) wraps the address space\n",
				call, i, len);
			return -FI_EINVAL;
		}
		if (len > proto->env.max_msg_size - sum) {
			GDRFAB_WARN(
				FI_LOG_EP_DATA,
				"%s: the iovecs' lengths exceed max_msg_size %zu\n",
				call, proto->env.max_msg_size);
			return -FI_EMSGSIZE;
		}
		sum += len;
	}
	return 0;
}

int gdrfab_check_iovs(struct gdrfab_proto *proto, const struct iovec *iov,
		      size_t count, const char *call)
{
	if (count > GDRFAB_MAX_IOV || (count && !iov))
		return refuse_iov(proto, iov, count, call);
	/* Each length is checked before it is added, so the sum cannot
	 * wrap around (lengths whose sum wraps once looked small). */
	for (size_t i = 0, sum = 0; i < count; i++) {
		if (!gdrfab_iov_entry_ok(&iov[i],
					 proto->env.max_msg_size - sum))
			return refuse_iov(proto, iov, count, call);
		sum += iov[i].iov_len;
	}
	return 0;
}

/* An eager header from the request's tag and data; the caller sets its
 * size once the payload's length is known. */
static void eager_header(struct gdrfab_pkt_hdr *hdr,
			 const struct gdrfab_req *req, uint16_t flags)
{
	memset(hdr, 0, sizeof(*hdr));
	hdr->version = GDRFAB_WIRE_VERSION;
	hdr->type = GDRFAB_PKT_EAGER;
	hdr->flags = flags;
	hdr->tag = req->tag;
	hdr->data = req->data;
}

/* Builds an eager message in a bounce buffer, from host memory only: GPU
 * bytes were copied before the endpoint's lock was taken
 * (gdrfab_send_copies). */
static int prepare_eager(struct gdrfab_proto *proto, struct gdrfab_req *req,
			 const struct iovec *iov, size_t count, uint16_t flags)
{
	struct gdrfab_pkt_hdr *hdr;
	uint8_t *p;

	req->txbuf = gdrfab_txbuf_alloc(proto);
	if (!req->txbuf)
		return -FI_EAGAIN;
	hdr = (void *)req->txbuf->data;
	eager_header(hdr, req, flags);
	p = (uint8_t *)(hdr + 1);
	for (size_t i = 0; i < count; i++) {
		if (iov[i].iov_len)
			memcpy(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	req->len = (size_t)(p - (uint8_t *)(hdr + 1));
	hdr->size = req->len;
	req->txbuf_msg_only = true;
	return 0;
}

/* A small message sent inline from the application's buffers: the header
 * in the request's control area, no bounce copy. */
static void prepare_inline(struct gdrfab_req *req, const struct iovec *iov,
			   size_t count, uint16_t flags)
{
	struct gdrfab_pkt_hdr *hdr = (void *)req->ctrl;

	eager_header(hdr, req, flags);
	req->iov_count = count;
	memcpy(req->iov, iov, count * sizeof(*iov));
	req->len = gdrfab_iov_len(iov, count);
	hdr->size = req->len;
	req->ctrl_len = sizeof(*hdr);
	req->inline_data = true;
}

/* An eager message whose payload the NIC gathers from registered buffers
 * (req->iov and lkey): the header from the request's control area. From
 * GPU memory it is either the application's buffers themselves, the NIC
 * reaching them (no copy, no CUDA call: what an endpoint with
 * FI_OPT_CUDA_API_PERMITTED=false needs), or a staging buffer the
 * pipeline fills with asynchronous CUDA copies, the send waiting (in
 * its turn on the connection, not in this call) until they end. */
static int prepare_gather(struct gdrfab_proto *proto, struct gdrfab_req *req,
			  const struct iovec *iov, void **desc, size_t count,
			  uint16_t flags)
{
	struct gdrfab_pkt_hdr *hdr = (void *)req->ctrl;
	int ret =
		proto->env.cuda_api_permitted
			? gdrfab_stage_setup(proto, req, iov, desc, count, 0,
					     true)
			: gdrfab_req_set_local(proto, req, iov, desc, count, 0);

	if (ret)
		return ret;
	eager_header(hdr, req, flags);
	hdr->size = req->len;
	req->ctrl_len = sizeof(*hdr);
	req->gather = true;
	return 0;
}

/* A segmented eager message (gdrfab_seg.h): the header (size: the whole
 * message) in the request's control area, the pieces gathered by the NIC
 * from the application's buffers, registered here (the host cache's for
 * a buffer without a descriptor, as a rendezvous source's): no copy on
 * the sending side, and the buffer is the caller's again at the last
 * piece's send completion. */
static int prepare_seg(struct gdrfab_proto *proto, struct gdrfab_req *req,
		       const struct iovec *iov, void **desc, size_t count,
		       uint16_t flags)
{
	struct gdrfab_pkt_hdr *hdr = (void *)req->ctrl;
	int ret = gdrfab_req_set_local(proto, req, iov, desc, count, 0);

	if (ret)
		return ret;
	eager_header(hdr, req, flags);
	hdr->type = GDRFAB_PKT_SEG;
	hdr->size = req->len;
	req->ctrl_len = sizeof(*hdr);
	req->seg = true;
	proto->seg_tx_msgs++;
	return 0;
}

/* Whether a message above the eager limit goes segmented: up to the
 * limit its connection agreed on (0 until the handshake: a message sent
 * before it goes by rendezvous), from host memory (GPU sources keep
 * their GDR or staged rendezvous), with its data still the caller's
 * until completion (an inject's is copied, by rendezvous's staging), and
 * the header and each piece's buffers within the SGEs of a work request.
 * Never an emulated write (its own FIN). */
static bool seg_wanted(struct gdrfab_proto *proto, const struct gdrfab_req *req,
		       void **desc, size_t count, size_t len, bool copy,
		       uint16_t flags)
{
	return len <= req->conn->seg_max && !copy &&
	       !(flags & GDRFAB_PKT_EMU) &&
	       count + 1 <= (size_t)proto->max_sge &&
	       !gdrfab_iov_has_gpu(proto, desc, count);
}

/* Whether an eager send from GPU memory goes out without a bounce copy:
 * its descriptors name GPU memory that the NIC gathers, or that the
 * staging pipeline copies asynchronously. */
static bool eager_gathers(struct gdrfab_proto *proto, void **desc, size_t count)
{
	if (!gdrfab_iov_has_gpu(proto, desc, count))
		return false;
	if (proto->env.cuda_api_permitted)
		return proto->max_sge >= 2;
	return !gdrfab_iov_stages(proto, desc, count) &&
	       count + 1 <= (size_t)proto->max_sge;
}

/* Whether every buffer came with a descriptor of host memory, once
 * mr_check_descs found each a live MR of this domain (so that only its
 * memory type is left to read). A receive so posted needs no GPU step:
 * its delivery asks nothing more than the copy's own check of each
 * descriptor. */
static bool descs_named_host(void **desc, size_t count)
{
	if (!desc)
		return false;
	for (size_t i = 0; i < count; i++) {
		if (!desc[i] || gdrfab_mr_device(desc[i]) >= 0)
			return false;
	}
	return true;
}

/* Whether every buffer comes with a live descriptor naming host memory:
 * then the CPU reads them under the lock as they are, and nothing needs
 * CUDA (the common send, checked first). A missing descriptor may be GPU
 * memory only CUDA can name; the rest is gdrfab_iov_has_gpu's test. */
static bool descs_host(struct gdrfab_proto *proto, void **desc, size_t count)
{
	return descs_named_host(desc, count) &&
	       !gdrfab_iov_has_gpu(proto, desc, count);
}

bool gdrfab_send_copies(struct gdrfab_proto *proto, void **desc, size_t count,
			size_t len, uint64_t flags)
{
	if (descs_host(proto, desc, count))
		return false;
	if (flags & FI_INJECT)
		return true;
	/* As gdrfab_msg_prepare chooses: what it sends by rendezvous, or
	 * gathers, is never copied by the CPU or CUDA (a send with
	 * FI_DELIVERY_COMPLETE goes eager too, by its size). */
	if (len > proto->eager_max)
		return false;
	return !eager_gathers(proto, desc, count);
}

void gdrfab_rndv_header(struct gdrfab_proto *proto, struct gdrfab_req *req,
			uint16_t flags)
{
	struct gdrfab_pkt_hdr *hdr = (void *)req->ctrl;

	memset(hdr, 0, sizeof(*hdr));
	hdr->version = GDRFAB_WIRE_VERSION;
	hdr->type = GDRFAB_PKT_RNDV;
	hdr->flags = flags;
	hdr->seg_count = (uint32_t)req->rseg_count;
	hdr->tag = req->tag;
	hdr->data = req->data;
	hdr->size = req->len;
	hdr->msg_id = req->msg_id = ++proto->next_msg_id;
	memcpy(hdr + 1, req->rseg, req->rseg_count * sizeof(req->rseg[0]));
	req->ctrl_len = sizeof(*hdr) + req->rseg_count * sizeof(req->rseg[0]);
	req->rndv = true;
}

/* Builds a rendezvous header naming the (registered) source buffers. */
static int prepare_rndv(struct gdrfab_proto *proto, struct gdrfab_req *req,
			const struct iovec *iov, void **desc, size_t count,
			uint16_t flags)
{
	/* GPU memory the NIC cannot read, and data the caller may reuse at
	 * once (FI_INJECT), is copied to a host buffer that the receiver
	 * reads instead. */
	int ret = gdrfab_iov_stages(proto, desc, count) ||
				  (req->op_flags & FI_INJECT)
			  ? gdrfab_stage_setup(proto, req, iov, desc, count,
					       IBV_ACCESS_REMOTE_READ, true)
			  : gdrfab_req_set_local(proto, req, iov, desc, count,
						 IBV_ACCESS_REMOTE_READ);

	if (ret)
		return ret;
	gdrfab_rndv_header(proto, req, flags);
	gdrfab_stripe_rndv_keys(proto, req);
	return 0;
}

int gdrfab_msg_prepare(struct gdrfab_proto *proto, struct gdrfab_req *req,
		       const struct iovec *iov, void **desc, size_t count,
		       uint16_t flags)
{
	size_t len = gdrfab_iov_len(iov, count);
	struct gdrfab_pkt_hdr *hdr;
	int ret = 0;

	/* Inline needs the data at post time: not for injects (FI_INJECT,
	 * fi_inject or the flag), which may wait for the connection after the
	 * caller reused the buffer. It reads the buffer with the CPU: never
	 * GPU memory. */
	bool copy = req->op_flags & FI_INJECT, delivery;

	if (!copy &&
	    len + sizeof(struct gdrfab_pkt_hdr) <= req->conn->max_inline &&
	    count + 1 <= (size_t)proto->max_sge &&
	    !gdrfab_iov_has_gpu(proto, desc, count))
		prepare_inline(req, iov, count, flags);
	else if (len <= proto->eager_max && !copy &&
		 eager_gathers(proto, desc, count))
		ret = prepare_gather(proto, req, iov, desc, count, flags);
	else if (len <= proto->eager_max)
		ret = prepare_eager(proto, req, iov, count, flags);
	else if (seg_wanted(proto, req, desc, count, len, copy, flags))
		ret = prepare_seg(proto, req, iov, desc, count, flags);
	else
		ret = prepare_rndv(proto, req, iov, desc, count, flags);
	gdrfab_pstat_msg_prepared(proto, req, len, flags, ret);
	if (ret)
		return ret;
	/* Not an inject, which reports nothing; an emulated write has its
	 * own FIN. */
	delivery = (req->op_flags & FI_DELIVERY_COMPLETE) && !req->silent &&
		   !(flags & GDRFAB_PKT_EMU_WRITE);
	if (req->rndv) {
		/* Its FIN says the data is read already; with the flag it
		 * also says whether all of it fit (FI_ETRUNC), as an eager
		 * one's does. The header is in ctrl (gdrfab_rndv_header). */
		if (delivery)
			((struct gdrfab_pkt_hdr *)(void *)req->ctrl)->flags |=
				GDRFAB_PKT_DELIVERY_ACK;
		return 0;
	}
	hdr = req->txbuf ? (void *)req->txbuf->data : (void *)req->ctrl;
	/* An eager message may still end with the receiver's FIN: an
	 * emulated write (the target says whether the key allowed it), and
	 * a send whose completion must mean the data reached the receiver's
	 * buffer (FI_DELIVERY_COMPLETE, fi_msg(3)), whose header asks for
	 * that FIN (GDRFAB_PKT_DELIVERY_ACK): one round trip, where a
	 * rendezvous costs the RNDV, the READ and the FIN. */
	if (!(flags & GDRFAB_PKT_EMU_WRITE)) {
		if (!delivery)
			return 0;
		hdr->flags |= GDRFAB_PKT_DELIVERY_ACK;
		req->delivery_ack = true;
	}
	hdr->msg_id = req->msg_id = ++proto->next_msg_id;
	req->rndv = true;
	return 0;
}

/* A send whose message is out (its work request posted, maybe already
 * acked) and that waits only for the receiver's delivery ACK may be
 * cancelled: the application stops waiting, its buffer is no longer read
 * (a rendezvous send's is, by the peer's READ, so it runs to its end).
 * The FIN that may still come is dropped (handle_fin). */
static bool cancel_one(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
		       void *context)
{
	struct gdrfab_list *it, *tmp;

	gdrfab_list_for_each_safe (&conn->rndv_wait, it, tmp) {
		struct gdrfab_req *req =
			gdrfab_list_entry(it, struct gdrfab_req, entry);

		if (req->context != context || !req->delivery_ack ||
		    req->fin_received)
			continue;
		gdrfab_list_remove(&req->entry);
		gdrfab_req_fail(proto, req, FI_ECANCELED, GDRFAB_PERR_CANCELED);
		return true;
	}
	return false;
}

int gdrfab_send_cancel(struct gdrfab_proto *proto, void *context)
{
	struct gdrfab_list *it, *tmp;

	gdrfab_list_for_each_safe (&proto->conns, it, tmp) {
		if (cancel_one(proto,
			       gdrfab_list_entry(it, struct gdrfab_conn, entry),
			       context))
			return 0;
	}
	return -FI_ENOENT;
}

int gdrfab_tx_begin(struct gdrfab_proto *proto, bool copy_in,
		    const struct iovec **iov, void ***desc, size_t *count,
		    uint64_t *flags, struct gdrfab_inject_copy *copy,
		    size_t len, fi_addr_t peer, struct gdrfab_req **req)
{
	int ret;

	if (copy_in) {
		ret = gdrfab_copy_in_unlocked(proto, iov, desc, count, copy);
		if (ret)
			return ret;
		if (copy->bounce)
			*flags |= FI_INJECT;
	}
	gdrfab_lock_acquire(proto->env.lock);
	gdrfab_pstat_copied(proto, copy->bounce != NULL, len);
	ret = gdrfab_req_to_peer(proto, peer, req);
	if (ret) {
		gdrfab_req_drain(proto);
		gdrfab_lock_release(proto->env.lock);
		gdrfab_copy_in_done(proto, copy);
	}
	return ret;
}

/* gdrfab_check_iov, then the buffers' descriptors: every path of a send
 * or a receive, inline ones too, reads the buffers. */
static int check_bufs(struct gdrfab_proto *proto, const struct iovec *iov,
		      void **desc, size_t count, const char *call)
{
	int ret = gdrfab_check_iov(proto, iov, count, call);

	return ret ? ret
		   : proto->ops->mr_check_descs(proto->env.domain, iov, desc,
						count);
}

/* What a send's or a receive's request reports to the application: its
 * context, its completion flags (FI_SEND or FI_RECV, with FI_TAGGED or
 * FI_MSG) and the call's flags. */
static void req_for_app(struct gdrfab_req *req, enum gdrfab_op op,
			void *context, uint64_t cq_flags, bool tagged,
			uint64_t flags)
{
	req->op = op;
	req->context = context;
	req->cq_flags = cq_flags | (tagged ? FI_TAGGED : FI_MSG);
	req->op_flags = flags;
}

ssize_t gdrfab_proto_send(struct gdrfab_proto *proto, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t dest,
			  uint64_t tag, uint64_t data, uint64_t flags,
			  void *context, bool tagged, bool silent)
{
	struct gdrfab_req *req;
	uint16_t pkt_flags =
		(tagged ? GDRFAB_PKT_TAGGED : 0) |
		((flags & FI_REMOTE_CQ_DATA) ? GDRFAB_PKT_CQ_DATA : 0);
	size_t len;
	struct gdrfab_inject_copy copy = {.bounce = NULL};
	int ret = check_bufs(proto, iov, desc, count, "send");

	if (ret)
		return ret;
	len = gdrfab_iov_len(iov, count);
	/* Every inject call passes FI_INJECT, as fi_sendmsg may. */
	if ((flags & FI_INJECT) && len > proto->inject_max) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "inject of %zu bytes exceeds inject_size %zu\n",
			    len, proto->inject_max);
		return -FI_EMSGSIZE;
	}
	/* A small send from host memory goes out at once, without a
	 * request, where nothing waits before it. */
	if (count == 1) {
		struct gdrfab_itx_args a = {
			.iov = iov,
			.desc = desc,
			.dest = dest,
			.tag = tag,
			.data = (flags & FI_REMOTE_CQ_DATA) ? data : 0,
			.flags = flags,
			.cq_flags = FI_SEND | (tagged ? FI_TAGGED : FI_MSG),
			.pkt_flags = pkt_flags,
			.context = context,
			.silent = silent,
		};
		ssize_t sent;

		if (gdrfab_itx_send(proto, &a, &sent))
			return sent;
	}
	/* GPU bytes that would be copied with CUDA are copied now, before
	 * the lock, synchronously: an inject's (the API wants the buffer
	 * reusable on return), and an eager send's that the NIC does not
	 * gather (a buffer without its descriptor, or too few SGEs), so that
	 * no CUDA copy waits under the endpoint's lock. The copy is then sent
	 * as an inject's is, from a bounce buffer. */
	ret = gdrfab_tx_begin(
		proto, gdrfab_send_copies(proto, desc, count, len, flags), &iov,
		&desc, &count, &flags, &copy, len, dest, &req);
	if (ret)
		return ret;
	req_for_app(req, GDRFAB_OP_SEND, context, FI_SEND, tagged, flags);
	req->silent = silent;
	req->addr = dest;
	req->tag = tag;
	req->data = (flags & FI_REMOTE_CQ_DATA) ? data : 0;
	ret = gdrfab_msg_prepare(proto, req, iov, desc, count, pkt_flags);
	if (ret)
		gdrfab_req_free(proto, req);
	else
		gdrfab_req_submit(req);
	gdrfab_req_drain(proto);
	gdrfab_lock_release(proto->env.lock);
	gdrfab_copy_in_done(proto, &copy);
	return ret;
}

ssize_t gdrfab_proto_recv(struct gdrfab_proto *proto, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t src,
			  uint64_t tag, uint64_t ignore, uint64_t flags,
			  void *context, bool tagged)
{
	struct gdrfab_addr peer;
	struct gdrfab_req *req;
	int ret = check_bufs(proto, iov, desc, count, "recv");

	if (ret)
		return ret;
	if ((flags & FI_MULTI_RECV) && (tagged || count != 1)) {
		GDRFAB_WARN(
			FI_LOG_EP_DATA,
			"FI_MULTI_RECV takes one buffer of an untagged receive\n");
		return -FI_EINVAL;
	}
	if ((flags & (FI_PEEK | FI_CLAIM)) && !tagged)
		return -FI_EINVAL;
	if ((flags & FI_CLAIM) && !context) {
		GDRFAB_WARN(FI_LOG_EP_DATA,
			    "FI_CLAIM needs a struct fi_context as context\n");
		return -FI_EINVAL;
	}
	/* A source still being resolved is a source all the same. */
	if (src != FI_ADDR_UNSPEC && (proto->env.caps & FI_DIRECTED_RECV) &&
	    proto->ops->av_get_addr(proto->env.av, src, &peer) == -FI_EINVAL)
		return -FI_EINVAL;
	gdrfab_lock_acquire(proto->env.lock);
	req = gdrfab_req_alloc(proto, false);
	if (!req) {
		gdrfab_lock_release(proto->env.lock);
		return -FI_EAGAIN;
	}
	req_for_app(req, GDRFAB_OP_RECV, context, FI_RECV, tagged, flags);
	req->addr = src;
	req->tag = tag;
	req->ignore = ignore;
	req->iov_count = count;
	for (size_t i = 0; i < count; i++) {
		req->iov[i] = iov[i];
		req->desc[i] = desc ? desc[i] : NULL;
	}
	req->len = gdrfab_iov_len(iov, count);
	req->host_descs = descs_named_host(desc, count);
	ret = gdrfab_recv_post(proto, req, flags);
	gdrfab_req_drain(proto);
	gdrfab_lock_release(proto->env.lock);
	return ret;
}
