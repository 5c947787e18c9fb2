/* SPDX-License-Identifier: BSD-2-Clause */
/* Two endpoints on the fake verbs device (proto_fixture.h). */
#include <criterion/criterion.h>
#include <string.h>
#include <time.h>

#include <rdma/fi_ext_gdrfab.h>

#include "fake_verbs.h"
#include "gdrfab.h"
#include "gdrfab_host_cache.h"
#include "gdrfab_info.h"
#include "gdrfab_objs.h"
#include "gdrfab_params.h"
#include "proto_fixture.h"

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void open_side(struct pf *f, struct fid_domain *domain,
		      struct pf_side *s)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED,
				     .size = 256};
	struct fi_av_attr av_attr = {.type = FI_AV_MAP};

	cr_assert_eq(fi_endpoint(domain, f->info, &s->ep, NULL), 0);
	cr_assert_eq(fi_cq_open(domain, &cq_attr, &s->cq, NULL), 0);
	cr_assert_eq(fi_av_open(domain, &av_attr, &s->av, NULL), 0);
	cr_assert_eq(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(fi_ep_bind(s->ep, &s->av->fid, 0), 0);
	cr_assert_eq(fi_enable(s->ep), 0);
}

enum fi_threading pf_threading;

struct fi_info *pf_fake_info(struct fid_fabric **fabric)
{
	struct fi_info *hints = fi_allocinfo(), *info;

	/* Registrations made for buffers without a descriptor are not
	 * cached (no userfaultfd monitor thread in a unit test). */
	gdrfab_params.host_mr_cache = GDRFAB_HOST_CACHE_OFF;
	cr_assert(hints);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA;
	hints->domain_attr->threading = pf_threading;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	cr_assert_eq(
		gdrfab_getinfo(gdrfab_api_version, NULL, NULL, 0, hints, &info),
		0, "fi_getinfo on the fake device");
	fi_freeinfo(hints);
	cr_assert_str_eq(info->domain_attr->name, FAKE_VERBS_DEV);
	cr_assert_eq(gdrfab_fabric_open(info->fabric_attr, fabric, NULL), 0);
	(*fabric)->api_version = gdrfab_api_version; /* the core's job */
	return info;
}

static void open_all(struct pf *f, int ndevs, const char *const dom[2])
{
	char name[2][128];
	size_t len[2] = {sizeof(name[0]), sizeof(name[1])};

	memset(f, 0, sizeof(*f));
	fake_verbs_install();
	fake_verbs_set_devices(ndevs);
	f->info = pf_fake_info(&f->fabric);
	if (dom) {
		for (int i = 0; i < 2; i++) {
			free(f->info->domain_attr->name);
			f->info->domain_attr->name = strdup(dom[i]);
			cr_assert_eq(fi_domain(f->fabric, f->info,
					       &f->side_domain[i], NULL),
				     0, "fi_domain(%s)", dom[i]);
		}
		f->domain = f->side_domain[0];
	} else {
		cr_assert_eq(fi_domain(f->fabric, f->info, &f->domain, NULL),
			     0);
	}
	for (int i = 0; i < 2; i++) {
		if (dom) { /* fi_endpoint checks the info names its domain */
			free(f->info->domain_attr->name);
			f->info->domain_attr->name = strdup(dom[i]);
		}
		open_side(f, dom ? f->side_domain[i] : f->domain, &f->s[i]);
		cr_assert_eq(fi_getname(&f->s[i].ep->fid, name[i], &len[i]), 0);
	}
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(fi_av_insert(f->s[i].av, name[1 - i], 1,
					  &f->s[i].peer, 0, NULL),
			     1);
		cr_assert_eq(fi_av_insert(f->s[i].av, name[i], 1, &f->s[i].self,
					  0, NULL),
			     1);
	}
}

void pf_open(struct pf *f)
{
	open_all(f, 1, NULL);
}

void pf_open_domains(struct pf *f, int ndevs, const char *const dom[2])
{
	open_all(f, ndevs, dom);
}

void pf_close(struct pf *f)
{
	struct fake_verbs_counts c;

	for (int i = 0; i < 2; i++) {
		cr_assert_eq(fi_close(&f->s[i].ep->fid), 0);
		cr_assert_eq(fi_close(&f->s[i].av->fid), 0);
		cr_assert_eq(fi_close(&f->s[i].cq->fid), 0);
	}
	if (f->side_domain[0]) {
		cr_assert_eq(fi_close(&f->side_domain[0]->fid), 0);
		cr_assert_eq(fi_close(&f->side_domain[1]->fid), 0);
	} else {
		cr_assert_eq(fi_close(&f->domain->fid), 0);
	}
	cr_assert_eq(fi_close(&f->fabric->fid), 0);
	fi_freeinfo(f->info);
	c = fake_verbs_counts();
	cr_expect_eq(c.qp, 0, "QPs left: %d", c.qp);
	cr_expect_eq(c.cq, 0, "CQs left: %d", c.cq);
	cr_expect_eq(c.srq, 0, "SRQs left: %d", c.srq);
	cr_expect_eq(c.mr, 0, "MRs left: %d", c.mr);
	cr_expect_eq(c.ah, 0, "AHs left: %d", c.ah);
	cr_expect_eq(c.pd, 0, "PDs left: %d", c.pd);
	cr_expect_eq(c.ctx, 0, "contexts left: %d", c.ctx);
	cr_expect_eq(c.cq_overruns, 0, "completions dropped");
	cr_expect_eq(c.bad_posts, 0, "posts the device refused");
	fake_verbs_uninstall();
}

static int read_side(struct pf_side *s)
{
	int got = 0;

	for (;;) {
		struct fi_cq_tagged_entry e[8];
		ssize_t n = fi_cq_read(s->cq, e, 8);

		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = {0};

			cr_assert_eq(fi_cq_readerr(s->cq, &err, 0), 1);
			cr_assert_lt(s->n_err, PF_MAX_CQE);
			s->err[s->n_err++] = err;
			got++;
			continue;
		}
		if (n <= 0) {
			cr_assert(n == -FI_EAGAIN, "fi_cq_read: %zd", n);
			return got;
		}
		cr_assert_leq(s->n_ok + n, PF_MAX_CQE);
		memcpy(&s->ok[s->n_ok], e, (size_t)n * sizeof(e[0]));
		s->n_ok += (int)n;
		got += (int)n;
	}
}

int pf_drive(struct pf *f, int ms)
{
	long long end = now_ms() + ms;
	int got = 0, idle = 0;

	/* Several quiet rounds in a row: a completion read may post more
	 * (a FIN after a READ), and the AH worker is a thread. */
	while (idle < 20 || now_ms() < end) {
		int moved = fake_verbs_run();

		for (int i = 0; i < 2; i++)
			moved += read_side(&f->s[i]);
		got += moved;
		idle = moved ? 0 : idle + 1;
		if (idle >= 20 && now_ms() >= end)
			break;
		if (!moved) {
			struct timespec ts = {0, 100000};

			nanosleep(&ts, NULL); /* the AH worker's turn */
		}
	}
	return got;
}

bool pf_drive_until(struct pf *f, int side, int n, int ms)
{
	long long end = now_ms() + ms;

	for (;;) {
		struct pf_side *s = &f->s[side];

		pf_drive(f, 0);
		if (s->n_ok + s->n_err >= n)
			return true;
		if (now_ms() >= end)
			return false;
	}
}

struct fid_mr *pf_reg(struct pf *f, void *buf, size_t len, uint64_t access)
{
	struct fid_mr *mr;

	cr_assert_eq(fi_mr_reg(f->domain, buf, len,
			       FI_SEND | FI_RECV | FI_READ | FI_WRITE | access,
			       0, 0, 0, &mr, NULL),
		     0);
	return mr;
}

void pf_post_tagged(struct pf *f, const uint8_t *out, uint8_t *in, size_t len,
		    int n, uint64_t tag0)
{
	for (int i = 0; i < n; i++)
		cr_assert_eq(fi_trecv(f->s[1].ep, in + i * len, len, NULL,
				      f->s[1].peer, tag0 + i, 0, NULL),
			     0);
	for (int i = 0; i < n; i++)
		cr_assert_eq(fi_tsend(f->s[0].ep, out + i * len, len, NULL,
				      f->s[0].peer, tag0 + i, NULL),
			     0);
}

long pf_post_held_reads(struct pf *f, const uint8_t *out, uint8_t *in,
			size_t len, int n, uint64_t tag0)
{
	fake_verbs_hold(IBV_WR_RDMA_READ, true);
	pf_post_tagged(f, out, in, len, n, tag0);
	pf_drive(f, 20);
	cr_assert_eq(fake_verbs_waiting(IBV_WR_RDMA_READ), n);
	return fake_verbs_counts().rdma_bytes;
}

void pf_expect_delivered(struct pf *f, const uint8_t *in, size_t len, int n,
			 unsigned seed)
{
	cr_assert(pf_drive_until(f, 1, n, 5000), "the receives");
	cr_assert(pf_drive_until(f, 0, n, 5000), "the sends");
	cr_expect_eq(f->s[0].n_err + f->s[1].n_err, 0);
	cr_expect(pf_check(in, (size_t)n * len, seed), "intact");
}

void pf_fill(void *buf, size_t len, unsigned seed)
{
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 131 + seed * 7 + (i >> 8));
}

bool pf_check(const void *buf, size_t len, unsigned seed)
{
	const uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		if (p[i] != (uint8_t)(i * 131 + seed * 7 + (i >> 8)))
			return false;
	return true;
}

void pf_connect(struct pf *f)
{
	char out[8] = "hello", in[8] = "";

	cr_assert_eq(fi_trecv(f->s[1].ep, in, sizeof(in), NULL, f->s[1].peer,
			      0x77, 0, NULL),
		     0);
	cr_assert_eq(fi_tsend(f->s[0].ep, out, sizeof(out), NULL, f->s[0].peer,
			      0x77, NULL),
		     0);
	cr_assert(pf_drive_until(f, 1, 1, 2000), "the first message");
	cr_assert(pf_drive_until(f, 0, 1, 2000), "its send completion");
	cr_assert_eq(f->s[1].n_ok, 1);
	cr_assert_str_eq(in, "hello");
	f->s[0].n_ok = f->s[1].n_ok = 0;
}

void pf_read_stats(struct pf *f, int side, struct fi_gdrfab_stats *s)
{
	struct fi_gdrfab_stats_ops *ops = NULL;

	memset(s, 0, sizeof(*s));
	cr_assert_eq(fi_open_ops(&f->s[side].ep->fid, FI_GDRFAB_STATS_OPS, 0,
				 (void **)&ops, NULL),
		     0);
	s->size = sizeof(*s);
	cr_assert_eq(ops->read(&f->s[side].ep->fid, s), 0);
}
