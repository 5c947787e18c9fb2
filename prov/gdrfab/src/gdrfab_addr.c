/* SPDX-License-Identifier: BSD-2-Clause */
/* Endpoint names: validation and text form. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_addr.h"

#define ADDR_PREFIX "gdrfab://"

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
		snprintf(why, why_len,
			 "address format version %u, expected %u (a name from "
			 "another provider or another gdrfab release?)",
			 a->version, GDRFAB_ADDR_VERSION);
		return -FI_EINVAL;
	}
	if (!a->port_num || (a->reserved && !gdrfab_addr_service(a))) {
		snprintf(why, why_len,
			 "malformed address (port %u, reserved "
			 "0x%x)",
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
	int n;

	if (!inet_ntop(AF_INET6, addr->gid, gid, sizeof(gid)))
		snprintf(gid, sizeof(gid), "?");
	n = snprintf(buf, len,
		     ADDR_PREFIX "%s/lid=%u/qpn=%" PRIu32 "/id=%" PRIu32
				 "/port=%u",
		     gid, ntohs(addr->lid_be), ntohl(addr->qpn_be),
		     ntohl(addr->ep_id_be), addr->port_num);
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

int gdrfab_addr_from_str(const char *str, struct gdrfab_addr *addr)
{
	char gid[INET6_ADDRSTRLEN];
	const char *p, *slash;
	uint64_t lid, qpn, id, port;

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
	    parse_field(&p, "port", UINT8_MAX, &port) || *p || !port)
		return -FI_EINVAL;
	addr->version = GDRFAB_ADDR_VERSION;
	addr->port_num = (uint8_t)port;
	addr->lid_be = htons((uint16_t)lid);
	addr->qpn_be = htonl((uint32_t)qpn);
	addr->ep_id_be = htonl((uint32_t)id);
	return 0;
}

bool gdrfab_addr_equal(const struct gdrfab_addr *a, const struct gdrfab_addr *b)
{
	return !memcmp(a, b, sizeof(*a));
}
