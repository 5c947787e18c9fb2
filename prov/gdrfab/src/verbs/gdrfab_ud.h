/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The UD queue pair each endpoint owns for connection setup: its number is
 * in the endpoint name, so a peer can reach it knowing only that name.
 */
#ifndef GDRFAB_UD_H
#define GDRFAB_UD_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

/* The port a UD QP is made on: the domain's verbs handles and limits. */
struct gdrfab_ud_port {
	const char *dev; /* device name, for log lines */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	uint8_t port_num;
	int max_qp_wr;
	int max_cqe;
};

/* The Q_Key all gdrfab UD queue pairs use. */
#define GDRFAB_UD_QKEY	      0x6764723fu
#define GDRFAB_UD_QUEUE_DEPTH 192

/* Creates a UD QP and its CQ on the port and brings the QP to RTS.
 * Returns 0 or a negative FI_E* code (logged). */
int gdrfab_ud_create(const struct gdrfab_ud_port *port, struct ibv_cq **cq,
		     struct ibv_qp **qp);
void gdrfab_ud_destroy(struct ibv_cq *cq, struct ibv_qp *qp);
/* Brings a QP in any state back to RTS through RESET, keeping its number
 * (and so the endpoint's name); what was posted on it is gone. 0 or
 * errno. */
int gdrfab_ud_reset(struct ibv_qp *qp, uint8_t port_num);
/* Whether the QP is in RTS (a query: for rare paths only). */
bool gdrfab_ud_in_rts(struct ibv_qp *qp);

#endif /* GDRFAB_UD_H */
