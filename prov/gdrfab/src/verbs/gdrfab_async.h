/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A device's asynchronous events. A QP the NIC moves to the error state
 * as a responder (a peer's READ or write refused: wrong key, closed
 * memory) gets no work completion saying so; only an event does. Events
 * naming a QP whose qp_context is a struct gdrfab_qp_owner are noted
 * there for the owning endpoint's progress to act on.
 */
#ifndef GDRFAB_ASYNC_H
#define GDRFAB_ASYNC_H

#include <infiniband/verbs.h>

/* Whose QP an event names (the QP's qp_context). The event is read by
 * whichever thread polls the device and only noted here, for the owner
 * to act on under its own lock. */
struct gdrfab_qp_owner {
	_Atomic int event;	   /* enum ibv_event_type + 1; 0: none */
	_Atomic unsigned *noticed; /* bumped with each event noted */
};

/* Makes the context's event channel non-blocking. 0 or -FI_E*. */
int gdrfab_async_init(struct ibv_context *ctx);
/* Reads every event waiting (never blocks): notes QP events with their
 * owner, logs the rest, and counts a port's going down or coming back
 * in *port_events (shared by the device's endpoints: whichever reads the
 * event, all of them learn that work in flight crossed an outage). */
void gdrfab_async_poll(struct ibv_context *ctx, _Atomic unsigned *port_events);

#endif /* GDRFAB_ASYNC_H */
