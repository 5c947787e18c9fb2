/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared by gdrfab's example programs: command-line options, the
 * out-of-band exchange of endpoint names over a TCP socket (what an MPI
 * launcher does for real jobs), and libfabric setup for any provider, so
 * the same program measures gdrfab and, say, verbs;ofi_rxm.
 */
#ifndef EX_COMMON_H
#define EX_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "ex_objs.h"

enum ex_mode { EX_TAGGED, EX_RMA };

struct ex_opts {
	const char *prov;   /* -p, default gdrfab */
	const char *domain; /* -d */
	const char *server; /* the server's host (client side only) */
	int port;	    /* -P */
	enum ex_mode mode;  /* -m tagged|rma */
	size_t sizes[64];   /* -s a,b,c (default: the benchmark sizes) */
	int nsizes;
	int iters;    /* -i, 0: chosen per size */
	int window;   /* -w, bandwidth only */
	bool check;   /* -c: verify the data */
	bool cuda;    /* -D cuda: the buffer is GPU memory (FI_HMEM_CUDA) */
	bool no_desc; /* -N: data calls pass no descriptor (host memory):
		       * the provider registers the buffer itself */
	bool atomics; /* ask for FI_ATOMIC too (tests/vm/flap/flap_ops.c) */
};

struct ex_ctx {
	struct ex_opts o;
	struct ex_objs objs;
	struct fid_mr *mr;
	uint8_t *buf; /* send half, then receive half */
	size_t buf_len;
	fi_addr_t peer;
	uint64_t peer_addr, peer_key; /* the peer's receive half, for RMA */
	int sock;
	int stray; /* completions read while waiting in ex_sync */
};

/* Parses argv; prints usage and exits on bad input. */
void ex_parse(int argc, char **argv, struct ex_opts *o, const char *usage);
/* Opens everything, with a buffer for the largest of the sizes, and
 * exchanges names and buffer keys with the peer. */
int ex_setup(struct ex_ctx *c);
/* With EX_IDLE_POLLS=N in the environment, first N polls of the drained
 * CQ in ex_idle_polls (instr-per-msg.sh measures one empty poll so). */
void ex_teardown(struct ex_ctx *c);
int ex_idle_polls(struct ex_ctx *c, long n);
/* Waits for n completions on the CQ (errors are reported, fatal). */
int ex_wait(struct ex_ctx *c, int n);
/* A byte over the TCP socket: a barrier between the two sides. */
int ex_sync(struct ex_ctx *c);
/* Retries a posting call on -FI_EAGAIN while reading completions;
 * *done counts completions read meanwhile. */
ssize_t ex_post(struct ex_ctx *c, int *done,
		ssize_t (*fn)(struct ex_ctx *c, size_t len, void *arg),
		size_t len, void *arg);
bool ex_is_server(const struct ex_ctx *c);
/* The descriptor data calls pass: the buffer's, or NULL with -N. */
void *ex_desc(const struct ex_ctx *c);
/* Iterations for a size when -i was not given. */
int ex_iters(const struct ex_ctx *c, size_t size, int small, int large);
double ex_now_us(void);
void ex_fill(uint8_t *p, size_t len, unsigned seed);
bool ex_verify(const uint8_t *p, size_t len, unsigned seed);

/* The data buffer (ex_buf.c): host or GPU memory, filled, checked and
 * copied through the CPU only by way of host copies. */
int ex_buf_alloc(struct ex_ctx *c, size_t len);
void ex_buf_free(struct ex_ctx *c);
int ex_buf_reg(struct ex_ctx *c, uint64_t access);
void ex_buf_fill(struct ex_ctx *c, size_t off, size_t len, unsigned seed);
bool ex_buf_verify(struct ex_ctx *c, size_t off, size_t len, unsigned seed);
void ex_buf_copy(struct ex_ctx *c, size_t dst, size_t src, size_t len);

#endif /* EX_COMMON_H */
