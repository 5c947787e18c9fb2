/* SPDX-License-Identifier: BSD-2-Clause */
/* RC queue pairs and address handles: the verbs side of a connection. */
#ifndef GDRFAB_RC_H
#define GDRFAB_RC_H

#include <infiniband/verbs.h>

#include "gdrfab_addr.h"

struct gdrfab_rc_params {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	uint8_t port_num;
	int gid_index;
	bool roce; /* Ethernet link layer: every packet carries a GRH */
	int sq_depth, max_sge;
	/* READs this QP issues at once (at most the peer answers), and
	 * READs of the peer's it answers at once. */
	int max_rd_atomic, max_dest_rd_atomic;
	bool remote_atomic; /* peers' NIC atomics are accepted */
	uint8_t timeout;    /* IB local ACK timeout exponent */
	void *qp_context;   /* names the QP's owner in async events */
};

/* Inline data asked for on RC QPs (small sends skip the bounce copy). */
#define GDRFAB_RC_INLINE 256

/* Creates an RC QP in INIT; *max_inline gets the inline bytes it
 * accepts. NULL (logged) on failure. */
struct ibv_qp *gdrfab_rc_create(const struct gdrfab_rc_params *p,
				uint32_t *max_inline);
/* Takes a QP back to INIT through RESET, as gdrfab_rc_create left it,
 * for gdrfab_rc_connect to connect anew: whatever it still held is
 * dropped without a completion, so its caller waits for every work
 * request to come back first. 0 or errno. */
int gdrfab_rc_reset(struct ibv_qp *qp, const struct gdrfab_rc_params *p);
/* Connects a QP in INIT to the peer's QP: RTR then RTS. 0 or errno. */
int gdrfab_rc_connect(struct ibv_qp *qp, const struct gdrfab_rc_params *p,
		      const struct gdrfab_addr *peer, uint32_t remote_qpn,
		      uint32_t remote_psn, uint32_t local_psn,
		      enum ibv_mtu mtu);
/* How the peer's port is reached: by LID within an InfiniBand subnet,
 * by GID (a GRH on every packet) on RoCE or where the peer has no LID. */
void gdrfab_rc_ah_attr(struct ibv_ah_attr *ah, const struct gdrfab_rc_params *p,
		       const struct gdrfab_addr *peer);
/* The IB timeout exponent whose retries (retry_cnt 7) add up to about
 * the given milliseconds. */
uint8_t gdrfab_rc_timeout_for_ms(int ms);

#endif /* GDRFAB_RC_H */
