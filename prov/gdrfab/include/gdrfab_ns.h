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

/* Opens the UDP socket an endpoint answers on: the IPv4 address of its
 * port's GID (RoCE) or any address (InfiniBand), and the port. -1 and
 * errno on failure. */
int gdrfab_ns_listen(const struct gdrfab_addr *port_addr, uint16_t service);

/* Answers every query waiting on fd with name; never blocks. */
void gdrfab_ns_answer(int fd, const struct gdrfab_addr *name,
		      struct gdrfab_ratelimit *warn);

#endif /* GDRFAB_NS_H */
