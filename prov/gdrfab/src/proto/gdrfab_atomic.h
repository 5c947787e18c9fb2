/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Atomics (fi_atomic(3)): which operation and datatype pairs gdrfab
 * serves, and how the target applies one. Every atomic is executed by the
 * target's data path with the CPU's lock-free atomic instructions, element
 * by element, so it is atomic with respect to every other gdrfab atomic on
 * that location (from any endpoint or process) and to the application's
 * own atomic instructions of the same width (man/fi_gdrfab.7 says why no
 * NIC atomics are mixed in).
 *
 * The whole unit: the operation table, atomics by message, their order
 * and their fetched values in gdrfab_atomic.c; the NIC's atomics and the
 * policy that allows them in gdrfab_atomic_nic.c.
 */
#ifndef GDRFAB_ATOMIC_H
#define GDRFAB_ATOMIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/uio.h>

#include <infiniband/verbs.h>
#include <rdma/fi_atomic.h>

#include "gdrfab_params.h"

struct gdrfab_proto;
struct gdrfab_req;
struct gdrfab_conn;
struct gdrfab_pkt_hdr;

/* The three call families: fi_atomic, fi_fetch_atomic, fi_compare_atomic. */
enum gdrfab_atomic_kind {
	GDRFAB_ATOMIC_WRITE = 1,
	GDRFAB_ATOMIC_FETCH = 2,
	GDRFAB_ATOMIC_COMPARE = 3,
};

/* Bytes of one element of datatype, or 0 for a datatype gdrfab does not
 * serve (complex, long double, 128-bit). */
size_t gdrfab_atomic_size(enum fi_datatype datatype);

/* Whether the call family serves op on datatype. */
bool gdrfab_atomic_valid(enum gdrfab_atomic_kind kind, enum fi_op op,
			 enum fi_datatype datatype);

/* Operand arrays a request carries: 0 (FI_ATOMIC_READ), 1, or 2 (compare
 * and swap: the operand and the compare values). */
size_t gdrfab_atomic_operands(enum gdrfab_atomic_kind kind, enum fi_op op);

/* Applies op to count elements at dst (naturally aligned, in memory the
 * caller may write), each element atomically: src holds the operands
 * (unused for FI_ATOMIC_READ), cmp the compare values (compare family),
 * and old, when not NULL, receives each element's value before the
 * operation. The pair must be valid for kind. */
void gdrfab_atomic_apply(enum fi_op op, enum fi_datatype datatype, void *dst,
			 const void *src, const void *cmp, void *old,
			 size_t count);

/* ---- which atomics the NIC executes (gdrfab_atomic_nic.c) ----
 *
 * Which atomics the NIC executes (FI_GDRFAB_NIC_ATOMICS). Every atomic is
 * otherwise a message the target's CPU applies (atomics by message).
 * The NIC's own 8-byte FETCH_ADD and CMP_SWP are used only where they are
 * atomic with respect to those CPU-applied ones: both devices report
 * IBV_ATOMIC_GLOB. An IBV_ATOMIC_HCA device (soft-RoCE, most ConnectX) is
 * atomic only among its own atomics, so mixing would lose updates; the
 * test-only setting unsafe_hca allows it anyway so that the path runs on rxe.
 *
 * These decisions are pure (no verbs calls), for the unit tests.
 */

/* Connection-message flags (gdrfab_cm_msg.cm_flags): the sender's host
 * MRs that allow FI_REMOTE_WRITE accept NIC atomics, and its device is
 * IBV_ATOMIC_GLOB, or IBV_ATOMIC_HCA (sent only under unsafe_hca). */
#define GDRFAB_CM_F_NIC_ATOMIC_GLOB 0x2
#define GDRFAB_CM_F_NIC_ATOMIC_HCA  0x4

/* Whether a device of this atomic_cap takes part in NIC atomics (as
 * initiator and as target) under mode. */
bool gdrfab_nic_atomic_cap_usable(int mode, enum ibv_atomic_cap cap);

/* The GDRFAB_CM_F_NIC_ATOMIC_* flag a side with this device advertises
 * (0: it does not accept NIC atomics). */
uint16_t gdrfab_nic_atomic_cm_flag(int mode, enum ibv_atomic_cap cap);

/* Whether the pair may use NIC atomics: this side's device is usable and
 * the peer advertised a device that mode accepts. */
bool gdrfab_nic_atomic_pair(int mode, enum ibv_atomic_cap local_cap,
			    uint16_t peer_cm_flags);

/* One atomic as the application asked for it. */
struct gdrfab_nic_atomic_query {
	int kind;	  /* enum gdrfab_atomic_kind */
	int op;		  /* enum fi_op */
	int datatype;	  /* enum fi_datatype */
	size_t count;	  /* elements */
	uint64_t addr;	  /* target address */
	uint64_t key;	  /* target key */
	bool remote_data; /* FI_REMOTE_CQ_DATA: the target must see it */
};

/* Whether the atomic goes to the NIC on a pair that may use NIC atomics:
 * FI_SUM (fi_atomic, fi_fetch_atomic) or FI_CSWAP (fi_compare_atomic) on
 * one FI_INT64/FI_UINT64 element at an 8-byte aligned address, with a
 * key of a host MR (not a staged GPU one), and no remote CQ data (which
 * the NIC cannot deliver). */
bool gdrfab_nic_atomic_eligible(const struct gdrfab_nic_atomic_query *q);

/* ---- the protocol's atomics (gdrfab_atomic.c) ---- */
/* Elements one request may carry for a call family and datatype (every
 * message fits a bounce buffer): 0 for a pair gdrfab does not serve. */
size_t gdrfab_atomic_max_count(struct gdrfab_proto *proto, int kind, int op,
			       int datatype);
/* Initiator: fills a request (connection, context, flags set) with an
 * ATOMIC message for the operands (and compare values) and result buffers
 * given; 0 or -FI_E*. */
struct gdrfab_atomic_args {
	int kind, op, datatype;
	size_t count;			     /* elements */
	const struct iovec *src, *cmp, *res; /* bytes, as many as count */
	void **src_desc, **cmp_desc, **res_desc;
	size_t src_cnt, cmp_cnt, res_cnt;
	uint64_t addr, key;
};
int gdrfab_atomic_prepare(struct gdrfab_proto *proto, struct gdrfab_req *req,
			  const struct gdrfab_atomic_args *a);
/* Checks an ATOMIC or ATOMIC_RESP header against its length: NULL or a
 * reason to drop it. */
const char *gdrfab_atomic_check_header(const struct gdrfab_pkt_hdr *h,
				       size_t len);
/* Target: applies an ATOMIC and answers it (now, or from the backlog). */
void gdrfab_atomic_handle(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
			  const struct gdrfab_pkt_hdr *h);
/* Initiator: an ATOMIC_RESP arrived. */
void gdrfab_atomic_resp(struct gdrfab_proto *proto, struct gdrfab_conn *conn,
			const struct gdrfab_pkt_hdr *h);
/* Initiator: sends a prepared atomic (either kind) in its turn: held on
 * its connection while earlier atomics must go first. */
void gdrfab_atomic_submit(struct gdrfab_req *req);
/* Sends the held atomics that may go now (from progress). */
void gdrfab_atomic_release_run(struct gdrfab_proto *proto);

/* ---- atomics the NIC executes (gdrfab_atomic_nic.c) ---- */
/* Initiator: fills a request (as gdrfab_atomic_prepare) for the NIC's
 * FETCH_ADD or CMP_SWP; the caller checked gdrfab_nic_atomic_eligible. */
int gdrfab_atomic_nic_prepare(struct gdrfab_proto *proto,
			      struct gdrfab_req *req,
			      const struct gdrfab_atomic_args *a);
/* ---- an atomic's fetched values (gdrfab_atomic.c) ---- */
/* A last step (GDRFAB_STEP_ATOMIC_RESULT): the fetched values into the
 * result buffers, GPU ones by asynchronous copies; nothing once the
 * request failed or the endpoint closes. 0, -FI_EINPROGRESS (parked: the
 * copies' end finishes the request again, and this says 0 or the error
 * then), or -FI_E*. */
int gdrfab_atomic_result_step(struct gdrfab_proto *proto,
			      struct gdrfab_req *req);
/* Adds an atomic's last steps to its request (as it is prepared): its
 * fetched values, then the RMA event its peer may count. */
void gdrfab_atomic_add_steps(struct gdrfab_req *req);
/* Answers what waits in the backlog, as far as resources allow. */
void gdrfab_atomic_backlog_run(struct gdrfab_proto *proto);
void gdrfab_atomic_backlog_free(struct gdrfab_proto *proto);

#endif /* GDRFAB_ATOMIC_H */
