/* SPDX-License-Identifier: BSD-2-Clause */
/* A device's asynchronous events (see gdrfab_async.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_async.h"
#include "gdrfab_verbs_ops.h"

int gdrfab_async_init(struct ibv_context *ctx)
{
	int flags = fcntl(ctx->async_fd, F_GETFL);

	if (flags < 0 || fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK)) {
		GDRFAB_WARN(FI_LOG_DOMAIN,
			    "%s: asynchronous events cannot be polled: %s\n",
			    ibv_get_device_name(ctx->device), strerror(errno));
		return -FI_EIO;
	}
	return 0;
}

static bool is_qp_error(enum ibv_event_type type)
{
	return type == IBV_EVENT_QP_FATAL || type == IBV_EVENT_QP_REQ_ERR ||
	       type == IBV_EVENT_QP_ACCESS_ERR ||
	       type == IBV_EVENT_PATH_MIG_ERR;
}

static bool is_port_change(enum ibv_event_type type)
{
	return type == IBV_EVENT_PORT_ERR || type == IBV_EVENT_PORT_ACTIVE;
}

void gdrfab_async_poll(struct ibv_context *ctx, _Atomic unsigned *port_events)
{
	struct ibv_async_event ev;

	while (!gdrfab_vops->get_async_event(ctx, &ev)) {
		if (is_qp_error(ev.event_type)) {
			struct gdrfab_qp_owner *owner =
				ev.element.qp->qp_context;

			/* The QP cannot be destroyed before the event is
			 * acknowledged below, so its owner is alive. */
			if (owner) {
				atomic_store(&owner->event,
					     (int)ev.event_type + 1);
				atomic_fetch_add(owner->noticed, 1);
			} else {
				GDRFAB_WARN(FI_LOG_DOMAIN, "QP %u: %s\n",
					    ev.element.qp->qp_num,
					    ibv_event_type_str(ev.event_type));
			}
		} else if (ev.event_type != IBV_EVENT_QP_LAST_WQE_REACHED &&
			   ev.event_type != IBV_EVENT_COMM_EST &&
			   ev.event_type != IBV_EVENT_SQ_DRAINED) {
			/* Device and port events: worth a line. */
			if (is_port_change(ev.event_type))
				atomic_fetch_add(port_events, 1);
			GDRFAB_WARN(FI_LOG_DOMAIN, "%s: %s\n",
				    ibv_get_device_name(ctx->device),
				    ibv_event_type_str(ev.event_type));
		}
		gdrfab_vops->ack_async_event(&ev);
	}
}
