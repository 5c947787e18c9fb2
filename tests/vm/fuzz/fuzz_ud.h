/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The attacker of the UD fuzzing run: a raw UD QP of its own (ibv verbs,
 * gdrfab's Q_Key) that sends datagrams to a gdrfab endpoint's UD QP, the
 * one named in the endpoint's name. fuzz_ud.c owns the verbs and the
 * command line; fuzz_cases.c builds each class of datagrams.
 */
#ifndef FUZZ_UD_H
#define FUZZ_UD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "gdrfab_addr.h"
#include "gdrfab_wire.h"

struct fuzz {
	/* Verbs. */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	struct ibv_mr *mr;
	uint8_t *mem;
	size_t mtu;	 /* the port's active MTU, in bytes: the largest UD
			  * datagram */
	int sq_inflight; /* sends not yet completed */
	unsigned tx_next;
	/* Who is who. */
	struct gdrfab_addr target, client;
	uint32_t client_qpn, client_psn; /* its RC QP to the target, 0:
					  * unknown */
	/* The class being run: how many, over how long (0: at once). */
	long count;
	double seconds;
	uint64_t rng;
	/* What happened. */
	long sent, cases, send_failed, reps;
	long long first_us, last_us;
};

/* Sends len bytes (at most f->mtu) to the target's UD QP; waits for a
 * send slot when every one is in flight. */
void fuzz_send(struct fuzz *f, const void *bytes, size_t len);
/* Sleeps until datagram i of f->count is due (f->seconds spreads them
 * evenly), counting the REPs that come back meanwhile. */
void fuzz_pace(struct fuzz *f, long i);
/* Waits up to ms for the REPs still coming and the sends in flight. */
void fuzz_drain(struct fuzz *f, int ms);
uint32_t fuzz_rand(struct fuzz *f);
/* This QP's number: invented names point their UD QP at it, so that the
 * target's REPs to them come back here to be counted. */
uint32_t fuzz_own_qpn(const struct fuzz *f);

/* Runs one class by name; false for an unknown name. */
bool fuzz_run_class(struct fuzz *f, const char *name);
/* The names, for the usage text. */
extern const char *const fuzz_class_names;

#endif /* FUZZ_UD_H */
