/* SPDX-License-Identifier: BSD-2-Clause */
/* gdrfab's name service over UDP (see gdrfab_ns.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gdrfab.h"
#include "gdrfab_ns.h"
#include "gdrfab_signal.h"

/* A query is the magic and zeros, as long as an answer (the magic then
 * the name), so that answering a forged source amplifies nothing. */
static const char query_magic[8] = "GDRFNS1?";
static const char answer_magic[8] = "GDRFNS1=";
#define RETRY_MS 200

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

int gdrfab_ns_listen(const struct gdrfab_addr *port_addr, uint16_t service)
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

void gdrfab_ns_answer(int fd, const struct gdrfab_addr *name,
		      struct gdrfab_ratelimit *warn)
{
	struct answer a = {.name = *name};
	struct sockaddr_storage from;
	socklen_t fromlen;
	char buf[64];
	ssize_t n;

	memcpy(a.magic, answer_magic, sizeof(a.magic));
	for (;;) {
		uint64_t left_out;

		fromlen = sizeof(from);
		n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from,
			     &fromlen);
		if (n < 0)
			return; /* EAGAIN: nothing more */
		if (n != sizeof(struct answer) ||
		    memcmp(buf, query_magic, sizeof(query_magic))) {
			if (gdrfab_ratelimit_ok(warn, gdrfab_tick_ms(),
						&left_out))
				GDRFAB_WARN(FI_LOG_EP_CTRL,
					    "name service: a %zd-byte datagram "
					    "that is no query dropped\n",
					    n);
			continue;
		}
		/* A full socket buffer drops the answer as UDP may: the
		 * asker retries. */
		(void)sendto(fd, &a, sizeof(a), MSG_DONTWAIT,
			     (struct sockaddr *)&from, fromlen);
	}
}

/* One answer on fd within ms, checked; 1, 0 on timeout, -1 on error. */
static int wait_answer(int fd, int ms, struct gdrfab_addr *name)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	struct answer a;
	char why[128];
	ssize_t n;

	while (poll(&p, 1, ms) > 0) {
		n = recv(fd, &a, sizeof(a), MSG_DONTWAIT);
		if (n < 0)
			return errno == EAGAIN ? 0 : -1;
		if (n != sizeof(a) ||
		    memcmp(a.magic, answer_magic, sizeof(a.magic)) ||
		    gdrfab_addr_validate(&a.name, sizeof(a.name), why,
					 sizeof(why)) ||
		    !a.name.qpn_be)
			continue; /* not an answer: wait on */
		*name = a.name;
		return 1;
	}
	return 0;
}

int gdrfab_ns_resolve(const char *node, const char *service,
		      struct gdrfab_addr *name)
{
	struct addrinfo hints = {.ai_family = AF_INET,
				 .ai_socktype = SOCK_DGRAM},
			*res;
	long long deadline = gdrfab_tick_ms() + GDRFAB_NS_WAIT_MS;
	struct answer query = {0};
	int err = getaddrinfo(node, service, &hints, &res), fd, got = 0;

	if (err) {
		GDRFAB_WARN(FI_LOG_CORE, "%s:%s: %s\n", node, service,
			    gai_strerror(err));
		return -FI_ENODATA;
	}
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen)) {
		err = errno;
		freeaddrinfo(res);
		if (fd >= 0)
			close(fd);
		GDRFAB_WARN(FI_LOG_CORE, "asking %s:%s for a gdrfab name: %s\n",
			    node, service, strerror(err));
		return -FI_ENODATA;
	}
	freeaddrinfo(res);
	memcpy(query.magic, query_magic, sizeof(query.magic));
	/* UDP loses datagrams, and the endpoint may not listen yet: ask
	 * again until the deadline. A "port unreachable" just means not
	 * yet. */
	while (!got && gdrfab_tick_ms() < deadline) {
		(void)send(fd, &query, sizeof(query), 0);
		got = wait_answer(fd, RETRY_MS, name);
		if (got < 0)
			got = 0, usleep(RETRY_MS * 1000);
	}
	close(fd);
	if (!got) {
		GDRFAB_WARN(FI_LOG_CORE,
			    "no gdrfab endpoint answered at %s:%s within %d "
			    "ms (is it open, with FI_SOURCE and this "
			    "service?)\n",
			    node, service, GDRFAB_NS_WAIT_MS);
		return -FI_ENODATA;
	}
	return 0;
}
