/* SPDX-License-Identifier: BSD-2-Clause */
/* UD queue pairs for connection setup. */
#include <errno.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_ud.h"
#include "gdrfab_verbs_ops.h"

static int to_rts(struct ibv_qp *qp, uint8_t port_num)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = port_num,
		.qkey = GDRFAB_UD_QKEY,
	};
	int err;

	err = gdrfab_vops->modify_qp(qp, &attr,
				     IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					     IBV_QP_PORT | IBV_QP_QKEY);
	if (err)
		return err;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	err = gdrfab_vops->modify_qp(qp, &attr, IBV_QP_STATE);
	if (err)
		return err;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	return gdrfab_vops->modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

int gdrfab_ud_reset(struct ibv_qp *qp, uint8_t port_num)
{
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_RESET};
	int err = gdrfab_vops->modify_qp(qp, &attr, IBV_QP_STATE);

	return err ? err : to_rts(qp, port_num);
}

bool gdrfab_ud_in_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;

	return !gdrfab_vops->query_qp(qp, &attr, IBV_QP_STATE, &init) &&
	       attr.qp_state == IBV_QPS_RTS;
}

int gdrfab_ud_create(const struct gdrfab_ud_port *port, struct ibv_cq **cq,
		     struct ibv_qp **qp)
{
	int depth = GDRFAB_MIN(GDRFAB_UD_QUEUE_DEPTH, port->max_qp_wr);
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_UD,
		.cap =
			{
				.max_send_wr = (uint32_t)depth,
				.max_recv_wr = (uint32_t)depth,
				.max_send_sge = 1,
				.max_recv_sge = 1,
			},
	};
	const char *dev = port->dev;
	int err;

	*qp = NULL;
	*cq = gdrfab_vops->create_cq(
		port->ctx, GDRFAB_MIN(2 * depth, port->max_cqe), NULL, NULL, 0);
	if (!*cq) {
		err = errno;
		GDRFAB_WARN(FI_LOG_EP_CTRL, "%s: ibv_create_cq: %s\n", dev,
			    strerror(err));
		return gdrfab_errno_to_fi(err);
	}
	init.send_cq = *cq;
	init.recv_cq = *cq;
	*qp = gdrfab_vops->create_qp(port->pd, &init);
	if (!*qp) {
		err = errno;
		GDRFAB_WARN(FI_LOG_EP_CTRL, "%s: ibv_create_qp(UD): %s\n", dev,
			    strerror(err));
		goto err;
	}
	err = to_rts(*qp, port->port_num);
	if (err) {
		GDRFAB_WARN(FI_LOG_EP_CTRL, "%s: UD QP to RTS: %s\n", dev,
			    strerror(err));
		goto err;
	}
	return 0;
err:
	gdrfab_ud_destroy(*cq, *qp);
	*cq = NULL;
	*qp = NULL;
	return gdrfab_errno_to_fi(err);
}

void gdrfab_ud_destroy(struct ibv_cq *cq, struct ibv_qp *qp)
{
	int err;

	if (qp && (err = gdrfab_vops->destroy_qp(qp)))
		GDRFAB_WARN(FI_LOG_EP_CTRL, "ibv_destroy_qp: %s\n",
			    strerror(err));
	if (cq && (err = gdrfab_vops->destroy_cq(cq)))
		GDRFAB_WARN(FI_LOG_EP_CTRL, "ibv_destroy_cq: %s\n",
			    strerror(err));
}
