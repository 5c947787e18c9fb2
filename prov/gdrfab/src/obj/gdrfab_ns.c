/* SPDX-License-Identifier: BSD-2-Clause */
/* gdrfab's name service over UDP (see gdrfab_ns.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gdrfab.h"
#include "gdrfab_ns.h"
#include "gdrfab_signal.h"

/* A query is the magic and zeros, as long as an answer (the magic then
 * the name), so that answering a forged source amplifies nothing. */
static const char query_magic[8] = "GDRFNS1?";
static const char answer_magic[8] = "GDRFNS1=";

struct answer {
	char magic[8];
	struct gdrfab_addr name;
};

/* The IPv4 address in a RoCE GID (::ffff:a.b.c.d), or INADDR_ANY. */
static struct in_addr gid_ipv4(const uint8_t *gid)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0,    0,
					   0, 0, 0, 0, 0xff, 0xff};
	struct in_addr a = {.s_addr = htonl(INADDR_ANY)};

	if (!memcmp(gid, prefix, sizeof(prefix)))
		memcpy(&a.s_addr, gid + 12, 4);
	return a;
}

struct gdrfab_ns_responder {
	pthread_t thread;
	int fd;	  /* the UDP socket queries arrive on */
	int stop; /* an eventfd: written once, at gdrfab_ns_stop */
	struct answer answer;
	struct gdrfab_ratelimit warn;
};

static int listen_on(const struct gdrfab_addr *port_addr, uint16_t service)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(service),
				  .sin_addr = gid_ipv4(port_addr->gid)};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int err;

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

/* Answers every query waiting on the socket; never blocks. */
static void answer_queries(struct gdrfab_ns_responder *r)
{
	struct sockaddr_storage from;
	socklen_t fromlen;
	char buf[64];
	ssize_t n;

	for (;;) {
		uint64_t left_out;

		fromlen = sizeof(from);
		n = recvfrom(r->fd, buf, sizeof(buf), 0,
			     (struct sockaddr *)&from, &fromlen);
		if (n < 0)
			return; /* EAGAIN: nothing more */
		if (n != sizeof(struct answer) ||
		    memcmp(buf, query_magic, sizeof(query_magic))) {
			if (gdrfab_ratelimit_ok(&r->warn, gdrfab_tick_ms(),
						&left_out))
				GDRFAB_WARN(
					FI_LOG_EP_CTRL,
					"name service: a %zd-byte datagram that is no query dropped\n",
					n);
			continue;
		}
		/* A full socket buffer drops the answer as UDP may: the
		 * asker retries. */
		(void)sendto(r->fd, &r->answer, sizeof(r->answer), MSG_DONTWAIT,
			     (struct sockaddr *)&from, fromlen);
	}
}

/* Sleeps until a query or the stop; touches nothing but its own struct,
 * so it takes no lock of the endpoint's. */
static void *responder(void *arg)
{
	struct gdrfab_ns_responder *r = arg;
	struct pollfd p[2] = {{.fd = r->fd, .events = POLLIN},
			      {.fd = r->stop, .events = POLLIN}};

	for (;;) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (p[0].revents)
			answer_queries(r);
	}
	return NULL;
}

struct gdrfab_ns_responder *gdrfab_ns_start(const struct gdrfab_addr *port_addr,
					    uint16_t service,
					    const struct gdrfab_addr *name)
{
	struct gdrfab_ns_responder *r = calloc(1, sizeof(*r));
	sigset_t all, old;
	int err = ENOMEM;

	if (!r)
		goto fail;
	r->answer.name = *name;
	memcpy(r->answer.magic, answer_magic, sizeof(r->answer.magic));
	r->stop = -1;
	r->fd = listen_on(port_addr, service);
	if (r->fd < 0) {
		err = errno;
		goto fail;
	}
	r->stop = eventfd(0, EFD_CLOEXEC);
	if (r->stop < 0) {
		err = errno;
		goto fail;
	}
	/* The application's signals stay with the application's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&r->thread, NULL, responder, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!err)
		return r;
fail:
	if (r && r->fd >= 0)
		close(r->fd);
	if (r && r->stop >= 0)
		close(r->stop);
	free(r);
	errno = err;
	return NULL;
}

void gdrfab_ns_stop(struct gdrfab_ns_responder *r)
{
	uint64_t one = 1;

	if (!r)
		return;
	if (write(r->stop, &one, sizeof(one)) != sizeof(one)) {
		/* Its thread still runs: leave it what it reads. */
		GDRFAB_WARN(FI_LOG_EP_CTRL,
			    "name service: cannot stop its thread: %s\n",
			    strerror(errno));
		return;
	}
	pthread_join(r->thread, NULL);
	close(r->fd);
	close(r->stop);
	free(r);
}

uint16_t gdrfab_ns_port(const struct gdrfab_ns_responder *r)
{
	struct sockaddr_in bound;
	socklen_t len = sizeof(bound);

	if (getsockname(r->fd, (struct sockaddr *)&bound, &len))
		return 0;
	return ntohs(bound.sin_port);
}

int gdrfab_ns_service_addr(const char *node, const char *service,
			   struct gdrfab_addr *svc)
{
	struct addrinfo hints = {.ai_family = AF_INET,
				 .ai_socktype = SOCK_DGRAM},
			*res;
	struct sockaddr_in sin;
	char *end;
	unsigned long port;
	int err;

	port = service ? strtoul(service, &end, 10) : 0;
	if (!service || !*service || *end || !port || port > 65535) {
		GDRFAB_WARN(
			FI_LOG_CORE,
			"service \"%s\" is not a UDP port number (gdrfab endpoints answer name queries on one)\n",
			service ? service : "(null)");
		return -FI_EINVAL;
	}
	err = getaddrinfo(node, service, &hints, &res);
	if (err) {
		GDRFAB_WARN(FI_LOG_CORE, "%s:%s: %s\n", node ? node : "",
			    service, gai_strerror(err));
		return -FI_ENODATA;
	}
	memcpy(&sin, res->ai_addr, sizeof(sin));
	freeaddrinfo(res);
	if (!sin.sin_addr.s_addr) {
		GDRFAB_WARN(FI_LOG_CORE, "%s:%s: no host's address\n",
			    node ? node : "", service);
		return -FI_ENODATA;
	}
	gdrfab_addr_make_service(svc, sin.sin_addr.s_addr, (uint16_t)port);
	return 0;
}

int gdrfab_ns_query_socket(void)
{
	return socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

void gdrfab_ns_ask(int fd, uint32_t ip_be, uint16_t port)
{
	struct sockaddr_in to = {.sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr = {.s_addr = ip_be}};
	struct answer query = {0};

	memcpy(query.magic, query_magic, sizeof(query.magic));
	/* Lost or refused (nothing listens yet): asked again later. */
	(void)sendto(fd, &query, sizeof(query), MSG_DONTWAIT,
		     (struct sockaddr *)&to, sizeof(to));
}

int gdrfab_ns_read_answer(int fd, uint32_t *ip_be, uint16_t *port,
			  struct gdrfab_addr *name)
{
	struct sockaddr_in from;
	socklen_t fromlen;
	struct answer a;
	char why[128];
	ssize_t n;

	for (;;) {
		fromlen = sizeof(from);
		n = recvfrom(fd, &a, sizeof(a), MSG_DONTWAIT,
			     (struct sockaddr *)&from, &fromlen);
		if (n < 0)
			return 0; /* EAGAIN, or an ICMP error: nothing */
		if (n != sizeof(a) || fromlen != sizeof(from) ||
		    from.sin_family != AF_INET ||
		    memcmp(a.magic, answer_magic, sizeof(a.magic)) ||
		    gdrfab_addr_validate(&a.name, sizeof(a.name), why,
					 sizeof(why)) ||
		    !a.name.qpn_be)
			continue;
		*ip_be = from.sin_addr.s_addr;
		*port = ntohs(from.sin_port);
		*name = a.name;
		return 1;
	}
}
