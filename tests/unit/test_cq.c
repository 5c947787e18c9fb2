/* SPDX-License-Identifier: BSD-2-Clause */
/* The software CQ: formats, errors, growth, blocking reads and the fd. */
#include <criterion/criterion.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "gdrfab.h"
#include "gdrfab_objs.h"
#include "gdrfab_strerror.h"

static struct fi_ops dummy_ops = {.size = sizeof(struct fi_ops)};
static struct gdrfab_domain domain;
static struct gdrfab_fabric fabric;
static struct fid_cq *cq;

static void fake_domain(void)
{
	memset(&domain, 0, sizeof(domain));
	memset(&fabric, 0, sizeof(fabric));
	fabric.fid.api_version = FI_VERSION(1, 17); /* set by the core */
	domain.fabric = &fabric;
	domain.fid.fid.fclass = FI_CLASS_DOMAIN;
	domain.fid.fid.ops = &dummy_ops;
	atomic_init(&domain.ref, 0);
}

static struct gdrfab_cq *gcq(void)
{
	return gdrfab_container_of(cq, struct gdrfab_cq, fid);
}

static void open_cq(enum fi_cq_format format, enum fi_wait_obj wait,
		    size_t size)
{
	struct fi_cq_attr attr = {
		.format = format, .wait_obj = wait, .size = size};

	cr_assert_eq(gdrfab_cq_open(&domain.fid, &attr, &cq, NULL), 0);
}

static struct fi_cq_tagged_entry entry(int i)
{
	return (struct fi_cq_tagged_entry){
		.op_context = (void *)(uintptr_t)(0x1000 + i),
		.flags = FI_RECV | FI_TAGGED,
		.len = 100 + (size_t)i,
		.buf = (void *)(uintptr_t)(0x2000 + i),
		.data = 0xdada0000u + (uint64_t)i,
		.tag = 0x7a90000u + (uint64_t)i,
	};
}

static void close_cq(void)
{
	if (cq)
		cr_assert_eq(fi_close(&cq->fid), 0);
	cq = NULL;
	cr_assert_eq(atomic_load(&domain.ref), 0, "domain ref leaked");
}

TestSuite(cq, .init = fake_domain, .fini = close_cq, .timeout = 30);

Test(cq, every_format_carries_its_fields)
{
	struct fi_cq_tagged_entry in = entry(1);
	struct fi_cq_entry ctx;
	struct fi_cq_msg_entry msg;
	struct fi_cq_data_entry data;
	struct fi_cq_tagged_entry tagged;

	open_cq(FI_CQ_FORMAT_UNSPEC, FI_WAIT_NONE, 0);
	cr_assert_eq(gcq()->format, FI_CQ_FORMAT_CONTEXT);
	gdrfab_cq_write(gcq(), &in, FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_cq_read(cq, &ctx, 1), 1);
	cr_assert_eq(ctx.op_context, in.op_context);
	close_cq();

	open_cq(FI_CQ_FORMAT_MSG, FI_WAIT_NONE, 0);
	gdrfab_cq_write(gcq(), &in, FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_cq_read(cq, &msg, 1), 1);
	cr_assert_eq(msg.flags, in.flags);
	cr_assert_eq(msg.len, in.len);
	close_cq();

	open_cq(FI_CQ_FORMAT_DATA, FI_WAIT_NONE, 0);
	gdrfab_cq_write(gcq(), &in, FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_cq_read(cq, &data, 1), 1);
	cr_assert_eq(data.buf, in.buf);
	cr_assert_eq(data.data, in.data);
	close_cq();

	open_cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, 0);
	gdrfab_cq_write(gcq(), &in, FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_cq_read(cq, &tagged, 1), 1);
	cr_assert_eq(tagged.tag, in.tag);
	cr_assert_eq(tagged.data, in.data);
}

Test(cq, reads_in_order_with_source_addresses)
{
	struct fi_cq_tagged_entry out[8];
	fi_addr_t src[8];

	open_cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, 0);
	cr_assert_eq(fi_cq_read(cq, out, 8), -FI_EAGAIN);
	for (int i = 0; i < 5; i++) {
		struct fi_cq_tagged_entry e = entry(i);

		gdrfab_cq_write(gcq(), &e, (fi_addr_t)(40 + i));
	}
	cr_assert_eq(fi_cq_readfrom(cq, out, 3, src), 3);
	cr_assert_eq(fi_cq_readfrom(cq, out + 3, 8, src + 3), 2);
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(out[i].len, 100 + (size_t)i);
		cr_assert_eq(src[i], (fi_addr_t)(40 + i));
	}
	cr_assert_eq(fi_cq_read(cq, out, 8), -FI_EAGAIN);
}

Test(cq, grows_instead_of_dropping_completions)
{
	struct fi_cq_tagged_entry out;

	open_cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, 4);
	for (int i = 0; i < 3; i++) {
		struct fi_cq_tagged_entry e = entry(i);

		gdrfab_cq_write(gcq(), &e, 0);
	}
	/* Wrap the ring before it grows. */
	cr_assert_eq(fi_cq_read(cq, &out, 1), 1);
	for (int i = 3; i < 100; i++) {
		struct fi_cq_tagged_entry e = entry(i);

		cr_assert_eq(gdrfab_cq_write(gcq(), &e, 0), 0);
	}
	for (int i = 1; i < 100; i++) {
		cr_assert_eq(fi_cq_read(cq, &out, 1), 1);
		cr_assert_eq(out.len, 100 + (size_t)i, "entry %d out of order",
			     i);
	}
	cr_assert_eq(fi_cq_read(cq, &out, 1), -FI_EAGAIN);
}

Test(cq, errors_come_first_and_carry_their_data)
{
	struct fi_cq_err_entry err = {
		.op_context = (void *)0x99,
		.err = FI_ETRUNC,
		.prov_errno = GDRFAB_PERR_TRUNCATED,
		.olen = 12,
	};
	struct fi_cq_err_entry out = {0};
	struct fi_cq_tagged_entry e = entry(0);
	char blob[4] = {1, 2, 3, 4}, user[2];

	err.err_data = blob;
	err.err_data_size = sizeof(blob);
	open_cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, 0);
	cr_assert_eq(fi_cq_readerr(cq, &out, 0), -FI_EAGAIN);
	gdrfab_cq_write(gcq(), &e, 0);
	gdrfab_cq_write_error(gcq(), &err);
	gdrfab_cq_write_error(gcq(), &err);
	blob[0] = 9; /* the CQ kept its own copy */
	cr_assert_eq(fi_cq_read(cq, &e, 1), -FI_EAVAIL);
	/* No buffer of the application's: err_data points into the CQ. */
	cr_assert_eq(fi_cq_readerr(cq, &out, 0), 1);
	cr_assert_eq(out.err, FI_ETRUNC);
	cr_assert_eq(out.olen, 12);
	cr_assert_eq(out.op_context, (void *)0x99);
	cr_assert_eq(out.err_data_size, 4);
	cr_assert_eq(((char *)out.err_data)[0], 1);
	/* The application's buffer (API >= 1.5) is filled and kept. */
	out.err_data = user;
	out.err_data_size = sizeof(user);
	cr_assert_eq(fi_cq_readerr(cq, &out, 0), 1);
	cr_assert_eq(out.err_data, user);
	cr_assert_eq(out.err_data_size, 2);
	cr_assert_eq(user[1], 2);
	cr_assert_eq(fi_cq_readerr(cq, &out, 0), -FI_EAGAIN);
	cr_assert_eq(fi_cq_read(cq, &e, 1), 1);
}

Test(cq, strerror_names_verbs_and_gdrfab_errors)
{
	char buf[128];

	open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	cr_assert_str_eq(fi_cq_strerror(cq, IBV_WC_REM_ACCESS_ERR, NULL, buf,
					sizeof(buf)),
			 ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	cr_assert(strstr(fi_cq_strerror(cq, GDRFAB_PERR_TRUNCATED, NULL, buf,
					sizeof(buf)),
			 "truncated"));
	cr_assert(strstr(
		fi_cq_strerror(cq, GDRFAB_PERR_PEER_UNREACHABLE, NULL, NULL, 0),
		"unreachable"));
	cr_assert_str_eq(fi_cq_strerror(cq, -7, NULL, buf, sizeof(buf)),
			 "unknown provider error");
}

static bool fd_readable(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	return poll(&pfd, 1, 0) == 1;
}

Test(cq, wait_fd_is_readable_exactly_while_entries_wait)
{
	struct fi_cq_tagged_entry e = entry(0);
	enum fi_wait_obj obj;
	int fd;

	open_cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_UNSPEC, 0);
	cr_assert_eq(fi_control(&cq->fid, FI_GETWAITOBJ, &obj), 0);
	cr_assert_eq(obj, FI_WAIT_FD);
	cr_assert_eq(fi_control(&cq->fid, FI_GETWAIT, &fd), 0);
	cr_assert_not(fd_readable(fd));
	cr_assert_eq(gdrfab_cq_trywait(gcq()), 0);
	gdrfab_cq_write(gcq(), &e, 0);
	cr_assert(fd_readable(fd));
	cr_assert_eq(gdrfab_cq_trywait(gcq()), -FI_EAGAIN);
	cr_assert_eq(fi_cq_read(cq, &e, 1), 1);
	cr_assert_not(fd_readable(fd));
	cr_assert_eq(gdrfab_cq_trywait(gcq()), 0);
}

Test(cq, sread_times_out_with_eagain)
{
	struct fi_cq_tagged_entry e;

	open_cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_FD, 0);
	cr_assert_eq(fi_cq_sread(cq, &e, 1, NULL, 20), -FI_EAGAIN);
	cr_assert_eq(fi_cq_sread(cq, &e, 1, NULL, 0), -FI_EAGAIN);
}

static void *write_later(void *arg)
{
	int n = (int)(intptr_t)arg;

	for (int i = 0; i < n; i++) {
		struct fi_cq_tagged_entry e = entry(i);

		usleep(5000);
		gdrfab_cq_write(gcq(), &e, 0);
	}
	return NULL;
}

Test(cq, sread_waits_for_the_threshold)
{
	struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_TAGGED,
				  .wait_obj = FI_WAIT_FD,
				  .wait_cond = FI_CQ_COND_THRESHOLD};
	struct fi_cq_tagged_entry out[4];
	size_t threshold = 3;
	pthread_t t;

	cr_assert_eq(gdrfab_cq_open(&domain.fid, &attr, &cq, NULL), 0);
	pthread_create(&t, NULL, write_later, (void *)(intptr_t)3);
	cr_assert_eq(fi_cq_sread(cq, out, 4, &threshold, 10000), 3);
	pthread_join(t, NULL);
	cr_assert_eq(out[2].len, 102);
}

Test(cq, yield_wait_object_reads_too)
{
	struct fi_cq_tagged_entry out;
	pthread_t t;

	open_cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_YIELD, 0);
	pthread_create(&t, NULL, write_later, (void *)(intptr_t)1);
	cr_assert_eq(fi_cq_sread(cq, &out, 1, NULL, 10000), 1);
	pthread_join(t, NULL);
}

static void *signal_later(void *arg)
{
	(void)arg;
	usleep(20000);
	fi_cq_signal(cq);
	return NULL;
}

Test(cq, signal_unblocks_an_endless_sread)
{
	struct fi_cq_tagged_entry out;
	pthread_t t;

	open_cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_FD, 0);
	pthread_create(&t, NULL, signal_later, NULL);
	cr_assert_eq(fi_cq_sread(cq, &out, 1, NULL, -1), -FI_EAGAIN);
	pthread_join(t, NULL);
}

Test(cq, no_wait_object_means_no_blocking_read)
{
	struct fi_cq_tagged_entry out;
	int fd;

	open_cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, 0);
	cr_assert_eq(fi_cq_sread(cq, &out, 1, NULL, 10), -FI_ENOSYS);
	cr_assert_eq(fi_control(&cq->fid, FI_GETWAIT, &fd), -FI_ENODATA);
	cr_assert_eq(fi_cq_read(cq, NULL, 1), -FI_EINVAL);
}

Test(cq, open_rejects_bad_attributes)
{
	struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_TAGGED};

	cr_assert_eq(gdrfab_cq_open(&domain.fid, NULL, &cq, NULL), -FI_EINVAL);
	attr.format = (enum fi_cq_format)77;
	cr_assert_eq(gdrfab_cq_open(&domain.fid, &attr, &cq, NULL), -FI_EINVAL);
	attr.format = FI_CQ_FORMAT_TAGGED;
	attr.wait_obj = FI_WAIT_SET; /* without a wait set */
	cr_assert_eq(gdrfab_cq_open(&domain.fid, &attr, &cq, NULL), -FI_EINVAL);
	attr.wait_obj = FI_WAIT_MUTEX_COND;
	cr_assert_eq(gdrfab_cq_open(&domain.fid, &attr, &cq, NULL), -FI_ENOSYS);
	attr.wait_obj = (enum fi_wait_obj)55;
	cr_assert_eq(gdrfab_cq_open(&domain.fid, &attr, &cq, NULL), -FI_EINVAL);
	attr.wait_obj = FI_WAIT_NONE;
	attr.wait_cond = (enum fi_cq_wait_cond)9;
	cr_assert_eq(gdrfab_cq_open(&domain.fid, &attr, &cq, NULL), -FI_EINVAL);
	attr.wait_cond = FI_CQ_COND_NONE;
	attr.flags = FI_REMOTE_READ;
	cr_assert_eq(gdrfab_cq_open(&domain.fid, &attr, &cq, NULL),
		     -FI_EBADFLAGS);
	cq = NULL;
	cr_assert_eq(atomic_load(&domain.ref), 0);
}

Test(cq, close_fails_while_an_endpoint_is_bound)
{
	struct gdrfab_ep ep;

	memset(&ep, 0, sizeof(ep));
	open_cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, 0);
	cr_assert_eq(atomic_load(&domain.ref), 1);
	cr_assert_eq(gdrfab_cq_attach_ep(gcq(), &ep), 0);
	cr_assert_eq(gdrfab_cq_attach_ep(gcq(), &ep), 0, "listed once");
	cr_assert_eq(fi_close(&cq->fid), -FI_EBUSY);
	gdrfab_cq_detach_ep(gcq(), &ep);
	cr_assert_eq(atomic_load(&gcq()->ref), 0);
}

/* An application of API 1.4 has an error entry without err_data_size:
 * nothing is written past where its entry ends. */
Test(cq, an_old_application_gets_the_old_error_entry)
{
	struct fi_cq_err_entry err = {.op_context = (void *)0x42,
				      .err = FI_ECANCELED};
	union {
		struct fi_cq_err_entry e;
		unsigned char raw[sizeof(struct fi_cq_err_entry)];
	} out;
	size_t end = offsetof(struct fi_cq_err_entry, err_data_size);

	fabric.fid.api_version = FI_VERSION(1, 4);
	memset(&out, 0xa5, sizeof(out));
	open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	gdrfab_cq_write_error(gcq(), &err);
	cr_assert_eq(fi_cq_readerr(cq, &out.e, 0), 1);
	cr_assert_eq(out.e.op_context, (void *)0x42);
	cr_assert_eq(out.e.err, FI_ECANCELED);
	for (size_t i = end; i < sizeof(out); i++)
		cr_assert_eq(out.raw[i], 0xa5, "byte %zu written", i);
}

/* A size near the type's limit neither overflows the ring's allocation nor
 * fails: the ring starts small and grows, and no completion is lost. */
Test(cq, a_huge_size_starts_small_and_grows)
{
	struct fi_cq_tagged_entry e;

	open_cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, SIZE_MAX / 2);
	for (int i = 0; i < 70000; i++) {
		e = entry(i);
		gdrfab_cq_write(gcq(), &e, 0);
	}
	for (int i = 0; i < 70000; i++) {
		cr_assert_eq(fi_cq_read(cq, &e, 1), 1);
		cr_assert_eq(e.op_context, entry(i).op_context);
	}
	cr_assert_eq(fi_cq_read(cq, &e, 1), -FI_EAGAIN);
}
