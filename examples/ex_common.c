/* SPDX-License-Identifier: BSD-2-Clause */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ex_common.h"

static const size_t default_sizes[] = {8, 4096, 65536, 1 << 20, 16 << 20};

static void usage_exit(const char *prog, const char *usage)
{
	fprintf(stderr,
		"usage: %s [options] [server-host]\n%s\n"
		"  -p PROV    libfabric provider (default gdrfab)\n"
		"  -d DOMAIN  domain (NIC), e.g. mlx5_0 or rxe0\n"
		"  -D cuda    the buffer is GPU memory (CUDA device 0)\n"
		"  -P PORT    TCP port for exchanging names (default 47593)\n"
		"  -m MODE    tagged (messages) or rma (fi_writedata)\n"
		"  -s SIZES   comma-separated sizes in bytes (default 8,4096,65536,1048576,16777216)\n"
		"  -i ITERS   iterations per size (default: by size)\n"
		"  -w WINDOW  operations in flight (bandwidth; default 64)\n"
		"  -c         check the data\n"
		"  -N         pass no descriptors (host memory): the provider\n"
		"             registers the buffer itself\n",
		prog, usage);
	exit(2);
}

void ex_parse(int argc, char **argv, struct ex_opts *o, const char *usage)
{
	int op;

	memset(o, 0, sizeof(*o));
	o->prov = "gdrfab";
	o->port = 47593;
	o->window = 64;
	while ((op = getopt(argc, argv, "p:d:D:P:m:s:i:w:chN")) != -1) {
		switch (op) {
		case 'D':
			if (strcmp(optarg, "cuda"))
				usage_exit(argv[0], usage);
			o->cuda = true;
			break;
		case 'p': o->prov = optarg; break;
		case 'd': o->domain = optarg; break;
		case 'P': o->port = atoi(optarg); break;
		case 'i': o->iters = atoi(optarg); break;
		case 'w': o->window = atoi(optarg); break;
		case 'c': o->check = true; break;
		case 'N': o->no_desc = true; break;
		case 'm':
			if (!strcmp(optarg, "tagged"))
				o->mode = EX_TAGGED;
			else if (!strcmp(optarg, "rma"))
				o->mode = EX_RMA;
			else
				usage_exit(argv[0], usage);
			break;
		case 's':
			for (char *s = strtok(optarg, ","); s && o->nsizes < 64;
			     s = strtok(NULL, ","))
				o->sizes[o->nsizes++] = strtoull(s, NULL, 0);
			break;
		default: usage_exit(argv[0], usage);
		}
	}
	if (optind < argc)
		o->server = argv[optind];
	if (o->window < 1 || o->window > 1024 || o->port <= 0 ||
	    (o->no_desc && o->cuda))
		usage_exit(argv[0], usage);
	if (!o->nsizes) {
		memcpy(o->sizes, default_sizes, sizeof(default_sizes));
		o->nsizes = sizeof(default_sizes) / sizeof(default_sizes[0]);
	}
}

bool ex_is_server(const struct ex_ctx *c)
{
	return !c->o.server;
}

void *ex_desc(const struct ex_ctx *c)
{
	return c->o.no_desc ? NULL : fi_mr_desc(c->mr);
}

double ex_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int ex_iters(const struct ex_ctx *c, size_t size, int small, int large)
{
	if (c->o.iters)
		return c->o.iters;
	if (size <= 65536)
		return small;
	return (int)(large * 65536 / size) > 2 ? (int)(large * 65536 / size)
					       : 2;
}

void ex_fill(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 13);
}

bool ex_verify(const uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++) {
		if (p[i] != (uint8_t)(seed + i * 13))
			return false;
	}
	return true;
}

/* ---- the out-of-band socket ---- */

static int tcp_connect(const char *host, int port)
{
	struct addrinfo hints = {.ai_family = AF_INET,
				 .ai_socktype = SOCK_STREAM};
	struct addrinfo *res;
	char service[16];
	int fd = -1;

	snprintf(service, sizeof(service), "%d", port);
	if (getaddrinfo(host, service, &hints, &res)) {
		fprintf(stderr, "cannot resolve %s\n", host);
		return -1;
	}
	/* The server may still be starting: retry for a while. */
	for (int tries = 0; tries < 300 && fd < 0; tries++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, res->ai_addr, res->ai_addrlen)) {
			close(fd);
			fd = -1;
			usleep(100000);
		}
	}
	freeaddrinfo(res);
	if (fd < 0)
		fprintf(stderr, "cannot connect to %s:%d\n", host, port);
	return fd;
}

static int tcp_accept(int port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_ANY)};
	int one = 1, lfd = socket(AF_INET, SOCK_STREAM, 0), fd;

	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) || listen(lfd, 1)) {
		perror("bind/listen");
		close(lfd);
		return -1;
	}
	fd = accept(lfd, NULL, NULL);
	close(lfd);
	return fd;
}

static int xfer(int fd, void *buf, size_t len, bool send_it)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = send_it ? send(fd, p, len, 0) : recv(fd, p, len, 0);

		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Server sends first, client receives first. */
static int swap(struct ex_ctx *c, const void *mine, void *theirs, size_t len)
{
	if (ex_is_server(c))
		return xfer(c->sock, (void *)mine, len, true) ||
		       xfer(c->sock, theirs, len, false);
	return xfer(c->sock, theirs, len, false) ||
	       xfer(c->sock, (void *)mine, len, true);
}

/* Waits for the socket to be readable while progressing the endpoint:
 * progress is manual, and a peer may be connecting to us meanwhile. */
static void progress_until_readable(struct ex_ctx *c)
{
	struct pollfd pfd = {.fd = c->sock, .events = POLLIN};
	struct fi_cq_tagged_entry e;

	while (c->objs.cq && poll(&pfd, 1, 0) == 0) {
		if (fi_cq_read(c->objs.cq, &e, 1) == 1)
			c->stray++;
	}
}

int ex_sync(struct ex_ctx *c)
{
	char a = 's', b;

	if (ex_is_server(c))
		return xfer(c->sock, &a, 1, true) ||
		       (progress_until_readable(c),
			xfer(c->sock, &b, 1, false));
	progress_until_readable(c);
	return xfer(c->sock, &b, 1, false) || xfer(c->sock, &a, 1, true);
}

/* ---- libfabric ---- */

#define CHECK(call)                                                            \
	do {                                                                   \
		int ret_ = (int)(call);                                        \
		if (ret_) {                                                    \
			fprintf(stderr, "%s: %s\n", #call,                     \
				fi_strerror(-ret_));                           \
			return ret_;                                           \
		}                                                              \
	} while (0)

static int open_fabric(struct ex_ctx *c)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	const char *failed;
	int ret;

	hints->caps = FI_TAGGED | FI_RMA | FI_MSG | (c->o.cuda ? FI_HMEM : 0) |
		      (c->o.atomics ? FI_ATOMIC : 0);
	hints->ep_attr->type = FI_EP_RDM;
	hints->mode = FI_CONTEXT;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY |
				      (c->o.cuda ? FI_MR_HMEM : 0);
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->fabric_attr->prov_name = strdup(c->o.prov);
	if (c->o.domain)
		hints->domain_attr->name = strdup(c->o.domain);
	/* The API of the headers built with, as applications ask. */
	ret = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL,
			 NULL, 0, hints, &c->objs.info);
	fi_freeinfo(hints);
	CHECK(ret);
	ret = ex_objs_open(&c->objs, fi_fabric, &av_attr, &cq_attr,
			   FI_TRANSMIT | FI_RECV, &failed);
	if (ret)
		fprintf(stderr, "%s: %s\n", failed, fi_strerror(-ret));
	return ret;
}

struct wire_info {
	uint8_t name[256];
	uint64_t name_len, addr, key;
};

int ex_setup(struct ex_ctx *c)
{
	size_t max_size = 0;
	struct wire_info mine = {0}, theirs;
	size_t len = sizeof(mine.name);
	uint64_t access = FI_SEND | FI_RECV | FI_READ | FI_WRITE |
			  FI_REMOTE_READ | FI_REMOTE_WRITE;

	for (int i = 0; i < c->o.nsizes; i++)
		max_size = c->o.sizes[i] > max_size ? c->o.sizes[i] : max_size;
	c->sock = ex_is_server(c) ? tcp_accept(c->o.port)
				  : tcp_connect(c->o.server, c->o.port);
	if (c->sock < 0)
		return -1;
	CHECK(open_fabric(c));
	c->buf_len = 2 * max_size;
	/* GPU memory the NIC cannot reach (gdrfab's staged path) takes no
	 * remote access: RMA then needs GPUDirect. */
	if (c->o.cuda && c->o.mode == EX_TAGGED)
		access &= ~(uint64_t)(FI_REMOTE_READ | FI_REMOTE_WRITE);
	CHECK(ex_buf_alloc(c, c->buf_len));
	CHECK(ex_buf_reg(c, access));
	CHECK(fi_getname(&c->objs.ep->fid, mine.name, &len));
	mine.name_len = len;
	mine.addr = (c->objs.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
			    ? (uintptr_t)(c->buf + max_size)
			    : max_size;
	mine.key = fi_mr_key(c->mr);
	if (swap(c, &mine, &theirs, sizeof(mine)))
		return -1;
	if (fi_av_insert(c->objs.av, theirs.name, 1, &c->peer, 0, NULL) != 1)
		return -1;
	c->peer_addr = theirs.addr;
	c->peer_key = theirs.key;
	return ex_sync(c);
}

/* n reads of the CQ with nothing to find, for instr-per-msg.sh, which
 * counts this function's instructions apart: the cost of one empty poll,
 * measured instead of estimated. Returns the entries found anyway. */
__attribute__((noinline)) int ex_idle_polls(struct ex_ctx *c, long n)
{
	struct fi_cq_tagged_entry e[16];
	int found = 0;

	for (long i = 0; i < n; i++) {
		ssize_t got = fi_cq_read(c->objs.cq, e, 16);

		if (got > 0)
			found += (int)got;
	}
	return found;
}

void ex_teardown(struct ex_ctx *c)
{
	const char *idle = getenv("EX_IDLE_POLLS");

	/* Every completion of the run was read: these polls find none. */
	if (idle && ex_idle_polls(c, atol(idle)))
		fprintf(stderr, "EX_IDLE_POLLS: a poll found a completion\n");
	ex_sync(c);
	/* The endpoint before its MR, as always. */
	if (c->objs.ep)
		fi_close(&c->objs.ep->fid);
	c->objs.ep = NULL;
	if (c->mr)
		fi_close(&c->mr->fid);
	ex_objs_close(&c->objs);
	ex_buf_free(c);
	if (c->sock >= 0)
		close(c->sock);
}

static int read_some(struct ex_ctx *c, int max)
{
	struct fi_cq_tagged_entry e[16];
	ssize_t n = fi_cq_read(c->objs.cq, e, (size_t)(max < 16 ? max : 16));

	if (n > 0)
		return (int)n;
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err = {0};

		fi_cq_readerr(c->objs.cq, &err, 0);
		fprintf(stderr, "completion error: %s (%s)\n",
			fi_strerror(err.err),
			fi_cq_strerror(c->objs.cq, err.prov_errno, err.err_data,
				       NULL, 0));
		exit(1);
	}
	return 0;
}

int ex_wait(struct ex_ctx *c, int n)
{
	while (n > 0)
		n -= read_some(c, n);
	return 0;
}

ssize_t ex_post(struct ex_ctx *c, int *done,
		ssize_t (*fn)(struct ex_ctx *c, size_t len, void *arg),
		size_t len, void *arg)
{
	ssize_t ret;

	while ((ret = fn(c, len, arg)) == -FI_EAGAIN)
		*done += read_some(c, 16);
	if (ret)
		fprintf(stderr, "posting: %s\n", fi_strerror((int)-ret));
	return ret;
}
