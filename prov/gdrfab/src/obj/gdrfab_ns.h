/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Endpoint names from a host and a service: gdrfab's own small name
 * service over UDP.
 *
 * A gdrfab endpoint name holds a GID and QP numbers that no host name or
 * port number gives, so fi_getinfo(node, service) and fi_av_insertsvc
 * ask: an endpoint opened from an fi_info whose source address carries a
 * service (fi_getinfo with FI_SOURCE and a service), and every endpoint
 * whose addresses are socket addresses (FI_SOCKADDR_IN: its name is
 * IP:port), listens on that UDP port of its NIC's IP address and answers
 * each query with its name, from its progress. The asking is done by the
 * AV an IP:port is inserted into, in the background (gdrfab_av.c): an
 * address nobody answers for fails the operations waiting on it with
 * FI_EHOSTUNREACH, logged with the host and service, after
 * FI_GDRFAB_CONN_TIMEOUT_MS.
 */
#ifndef GDRFAB_NS_H
#define GDRFAB_NS_H

#include <stdint.h>

#include "gdrfab_addr.h"
#include "gdrfab_ratelimit.h"

#define GDRFAB_NS_RETRY_MS 200 /* a query unanswered this long is resent */

/* The IPv4 address and port of node:service (getaddrinfo; no query is
 * sent): a service address (gdrfab_addr.h). -FI_ENODATA (no such host,
 * logged) or -FI_EINVAL (service not a port number, logged). */
int gdrfab_ns_service_addr(const char *node, const char *service,
			   struct gdrfab_addr *svc);

/* The asking side, without blocking (an AV resolving service addresses in
 * the background): a UDP socket, a query to ip:port, and the answers,
 * each with the address it came from. */
int gdrfab_ns_query_socket(void);
void gdrfab_ns_ask(int fd, uint32_t ip_be, uint16_t port);
/* 1 with an answer (a valid endpoint name) from ip:port, 0 when none is
 * waiting; datagrams that are no answer are skipped. */
int gdrfab_ns_read_answer(int fd, uint32_t *ip_be, uint16_t *port,
			  struct gdrfab_addr *name);

struct gdrfab_ns_responder;

/* Answers queries for name on the UDP port service of the IPv4 address of
 * port_addr's GID (RoCE) or any address (InfiniBand), from a thread that
 * sleeps in poll() between queries. NULL and errno on failure (the port
 * is taken, or no thread). */
struct gdrfab_ns_responder *gdrfab_ns_start(const struct gdrfab_addr *port_addr,
					    uint16_t service,
					    const struct gdrfab_addr *name);

/* The UDP port it answers on (the kernel's choice when service was 0). */
uint16_t gdrfab_ns_port(const struct gdrfab_ns_responder *r);

/* Stops answering and frees r (NULL is allowed). */
void gdrfab_ns_stop(struct gdrfab_ns_responder *r);

#endif /* GDRFAB_NS_H */
