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

#include <rdma/fabric.h>

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

/*
 * A service address stands for "the endpoint answering name queries at
 * IPv4:port" (gdrfab_ns.h): what fi_getinfo(node, service), a sockaddr,
 * fi_av_insertsvc or "fi_sockaddr_in://a.b.c.d:p" give before anyone has
 * asked. It is a gdrfab_addr with port_num 0, qpn 0, the IPv4 address
 * in the GID (::ffff:a.b.c.d) and the port as a port's service; an AV
 * resolves it in the background (gdrfab_av.c). Its text form is
 * libfabric's FI_SOCKADDR_IN string.
 */
void gdrfab_addr_make_service(struct gdrfab_addr *addr, uint32_t ip_be,
			      uint16_t port);
bool gdrfab_addr_is_service(const struct gdrfab_addr *addr);
/* The IPv4 address in the GID (true) or none (false). */
bool gdrfab_addr_ipv4(const struct gdrfab_addr *addr, uint32_t *ip_be);

/* The address formats an application may choose (fi_info->addr_format):
 * gdrfab's own 32-byte names (FI_FORMAT_UNSPEC), their text (FI_ADDR_STR,
 * a char * per address), or IPv4 socket addresses (FI_SOCKADDR,
 * FI_SOCKADDR_IN: an endpoint's name service, resolved by the AV). */
enum gdrfab_fmt {
	GDRFAB_FMT_NATIVE,
	GDRFAB_FMT_STR,
	GDRFAB_FMT_SIN,
	GDRFAB_FMT_NONE, /* a format gdrfab does not speak */
};
enum gdrfab_fmt gdrfab_fmt_of(uint32_t addr_format);

/* One address of format fmt, as an application hands it, in gdrfab's own
 * form: an endpoint name, a port's address or a service address. len is
 * the bytes available (STR: addr is the string, len ignored); *used is
 * the address's own size (the stride of an array). With src, a socket
 * address may have port 0 and a port's address qpn 0 (source
 * addresses); otherwise an address that is neither an endpoint name nor
 * a service address is refused. 0, or -FI_EINVAL with why. */
int gdrfab_addr_import(enum gdrfab_fmt fmt, const void *addr, size_t len,
		       bool src, struct gdrfab_addr *out, size_t *used,
		       char *why, size_t why_len);
/* An address in format fmt: into buf (*len bytes), *len set to the size
 * it needs. 0, -FI_ETOOSMALL (*len says how much), or -FI_EINVAL when
 * the format cannot express it (an endpoint name as a socket address). */
int gdrfab_addr_export(enum gdrfab_fmt fmt, const struct gdrfab_addr *addr,
		       void *buf, size_t *len);
/* The same into a malloc()ed buffer (fi_info's src_addr, dest_addr). */
int gdrfab_addr_export_dup(enum gdrfab_fmt fmt, const struct gdrfab_addr *addr,
			   void **out, size_t *len);

_Static_assert(sizeof(struct gdrfab_addr) == FI_GDRFAB_ADDR_LEN,
	       "endpoint name size is part of the wire format");

/* Checks a name received from an application or a peer. Returns 0 or
 * -FI_EINVAL, with a reason in why (at least 64 bytes). */
int gdrfab_addr_validate(const void *addr, size_t len, char *why,
			 size_t why_len);

/* Text form "gdrfab://GID/lid=L/qpn=Q/id=I/port=P", with "/svc=S" for a
 * port's address that carries a service, and "fi_sockaddr_in://A.B.C.D:S"
 * for a service address; returns the length the full text needs (snprintf
 * semantics). */
size_t gdrfab_addr_to_str(const struct gdrfab_addr *addr, char *buf,
			  size_t len);

/* Parses the text form ("gdrfab://..." or "fi_sockaddr_in://..."). Returns
 * 0 or -FI_EINVAL. */
int gdrfab_addr_from_str(const char *str, struct gdrfab_addr *addr);

bool gdrfab_addr_equal(const struct gdrfab_addr *a,
		       const struct gdrfab_addr *b);

#endif /* GDRFAB_ADDR_H */
