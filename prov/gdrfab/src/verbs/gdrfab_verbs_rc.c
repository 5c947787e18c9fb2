/* SPDX-License-Identifier: BSD-2-Clause */
/* RC queue pairs: creation, INIT -> RTR -> RTS, and address handles. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_rc.h"
#include "gdrfab_verbs_ops.h"

#define RC_RETRY_CNT	 6 /* 7 means "for ever" to some devices (rxe) */
#define RC_RNR_RETRY	 7 /* 7: retry for ever; the SRQ refills */
#define RC_MIN_RNR_TIMER 1 /* 0.01 ms */
#define HOP_LIMIT	 64

/* RESET -> INIT: the port and what peers may do. 0 or errno. */
static int to_init(struct ibv_qp *qp, const struct gdrfab_rc_params *p)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = p->port_num,
		.qp_access_flags =
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
	};

	if (p->remote_atomic)
		attr.qp_access_flags |= IBV_ACCESS_REMOTE_ATOMIC;
	return gdrfab_vops->modify_qp(qp, &attr,
				      IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					      IBV_QP_PORT |
					      IBV_QP_ACCESS_FLAGS);
}

int gdrfab_rc_reset(struct ibv_qp *qp, const struct gdrfab_rc_params *p)
{
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_RESET};
	int err = gdrfab_vops->modify_qp(qp, &attr, IBV_QP_STATE);

	return err ? err : to_init(qp, p);
}

struct ibv_qp *gdrfab_rc_create(const struct gdrfab_rc_params *p,
				uint32_t *max_inline)
{
	struct ibv_qp_init_attr init = {
		.send_cq = p->cq,
		.recv_cq = p->cq,
		.srq = p->srq,
		.qp_context = p->qp_context,
		.qp_type = IBV_QPT_RC,
		.cap =
			{
				.max_send_wr = (uint32_t)p->sq_depth,
				.max_send_sge = (uint32_t)p->max_sge,
			},
	};
	struct ibv_qp *qp;

	/* Small sends go inline (no DMA read of the payload); devices that
	 * cannot inline that much get a QP without. */
	init.cap.max_inline_data = GDRFAB_RC_INLINE;
	qp = gdrfab_vops->create_qp(p->pd, &init);
	if (!qp) {
		init.cap.max_inline_data = 0;
		qp = gdrfab_vops->create_qp(p->pd, &init);
	}
	if (qp && max_inline)
		*max_inline = init.cap.max_inline_data;
	if (!qp) {
		GDRFAB_WARN(FI_LOG_EP_CTRL, "ibv_create_qp(RC, %d WRs): %s\n",
			    p->sq_depth, strerror(errno));
		return NULL;
	}
	errno = to_init(qp, p);
	if (errno) {
		GDRFAB_WARN(FI_LOG_EP_CTRL, "RC QP to INIT: %s\n",
			    strerror(errno));
		gdrfab_vops->destroy_qp(qp);
		return NULL;
	}
	return qp;
}

void gdrfab_rc_ah_attr(struct ibv_ah_attr *ah, const struct gdrfab_rc_params *p,
		       const struct gdrfab_addr *peer)
{
	memset(ah, 0, sizeof(*ah));
	ah->port_num = p->port_num;
	ah->dlid = ntohs(peer->lid_be);
	/* RoCE routes by GID; InfiniBand by LID within a subnet. */
	if (p->roce || !ah->dlid) {
		ah->is_global = 1;
		memcpy(ah->grh.dgid.raw, peer->gid, 16);
		ah->grh.sgid_index = (uint8_t)p->gid_index;
		ah->grh.hop_limit = HOP_LIMIT;
	}
}

int gdrfab_rc_connect(struct ibv_qp *qp, const struct gdrfab_rc_params *p,
		      const struct gdrfab_addr *peer, uint32_t remote_qpn,
		      uint32_t remote_psn, uint32_t local_psn, enum ibv_mtu mtu)
{
	struct ibv_qp_attr attr;
	int err;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	attr.path_mtu = mtu;
	attr.dest_qp_num = remote_qpn;
	attr.rq_psn = remote_psn;
	attr.max_dest_rd_atomic = (uint8_t)p->max_dest_rd_atomic;
	attr.min_rnr_timer = RC_MIN_RNR_TIMER;
	gdrfab_rc_ah_attr(&attr.ah_attr, p, peer);
	err = gdrfab_vops->modify_qp(
		qp, &attr,
		IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			IBV_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.timeout = p->timeout;
	attr.retry_cnt = RC_RETRY_CNT;
	attr.rnr_retry = RC_RNR_RETRY;
	attr.sq_psn = local_psn;
	attr.max_rd_atomic = (uint8_t)p->max_rd_atomic;
	return gdrfab_vops->modify_qp(qp, &attr,
				      IBV_QP_STATE | IBV_QP_TIMEOUT |
					      IBV_QP_RETRY_CNT |
					      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					      IBV_QP_MAX_QP_RD_ATOMIC);
}

uint8_t gdrfab_rc_timeout_for_ms(int ms)
{
	/* One try waits 4.096 us * 2^t; a dead peer costs retry_cnt + 1. */
	double per_try_us = (double)ms * 1000.0 / (RC_RETRY_CNT + 1);
	uint8_t t = 1;

	while (t < 31 && 4.096 * (double)(1u << (t + 1)) <= per_try_us)
		t++;
	return t;
}
