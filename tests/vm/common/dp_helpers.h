/* SPDX-License-Identifier: BSD-2-Clause */
/* Endpoints that talk to each other, driven from one test process: each
 * has its own fabric, domain, AV, CQs and counters, and knows the others'
 * names. Progress is manual, so waiting on one endpoint also progresses
 * the others (by reading zero entries from their CQs). */
#ifndef DP_HELPERS_H
#define DP_HELPERS_H

#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "vm_helpers.h"

#define DP_MAX_PEERS  128
#define DP_TIMEOUT_MS 60000

struct dp_ep {
	struct test_domain d;
	struct fid_av *av;
	struct fid_cq *txcq, *rxcq;
	struct fid_cntr *txcntr, *rxcntr;
	struct fid_ep *ep;
	uint8_t name[32];
	fi_addr_t peer[DP_MAX_PEERS]; /* fi_addr of endpoint i in this AV */
};

struct dp_opts {
	uint64_t tx_cq_flags; /* e.g. FI_SELECTIVE_COMPLETION */
	uint64_t rx_cq_flags;
	bool counters;
	bool rma_events; /* rxcntr also counts RMA aimed at it */
	bool av_map;	 /* FI_AV_MAP (reuses removed slots) for FI_AV_TABLE */
};

/* Opens an enabled endpoint on a device. */
void dp_open(struct dp_ep *e, const char *device, const struct dp_opts *o);
void dp_close(struct dp_ep *e);
/* Inserts every endpoint's name into every AV, in the same order, so
 * e[i].peer[j] is endpoint j everywhere. */
void dp_connect_all(struct dp_ep *eps, int n);
/* Two endpoints: a on rxe0, b on rxe1. */
void dp_pair(struct dp_ep *a, struct dp_ep *b, const struct dp_opts *o);

/* The pair most suites run on: dp_pair_eps[0] on rxe0, [1] on rxe1.
 * dp_pair_open opens it (skipping outside the VM), after whatever
 * settings a test makes first; dp_pair_setup is it with the default
 * options, for a suite's .init; dp_pair_teardown closes what was opened,
 * for a suite's .fini. */
extern struct dp_ep dp_pair_eps[2];
void dp_pair_open(const struct dp_opts *o);
void dp_pair_setup(void);
void dp_pair_teardown(void);

/* Progresses every endpoint once. */
void dp_progress(struct dp_ep *eps, int n);
/* Waits for one entry on cq, progressing eps meanwhile. Returns 1, or
 * -FI_EAVAIL with *err filled, or -FI_ETIMEDOUT. */
int dp_wait(struct fid_cq *cq, struct fi_cq_tagged_entry *e, fi_addr_t *src,
	    struct fi_cq_err_entry *err, struct dp_ep *eps, int n,
	    int timeout_ms);
/* Like dp_wait, asserting success. */
void dp_expect(struct fid_cq *cq, struct fi_cq_tagged_entry *e, fi_addr_t *src,
	       struct dp_ep *eps, int n);
/* Reads one entry, of cq's format, into e; reads none from other (if
 * not NULL) meanwhile, to progress it. An error entry, or none in 60 s,
 * fails the test. */
void dp_read_one(struct fid_cq *cq, void *e, struct fid_cq *other);
/* Asserts that no entry arrives within ms while progressing. */
void dp_expect_none(struct fid_cq *cq, struct dp_ep *eps, int n, int ms);

/* Retries a posting call while it returns -FI_EAGAIN, progressing. */
#define DP_POST(eps, n, call)                                                  \
	do {                                                                   \
		ssize_t dp_ret_;                                               \
		int dp_tries_ = 0;                                             \
		while ((dp_ret_ = (call)) == -FI_EAGAIN &&                     \
		       dp_tries_++ < 1000000)                                  \
			dp_progress((eps), (n));                               \
		cr_assert_eq(dp_ret_, 0, "%s: %s", #call,                      \
			     fi_strerror((int)-dp_ret_));                      \
	} while (0)

/* Registered buffers with a pattern. */
void *dp_alloc(size_t len);
void dp_fill(void *buf, size_t len, unsigned seed);
bool dp_check(const void *buf, size_t len, unsigned seed);
struct fid_mr *dp_reg(struct dp_ep *e, void *buf, size_t len, uint64_t access);

/* fi_sendmsg of len bytes of buf from eps[0] to eps[1], with flags. */
ssize_t dp_sendmsg(struct dp_ep *eps, void *buf, size_t len, void *ctx,
		   uint64_t flags);

#endif /* DP_HELPERS_H */
