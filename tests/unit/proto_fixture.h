/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Two gdrfab endpoints on the fake verbs device (fake_verbs.h), opened
 * through the provider's own libfabric entry points (getinfo, fabric,
 * domain, endpoint, CQ, AV) and each holding the other's address: the
 * protocol tests drive them through the libfabric API only, so that they
 * outlive changes to the protocol's internals.
 *
 * Progress is the application's, as in any libfabric program: pf_drive
 * carries out what is on the fake wire and reads both CQs, keeping what
 * they return (successes and errors) per side for the test to check.
 */
#ifndef PROTO_FIXTURE_H
#define PROTO_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#define PF_MAX_CQE 64

struct pf_side {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	fi_addr_t peer; /* the other side, in this side's AV */
	fi_addr_t self; /* this side, in its own AV */
	/* What its CQ returned so far. */
	struct fi_cq_tagged_entry ok[PF_MAX_CQE];
	int n_ok;
	struct fi_cq_err_entry err[PF_MAX_CQE];
	int n_err;
};

struct pf {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	/* pf_open_domains: each side's own domain (domain is side 0's). */
	struct fid_domain *side_domain[2];
	struct pf_side s[2];
};

/* Opens both sides (asserting every step). */
/* The fake device's fi_info for an RDM endpoint as the protocol tests
 * ask for it, and its fabric opened in *fabric (fake verbs installed
 * first; host registrations uncached). */
struct fi_info *pf_fake_info(struct fid_fabric **fabric);
/* The threading pf_fake_info asks for: 0 (what it asks by default) gets
 * the provider's locks, FI_THREAD_DOMAIN none (and the CQ's quick read,
 * issue 34). */
extern enum fi_threading pf_threading;
void pf_open(struct pf *f);
/* As pf_open with the fake offering ndevs devices, side i in a domain
 * of its own named dom[i] (a device, or a rail set fake0+fake1). */
void pf_open_domains(struct pf *f, int ndevs, const char *const dom[2]);
/* Closes everything and asserts the fake device has nothing left (no QP,
 * CQ, SRQ, MR, AH, PD or context) and dropped no completion. */
void pf_close(struct pf *f);

/* Sends one eager tagged message from A (side 0) to B (side 1), so that
 * the connection is up before a test looks at what follows; asserts it
 * arrived and clears both sides' success counts. */
void pf_connect(struct pf *f);

/* Carries out the wire and reads both CQs until nothing moves (or
 * ms milliseconds pass, for steps that wait for the protocol's timers);
 * returns the completions (both kinds, both sides) read meanwhile. */
int pf_drive(struct pf *f, int ms);
/* Drives until side has n completions (both kinds) or ms pass; true when
 * it has them. */
bool pf_drive_until(struct pf *f, int side, int n, int ms);

/* A registered buffer (FI_SEND|FI_RECV|FI_READ|FI_WRITE plus access). */
struct fid_mr *pf_reg(struct pf *f, void *buf, size_t len, uint64_t access);

/* n tagged messages of len bytes each from side 0's out to side 1's in
 * (message i at i * len of both, tag tag0 + i): every receive posted,
 * then every send; asserts each call returned 0. */
void pf_post_tagged(struct pf *f, const uint8_t *out, uint8_t *in, size_t len,
		    int n, uint64_t tag0);
/* The same with the READs held (fake_verbs_hold): posts them, drives
 * until their n rendezvous READs wait, and returns the RDMA bytes the
 * fake verbs had counted posted then, READs held as they stay. */
long pf_post_held_reads(struct pf *f, const uint8_t *out, uint8_t *in,
			size_t len, int n, uint64_t tag0);
/* Drives both sides until those n messages (pf_post_tagged's) completed,
 * none with an error, and expects in to hold the pattern of seed. */
void pf_expect_delivered(struct pf *f, const uint8_t *in, size_t len, int n,
			 unsigned seed);
/* Fills / checks a pattern that depends on seed and offset. */
void pf_fill(void *buf, size_t len, unsigned seed);
bool pf_check(const void *buf, size_t len, unsigned seed);
struct fi_gdrfab_stats;
/* Side side's endpoint counters, read as an application reads them
 * (fi_open_ops, FI_GDRFAB_STATS_OPS), into *s (its whole size). */
void pf_read_stats(struct pf *f, int side, struct fi_gdrfab_stats *s);

#endif /* PROTO_FIXTURE_H */
