/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An in-memory verbs device for the protocol's unit tests, installed
 * through the verbs seam (gdrfab_verbs_ops.h). Its QPs, CQs, SRQs and MRs
 * live in this process; a posted send is not carried out when posted but
 * queued on one "wire" that the test drives: fake_verbs_run() carries out
 * everything that can go, fake_verbs_step() one work request, and held
 * opcodes wait until the test releases or fails them. Carrying a work
 * request out moves the bytes between registered buffers (checking lkeys,
 * rkeys, access and lengths as a NIC would) and writes the completions.
 *
 * What it assumes about real verbs is listed in docs/testing.md, with the
 * VM test that checks each assumption on soft-RoCE.
 */
#ifndef FAKE_VERBS_H
#define FAKE_VERBS_H

#include <stdbool.h>
#include <stddef.h>

#include <infiniband/verbs.h>

/* The device the fake offers first (its port: 192.0.2.1 on RoCE). */
#define FAKE_VERBS_DEV "fake0"
/* Devices the fake may offer: fake0, fake1, ... (fake_verbs_set_devices). */
#define FAKE_VERBS_DEVS_MAX 4

/* Installs the fake under the seam (and empties the port cache so that
 * discovery sees it); uninstall puts the real verbs back. */
void fake_verbs_install(void);
void fake_verbs_uninstall(void);
/* Offers n devices, fake0 to fake<n-1>, each one port (192.0.2.<1+i>),
 * for rail sets; after fake_verbs_install (which offers one). Work
 * requests find their peer QP by number whichever device holds it. */
void fake_verbs_set_devices(int n);

/* Carries out one work request that may go (in posting order, a QP's
 * requests in order): true when one went. */
bool fake_verbs_step(void);
/* Carries out work requests until none may go; returns how many went. */
int fake_verbs_run(void);

/* Work requests of this opcode (IBV_WR_*) wait on the wire until
 * released (and so do those posted after them on the same QP). */
void fake_verbs_hold(enum ibv_wr_opcode op, bool hold);
/* Work requests of this opcode now waiting on the wire. */
int fake_verbs_waiting(enum ibv_wr_opcode op);
/* Ends every waiting work request of this opcode with status, as a NIC
 * whose peer stopped answering would: its QP goes to the error state
 * (what it had queued is flushed) and, with cut, so does the peer's QP
 * and whatever either posts later fails with IBV_WC_RETRY_EXC_ERR.
 * Returns how many it ended. */
int fake_verbs_fail(enum ibv_wr_opcode op, enum ibv_wc_status status, bool cut);
/* The same for those on device dev's QPs alone (fake<dev>), without cut:
 * one rail's NIC failing while the others' work goes on. */
int fake_verbs_fail_on(int dev, enum ibv_wr_opcode op,
		       enum ibv_wc_status status);

/* Raises an asynchronous event of the device's port (IBV_EVENT_PORT_ERR,
 * IBV_EVENT_PORT_ACTIVE), read by the next poll of its events. Nothing
 * else changes: the wire keeps what it holds, as rxe may after an outage. */
void fake_verbs_port_event(enum ibv_event_type type);

/* Device dev's (fake<dev>) port as ibv_query_port reports it: DOWN
 * while down, else ACTIVE (what install sets). Only the report changes:
 * the wire carries on (fake_verbs_fail fails what the test wants). */
void fake_verbs_port_down(int dev, bool down);
/* Moving an RC QP to state (enum ibv_qp_state) now fails with EINVAL,
 * as a device that cannot reconnect would; -1 refuses none again. */
void fake_verbs_refuse_state(int state);

/* Registrations (ibv_reg_mr) asking for any of bits now fail with errno
 * err, as older rdma-core or kernels answer an access flag they do not
 * know; 0 accepts every flag again (what install does), as newer ones
 * do with an optional flag the device lacks. Resets the refusal count. */
void fake_verbs_refuse_access(int bits, int err);
/* Registrations refused so far for those bits. */
int fake_verbs_refusals(void);
/* The access flags of the newest live registration starting at addr, or
 * -1 when none does. */
int fake_verbs_mr_access(const void *addr);

/* Objects alive now, for leak checks. */
struct fake_verbs_counts {
	int ctx, pd, cq, qp, rc_qp, srq, mr, ah;
	int cq_overruns; /* completions dropped for want of room: a bug */
	int bad_posts;	 /* posts the fake refused (bad state, sge) */
	long polls;	 /* poll_cq calls on any CQ, since install */
	/* Bytes of the RDMA READ/WRITE work requests posted, since install:
	 * what a request moved again after a failure shows here. */
	long rdma_bytes;
};
struct fake_verbs_counts fake_verbs_counts(void);

#endif /* FAKE_VERBS_H */
