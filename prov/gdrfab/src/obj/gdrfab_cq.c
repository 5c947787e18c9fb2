/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fid_cq: a software completion queue in the application's chosen format.
 * The data path writes entries with gdrfab_cq_write(); reads progress the
 * bound endpoints first (manual progress). The ring grows instead of
 * overrunning, so a completion is never dropped.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_obj_common.h"
#include "gdrfab_objs.h"
#include "gdrfab_params.h"
#include "gdrfab_proto.h"
#include "gdrfab_quarantine.h"
#include "gdrfab_strerror.h"

/* The most entries a CQ's ring starts with, whatever size was asked. */
#define GDRFAB_CQ_RING_START_MAX (1u << 16)

static size_t format_size(enum fi_cq_format format)
{
	switch (format) {
	case FI_CQ_FORMAT_CONTEXT: return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG: return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA: return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED: return sizeof(struct fi_cq_tagged_entry);
	default: return 0;
	}
}

/* The formats are prefixes of one another, in this order. A constant
 * size per format lets the compiler copy in a few moves instead of
 * calling memcpy for every entry read. */
static void format_entry(void *dst, enum fi_cq_format format,
			 const struct fi_cq_tagged_entry *e)
{
	switch (format) {
	case FI_CQ_FORMAT_TAGGED:
		memcpy(dst, e, sizeof(struct fi_cq_tagged_entry));
		break;
	case FI_CQ_FORMAT_DATA:
		memcpy(dst, e, sizeof(struct fi_cq_data_entry));
		break;
	case FI_CQ_FORMAT_MSG:
		memcpy(dst, e, sizeof(struct fi_cq_msg_entry));
		break;
	default: memcpy(dst, e, format_size(format)); break;
	}
}

/* The ring index i places after head. head and i are below cap, so one
 * subtraction wraps it: a division is a helper call under emulation. */
static size_t ring_index(const struct gdrfab_cq *cq, size_t i)
{
	size_t at = cq->head + i;

	return at >= cq->cap ? at - cq->cap : at;
}

/* count and err_head change only under the lock, and are also read
 * without it (cq_readfrom's empty poll): those stores and that read are
 * atomic, relaxed. */
static void set_count(struct gdrfab_cq *cq, size_t count)
{
	__atomic_store_n(&cq->count, count, __ATOMIC_RELAXED);
}

static void set_err_head(struct gdrfab_cq *cq, struct gdrfab_cq_err *err)
{
	__atomic_store_n(&cq->err_head, err, __ATOMIC_RELAXED);
}

/* Whether the CQ holds nothing, read without its lock. An entry being
 * written by another thread as this reads may be missed: the read is
 * then ordered before that write, as if it had come a moment earlier.
 * What this thread's own progress wrote, and what any write that
 * happened before the call wrote, it sees. */
static bool looks_empty(struct gdrfab_cq *cq)
{
	/* One test of both: a branch less on every empty read. */
	return !(__atomic_load_n(&cq->count, __ATOMIC_RELAXED) |
		 (uintptr_t)__atomic_load_n(&cq->err_head, __ATOMIC_RELAXED));
}

static void progress_eps(struct gdrfab_cq *cq)
{
	gdrfab_eplist_progress(&cq->eps, gdrfab_ep_progress);
}

/* Copies up to count entries out and releases the lock. */
static ssize_t take_entries(struct gdrfab_cq *cq, void *buf, size_t count,
			    fi_addr_t *src_addr)
{
	size_t n = GDRFAB_MIN(count, cq->count);

	for (size_t i = 0; i < n; i++) {
		const struct gdrfab_cq_entry *e = &cq->ring[cq->head];

		format_entry((char *)buf + i * cq->entry_size, cq->format,
			     &e->e);
		if (src_addr)
			src_addr[i] = e->src;
		cq->head = ring_index(cq, 1);
	}
	set_count(cq, cq->count - n);
	if (!cq->count)
		gdrfab_signal_clear(&cq->wait.signal);
	gdrfab_lock_release(&cq->lock);
	return (ssize_t)n;
}

static __attribute__((noinline, cold)) ssize_t null_buffer(void)
{
	GDRFAB_WARN(FI_LOG_CQ, "fi_cq_read: NULL buffer\n");
	return -FI_EINVAL;
}

/* Every read but the quick one (read_quick): progresses the endpoints,
 * or, where the quick path already polled the NIC (polled, not 0),
 * finishes that progress call, then copies entries out. Apart, so that
 * the quick read keeps in registers only its own arguments. */
static __attribute__((noinline)) ssize_t read_full(struct gdrfab_cq *cq,
						   void *buf, size_t count,
						   fi_addr_t *src_addr,
						   int polled)
{
	ssize_t ret;

	if (!buf && count)
		return null_buffer();
	if (polled)
		gdrfab_proto_progress_polled(*cq->quick_proto, polled);
	else
		progress_eps(cq);
	/* Most calls of a polling loop find nothing: they take no lock. */
	if (looks_empty(cq))
		return -FI_EAGAIN;
	gdrfab_lock_acquire(&cq->lock);
	if (cq->count && !cq->err_head)
		return take_entries(cq, buf, count, src_addr);
	ret = cq->err_head ? -FI_EAVAIL : -FI_EAGAIN;
	gdrfab_lock_release(&cq->lock);
	return ret;
}

/* A read of a polling loop mostly finds nothing. Where one enabled
 * endpoint feeds this CQ and nothing is locked (quick_proto; with locks
 * the full read takes them as ever), the CQ holds nothing and the
 * protocol's quick path finds nothing either (one poll of the NIC's CQ,
 * nothing else waiting, the clock still), the read is over: -FI_EAGAIN
 * with nothing but that poll called. The CQ is tested first: the quick
 * path writes no entry when it finds nothing, so it is still empty
 * after. */
static inline ssize_t read_quick(struct fid_cq *cq_fid, void *buf, size_t count,
				 fi_addr_t *src_addr)
{
	struct gdrfab_cq *cq =
		gdrfab_container_of(cq_fid, struct gdrfab_cq, fid);
	struct gdrfab_proto *proto = *cq->quick_proto;
	int polled = 0;

	if (proto && buf && looks_empty(cq)) {
		polled = gdrfab_proto_poll_quick(proto);
		if (!polled)
			return -FI_EAGAIN;
	}
	return read_full(cq, buf, count, src_addr, polled);
}

static ssize_t cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
			   fi_addr_t *src_addr)
{
	return read_quick(cq_fid, buf, count, src_addr);
}

static ssize_t cq_read(struct fid_cq *cq, void *buf, size_t count)
{
	return read_quick(cq, buf, count, NULL);
}

static ssize_t cq_readerr(struct fid_cq *cq_fid, struct fi_cq_err_entry *buf,
			  uint64_t flags)
{
	struct gdrfab_cq *cq =
		gdrfab_container_of(cq_fid, struct gdrfab_cq, fid);
	struct gdrfab_cq_err *err;
	void *user_data;
	size_t user_size;

	(void)flags;
	if (!buf) {
		GDRFAB_WARN(FI_LOG_CQ, "fi_cq_readerr: NULL buffer\n");
		return -FI_EINVAL;
	}
	gdrfab_lock_acquire(&cq->lock);
	err = cq->err_head;
	if (!err) {
		gdrfab_lock_release(&cq->lock);
		return -FI_EAGAIN;
	}
	set_err_head(cq, err->next);
	if (!cq->err_head)
		cq->err_tail = NULL;
	if (!cq->err_head && !cq->count)
		gdrfab_signal_clear(&cq->wait.signal);
	/* The previous entry's err_data was valid until this call. */
	if (cq->err_returned) {
		free(cq->err_returned->e.err_data);
		free(cq->err_returned);
	}
	cq->err_returned = err;
	gdrfab_lock_release(&cq->lock);

	/* Before API 1.5 the entry ended before err_data_size: an older
	 * application's buffer holds no more (err_data points into the
	 * provider's copy). The core sets the fabric's api_version. */
	if (FI_VERSION_LT(cq->domain->fabric->fid.api_version,
			  FI_VERSION(1, 5))) {
		memcpy(buf, &err->e,
		       offsetof(struct fi_cq_err_entry, err_data_size));
		return 1;
	}
	/* API >= 1.5: an application-supplied err_data buffer is filled;
	 * otherwise err_data points into the provider's copy. */
	user_data = buf->err_data;
	user_size = buf->err_data_size;
	*buf = err->e;
	if (user_size && user_data) {
		size_t n = GDRFAB_MIN(user_size, err->e.err_data_size);

		if (n)
			memcpy(user_data, err->e.err_data, n);
		buf->err_data = user_data;
		buf->err_data_size = n;
	}
	return 1;
}

bool gdrfab_cq_ready(struct gdrfab_cq *cq)
{
	bool pending;

	progress_eps(cq);
	gdrfab_lock_acquire(&cq->lock);
	pending = cq->count || cq->err_head;
	gdrfab_lock_release(&cq->lock);
	return pending;
}

int gdrfab_cq_trywait(struct gdrfab_cq *cq)
{
	bool pending;

	if (cq->wait.signal.fd < 0)
		return -FI_EINVAL;
	progress_eps(cq);
	gdrfab_lock_acquire(&cq->lock);
	pending = cq->count || cq->err_head;
	gdrfab_lock_release(&cq->lock);
	return pending ? -FI_EAGAIN : 0;
}

static ssize_t cq_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count,
			    fi_addr_t *src_addr, const void *cond, int timeout)
{
	struct gdrfab_cq *cq =
		gdrfab_container_of(cq_fid, struct gdrfab_cq, fid);
	long long start = gdrfab_now_ms();
	size_t threshold = 1;
	ssize_t ret;

	if (cq->wait.obj == FI_WAIT_NONE) {
		GDRFAB_WARN(FI_LOG_CQ,
			    "fi_cq_sread on a CQ opened with FI_WAIT_NONE\n");
		return -FI_ENOSYS;
	}
	if (cq->wait_cond == FI_CQ_COND_THRESHOLD && cond)
		threshold = GDRFAB_MAX((size_t)1, *(const size_t *)cond);
	threshold = GDRFAB_MIN(threshold, GDRFAB_MAX(count, (size_t)1));
	for (;;) {
		bool ready;

		progress_eps(cq);
		gdrfab_lock_acquire(&cq->lock);
		ready = cq->err_head || cq->count >= threshold;
		gdrfab_lock_release(&cq->lock);
		if (ready) {
			ret = cq_readfrom(cq_fid, buf, count, src_addr);
			if (ret != -FI_EAGAIN)
				return ret;
		}
		if (atomic_exchange(&cq->woken, false))
			return -FI_EAGAIN;
		ret = gdrfab_waitobj_sleep(&cq->wait, cq->eps.cnt, timeout,
					   start);
		if (ret == -FI_ETIMEDOUT)
			return -FI_EAGAIN;
		if (ret)
			return ret;
	}
}

static ssize_t cq_sread(struct fid_cq *cq, void *buf, size_t count,
			const void *cond, int timeout)
{
	return cq_sreadfrom(cq, buf, count, NULL, cond, timeout);
}

static int cq_signal(struct fid_cq *cq_fid)
{
	struct gdrfab_cq *cq =
		gdrfab_container_of(cq_fid, struct gdrfab_cq, fid);

	atomic_store(&cq->woken, true);
	gdrfab_signal_raise(&cq->wait.signal);
	return 0;
}

static const char *cq_strerror(struct fid_cq *cq, int prov_errno,
			       const void *err_data, char *buf, size_t len)
{
	(void)cq, (void)err_data;
	return gdrfab_prov_strerror(prov_errno, buf, len);
}

static int cq_control(struct fid *fid, int command, void *arg)
{
	struct gdrfab_cq *cq =
		gdrfab_container_of(fid, struct gdrfab_cq, fid.fid);

	return gdrfab_waitobj_control(cq->wait.signal.fd, cq->wait.obj, command,
				      arg);
}

static int cq_close(struct fid *fid)
{
	struct gdrfab_cq *cq =
		gdrfab_container_of(fid, struct gdrfab_cq, fid.fid);
	int ret = gdrfab_obj_busy(FI_LOG_CQ, "cq", &cq->ref,
				  "endpoints are still bound to it");

	if (ret)
		return ret;
	while (cq->err_head) {
		struct gdrfab_cq_err *next = cq->err_head->next;

		free(cq->err_head->e.err_data);
		free(cq->err_head);
		cq->err_head = next;
	}
	if (cq->err_returned) {
		free(cq->err_returned->e.err_data);
		free(cq->err_returned);
	}
	gdrfab_waitobj_close(&cq->wait, &cq->fid.fid);
	gdrfab_lock_fini(&cq->lock);
	gdrfab_eplist_fini(&cq->eps);
	atomic_fetch_sub(&cq->domain->ref, 1);
	free(cq->ring);
	cq->ring = NULL;
	gdrfab_fid_retire(&cq->fid.fid, cq);
	return 0;
}

static struct fi_ops cq_fi_ops =
	GDRFAB_FI_OPS(cq_close, gdrfab_nosys_bind, cq_control);

static struct fi_ops_cq cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = cq_read,
	.readfrom = cq_readfrom,
	.readerr = cq_readerr,
	.sread = cq_sread,
	.sreadfrom = cq_sreadfrom,
	.signal = cq_signal,
	.strerror = cq_strerror,
};

static int grow_ring(struct gdrfab_cq *cq)
{
	size_t cap = cq->cap * 2;
	struct gdrfab_cq_entry *ring;

	if (cq->cap > SIZE_MAX / 2 / sizeof(*ring))
		return -FI_ENOMEM;
	ring = malloc(cap * sizeof(*ring));
	if (!ring)
		return -FI_ENOMEM;
	for (size_t i = 0; i < cq->count; i++)
		ring[i] = cq->ring[ring_index(cq, i)];
	free(cq->ring);
	cq->ring = ring;
	cq->cap = cap;
	cq->head = 0;
	return 0;
}

int gdrfab_cq_write(struct gdrfab_cq *cq, const struct fi_cq_tagged_entry *e,
		    fi_addr_t src)
{
	struct gdrfab_cq_entry *slot;

	gdrfab_lock_acquire(&cq->lock);
	if (cq->count == cq->cap && grow_ring(cq)) {
		gdrfab_lock_release(&cq->lock);
		GDRFAB_WARN(FI_LOG_CQ,
			    "out of memory growing a CQ past %zu entries\n",
			    cq->cap);
		return -FI_ENOMEM;
	}
	slot = &cq->ring[ring_index(cq, cq->count)];
	slot->e = *e;
	slot->src = src;
	set_count(cq, cq->count + 1);
	gdrfab_signal_raise(&cq->wait.signal);
	gdrfab_lock_release(&cq->lock);
	return 0;
}

int gdrfab_cq_write_error(struct gdrfab_cq *cq,
			  const struct fi_cq_err_entry *err)
{
	struct gdrfab_cq_err *entry = calloc(1, sizeof(*entry));

	if (!entry)
		return -FI_ENOMEM;
	entry->e = *err;
	entry->e.err_data = NULL;
	entry->e.err_data_size = 0;
	if (err->err_data && err->err_data_size) {
		entry->e.err_data = malloc(err->err_data_size);
		if (!entry->e.err_data) {
			free(entry);
			return -FI_ENOMEM;
		}
		memcpy(entry->e.err_data, err->err_data, err->err_data_size);
		entry->e.err_data_size = err->err_data_size;
	}
	gdrfab_lock_acquire(&cq->lock);
	if (cq->err_tail)
		cq->err_tail->next = entry;
	else
		set_err_head(cq, entry);
	cq->err_tail = entry;
	gdrfab_signal_raise(&cq->wait.signal);
	gdrfab_lock_release(&cq->lock);
	return 0;
}

/* read_quick's NULL where no endpoint is alone and unlocked. */
static struct gdrfab_proto *const no_proto;

/* The lone endpoint's proto field is NULL until fi_enable and again
 * from its close: read_quick loads the protocol through it, one load
 * and one test where testing eps.solo first would take two. */
static void set_quick_proto(struct gdrfab_cq *cq)
{
	cq->quick_proto = cq->eps.solo ? &cq->eps.solo->proto : &no_proto;
}

int gdrfab_cq_attach_ep(struct gdrfab_cq *cq, struct gdrfab_ep *ep)
{
	int ret = gdrfab_obj_attach_ep(&cq->eps, &cq->ref, ep);

	set_quick_proto(cq);
	return ret;
}

void gdrfab_cq_detach_ep(struct gdrfab_cq *cq, struct gdrfab_ep *ep)
{
	gdrfab_obj_detach_ep(&cq->eps, &cq->ref, ep);
	set_quick_proto(cq);
}

/* What a CQ can be waited with. */
#define CQ_WAIT_OBJS                                                           \
	(GDRFAB_WAITOBJ_BASIC | GDRFAB_WAITOBJ_BIT(FI_WAIT_YIELD) |            \
	 GDRFAB_WAITOBJ_BIT(FI_WAIT_SET))

static int check_attr(const struct fi_cq_attr *attr)
{
	int ret;

	if (!attr) {
		GDRFAB_WARN(FI_LOG_CQ, "fi_cq_open: attr is NULL\n");
		return -FI_EINVAL;
	}
	if (attr->format != FI_CQ_FORMAT_UNSPEC && !format_size(attr->format)) {
		GDRFAB_WARN(FI_LOG_CQ, "fi_cq_open: unknown format %d\n",
			    attr->format);
		return -FI_EINVAL;
	}
	ret = gdrfab_waitobj_check(FI_LOG_CQ, "fi_cq_open", attr->wait_obj,
				   attr->wait_set, CQ_WAIT_OBJS);
	if (ret)
		return ret;
	if (attr->wait_cond != FI_CQ_COND_NONE &&
	    attr->wait_cond != FI_CQ_COND_THRESHOLD) {
		GDRFAB_WARN(FI_LOG_CQ,
			    "fi_cq_open: unknown wait condition %d\n",
			    attr->wait_cond);
		return -FI_EINVAL;
	}
	return gdrfab_obj_flags(FI_LOG_CQ, "fi_cq_open", attr->flags,
				FI_AFFINITY);
}

int gdrfab_cq_open(struct fid_domain *domain_fid, struct fi_cq_attr *attr,
		   struct fid_cq **out, void *context)
{
	struct gdrfab_domain *domain;
	struct gdrfab_cq *cq;
	int ret;

	if (!gdrfab_fid_is(&domain_fid->fid, FI_CLASS_DOMAIN) || !out)
		return -FI_EINVAL;
	ret = check_attr(attr);
	if (ret)
		return ret;
	domain = gdrfab_container_of(domain_fid, struct gdrfab_domain, fid);
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->domain = domain;
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT
							 : attr->format;
	cq->entry_size = format_size(cq->format);
	cq->wait_cond = attr->wait_cond;
	/* The ring grows on demand, so a size beyond what memory can hold
	 * (up to SIZE_MAX) starts small instead of overflowing the product. */
	cq->cap = GDRFAB_MIN(attr->size ? attr->size : gdrfab_params.cq_size,
			     GDRFAB_CQ_RING_START_MAX);
	cq->ring = malloc(cq->cap * sizeof(*cq->ring));
	if (!cq->ring) {
		free(cq);
		return -FI_ENOMEM;
	}
	gdrfab_lock_init(&cq->lock, gdrfab_domain_locks(domain));
	gdrfab_eplist_init(&cq->eps, gdrfab_domain_locks(domain));
	set_quick_proto(cq);
	atomic_init(&cq->ref, 0);
	atomic_init(&cq->woken, false);
	gdrfab_obj_init(&cq->fid.fid, FI_CLASS_CQ, context, &cq_fi_ops);
	cq->fid.ops = &cq_ops;
	/* Last: a wait set may read the CQ as soon as it joins. */
	ret = gdrfab_waitobj_open(&cq->wait, attr->wait_obj, attr->wait_set,
				  &cq->fid.fid);
	if (ret) {
		gdrfab_lock_fini(&cq->lock);
		gdrfab_eplist_fini(&cq->eps);
		free(cq->ring);
		free(cq);
		return ret;
	}
	atomic_fetch_add(&domain->ref, 1);
	*out = &cq->fid;
	return 0;
}

bool gdrfab_is_cq(const struct fid *fid)
{
	return gdrfab_obj_is(fid, FI_CLASS_CQ, &cq_fi_ops);
}
