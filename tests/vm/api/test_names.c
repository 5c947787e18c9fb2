/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Addresses from a host and a service, as most libfabric applications
 * (and fabtests' default mode) find their peer: a server opens its
 * endpoint from fi_getinfo(NULL, service, FI_SOURCE); a client's
 * fi_getinfo(host, service) returns the server's service address as
 * dest_addr, without asking anyone, and fi_av_insert (or
 * fi_av_insertsvc/insertsym) of it starts asking: the first message goes
 * once the server answered with its name. Nothing listening fails that
 * message in bounded time (FI_EHOSTUNREACH), not a hang; a host that does
 * not exist fails fi_getinfo at once. An endpoint answers even while its
 * application makes no progress.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vm_helpers.h"

#define SERVER_IP "192.0.2.2" /* rxe1 */

static struct fi_info *info_for(const char *node, const char *service,
				uint64_t flags, const char *device, int *ret)
{
	struct fi_info *hints = gdrfab_hints(), *info = NULL;

	hints->domain_attr->name = strdup(device);
	*ret = fi_getinfo(TEST_VERSION, node, service, flags, hints, &info);
	fi_freeinfo(hints);
	return info;
}

static void open_from(struct test_domain *t, struct test_ep *e,
		      struct fi_info *info)
{
	memset(t, 0, sizeof(*t));
	t->info = info;
	cr_assert_eq(fi_fabric(info->fabric_attr, &t->fabric, NULL), 0);
	cr_assert_eq(fi_domain(t->fabric, info, &t->domain, NULL), 0);
	test_ep_open(t, e, FI_AV_TABLE);
}

/* A server on rxe1 answering at service: sends its name up the pipe,
 * then, given a gate (a pipe), waits without a call into libfabric until
 * the gate's write end is closed; then progresses (answering name
 * queries) until it received one message. */
static pid_t start_server(const char *service, uint8_t name[32],
			  const int gate[2])
{
	int up[2];
	pid_t pid;

	cr_assert_eq(pipe(up), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		struct test_domain t;
		struct test_ep e;
		struct fi_cq_tagged_entry c;
		char buf[16], ch;
		size_t len = 32;
		int ret;
		struct fi_info *info;

		if (gate)
			close(gate[1]);
		info = info_for(NULL, service, FI_SOURCE, "rxe1", &ret);
		if (!info)
			_exit(2);
		open_from(&t, &e, info);
		fi_getname(&e.ep->fid, name, &len);
		if (write(up[1], name, 32) != 32)
			_exit(3);
		if (gate && read(gate[0], &ch, 1) != 0)
			_exit(6);
		fi_recv(e.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, NULL);
		for (int i = 0; i < 600000; i++) {
			if (fi_cq_read(e.cq, &c, 1) == 1)
				_exit(strcmp(buf, "hello") ? 4 : 0);
			usleep(100);
		}
		_exit(5);
	}
	close(up[1]);
	if (gate)
		close(gate[0]);
	cr_assert_eq(read(up[0], name, 32), 32, "the server did not start");
	close(up[0]);
	return pid;
}

/* A client on rxe0 of the server at service, found by fi_getinfo with
 * its host and service: its domain and endpoint, and the server's fi_addr
 * in *to. Returns the fi_info (the domain's). */
static struct fi_info *open_client(const char *service, struct test_domain *t,
				   struct test_ep *e, fi_addr_t *to)
{
	int ret;
	struct fi_info *info = info_for(SERVER_IP, service, 0, "rxe0", &ret);

	cr_assert_not_null(info, "fi_getinfo: %s", fi_strerror(-ret));
	open_from(t, e, info);
	cr_assert_eq(fi_av_insert(e->av, info->dest_addr, 1, to, 0, NULL), 1);
	return info;
}

static void say_hello(struct test_ep *e, fi_addr_t to)
{
	struct fi_cq_tagged_entry c;
	int i;

	cr_assert_eq(fi_send(e->ep, "hello", 6, NULL, to, NULL), 0);
	for (i = 0; i < 200000 && fi_cq_read(e->cq, &c, 1) != 1; i++)
		usleep(100);
	cr_assert_lt(i, 200000, "the send never completed");
}

/* Waits for a send already posted. */
static void say_hello_wait(struct test_ep *e)
{
	struct fi_cq_tagged_entry c;
	int i;

	for (i = 0; i < 200000 && fi_cq_read(e->cq, &c, 1) != 1; i++)
		usleep(100);
	cr_assert_lt(i, 200000, "the send never completed");
}

/* A send that must fail: the error it completes with, within limit_s. */
static int hello_fails(struct test_ep *e, fi_addr_t to, int limit_s)
{
	struct fi_cq_tagged_entry c;
	struct fi_cq_err_entry err = {0};
	struct timespec a, b;
	ssize_t ret;

	clock_gettime(CLOCK_MONOTONIC, &a);
	cr_assert_eq(fi_send(e->ep, "hello", 6, NULL, to, NULL), 0);
	do {
		ret = fi_cq_read(e->cq, &c, 1);
		clock_gettime(CLOCK_MONOTONIC, &b);
		cr_assert_lt(b.tv_sec - a.tv_sec, limit_s,
			     "no error within %d s", limit_s);
		if (ret == -FI_EAGAIN)
			usleep(1000);
	} while (ret == -FI_EAGAIN);
	cr_assert_eq(ret, -FI_EAVAIL, "the send to nobody succeeded");
	cr_assert_eq(fi_cq_readerr(e->cq, &err, 0), 1);
	return err.err;
}

/* A service address: 192.0.2.2:port, asked for when used. */
static void assert_service_address(const void *addr, size_t len, uint16_t port)
{
	uint8_t want[32] = {1, 0}; /* version 1, port_num 0 */
	uint32_t tag = htonl(0x53560000u | port);

	want[18] = 0xff, want[19] = 0xff; /* GID ::ffff:192.0.2.2 */
	inet_pton(AF_INET, SERVER_IP, want + 20);
	memcpy(want + 28, &tag, 4);
	cr_assert_eq(len, 32);
	cr_assert_arr_eq(addr, want, 32);
}

static void expect_server_done(pid_t pid)
{
	int status;

	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the server did not get the message (status 0x%x)", status);
}

Test(names, getinfo_with_host_and_service_gives_the_servers_service_address)
{
	uint8_t name[32];
	struct test_domain t;
	struct test_ep e;
	struct fi_info *info;
	fi_addr_t to;
	pid_t pid;

	require_vm();
	pid = start_server("47011", name, NULL);
	info = open_client("47011", &t, &e, &to);
	assert_service_address(info->dest_addr, info->dest_addrlen, 47011);
	say_hello(&e, to);
	expect_server_done(pid);
	test_ep_close(&e);
	test_domain_close(&t);
}

Test(names, av_insertsvc_and_insertsym_find_it)
{
	uint8_t name[32], got[32];
	struct test_domain t;
	struct test_ep e;
	fi_addr_t svc, sym[2];
	size_t len = sizeof(got);
	pid_t pid;

	require_vm();
	setenv("FI_GDRFAB_CONN_TIMEOUT_MS", "3000", 1);
	pid = start_server("47020", name, NULL);
	test_domain_open(&t, "rxe0");
	test_ep_open(&t, &e, FI_AV_TABLE);
	cr_assert_eq(fi_av_insertsvc(e.av, SERVER_IP, "47020", &svc, 0, NULL),
		     1);
	cr_assert_eq(fi_av_lookup(e.av, svc, got, &len), 0);
	assert_service_address(got, len, 47020);
	/* Two services of one host: both inserted, only the first answers
	 * (the second is nobody's, found out when it is used; no other test
	 * uses 47021: tests run in parallel). */
	cr_assert_eq(
		fi_av_insertsym(e.av, SERVER_IP, 1, "47020", 2, sym, 0, NULL),
		2);
	say_hello(&e, svc);
	expect_server_done(pid);
	cr_assert_eq(hello_fails(&e, sym[1], 20), FI_EHOSTUNREACH);
	test_ep_close(&e);
	test_domain_close(&t);
}

Test(names, nothing_listening_is_an_error_in_bounded_time)
{
	struct timespec a, b;
	struct test_domain t;
	struct test_ep e;
	struct fi_info *info;
	fi_addr_t to;
	int ret;

	require_vm();
	setenv("FI_GDRFAB_CONN_TIMEOUT_MS", "2000", 1);
	/* fi_getinfo asks nobody: at once, whoever listens (the provider
	 * loaded and the ports found first, which under TCG and parallel
	 * tests take their own time). */
	fi_freeinfo(info_for(NULL, NULL, 0, "rxe0", &ret));
	clock_gettime(CLOCK_MONOTONIC, &a);
	info = info_for(SERVER_IP, "47999", 0, "rxe0", &ret);
	clock_gettime(CLOCK_MONOTONIC, &b);
	cr_assert_not_null(info, "fi_getinfo: %s", fi_strerror(-ret));
	cr_assert_lt((b.tv_sec - a.tv_sec) * 1000 +
			     (b.tv_nsec - a.tv_nsec) / 1000000,
		     1000, "no query, no wait");
	assert_service_address(info->dest_addr, info->dest_addrlen, 47999);
	open_from(&t, &e, info);
	cr_assert_eq(fi_av_insert(e.av, info->dest_addr, 1, &to, 0, NULL), 1);
	/* The message fails once nobody answered (2 s), and again for the
	 * next one: a clear error, never a hang. */
	cr_assert_eq(hello_fails(&e, to, 15), FI_EHOSTUNREACH);
	cr_assert_eq(hello_fails(&e, to, 15), FI_EHOSTUNREACH);
	test_ep_close(&e);
	test_domain_close(&t);
	/* A host that does not exist fails fi_getinfo, at once. */
	cr_assert_null(info_for("g00n13s.invalid", "47999", 0, "rxe0", &ret));
	cr_assert_eq(ret, -FI_ENODATA);
	cr_assert_null(info_for(SERVER_IP, "http", 0, "rxe0", &ret));
	cr_assert_eq(ret, -FI_ENODATA);
}

/* Bad input to the insert calls: an error and a log line, no crash, no
 * wait. */
Test(names, malformed_addresses_are_refused)
{
	struct test_domain t;
	struct test_ep e;
	fi_addr_t out[3] = {0, 0, 0};
	uint8_t garbage[3][32];
	int errs[3];

	require_vm();
	test_domain_open(&t, "rxe0");
	test_ep_open(&t, &e, FI_AV_TABLE);
	memset(garbage, 0xa5, sizeof(garbage));
	cr_assert_eq(fi_av_insert(e.av, garbage, 3, out, 0, NULL), 0);
	cr_assert_eq(out[0], FI_ADDR_NOTAVAIL);
	cr_assert_eq(out[2], FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_av_insert(e.av, garbage, 3, NULL, FI_SYNC_ERR, errs),
		     0);
	cr_assert_eq(errs[1], FI_EINVAL);
	cr_assert_eq(fi_av_insertsvc(e.av, SERVER_IP, "http", out, 0, NULL),
		     -FI_EINVAL);
	cr_assert_eq(fi_av_insertsvc(e.av, SERVER_IP, "0", out, 0, NULL),
		     -FI_EINVAL);
	cr_assert_eq(fi_av_insertsvc(e.av, SERVER_IP, "70000", out, 0, NULL),
		     -FI_EINVAL);
	cr_assert_eq(
		fi_av_insertsvc(e.av, "g00n13s.invalid", "47000", out, 0, NULL),
		-FI_ENODATA);
	cr_assert_eq(fi_av_insertsvc(e.av, SERVER_IP, NULL, out, 0, NULL),
		     -FI_EINVAL);
	cr_assert_eq(
		fi_av_insertsvc(e.av, "gdrfab://nonsense", NULL, out, 0, NULL),
		-FI_EINVAL);
	cr_assert_eq(fi_av_insertsvc(e.av, "fi_sockaddr_in://1.2.3.4:0", NULL,
				     out, 0, NULL),
		     -FI_EINVAL);
	cr_assert_eq(
		fi_av_insertsym(e.av, SERVER_IP, 1, "65535", 2, out, 0, NULL),
		-FI_EINVAL);
	cr_assert_eq(fi_av_insertsym(e.av, "nohost-x.invalid", 2, "47000", 1,
				     out, 0, NULL),
		     0, "no second node after one without digits");
	test_ep_close(&e);
	test_domain_close(&t);
}

/* Applications open several endpoints from one fi_info: the first
 * answers at the service, the others still enable (found by name). */
Test(names, a_second_endpoint_on_a_taken_service_still_enables)
{
	uint8_t name[32];
	struct test_domain t1, t2;
	struct test_ep e1, e2;
	fi_addr_t to;
	pid_t pid;
	int ret;

	require_vm();
	pid = start_server("47013", name, NULL);
	open_from(&t1, &e1, info_for(NULL, "47013", FI_SOURCE, "rxe1", &ret));
	open_from(&t2, &e2, info_for(NULL, "47013", FI_SOURCE, "rxe1", &ret));
	test_ep_close(&e2);
	test_domain_close(&t2);
	test_ep_close(&e1);
	test_domain_close(&t1);
	/* The server, first on the port, still answers. */
	open_client("47013", &t1, &e1, &to);
	say_hello(&e1, to);
	expect_server_done(pid);
	test_ep_close(&e1);
	test_domain_close(&t1);
}

/* fabtests' servers with -E open their endpoint, then block on a TCP
 * socket until the client, which first asks for their name, connects: the
 * name is answered without the application's progress, so the client's
 * first message is on its way (connecting) before the server reads its
 * CQ, and arrives once it does. */
Test(names, answered_while_the_server_never_progresses)
{
	uint8_t name[32];
	int gate[2], status;
	struct test_domain t;
	struct test_ep e;
	fi_addr_t to;
	pid_t pid;

	require_vm();
	cr_assert_eq(pipe(gate), 0);
	/* No fi_cq_read, no call into libfabric: blocked at the gate. */
	pid = start_server("47014", name, gate);
	open_client("47014", &t, &e, &to);
	cr_assert_eq(fi_send(e.ep, "hello", 6, NULL, to, NULL), 0);
	/* The client asks and connects meanwhile; the server sleeps. */
	for (int i = 0; i < 100; i++) {
		struct fi_cq_tagged_entry c;

		cr_assert_eq(fi_cq_read(e.cq, &c, 1), -FI_EAGAIN);
		usleep(10000);
	}
	close(gate[1]); /* the server reads its CQ from now on */
	say_hello_wait(&e);
	expect_server_done(pid);
	test_ep_close(&e);
	test_domain_close(&t);
	cr_assert_eq(waitpid(pid, &status, 0), -1, "reaped above");
}
