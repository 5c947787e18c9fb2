/* SPDX-License-Identifier: BSD-2-Clause */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dp_helpers.h"

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void dp_open(struct dp_ep *e, const char *device, const struct dp_opts *o)
{
	static const struct dp_opts none;
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	size_t len = sizeof(e->name);

	if (!o)
		o = &none;
	if (o->av_map)
		av_attr.type = FI_AV_MAP;
	memset(e, 0, sizeof(*e));
	test_domain_open(&e->d, device);
	cr_assert_eq(fi_av_open(e->d.domain, &av_attr, &e->av, NULL), 0);
	cr_assert_eq(fi_cq_open(e->d.domain, &cq_attr, &e->txcq, NULL), 0);
	cr_assert_eq(fi_cq_open(e->d.domain, &cq_attr, &e->rxcq, NULL), 0);
	cr_assert_eq(fi_endpoint(e->d.domain, e->d.info, &e->ep, NULL), 0);
	cr_assert_eq(fi_ep_bind(e->ep, &e->av->fid, 0), 0);
	cr_assert_eq(
		fi_ep_bind(e->ep, &e->txcq->fid, FI_TRANSMIT | o->tx_cq_flags),
		0);
	cr_assert_eq(fi_ep_bind(e->ep, &e->rxcq->fid, FI_RECV | o->rx_cq_flags),
		     0);
	if (o->counters) {
		cr_assert_eq(fi_cntr_open(e->d.domain, NULL, &e->txcntr, NULL),
			     0);
		cr_assert_eq(fi_cntr_open(e->d.domain, NULL, &e->rxcntr, NULL),
			     0);
		cr_assert_eq(fi_ep_bind(e->ep, &e->txcntr->fid,
					FI_SEND | FI_READ | FI_WRITE),
			     0);
		cr_assert_eq(
			fi_ep_bind(e->ep, &e->rxcntr->fid,
				   FI_RECV | (o->rma_events
						      ? FI_REMOTE_WRITE |
								FI_REMOTE_READ
						      : 0)),
			0);
	}
	cr_assert_eq(fi_enable(e->ep), 0);
	cr_assert_eq(fi_getname(&e->ep->fid, e->name, &len), 0);
}

void dp_close(struct dp_ep *e)
{
	cr_assert_eq(fi_close(&e->ep->fid), 0);
	if (e->txcntr)
		cr_assert_eq(fi_close(&e->txcntr->fid), 0);
	if (e->rxcntr)
		cr_assert_eq(fi_close(&e->rxcntr->fid), 0);
	cr_assert_eq(fi_close(&e->txcq->fid), 0);
	cr_assert_eq(fi_close(&e->rxcq->fid), 0);
	cr_assert_eq(fi_close(&e->av->fid), 0);
	test_domain_close(&e->d);
}

void dp_connect_all(struct dp_ep *eps, int n)
{
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < n; j++)
			cr_assert_eq(fi_av_insert(eps[i].av, eps[j].name, 1,
						  &eps[i].peer[j], 0, NULL),
				     1);
	}
}

void dp_pair(struct dp_ep *a, struct dp_ep *b, const struct dp_opts *o)
{
	struct dp_ep *eps[2] = {a, b};

	dp_open(a, "rxe0", o);
	dp_open(b, "rxe1", o);
	/* The pair's peer[] are indexed 0 (a) and 1 (b). */
	for (int i = 0; i < 2; i++) {
		for (int j = 0; j < 2; j++)
			cr_assert_eq(fi_av_insert(eps[i]->av, eps[j]->name, 1,
						  &eps[i]->peer[j], 0, NULL),
				     1);
	}
}

struct dp_ep dp_pair_eps[2];
static bool dp_pair_opened;

void dp_pair_open(const struct dp_opts *o)
{
	require_vm();
	dp_pair(&dp_pair_eps[0], &dp_pair_eps[1], o);
	dp_pair_opened = true;
}

void dp_pair_setup(void)
{
	dp_pair_open(NULL);
}

void dp_pair_teardown(void)
{
	if (!dp_pair_opened)
		return;
	dp_close(&dp_pair_eps[1]);
	dp_close(&dp_pair_eps[0]);
	dp_pair_opened = false;
}

void dp_progress(struct dp_ep *eps, int n)
{
	for (int i = 0; i < n; i++) {
		fi_cq_read(eps[i].txcq, NULL, 0);
		fi_cq_read(eps[i].rxcq, NULL, 0);
	}
}

int dp_wait(struct fid_cq *cq, struct fi_cq_tagged_entry *e, fi_addr_t *src,
	    struct fi_cq_err_entry *err, struct dp_ep *eps, int n,
	    int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;
	struct fi_cq_tagged_entry dummy;

	for (;;) {
		ssize_t ret = fi_cq_readfrom(cq, e ? e : &dummy, 1, src);

		if (ret == 1)
			return 1;
		if (ret == -FI_EAVAIL) {
			struct fi_cq_err_entry tmp;

			if (!err)
				err = &tmp;
			memset(err, 0, sizeof(*err));
			cr_assert_eq(fi_cq_readerr(cq, err, 0), 1);
			return -FI_EAVAIL;
		}
		cr_assert_eq(ret, -FI_EAGAIN, "fi_cq_read: %s",
			     fi_strerror((int)-ret));
		if (now_ms() > deadline)
			return -FI_ETIMEDOUT;
		dp_progress(eps, n);
	}
}

void dp_expect(struct fid_cq *cq, struct fi_cq_tagged_entry *e, fi_addr_t *src,
	       struct dp_ep *eps, int n)
{
	struct fi_cq_err_entry err;
	int ret = dp_wait(cq, e, src, &err, eps, n, DP_TIMEOUT_MS);

	cr_assert_neq(ret, -FI_ETIMEDOUT, "no completion in %d ms",
		      DP_TIMEOUT_MS);
	cr_assert_eq(ret, 1, "error completion: %s (%s)", fi_strerror(err.err),
		     fi_cq_strerror(cq, err.prov_errno, NULL, NULL, 0));
}

void dp_read_one(struct fid_cq *cq, void *e, struct fid_cq *other)
{
	struct fi_cq_tagged_entry none;
	time_t end = time(NULL) + 60;

	for (;;) {
		ssize_t n = fi_cq_read(cq, e, 1);

		if (n == 1)
			return;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = {0};

			fi_cq_readerr(cq, &err, 0);
			cr_assert_fail("error completion: %s",
				       fi_strerror(err.err));
		}
		cr_assert_eq(n, -FI_EAGAIN);
		if (other)
			fi_cq_read(other, &none, 0);
		cr_assert_lt(time(NULL), end, "no completion in 60 s");
	}
}

void dp_expect_none(struct fid_cq *cq, struct dp_ep *eps, int n, int ms)
{
	struct fi_cq_tagged_entry e;
	int ret = dp_wait(cq, &e, NULL, NULL, eps, n, ms);

	cr_assert_eq(ret, -FI_ETIMEDOUT,
		     "unexpected completion (ret %d, flags 0x%llx)", ret,
		     (unsigned long long)e.flags);
}

void *dp_alloc(size_t len)
{
	void *p = NULL;

	cr_assert_eq(posix_memalign(&p, 4096, len ? len : 1), 0);
	memset(p, 0, len);
	return p;
}

void dp_fill(void *buf, size_t len, unsigned seed)
{
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 12));
}

bool dp_check(const void *buf, size_t len, unsigned seed)
{
	const uint8_t *p = buf;

	for (size_t i = 0; i < len; i++) {
		if (p[i] != (uint8_t)(seed * 131 + i * 7 + (i >> 12)))
			return false;
	}
	return true;
}

struct fid_mr *dp_reg(struct dp_ep *e, void *buf, size_t len, uint64_t access)
{
	struct fid_mr *mr;
	int ret = fi_mr_reg(e->d.domain, buf, len, access, 0, 0, 0, &mr, NULL);

	cr_assert_eq(ret, 0, "fi_mr_reg: %s", fi_strerror(-ret));
	return mr;
}

ssize_t dp_sendmsg(struct dp_ep *eps, void *buf, size_t len, void *ctx,
		   uint64_t flags)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct fi_msg msg = {
		.msg_iov = &iov,
		.iov_count = 1,
		.addr = eps[0].peer[1],
		.context = ctx,
	};

	return fi_sendmsg(eps[0].ep, &msg, flags);
}
