/* SPDX-License-Identifier: BSD-2-Clause */
/* Endpoint names: validation and text form. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gdrfab.h"
#include "gdrfab_addr.h"

#define ADDR_PREFIX "gdrfab://"
#define SIN_PREFIX  "fi_sockaddr_in://"

static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

bool gdrfab_addr_ipv4(const struct gdrfab_addr *addr, uint32_t *ip_be)
{
	if (memcmp(addr->gid, v4_mapped, sizeof(v4_mapped)))
		return false;
	if (ip_be)
		memcpy(ip_be, addr->gid + 12, 4);
	return true;
}

void gdrfab_addr_make_service(struct gdrfab_addr *addr, uint32_t ip_be,
			      uint16_t port)
{
	memset(addr, 0, sizeof(*addr));
	addr->version = GDRFAB_ADDR_VERSION;
	memcpy(addr->gid, v4_mapped, sizeof(v4_mapped));
	memcpy(addr->gid + 12, &ip_be, 4);
	if (port)
		addr->reserved = htonl(GDRFAB_ADDR_SVC_TAG | port);
}

bool gdrfab_addr_is_service(const struct gdrfab_addr *addr)
{
	return addr->version == GDRFAB_ADDR_VERSION && !addr->port_num &&
	       !addr->qpn_be && !addr->lid_be && !addr->ep_id_be &&
	       gdrfab_addr_service(addr) && gdrfab_addr_ipv4(addr, NULL);
}

int gdrfab_addr_validate(const void *addr, size_t len, char *why,
			 size_t why_len)
{
	const struct gdrfab_addr *a = addr;

	if (!addr) {
		snprintf(why, why_len, "address is NULL");
		return -FI_EINVAL;
	}
	if (len != sizeof(*a)) {
		snprintf(why, why_len, "address length %zu, expected %zu", len,
			 sizeof(*a));
		return -FI_EINVAL;
	}
	if (a->version != GDRFAB_ADDR_VERSION) {
		snprintf(
			why, why_len,
			"address format version %u, expected %u (a name from another provider or another gdrfab release?)",
			a->version, GDRFAB_ADDR_VERSION);
		return -FI_EINVAL;
	}
	if (gdrfab_addr_is_service(a))
		return 0;
	if (!a->port_num || (a->reserved && !gdrfab_addr_service(a))) {
		snprintf(why, why_len,
			 "malformed address (port %u, reserved 0x%x)",
			 a->port_num, a->reserved);
		return -FI_EINVAL;
	}
	return 0;
}

uint16_t gdrfab_addr_service(const struct gdrfab_addr *addr)
{
	uint32_t r = ntohl(addr->reserved);

	if (addr->qpn_be || (r & 0xffff0000u) != GDRFAB_ADDR_SVC_TAG)
		return 0;
	return (uint16_t)(r & 0xffff);
}

size_t gdrfab_addr_to_str(const struct gdrfab_addr *addr, char *buf, size_t len)
{
	char gid[INET6_ADDRSTRLEN];
	uint16_t svc = gdrfab_addr_service(addr);
	uint32_t ip;
	int n;

	if (gdrfab_addr_is_service(addr)) {
		gdrfab_addr_ipv4(addr, &ip);
		inet_ntop(AF_INET, &ip, gid, sizeof(gid));
		n = snprintf(buf, len, SIN_PREFIX "%s:%u", gid, svc);
		return n < 0 ? 0 : (size_t)n;
	}
	if (!inet_ntop(AF_INET6, addr->gid, gid, sizeof(gid)))
		snprintf(gid, sizeof(gid), "?");
	n = snprintf(buf, len,
		     ADDR_PREFIX "%s/lid=%u/qpn=%" PRIu32 "/id=%" PRIu32
				 "/port=%u",
		     gid, ntohs(addr->lid_be), ntohl(addr->qpn_be),
		     ntohl(addr->ep_id_be), addr->port_num);
	if (n >= 0 && svc) {
		int m = snprintf(buf ? buf + GDRFAB_MIN((size_t)n, len) : NULL,
				 (size_t)n < len ? len - (size_t)n : 0,
				 "/svc=%u", svc);

		n = m < 0 ? n : n + m;
	}
	return n < 0 ? 0 : (size_t)n;
}

/* Reads "KEY=NUMBER" followed by '/' or the end; advances *p. */
static int parse_field(const char **p, const char *key, uint64_t max,
		       uint64_t *value)
{
	size_t klen = strlen(key);
	char *end;

	if (strncmp(*p, key, klen) || (*p)[klen] != '=')
		return -FI_EINVAL;
	*p += klen + 1;
	if (**p < '0' || **p > '9')
		return -FI_EINVAL;
	errno = 0;
	*value = strtoull(*p, &end, 0);
	if (errno || *value > max || (*end != '/' && *end != '\0'))
		return -FI_EINVAL;
	*p = *end ? end + 1 : end;
	return 0;
}

/* "fi_sockaddr_in://A.B.C.D:PORT" (libfabric's FI_SOCKADDR_IN text). */
static int sin_from_str(const char *p, struct gdrfab_addr *addr)
{
	char ip[INET_ADDRSTRLEN];
	const char *colon = strrchr(p, ':');
	struct in_addr in;
	char *end;
	unsigned long port;

	if (!colon || (size_t)(colon - p) >= sizeof(ip))
		return -FI_EINVAL;
	memcpy(ip, p, (size_t)(colon - p));
	ip[colon - p] = '\0';
	if (inet_pton(AF_INET, ip, &in) != 1 || colon[1] < '0' ||
	    colon[1] > '9')
		return -FI_EINVAL;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || *end || !port || port > 65535 || !in.s_addr)
		return -FI_EINVAL;
	gdrfab_addr_make_service(addr, in.s_addr, (uint16_t)port);
	return 0;
}

int gdrfab_addr_from_str(const char *str, struct gdrfab_addr *addr)
{
	char gid[INET6_ADDRSTRLEN];
	const char *p, *slash;
	uint64_t lid, qpn, id, port, svc = 0;

	if (str && !strncasecmp(str, SIN_PREFIX, strlen(SIN_PREFIX)))
		return sin_from_str(str + strlen(SIN_PREFIX), addr);
	if (!str || strncmp(str, ADDR_PREFIX, strlen(ADDR_PREFIX)))
		return -FI_EINVAL;
	p = str + strlen(ADDR_PREFIX);
	slash = strchr(p, '/');
	if (!slash || (size_t)(slash - p) >= sizeof(gid))
		return -FI_EINVAL;
	memcpy(gid, p, (size_t)(slash - p));
	gid[slash - p] = '\0';
	memset(addr, 0, sizeof(*addr));
	if (inet_pton(AF_INET6, gid, addr->gid) != 1)
		return -FI_EINVAL;
	p = slash + 1;
	if (parse_field(&p, "lid", UINT16_MAX, &lid) ||
	    parse_field(&p, "qpn", 0xffffff, &qpn) ||
	    parse_field(&p, "id", UINT32_MAX, &id) ||
	    parse_field(&p, "port", UINT8_MAX, &port) || !port)
		return -FI_EINVAL;
	/* A port's address (qpn 0) may name its service. */
	if (*p && (qpn || parse_field(&p, "svc", UINT16_MAX, &svc) || !svc))
		return -FI_EINVAL;
	if (*p)
		return -FI_EINVAL;
	addr->version = GDRFAB_ADDR_VERSION;
	addr->port_num = (uint8_t)port;
	addr->lid_be = htons((uint16_t)lid);
	addr->qpn_be = htonl((uint32_t)qpn);
	addr->ep_id_be = htonl((uint32_t)id);
	if (svc)
		addr->reserved = htonl(GDRFAB_ADDR_SVC_TAG | (uint32_t)svc);
	return 0;
}

bool gdrfab_addr_equal(const struct gdrfab_addr *a, const struct gdrfab_addr *b)
{
	return !memcmp(a, b, sizeof(*a));
}

enum gdrfab_fmt gdrfab_fmt_of(uint32_t addr_format)
{
	switch (addr_format) {
	case FI_FORMAT_UNSPEC: return GDRFAB_FMT_NATIVE;
	case FI_ADDR_STR: return GDRFAB_FMT_STR;
	case FI_SOCKADDR:
	case FI_SOCKADDR_IN: return GDRFAB_FMT_SIN;
	default: return GDRFAB_FMT_NONE;
	}
}

static int import_sin(const void *addr, size_t len, bool src,
		      struct gdrfab_addr *out, size_t *used, char *why,
		      size_t why_len)
{
	struct sockaddr_in sin;
	uint32_t host;

	*used = sizeof(struct sockaddr_in);
	if (len < sizeof(sa_family_t)) {
		snprintf(why, why_len, "socket address of %zu bytes", len);
		return -FI_EINVAL;
	}
	memcpy(&sin.sin_family, addr, sizeof(sin.sin_family));
	if (sin.sin_family == AF_INET6) {
		*used = sizeof(struct sockaddr_in6);
		snprintf(
			why, why_len,
			"an IPv6 socket address (gdrfab's name service listens on IPv4)");
		return -FI_EINVAL;
	}
	if (sin.sin_family != AF_INET || len < sizeof(sin)) {
		snprintf(why, why_len,
			 "not an IPv4 socket address (family %u, %zu bytes)",
			 sin.sin_family, len);
		return -FI_EINVAL;
	}
	memcpy(&sin, addr, sizeof(sin));
	host = ntohl(sin.sin_addr.s_addr);
	if (!host || host == INADDR_BROADCAST || IN_MULTICAST(host)) {
		snprintf(why, why_len, "%s is no host's address",
			 inet_ntoa(sin.sin_addr));
		return -FI_EINVAL;
	}
	if (!sin.sin_port && !src) {
		snprintf(why, why_len, "%s port 0 (no endpoint answers there)",
			 inet_ntoa(sin.sin_addr));
		return -FI_EINVAL;
	}
	gdrfab_addr_make_service(out, sin.sin_addr.s_addr, ntohs(sin.sin_port));
	return 0;
}

int gdrfab_addr_import(enum gdrfab_fmt fmt, const void *addr, size_t len,
		       bool src, struct gdrfab_addr *out, size_t *used,
		       char *why, size_t why_len)
{
	const struct gdrfab_addr *a = out;
	int ret;

	*used = 0;
	if (!addr) {
		snprintf(why, why_len, "address is NULL");
		return -FI_EINVAL;
	}
	switch (fmt) {
	case GDRFAB_FMT_NATIVE:
		*used = sizeof(*out);
		ret = gdrfab_addr_validate(addr, len, why, why_len);
		if (ret)
			return ret;
		memcpy(out, addr, sizeof(*out));
		break;
	case GDRFAB_FMT_STR:
		*used = strnlen(addr, 4096) + 1;
		if (*used > 4096 || gdrfab_addr_from_str(addr, out)) {
			snprintf(
				why, why_len,
				"\"%.64s\" is neither gdrfab://... nor fi_sockaddr_in://A.B.C.D:PORT",
				(const char *)addr);
			return -FI_EINVAL;
		}
		ret = gdrfab_addr_validate(out, sizeof(*out), why, why_len);
		if (ret)
			return ret;
		break;
	case GDRFAB_FMT_SIN:
		return import_sin(addr, len, src, out, used, why, why_len);
	default:
		snprintf(why, why_len, "address format gdrfab does not speak");
		return -FI_EINVAL;
	}
	/* A port's address with a service (a server's fi_info src_addr)
	 * stands for the endpoint answering there. */
	if (!src && !a->qpn_be && a->port_num && gdrfab_addr_service(a) &&
	    gdrfab_addr_ipv4(a, NULL)) {
		uint32_t ip;

		gdrfab_addr_ipv4(a, &ip);
		gdrfab_addr_make_service(out, ip, gdrfab_addr_service(a));
	}
	if (!src && !a->qpn_be && !gdrfab_addr_is_service(a)) {
		snprintf(why, why_len,
			 "a port's address (qpn 0), not an endpoint's name");
		return -FI_EINVAL;
	}
	return 0;
}

int gdrfab_addr_export(enum gdrfab_fmt fmt, const struct gdrfab_addr *addr,
		       void *buf, size_t *len)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	size_t need;

	switch (fmt) {
	case GDRFAB_FMT_NATIVE:
		need = sizeof(*addr);
		if (*len && buf)
			memcpy(buf, addr, GDRFAB_MIN(*len, need));
		break;
	case GDRFAB_FMT_STR:
		need = gdrfab_addr_to_str(addr, buf, buf ? *len : 0) + 1;
		break;
	case GDRFAB_FMT_SIN:
		/* A service address, or a port's (a source address): an
		 * endpoint's own name has no port of its own here. */
		if (addr->qpn_be ||
		    !gdrfab_addr_ipv4(addr, &sin.sin_addr.s_addr))
			return -FI_EINVAL;
		sin.sin_port = htons(gdrfab_addr_service(addr));
		need = sizeof(sin);
		if (*len && buf)
			memcpy(buf, &sin, GDRFAB_MIN(*len, need));
		break;
	default: return -FI_EINVAL;
	}
	if (*len < need) {
		*len = need;
		return -FI_ETOOSMALL;
	}
	*len = need;
	return 0;
}

int gdrfab_addr_export_dup(enum gdrfab_fmt fmt, const struct gdrfab_addr *addr,
			   void **out, size_t *len)
{
	size_t need = 0;
	int ret = gdrfab_addr_export(fmt, addr, NULL, &need);

	*out = NULL;
	*len = 0;
	if (ret != -FI_ETOOSMALL)
		return ret ? ret : -FI_EINVAL;
	*out = calloc(1, need);
	if (!*out)
		return -FI_ENOMEM;
	ret = gdrfab_addr_export(fmt, addr, *out, &need);
	if (ret) {
		free(*out);
		*out = NULL;
		return ret;
	}
	*len = need;
	return 0;
}
