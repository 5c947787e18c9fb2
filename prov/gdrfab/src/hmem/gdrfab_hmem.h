/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A domain's GPU memory: which registration path it uses (dma-buf,
 * peermem or staged), its registration cache, and how it makes GPU
 * writes visible before a completion says they are there.
 */
#ifndef GDRFAB_HMEM_H
#define GDRFAB_HMEM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <infiniband/verbs.h>

#include "gdrfab_addr.h"
#include "gdrfab_cuda.h"
#include "gdrfab_mr_cache.h"
#include "gdrfab_mr_desc.h"

enum gdrfab_cuda_reg {
	GDRFAB_CUDA_REG_NONE,	 /* no CUDA: host memory only */
	GDRFAB_CUDA_REG_DMABUF,	 /* ibv_reg_dmabuf_mr */
	GDRFAB_CUDA_REG_PEERMEM, /* ibv_reg_mr on the device address */
	GDRFAB_CUDA_REG_STAGED,	 /* host bounce buffers and CUDA copies */
};

enum gdrfab_cuda_flush {
	GDRFAB_FLUSH_AUTO,
	GDRFAB_FLUSH_CUDA, /* cuFlushGPUDirectRDMAWrites */
	GDRFAB_FLUSH_READ, /* an RDMA READ of the written bytes */
	GDRFAB_FLUSH_NONE,
};

/* A rail-set domain's rail beyond rail 0 (issue 31): its PD, where every
 * data registration is made once more, its name for the log, and
 * whether its device refused relaxed ordering (devices of one set may
 * differ). */
struct gdrfab_hmem_rail {
	struct ibv_pd *pd;
	const char *name;
	atomic_bool ro_refused;
};

struct gdrfab_hmem_domain {
	enum gdrfab_cuda_reg path;
	/* The domain's device, where the loopback PD is allocated, the PD
	 * its registrations are made in, and its name for the log. */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	const char *name;
	struct gdrfab_mr_cache cache;
	atomic_bool cuda_used; /* a CUDA buffer was registered */
	/* The device refused IBV_ACCESS_RELAXED_ORDERING once: data
	 * registrations stop asking (gdrfab_hmem_ro.h). */
	atomic_bool ro_refused;
	/* Rails in all (1: a NIC alone); rail 0 is pd, name and
	 * ro_refused above, rail i more_rails[i - 1]. */
	size_t nrails;
	struct gdrfab_hmem_rail more_rails[GDRFAB_REG_RAILS_MAX - 1];
	/* GPU memory peers may write into (FI_REMOTE_WRITE, P2P): remote
	 * CQ data of an fi_writedata is reported once writes into it are
	 * visible. The flush READ reads the newest such region. rw_lock
	 * covers the rw_* fields below (a leaf: nothing else is taken or
	 * called under it). */
	pthread_mutex_t rw_lock;
	atomic_int rw_count; /* read without the lock on every writedata */
	int rw_device;
	void *rw_addr;
	uint32_t rw_rkey;
	const void *rw_owner;
	/* The loopback PD: a protection domain only endpoints' loopback
	 * QPs use, so that the keys made for their copies into GPU memory
	 * are worth nothing on a QP a peer reaches (gdrfab_hmem_loop.c). */
	pthread_mutex_t loop_lock;
	struct ibv_pd *loop_pd;
	/* Staged GPU memory peers may read or write: the NIC cannot reach
	 * it, so its key names a slot here and the data path serves those
	 * accesses itself (proto/gdrfab_rma_emu.c). */
	pthread_mutex_t emu_lock;
	struct gdrfab_mr **emu_mr;
	uint16_t *emu_gen; /* bumped when a slot is freed: stale keys miss */
	size_t emu_cap;
};

/* Keys of emulated-access MRs: this bit, a 16-bit generation and a 16-bit
 * slot. Verbs rkeys are 32 bits, so the two never collide. */
#define GDRFAB_EMU_KEY	   (1ULL << 32)
#define GDRFAB_EMU_MAX_MRS 65536

/* Keys of a rail-set domain's MRs that peers may access (issue 31,
 * striped RMA, gdrfab_stripe.h): rail 0's rkey in the low 32 bits (so
 * that RMA on rail 0 needs nothing more), this tag (bit 33, never set in
 * an emulated key) and a 30-bit generation of the domain above it, so
 * that no two MRs of the domain share a key however the NIC reuses
 * rkeys: an initiator's cache of a key's other rails never answers for
 * another MR. */
#define GDRFAB_RAIL_KEY	      (2ULL << 32)
#define GDRFAB_RAIL_KEY_SHIFT 34

static inline bool gdrfab_key_is_rail(uint64_t key)
{
	return (key >> 32 & 3) == 2;
}

static inline uint64_t gdrfab_rail_key(uint32_t rkey, uint64_t gen)
{
	return GDRFAB_RAIL_KEY | gen << GDRFAB_RAIL_KEY_SHIFT | rkey;
}

/* The flush method for writes into a device's memory, from
 * FI_GDRFAB_CUDA_FLUSH and the device's attributes; never CUDA's unless
 * cuda_ok (the endpoint's FI_OPT_CUDA_API_PERMITTED). */
enum gdrfab_cuda_flush gdrfab_hmem_flush_method(int device, bool cuda_ok);
/* Whether some device's writes are flushed by a READ (an endpoint then
 * makes its flush QP when enabled). */
bool gdrfab_hmem_flush_may_read(bool cuda_ok);
/* An RC QP in pd connected to itself on the domain's port (port_addr,
 * port_num, gid_index) in RTS, its sends completing on cq; NULL (logged)
 * on failure. */
struct ibv_qp *gdrfab_hmem_loop_qp(const struct gdrfab_addr *port_addr,
				   uint8_t port_num, int gid_index,
				   struct ibv_pd *pd, struct ibv_cq *cq,
				   int sq_depth, int max_sge);

/* Tracks GPU memory registered for remote writes (owner is its MR). */
void gdrfab_hmem_track_remote_write(struct gdrfab_hmem_domain *h,
				    const void *owner, int device, void *addr,
				    uint32_t rkey, bool add);
/* The newest tracked region peers may write into, for flushing their
 * writes: false when there is none to flush (none tracked, or closed and
 * the method is a READ); addr is NULL when it closed. */
struct gdrfab_hmem_rw_target {
	int device;
	void *addr;
	uint32_t rkey;
};
bool gdrfab_hmem_remote_write_target(struct gdrfab_hmem_domain *h, bool cuda_ok,
				     struct gdrfab_hmem_rw_target *t);

/* The domain's loopback PD, made on first call; NULL (logged) on
 * failure. */
struct ibv_pd *gdrfab_hmem_loop_pd(struct gdrfab_hmem_domain *h);
/* The MR's GPU memory registered in the loopback PD for local and remote
 * read and write, made on first call and kept until the MR closes; NULL
 * (logged) on failure. No CUDA call: the peermem or dma-buf
 * registration the MR has already made is repeated in the other PD. */
struct ibv_mr *gdrfab_hmem_loop_mr(struct gdrfab_mr_desc *d);
void gdrfab_hmem_loop_mr_release(struct gdrfab_mr_desc *d);
void gdrfab_hmem_loop_fini(struct gdrfab_hmem_domain *h);

#endif /* GDRFAB_HMEM_H */
