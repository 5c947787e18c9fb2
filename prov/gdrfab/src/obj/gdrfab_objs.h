/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The libfabric objects gdrfab implements, one struct each. Every object
 * counts the objects that depend on it (ref) so that closing one still in
 * use fails with -FI_EBUSY instead of leaving dangling pointers.
 */
#ifndef GDRFAB_OBJS_H
#define GDRFAB_OBJS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <infiniband/verbs.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include "gdrfab.h"
#include "gdrfab_addr.h"
#include "gdrfab_addrmap.h"
#include "gdrfab_ah_cache.h"
#include "gdrfab_domain_rails.h"
#include "gdrfab_eplist.h"
#include "gdrfab_hmem.h"
#include "gdrfab_lock.h"
#include "gdrfab_obj_common.h"
#include "gdrfab_signal.h"
#include "gdrfab_stats_ops.h"

struct gdrfab_fabric {
	struct fid_fabric fid;
	char *name;
	atomic_int ref; /* open domains and EQs */
};

/* The domain's MRs that peers may reach, by key, for the atomics its data
 * path executes (gdrfab_mr_keys.c): lookups and MR closes exclude each
 * other, so an atomic never touches memory whose MR is being closed. */
#define GDRFAB_MR_KEY_BUCKETS 256
struct gdrfab_mr;
struct gdrfab_mr_keys {
	pthread_mutex_t lock;
	struct gdrfab_mr *bucket[GDRFAB_MR_KEY_BUCKETS];
	/* A rail-set domain's key generation (gdrfab_rail_key). */
	_Atomic uint64_t rail_gen;
};

struct gdrfab_domain {
	struct fid_domain fid;
	struct gdrfab_fabric *fabric;
	struct fi_info *info; /* a copy of the info it was opened with */
	/* Rail 0's, the domain's own: a NIC alone, or a rail set's first
	 * NIC, whose port names the endpoints. */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr dev_attr;
	uint8_t port_num;
	int gid_index;
	struct gdrfab_addr port_addr; /* the port's name (no endpoint) */
	uint32_t max_msg_sz;	      /* per work request */
	enum ibv_mtu active_mtu;
	/* Every rail, rail[0] a view of the fields above: count 1 for a
	 * NIC alone. */
	struct gdrfab_domain_rails rails;
	struct gdrfab_hmem_domain hmem;	 /* GPU memory path and MR cache */
	struct gdrfab_ah_cache ah_cache; /* to peers' UD QPs */
	struct gdrfab_mr_keys keys;	 /* targets of peers' atomics */
	/* GDRFAB_CM_F_NIC_ATOMIC_* when its host MRs that allow remote
	 * writes accept NIC atomics (gdrfab_atomic.h), else 0. */
	uint16_t nic_atomic_flag;
	/* Where its atomics went (struct fi_gdrfab_atomic_stats). */
	_Atomic uint64_t atomics_nic, atomics_proto, atomics_held;
	atomic_int ref; /* open AVs, CQs, counters, MRs, EPs */
	/* Its ports went down or came back this many times (read by
	 * whichever endpoint polls the device's events). */
	_Atomic unsigned port_events;
	/* Its endpoints' counters (FI_GDRFAB_STATS_OPS). */
	struct gdrfab_domain_stats stats;
};

/* A completion queue entry before it is formatted for the application. */
struct gdrfab_cq_entry {
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
};

struct gdrfab_cq_err {
	struct fi_cq_err_entry e;
	struct gdrfab_cq_err *next;
};

struct gdrfab_ep;

struct gdrfab_cq {
	struct fid_cq fid;
	struct gdrfab_domain *domain;
	enum fi_cq_format format;
	size_t entry_size;
	struct gdrfab_waitobj wait;
	enum fi_cq_wait_cond wait_cond;
	struct gdrfab_lock lock;
	struct gdrfab_cq_entry *ring; /* grows: completions are never lost */
	size_t cap, head, count;
	struct gdrfab_cq_err *err_head, *err_tail;
	struct gdrfab_cq_err *err_returned; /* owns err_data handed out */
	atomic_bool woken;		    /* fi_cq_signal() */
	/* Endpoints bound to this CQ, progressed by every read. */
	struct gdrfab_eplist eps; /* progressed by every read */
	/* Where an empty read finds the protocol to poll (gdrfab_cq.c's
	 * read_quick): eps.solo's proto field, else a NULL. */
	struct gdrfab_proto *const *quick_proto;
	atomic_int ref;
};

struct gdrfab_eq_event {
	uint32_t event;
	size_t len;
	struct gdrfab_eq_event *next;
	uint8_t data[]; /* the event's data */
};

struct gdrfab_eq {
	struct fid_eq fid;
	struct gdrfab_fabric *fabric;
	struct gdrfab_waitobj wait; /* FI_WAIT_NONE or FI_WAIT_FD */
	pthread_mutex_t lock;
	struct gdrfab_eq_event *head, *tail;
	atomic_int ref;
};

struct gdrfab_cntr {
	struct fid_cntr fid;
	struct gdrfab_domain *domain;
	struct gdrfab_waitobj wait;
	atomic_uint_fast64_t value;
	atomic_uint_fast64_t errors;
	struct gdrfab_eplist eps; /* progressed by every read */
	atomic_int ref;
};

/* desc first: a descriptor is read below the object layer as the struct
 * gdrfab_mr_desc it starts with (gdrfab_mr_desc.h), and fi_mr_desc()
 * hands out the MR itself. */
struct gdrfab_mr {
	struct gdrfab_mr_desc desc;
	struct fid_mr fid;
	struct gdrfab_domain *domain;
	uint64_t access;
	bool tracked; /* counted as remotely writable GPU memory */
	/* For staged GPU memory peers may access: its GDRFAB_EMU_KEY key
	 * (0: none). */
	uint64_t emu_key;
	struct gdrfab_mr *next_key; /* domain->keys' chain (keyed) */
	bool keyed;
};

/* The domain's table of remotely accessible MRs (gdrfab_mr_keys.c). */
void gdrfab_mr_keys_init(struct gdrfab_domain *domain);
void gdrfab_mr_keys_fini(struct gdrfab_domain *domain);
void gdrfab_mr_keys_add(struct gdrfab_domain *domain, struct gdrfab_mr *mr);
void gdrfab_mr_keys_remove(struct gdrfab_domain *domain, struct gdrfab_mr *mr);
/* Finds the MR behind a peer's key that allows access (FI_REMOTE_READ
 * and/or FI_REMOTE_WRITE, all of them) to addr..addr+len, and calls fn on
 * that memory with the table locked (no MR closes meanwhile). 0, or the
 * FI_E* (positive) to answer with, why saying the cause. */
int gdrfab_mr_keys_access(struct gdrfab_domain *domain, uint64_t key,
			  uint64_t addr, uint64_t len, uint64_t access,
			  void (*fn)(void *mem, void *arg), void *arg,
			  const char **why);
/* Striped RMA (gdrfab_stripe.h): the rkeys on rails 1 to max of the MR
 * whose key (a GDRFAB_RAIL_KEY one) a peer asks for, into rkey; how many
 * (max), or 0 when no live MR has the key or its RMA may not be striped:
 * GPU memory peers may write into, unless gpu_ok (the asked endpoint
 * never flushes by a READ, which orders one NIC's writes only). */
size_t gdrfab_mr_keys_rails(struct gdrfab_domain *domain, uint64_t key,
			    uint32_t *rkey, size_t max, bool gpu_ok);

/* Descriptors handed to data calls. gdrfab_mr_check_desc: 0 when desc is
 * NULL or a live MR of the domain whose region holds buf..buf+len; else
 * -FI_EINVAL with a log line naming the cause (its MR was closed, not a
 * gdrfab descriptor, another domain's, outside the region). Closed MRs are
 * recognised while they are in the quarantine (gdrfab_quarantine.h).
 * gdrfab_mr_check_descs checks an iovec's; gdrfab_mr_desc_live only says
 * whether desc is NULL or a live MR's. */
int gdrfab_mr_check_desc(const struct gdrfab_domain *domain, const void *desc,
			 const void *buf, size_t len);
int gdrfab_mr_check_descs(const struct gdrfab_domain *domain,
			  const struct iovec *iov, void **desc, size_t count);
bool gdrfab_mr_desc_live(const void *desc);

/* What an AV slot holds: an endpoint's name, or a service address (an
 * IP:port) and, once its endpoint answered, the name behind it. */
enum gdrfab_av_state {
	GDRFAB_AV_NAMED,    /* inserted as an endpoint's name */
	GDRFAB_AV_ASKING,   /* a service address whose name is being asked */
	GDRFAB_AV_SILENT,   /* nobody answered within the time given */
	GDRFAB_AV_RESOLVED, /* a service address and the name it answered */
};

struct gdrfab_av_entry {
	struct gdrfab_addr addr; /* as inserted (what fi_av_lookup gives) */
	struct gdrfab_addr name; /* NAMED, RESOLVED: the endpoint's name */
	unsigned refcnt;	 /* 0: free slot */
	uint8_t state;		 /* enum gdrfab_av_state */
	long long next_ask_ms, ask_until_ms;
};

struct gdrfab_av {
	struct fid_av fid;
	struct gdrfab_domain *domain;
	enum fi_av_type type;
	enum gdrfab_fmt fmt; /* the domain's address format */
	struct gdrfab_lock lock;
	struct gdrfab_av_entry *table;
	size_t cap, used;
	size_t free_hint; /* no free slot below this (MAP) */
	/* Names and service addresses -> the first slot holding them (a
	 * resolved slot is found by both). */
	struct gdrfab_addrmap by_name;
	uint64_t generation; /* changes on every insert, remove, answer */
	atomic_int ref;	     /* bound endpoints */
	/* Resolving service addresses: the slots being asked, the socket
	 * the queries go out of, and what peers' connection requests said
	 * about themselves (service address -> learnt[] index). */
	size_t *asking;
	size_t asking_cnt, asking_cap;
	atomic_bool any_asking; /* read without the lock by progress */
	int ns_fd;
	struct gdrfab_addrmap learnt_by_svc;
	struct gdrfab_addr *learnt;
	size_t learnt_cnt, learnt_cap;
};

enum gdrfab_cntr_slot {
	GDRFAB_CNTR_SEND,
	GDRFAB_CNTR_RECV,
	GDRFAB_CNTR_READ,
	GDRFAB_CNTR_WRITE,
	GDRFAB_CNTR_REMOTE_READ,
	GDRFAB_CNTR_REMOTE_WRITE,
	GDRFAB_CNTR_SLOTS
};

struct gdrfab_ep {
	struct fid_ep fid;
	struct gdrfab_domain *domain;
	struct fi_info *info;
	struct gdrfab_lock lock;
	bool enabled;
	struct gdrfab_cq *tx_cq, *rx_cq;
	uint64_t tx_cq_flags, rx_cq_flags; /* FI_SELECTIVE_COMPLETION */
	struct gdrfab_av *av;
	struct gdrfab_eq *eq;
	struct gdrfab_cntr *cntrs[GDRFAB_CNTR_SLOTS];
	uint64_t tx_op_flags, rx_op_flags;
	size_t min_multi_recv;
	/* Connection setup: a UD QP per endpoint, named in its address. */
	struct ibv_cq *ud_cq;
	struct ibv_qp *ud_qp;
	struct gdrfab_addr name;
	/* Answers name queries (NULL: none), started at fi_enable when the
	 * source address carries a service. */
	struct gdrfab_ns_responder *ns;
	uint16_t ns_service;
	bool name_set; /* fi_setname before enable */
	/* A counter counts RMA aimed at this endpoint (FI_RMA_EVENT): its
	 * peers are asked to say when they did. */
	bool rma_events;
	struct gdrfab_proto *proto;	/* data path state, made by fi_enable */
	int hmem_p2p;			/* FI_OPT_FI_HMEM_P2P */
	bool cuda_api_permitted;	/* FI_OPT_CUDA_API_PERMITTED */
	struct gdrfab_list stats_entry; /* domain->stats.eps */
};

/* A data call before fi_enable: logged, -FI_EOPBADSTATE. */
static inline int gdrfab_ep_not_enabled(const char *call)
{
	GDRFAB_WARN(FI_LOG_EP_DATA, "%s before fi_enable\n", call);
	return -FI_EOPBADSTATE;
}

/* Whether the endpoint may flush writes into GPU memory by a READ (it
 * then makes its flush QP when enabled). */
bool gdrfab_ep_may_flush_by_read(const struct gdrfab_ep *ep);
/* FI_OPT_FI_HMEM_P2P and FI_OPT_CUDA_API_PERMITTED (gdrfab_hmem_opts.c);
 * -FI_ENOPROTOOPT for any other option. */
int gdrfab_ep_hmem_setopt(struct gdrfab_ep *ep, int optname, const void *optval,
			  size_t optlen);
int gdrfab_ep_hmem_getopt(struct gdrfab_ep *ep, int optname, void *optval,
			  size_t *optlen);

/* Object constructors reached through fabric and domain ops. */
int gdrfab_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		       void *context);
int gdrfab_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		       struct fid_domain **domain, void *context);
int gdrfab_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		   struct fid_eq **eq, void *context);
int gdrfab_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		   struct fid_av **av, void *context);
int gdrfab_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		   struct fid_cq **cq, void *context);
int gdrfab_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		     struct fid_cntr **cntr, void *context);
int gdrfab_endpoint_open(struct fid_domain *domain, struct fi_info *info,
			 struct fid_ep **ep, void *context);
extern struct fi_ops_mr gdrfab_mr_ops;
extern struct fi_ops_msg gdrfab_msg_ops;
extern struct fi_ops_tagged gdrfab_tagged_ops;
extern struct fi_ops_rma gdrfab_rma_ops;
extern struct fi_ops_atomic gdrfab_atomic_ops;
int gdrfab_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
			enum fi_op op, struct fi_atomic_attr *attr,
			uint64_t flags);

/* Completion producers (the data path) and the endpoint links. */
/* What the endpoint registers with its protocol (gdrfab_ep_proto_ops.c),
 * and the protocol's view of it, at fi_enable. */
struct gdrfab_proto_ops;
struct gdrfab_proto_env;
extern const struct gdrfab_proto_ops gdrfab_ep_proto_ops;
void gdrfab_ep_proto_env(struct gdrfab_ep *ep, struct gdrfab_proto_env *env);
int gdrfab_cq_write(struct gdrfab_cq *cq, const struct fi_cq_tagged_entry *e,
		    fi_addr_t src);
int gdrfab_cq_write_error(struct gdrfab_cq *cq,
			  const struct fi_cq_err_entry *err);
int gdrfab_cq_attach_ep(struct gdrfab_cq *cq, struct gdrfab_ep *ep);
void gdrfab_cq_detach_ep(struct gdrfab_cq *cq, struct gdrfab_ep *ep);
int gdrfab_cntr_attach_ep(struct gdrfab_cntr *cntr, struct gdrfab_ep *ep);
void gdrfab_cntr_detach_ep(struct gdrfab_cntr *cntr, struct gdrfab_ep *ep);
/* Manual progress: reads of the endpoint's CQs and counters land here.
 * Inline: every read of an empty CQ comes through it. */
void gdrfab_proto_progress(struct gdrfab_proto *proto);
static inline void gdrfab_ep_progress(struct gdrfab_ep *ep)
{
	if (!ep->proto)
		return;
	gdrfab_lock_acquire(&ep->lock);
	if (ep->proto)
		gdrfab_proto_progress(ep->proto);
	gdrfab_lock_release(&ep->lock);
}

/* Poll sets and wait sets (gdrfab_poll.c). */
int gdrfab_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		     struct fid_poll **pollset);
int gdrfab_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		     struct fid_wait **waitset);
/* A CQ or counter opened with FI_WAIT_SET joins its set (0 or -FI_E*:
 * not a gdrfab wait set), and leaves it at close. */
int gdrfab_waitset_join(struct fid_wait *wait, struct fid *member);
void gdrfab_waitset_leave(struct fid_wait *wait, struct fid *member);
bool gdrfab_is_waitset(const struct fid *fid);
int gdrfab_waitset_trywait(struct fid *fid);
/* Whether a fid is a live gdrfab CQ / counter. */
bool gdrfab_is_cq(const struct fid *fid);
bool gdrfab_is_cntr(const struct fid *fid);
/* A CQ after progressing its endpoints: anything to read? */
bool gdrfab_cq_ready(struct gdrfab_cq *cq);
/* A counter's count plus error count, after progressing its endpoints. */
uint64_t gdrfab_cntr_events(struct gdrfab_cntr *cntr);

/* fi_trywait: 0 when nothing is pending (blocking on the fd is safe),
 * -FI_EAGAIN when the application should read first. */
int gdrfab_cq_trywait(struct gdrfab_cq *cq);
int gdrfab_eq_trywait(struct gdrfab_eq *eq);
int gdrfab_cntr_trywait(struct gdrfab_cntr *cntr);

/* The endpoint name behind an fi_addr_t: 0 with *out the name;
 * -FI_EAGAIN with *out the service address while its name is being asked
 * (asking again if it had stopped); -FI_EINVAL (and a log line) for one
 * that is not in the AV. */
int gdrfab_av_get_addr(struct gdrfab_av *av, fi_addr_t fi_addr,
		       struct gdrfab_addr *out);
/* The same, and what was inserted (the service address, or the name
 * again) in *inserted. */
int gdrfab_av_peer(struct gdrfab_av *av, fi_addr_t fi_addr,
		   struct gdrfab_addr *out, struct gdrfab_addr *inserted);
/* The fi_addr_t of a name (its first slot), or FI_ADDR_NOTAVAIL. */
fi_addr_t gdrfab_av_find(struct gdrfab_av *av, const struct gdrfab_addr *addr);
/* Where resolving a service address stands: 0 with *name once some slot
 * holding it was answered, -FI_EAGAIN while it is asked,
 * -FI_EHOSTUNREACH when nobody answered in time (or no slot holds it any
 * more). */
int gdrfab_av_service_status(struct gdrfab_av *av,
			     const struct gdrfab_addr *svc,
			     struct gdrfab_addr *name);
/* Reads answers and resends queries; from the progress of the endpoints
 * bound to the AV (cheap when nothing is being asked). */
void gdrfab_av_progress(struct gdrfab_av *av);
/* A peer's connection request said that its endpoint, name, answers at
 * svc (a service address): slots asking for svc are answered, and later
 * inserts of svc need not ask. */
void gdrfab_av_learn(struct gdrfab_av *av, const struct gdrfab_addr *svc,
		     const struct gdrfab_addr *name);

/* Operations that gdrfab does not provide: -FI_ENOSYS, logged. */
extern struct fi_ops_collective gdrfab_nosys_collective_ops;
/* 0 without flags, else -FI_EBADFLAGS and a log line naming the call: the
 * "2" variants (fi_domain2, fi_endpoint2) that gdrfab knows no flags of. */
int gdrfab_nosys_flags(const char *call, uint64_t flags);
/* fi_ops entries an object lacks: -FI_ENOSYS and a log line naming the
 * call and the object (every table entry is a function). */
int gdrfab_nosys_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int gdrfab_nosys_control(struct fid *fid, int command, void *arg);
int gdrfab_nosys_ops_set(struct fid *fid, const char *name, uint64_t flags,
			 void *ops, void *context);
int gdrfab_nosys_ops_open(struct fid *fid, const char *name, uint64_t flags,
			  void **ops, void *context);
/* fi_ops_cm and fi_ops_ep entries of connected and scalable endpoints,
 * which gdrfab's RDM endpoints are not: -FI_ENOSYS, logged. */
int gdrfab_nosys_connect(struct fid_ep *ep, const void *addr, const void *param,
			 size_t paramlen);
int gdrfab_nosys_listen(struct fid_pep *pep);
int gdrfab_nosys_accept(struct fid_ep *ep, const void *param, size_t paramlen);
int gdrfab_nosys_reject(struct fid_pep *pep, fid_t handle, const void *param,
			size_t paramlen);
int gdrfab_nosys_shutdown(struct fid_ep *ep, uint64_t flags);
int gdrfab_nosys_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		      struct fid_mc **mc, void *context);
int gdrfab_nosys_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
			struct fid_ep **tx_ep, void *context);
int gdrfab_nosys_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
			struct fid_ep **rx_ep, void *context);

/* Whether the domain's objects need their locks (anything but
 * FI_THREAD_DOMAIN). */
bool gdrfab_domain_locks(const struct gdrfab_domain *domain);

/* Validates that a fid handed to us is of the expected class and ours. */
bool gdrfab_fid_is(const struct fid *fid, size_t fclass);

#endif /* GDRFAB_OBJS_H */
