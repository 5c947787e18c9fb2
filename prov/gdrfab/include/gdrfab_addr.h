/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Endpoint names: the FI_GDRFAB_ADDR_LEN-byte blob that fi_getname returns
 * and fi_av_insert takes, and its text form. Multi-byte fields are big
 * endian so that names can cross machines of either byte order.
 */
#ifndef GDRFAB_ADDR_H
#define GDRFAB_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fi_ext_gdrfab.h>

#define GDRFAB_ADDR_VERSION 1

struct gdrfab_addr {
	uint8_t version;   /* GDRFAB_ADDR_VERSION */
	uint8_t port_num;  /* the NIC port, 1-based */
	uint16_t lid_be;   /* InfiniBand LID (0 on RoCE) */
	uint32_t qpn_be;   /* the endpoint's connection-setup QP (0:
			    * a port's address, no endpoint yet) */
	uint8_t gid[16];   /* the port's GID (RoCE: its IP address) */
	uint32_t ep_id_be; /* random per endpoint: tells a restarted
			    * peer from the one it replaced */
	uint32_t reserved; /* 0; in a port's address, maybe a service */
};

/* A port's address (qpn 0, the source address fi_getinfo gives) may carry
 * the UDP service that an endpoint opened from it answers name queries on
 * (gdrfab_ns.h): reserved = htonl(GDRFAB_ADDR_SVC_TAG | port). Endpoint
 * names never do. */
#define GDRFAB_ADDR_SVC_TAG 0x53560000u

/* The service a port's address carries, or 0. */
uint16_t gdrfab_addr_service(const struct gdrfab_addr *addr);

_Static_assert(sizeof(struct gdrfab_addr) == FI_GDRFAB_ADDR_LEN,
	       "endpoint name size is part of the wire format");

/* Checks a name received from an application or a peer. Returns 0 or
 * -FI_EINVAL, with a reason in why (at least 64 bytes). */
int gdrfab_addr_validate(const void *addr, size_t len, char *why,
			 size_t why_len);

/* Text form "gdrfab://GID/lid=L/qpn=Q/id=I/port=P"; returns the length the
 * full text needs (snprintf semantics). */
size_t gdrfab_addr_to_str(const struct gdrfab_addr *addr, char *buf,
			  size_t len);

/* Parses the text form (the "gdrfab://" prefix is required). Returns 0 or
 * -FI_EINVAL. */
int gdrfab_addr_from_str(const char *str, struct gdrfab_addr *addr);

bool gdrfab_addr_equal(const struct gdrfab_addr *a,
		       const struct gdrfab_addr *b);

#endif /* GDRFAB_ADDR_H */
