/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Endpoint names from a host and a service: gdrfab's own small name
 * service over UDP.
 *
 * A gdrfab endpoint name holds a GID and QP numbers that no host name or
 * port number gives, so fi_getinfo(node, service) and fi_av_insertsvc
 * ask: an endpoint opened from an fi_info whose source address carries a
 * service (fi_getinfo with FI_SOURCE and a service) listens on that UDP
 * port of its NIC's IP address and answers each query with its name,
 * from its progress. A query that nobody answers fails within
 * GDRFAB_NS_WAIT_MS with a log line naming the host and service.
 */
#ifndef GDRFAB_NS_H
#define GDRFAB_NS_H

#include <stdint.h>

#include "gdrfab_addr.h"
#include "gdrfab_ratelimit.h"

#define GDRFAB_NS_WAIT_MS 5000 /* how long a query waits for an answer */

/* Asks node:service for the endpoint name listening there. 0, or
 * -FI_ENODATA (nothing answered in time, or no such host: logged) or
 * another -FI_E*. */
int gdrfab_ns_resolve(const char *node, const char *service,
		      struct gdrfab_addr *name);

struct gdrfab_ns_responder;

/* Answers queries for name on the UDP port service of the IPv4 address of
 * port_addr's GID (RoCE) or any address (InfiniBand), from a thread that
 * sleeps in poll() between queries. NULL and errno on failure (the port
 * is taken, or no thread). */
struct gdrfab_ns_responder *gdrfab_ns_start(const struct gdrfab_addr *port_addr,
					    uint16_t service,
					    const struct gdrfab_addr *name);

/* Stops answering and frees r (NULL is allowed). */
void gdrfab_ns_stop(struct gdrfab_ns_responder *r);

#endif /* GDRFAB_NS_H */
