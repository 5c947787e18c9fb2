/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The classes of hostile datagrams fuzz_ud sends to a gdrfab endpoint's UD
 * QP. Every message is built from struct gdrfab_cm_msg's field names
 * (offsetof, sizeof), never from offsets written down here, so that the
 * classes follow the wire format when it changes; the byte walk covers
 * whatever fields it gains without being told.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_ud.h"
#include "gdrfab_params.h"

typedef struct gdrfab_cm_msg cm_msg;

static void rand_bytes(struct fuzz *f, void *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		((uint8_t *)p)[i] = (uint8_t)fuzz_rand(f);
}

/* A name nobody has: the client's port and GID (so that the target's
 * address handle to it resolves at once), a random endpoint id, and our
 * own UD QP, where the target's REPs to it arrive and are counted. */
static struct gdrfab_addr invented(struct fuzz *f)
{
	struct gdrfab_addr a = f->client;

	a.ep_id_be = htonl(fuzz_rand(f));
	a.qpn_be = htonl(fuzz_own_qpn(f));
	return a;
}

/* A well-formed message: what gdrfab's send_cm writes. */
static cm_msg message(struct fuzz *f, enum gdrfab_cm_type type,
		      const struct gdrfab_addr *src)
{
	cm_msg m;

	memset(&m, 0, sizeof(m));
	m.version = GDRFAB_WIRE_VERSION;
	m.type = (uint8_t)type;
	m.mtu = IBV_MTU_1024;
	m.rd_atomic = 1;
	m.qpn = (fuzz_rand(f) & 0xffffff) | 1;
	m.psn = fuzz_rand(f) & 0xffffff;
	/* The target's default, which settings checks compare. */
	m.eager_max = GDRFAB_DEFAULT_EAGER_MAX;
	m.nonce = (uint64_t)fuzz_rand(f) << 32 | fuzz_rand(f);
	m.src = *src;
	m.dst = f->target;
	return m;
}

static cm_msg invented_req(struct fuzz *f)
{
	struct gdrfab_addr src = invented(f);

	return message(f, GDRFAB_CM_REQ, &src);
}

static void send_case(struct fuzz *f, const void *p, size_t len)
{
	fuzz_send(f, p, len);
	f->cases++;
}

/* Random bytes of random lengths up to the message's size; a third from
 * scratch, a third behind a valid version and type, a third a valid REQ
 * with a few random bytes, which sometimes passes every check. */
static void class_random(struct fuzz *f)
{
	for (long i = 0; i < f->count; i++) {
		cm_msg m = invented_req(f);
		uint8_t *b = (uint8_t *)&m;
		size_t len = fuzz_rand(f) % (sizeof(m) + 1);

		fuzz_pace(f, i);
		switch (i % 3) {
		case 0: rand_bytes(f, b, sizeof(m)); break;
		case 1:
			rand_bytes(f, b, sizeof(m));
			m.version = GDRFAB_WIRE_VERSION;
			m.type = (uint8_t)(GDRFAB_CM_REQ + i % 3);
			break;
		case 2:
			for (unsigned k = fuzz_rand(f) % 8 + 1; k; k--)
				b[fuzz_rand(f) % sizeof(m)] =
					(uint8_t)fuzz_rand(f);
			len = sizeof(m);
			break;
		}
		send_case(f, b, len);
	}
}

/* Each type of valid message cut short at every length. */
static void class_truncated(struct fuzz *f)
{
	long i = 0;

	f->count = 3 * (long)sizeof(cm_msg);
	for (int t = GDRFAB_CM_REQ; t <= GDRFAB_CM_RTU; t++) {
		for (size_t len = 0; len < sizeof(cm_msg); len++) {
			struct gdrfab_addr src = invented(f);
			cm_msg m = message(f, (enum gdrfab_cm_type)t, &src);

			fuzz_pace(f, i++);
			send_case(f, &m, len);
		}
	}
}

/* A field, named: where it is and how long, whatever the layout. */
#define FIELD(m) offsetof(cm_msg, m), sizeof(((cm_msg *)0)->m)

/* Every field of the message, by name. */
static const struct field {
	size_t off, len;
} fields[] = {
	{FIELD(version)},      {FIELD(type)},	      {FIELD(mtu)},
	{FIELD(rd_atomic)},    {FIELD(qpn)},	      {FIELD(psn)},
	{FIELD(eager_max)},    {FIELD(nonce)},	      {FIELD(reject)},
	{FIELD(rails)},	       {FIELD(src.version)},  {FIELD(src.port_num)},
	{FIELD(src.lid_be)},   {FIELD(src.qpn_be)},   {FIELD(src.gid)},
	{FIELD(src.ep_id_be)}, {FIELD(src.reserved)}, {FIELD(dst.version)},
	{FIELD(dst.port_num)}, {FIELD(dst.lid_be)},   {FIELD(dst.qpn_be)},
	{FIELD(dst.gid)},      {FIELD(dst.ep_id_be)}, {FIELD(dst.reserved)},
};

#define FIELD_VALUES 6

/* Value v of a field: all zero, all ones, its first or last byte flipped,
 * random twice. */
static void mutate(struct fuzz *f, uint8_t *p, size_t len, int v)
{
	switch (v) {
	case 0: memset(p, 0, len); break;
	case 1: memset(p, 0xff, len); break;
	case 2: p[0] ^= 0x01; break;
	case 3: p[len - 1] ^= 0x01; break;
	default: rand_bytes(f, p, len); break;
	}
}

/* Valid REQs (and REPs and RTUs) with one field changed, then the cases
 * a byte-wise mutation does not make: every type and MTU value, our own
 * name as the source, a message meant for the client. */
static void class_fields(struct fuzz *f)
{
	const size_t nf = sizeof(fields) / sizeof(fields[0]);
	long i = 0;

	f->count = (long)(3 * nf * FIELD_VALUES + 256 + 16 + 2);
	for (int t = GDRFAB_CM_REQ; t <= GDRFAB_CM_RTU; t++) {
		for (size_t k = 0; k < nf; k++) {
			for (int v = 0; v < FIELD_VALUES; v++) {
				struct gdrfab_addr src = invented(f);
				cm_msg m = message(f, (enum gdrfab_cm_type)t,
						   &src);

				mutate(f, (uint8_t *)&m + fields[k].off,
				       fields[k].len, v);
				fuzz_pace(f, i++);
				send_case(f, &m, sizeof(m));
			}
		}
	}
	for (int v = 0; v < 256; v++) {
		cm_msg m = invented_req(f);

		m.type = (uint8_t)v;
		fuzz_pace(f, i++);
		send_case(f, &m, sizeof(m));
	}
	for (int v = 0; v < 16; v++) {
		cm_msg m = invented_req(f);

		m.mtu = (uint8_t)v;
		fuzz_pace(f, i++);
		send_case(f, &m, sizeof(m));
	}
	cm_msg self = message(f, GDRFAB_CM_REQ, &f->target);
	fuzz_pace(f, i++);
	send_case(f, &self, sizeof(self));
	cm_msg astray = invented_req(f);
	astray.dst = f->client;
	fuzz_pace(f, i++);
	send_case(f, &astray, sizeof(astray));
}

/* Every byte of a valid REQ set to 0, 0xff, and with its lowest or top
 * bit flipped: reaches fields added after this was written. */
static void class_bytes(struct fuzz *f)
{
	static const uint8_t flips[] = {0x01, 0x80};
	long i = 0;

	f->count = 4 * (long)sizeof(cm_msg);
	for (size_t off = 0; off < sizeof(cm_msg); off++) {
		for (int v = 0; v < 4; v++) {
			cm_msg m = invented_req(f);
			uint8_t *b = (uint8_t *)&m + off;

			*b = v == 0 ? 0 : v == 1 ? 0xff : *b ^ flips[v - 2];
			fuzz_pace(f, i++);
			send_case(f, &m, sizeof(m));
		}
	}
}

/* The client's own messages again, rebuilt from its name and its RC QP
 * (which the driver reads from the kernel): REQ, RTU, and a REP. */
static void class_replay(struct fuzz *f)
{
	static const enum gdrfab_cm_type types[] = {
		GDRFAB_CM_REQ, GDRFAB_CM_RTU, GDRFAB_CM_REP};

	if (!f->client_qpn) {
		printf("fuzz_ud: replay: the client's RC QP is unknown (-q): nothing sent\n");
		return;
	}
	for (long i = 0; i < f->count; i++) {
		cm_msg m = message(f, types[i % 3], &f->client);

		m.qpn = f->client_qpn;
		m.psn = f->client_psn;
		fuzz_pace(f, i);
		send_case(f, &m, sizeof(m));
	}
}

/* REQs in the client's name from a QP it does not have. */
static void class_spoof(struct fuzz *f)
{
	for (long i = 0; i < f->count; i++) {
		cm_msg m = message(f, GDRFAB_CM_REQ, &f->client);

		if (m.qpn == f->client_qpn)
			m.qpn ^= 2;
		fuzz_pace(f, i);
		send_case(f, &m, sizeof(m));
	}
}

/* Well-formed REQs from names nobody has: each costs the target an RC QP
 * unless it bounds what half-open connections hold. */
static void class_invented(struct fuzz *f)
{
	for (long i = 0; i < f->count; i++) {
		cm_msg m = invented_req(f);

		fuzz_pace(f, i);
		send_case(f, &m, sizeof(m));
	}
}

/* REQs from GIDs on the VM's link (192.0.2.0/24) that nobody answers ARP
 * for: .3 to .254, never .1 or .2, which are rxe0 and rxe1. */
static void class_bogus_gid(struct fuzz *f)
{
	for (long i = 0; i < f->count; i++) {
		struct gdrfab_addr src = invented(f);
		cm_msg m;

		/* A RoCE v2 GID of an IPv4 address: ::ffff:a.b.c.d. */
		memset(src.gid, 0, 10);
		memset(src.gid + 10, 0xff, 2);
		src.gid[12] = 192;
		src.gid[13] = 0;
		src.gid[14] = 2;
		src.gid[15] = (uint8_t)(3 + i % 252);
		m = message(f, GDRFAB_CM_REQ, &src);
		fuzz_pace(f, i);
		send_case(f, &m, sizeof(m));
	}
}

/* Junk as fast as the send queue takes it: the target's receive ring
 * overflows (UD drops what does not fit) and its progress loop is busy. */
static void class_flood(struct fuzz *f)
{
	f->seconds = 0;
	for (long i = 0; i < f->count; i++) {
		cm_msg m = invented_req(f);

		m.version = (uint8_t)(GDRFAB_WIRE_VERSION + 1 + i % 200);
		send_case(f, &m, fuzz_rand(f) % (sizeof(m) + 1));
		if (i % 256 == 255)
			fuzz_pace(f, 0); /* reap completions */
	}
}

/* Longer than any connection message, up to the port's MTU: a valid REQ
 * with a random tail, then random bytes. */
static void class_oversized(struct fuzz *f)
{
	static uint8_t big[1 << 16];
	size_t lens[] = {sizeof(cm_msg) + 1,
			 sizeof(cm_msg) + 8,
			 2 * sizeof(cm_msg),
			 256,
			 1024,
			 f->mtu};
	const size_t n = sizeof(lens) / sizeof(lens[0]);
	long i = 0;

	f->count = 2 * (long)n;
	for (int kind = 0; kind < 2; kind++) {
		for (size_t k = 0; k < n; k++) {
			cm_msg m = invented_req(f);

			rand_bytes(f, big, lens[k]);
			if (kind == 0)
				memcpy(big, &m, sizeof(m));
			fuzz_pace(f, i++);
			send_case(f, big, lens[k]);
		}
	}
}

static const struct fuzz_class {
	const char *name;
	void (*run)(struct fuzz *f);
	long count;	/* default -n: what the class sends */
	double seconds; /* default -s: over how long */
} classes[] = {
	{"random", class_random, 300, 3},
	{"truncated", class_truncated, 0, 2},
	{"fields", class_fields, 0, 6},
	{"bytes", class_bytes, 0, 4},
	{"replay", class_replay, 30, 2},
	{"spoof", class_spoof, 3, 2},
	{"invented", class_invented, 256, 4},
	{"bogus-gid", class_bogus_gid, 24, 3},
	{"flood", class_flood, 4000, 0},
	{"oversized", class_oversized, 0, 1},
};

const char *const fuzz_class_names =
	"random truncated fields bytes replay spoof invented bogus-gid flood oversized";

bool fuzz_run_class(struct fuzz *f, const char *name)
{
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		if (strcmp(name, classes[i].name))
			continue;
		if (f->count < 0)
			f->count = classes[i].count;
		if (f->seconds <= 0)
			f->seconds = classes[i].seconds;
		classes[i].run(f);
		return true;
	}
	return false;
}
