/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fixture of the tests that link gdrfab's code directly (not through
 * libfabric's loader) to reach its queue pairs and post raw bytes: two
 * endpoints, a on rxe0 and b on rxe1, connected by one good message.
 */
#ifndef WIRE_HELPERS_H
#define WIRE_HELPERS_H

#include <stddef.h>

#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include "ex_objs.h"
#include "gdrfab_conn.h"
#include "gdrfab_objs.h"
#include "gdrfab_proto.h"
#include "gdrfab_wire.h"

struct wep {
	struct ex_objs objs;
	fi_addr_t peer;
};

extern struct wep a, b;

void wep_open(struct wep *w, const char *dev);
void wep_close(struct wep *w);
struct gdrfab_ep *gep(struct wep *w);
/* Reads one entry from w's CQ, progressing a and b; 1, 0 on timeout. */
int poll_one(struct wep *w, struct fi_cq_tagged_entry *e, int ms);
/* The suite fixture: a and b open, connected by one message. */
void wire_setup(void);
void wire_teardown(void);
/* Posts raw bytes on a's connection to b. */
void raw_send(const void *bytes, size_t len);
/* The same as a SEND with immediate data (host order). */
void raw_send_imm(const void *bytes, size_t len, uint32_t imm);
/* After bad input, b must deliver exactly one good message from a. */
void expect_only_good_message(void);
/* Runs fn with stderr going to a file; returns what was written. */
char *capture_stderr(void (*fn)(void));

#endif /* WIRE_HELPERS_H */
