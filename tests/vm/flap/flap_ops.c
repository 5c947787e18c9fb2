/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * flap_ops: keeps one kind of operation in flight toward a peer while
 * tests/vm/flap/flap-in-vm.sh takes the link down and up again, then says
 * what a user would ask of the transport:
 *   - did every operation end, in success or in error, within the drain
 *     time (no hang);
 *   - is the data whole (every message received, every read, the memory
 *     written, the atomic counter);
 *   - does the same endpoint reach the same peer again once the link is
 *     back (reconnect on demand).
 * Runs over any provider (-p), so that verbs;ofi_rxm is measured beside
 * gdrfab in the same boot.
 *
 *   flap_ops -p PROV -d DOMAIN -o OP -a ROLE [options] [SERVER]
 * with SERVER the server's host on the client's side; OP one of eager,
 * rndv, write, read, atomic; ROLE (client or server) the side that
 * starts the operations; the other side receives (messages) or only
 * progresses (RMA, atomics).
 *
 * Exit status: 0 all held, 1 setup failed, 2 data corrupted, 3 an
 * operation never ended (the drain time ran out), 4 the peer was not
 * reached again. The active side prints "flap: running" when its
 * operations start; then one line "flap: ..." per side tells the counts.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_atomic.h>

#include "ex_common.h"

#define WINDOW 8
/* Tags: data messages carry their sequence number under TAG_DATA; the
 * sender's last message, TAG_DONE, says how many it sent. */
#define TAG_DATA (1ULL << 61)
#define TAG_DONE (1ULL << 62)
#define SEQ_MASK ((1ULL << 48) - 1)

enum op { OP_EAGER, OP_RNDV, OP_WRITE, OP_READ, OP_ATOMIC };
static const char *const op_names[] = {"eager", "rndv", "write", "read",
				       "atomic"};

struct flap_opts {
	enum op op;
	bool client_active; /* -a client: the client starts the operations */
	int run_ms;	    /* -r: phase 1, while the link goes down and up */
	int drain_ms;	    /* -t: how long what is in flight may take to end */
	int recover_ms;	    /* -R: how long the peer may take to answer again */
	int after; /* -n: operations in a row that must succeed after */
};

/* One operation in flight: its context first (FI_CONTEXT mode). */
struct slot {
	struct fi_context ctx;
	uint64_t seq;
	double posted_ms;
	bool busy;
};

struct flap {
	struct ex_ctx c;
	struct flap_opts f;
	size_t size;		       /* bytes an operation moves */
	struct slot slots[WINDOW + 1]; /* the last: the done message */
	uint64_t next_seq;
	int in_flight;
	/* Counts of the active side's operations. */
	uint64_t ok, errors, post_errors;
	/* Per slot, the sequence of the last write that succeeded. */
	uint64_t written[WINDOW];
	bool corrupt;
	char first_err[160];
	double first_err_ms;
	double longest_ms; /* the longest an operation took to end */
	double t0_ms;
};

static double now_ms(void)
{
	return ex_now_us() / 1000.0;
}

static void pause_ms(int ms)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = ms * 1000000L};

	nanosleep(&ts, NULL);
}

static uint8_t *send_half(struct flap *fl, int i)
{
	return fl->c.buf + (size_t)i * fl->size;
}

/* The receive half: what a peer writes, reads or sends into. */
static uint8_t *recv_half(struct flap *fl, int i)
{
	return fl->c.buf + fl->c.buf_len / 2 + (size_t)i * fl->size;
}

static uint64_t peer_slot(struct flap *fl, int i)
{
	return fl->c.peer_addr + (uint64_t)i * fl->size;
}

static void note_error(struct flap *fl, const char *what, int err,
		       const char *detail)
{
	fl->errors++;
	if (fl->first_err[0])
		return;
	snprintf(fl->first_err, sizeof(fl->first_err), "%s: %s%s%s", what,
		 fi_strerror(err), detail ? ", " : "", detail ? detail : "");
	fl->first_err_ms = now_ms() - fl->t0_ms;
}

/* Posts operation seq from slot i: 0, -FI_EAGAIN, or another error. */
static ssize_t post(struct flap *fl, int i, uint64_t seq)
{
	struct ex_ctx *c = &fl->c;
	struct slot *s = &fl->slots[i];
	void *desc = ex_desc(c);

	s->seq = seq;
	switch (fl->f.op) {
	case OP_EAGER:
	case OP_RNDV:
		ex_fill(send_half(fl, i), fl->size, (unsigned)seq);
		return fi_tsend(c->objs.ep, send_half(fl, i), fl->size, desc,
				c->peer, TAG_DATA | (seq & SEQ_MASK), &s->ctx);
	case OP_WRITE:
		ex_fill(send_half(fl, i), fl->size, (unsigned)seq);
		return fi_write(c->objs.ep, send_half(fl, i), fl->size, desc,
				c->peer, peer_slot(fl, i), c->peer_key,
				&s->ctx);
	case OP_READ:
		memset(send_half(fl, i), 0, fl->size);
		return fi_read(c->objs.ep, send_half(fl, i), fl->size, desc,
			       c->peer, peer_slot(fl, i), c->peer_key, &s->ctx);
	case OP_ATOMIC: {
		/* Operand and result in the registered buffer. */
		uint64_t *operand = (uint64_t *)send_half(fl, i);

		operand[0] = 1;
		return fi_fetch_atomic(c->objs.ep, operand, 1, desc,
				       operand + 1, desc, c->peer, c->peer_addr,
				       c->peer_key, FI_UINT64, FI_SUM, &s->ctx);
	}
	}
	return -FI_EINVAL;
}

/* What a successful operation from slot i must have left. */
static void check_done(struct flap *fl, int i)
{
	struct slot *s = &fl->slots[i];

	if (fl->f.op == OP_READ &&
	    !ex_verify(send_half(fl, i), fl->size, 1000 + (unsigned)i)) {
		fprintf(stderr, "flap: read %" PRIu64 " brought wrong data\n",
			s->seq);
		fl->corrupt = true;
	}
	if (fl->f.op == OP_WRITE)
		fl->written[i] = s->seq;
}

/* Slot s's operation ended, in success or in error. */
static void ended(struct flap *fl, struct slot *s)
{
	double took = now_ms() - s->posted_ms;

	if (took > fl->longest_ms)
		fl->longest_ms = took;
	s->busy = false;
	fl->in_flight--;
}

/* Reads what ended; the slot of each is free again. Returns how many
 * succeeded. */
static int reap(struct flap *fl)
{
	struct fi_cq_tagged_entry e[WINDOW];
	ssize_t n = fi_cq_read(fl->c.objs.cq, e, WINDOW);
	int good = 0;

	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err = {0};
		char buf[128];

		if (fi_cq_readerr(fl->c.objs.cq, &err, 0) != 1)
			return 0;
		note_error(fl, "completion", err.err,
			   fi_cq_strerror(fl->c.objs.cq, err.prov_errno,
					  err.err_data, buf, sizeof(buf)));
		ended(fl, err.op_context);
		return 0;
	}
	for (ssize_t k = 0; k < n; k++) {
		struct slot *s = e[k].op_context;

		check_done(fl, (int)(s - fl->slots));
		ended(fl, s);
		fl->ok++;
		good++;
	}
	return good;
}

/* Keeps the window full until the clock passes until_ms, or, with
 * want_in_row, until that many operations in a row succeeded. */
static void run(struct flap *fl, double until_ms, uint64_t want_in_row)
{
	uint64_t in_row = 0, errors = fl->errors;

	while (now_ms() < until_ms && (!want_in_row || in_row < want_in_row)) {
		for (int i = 0; i < WINDOW; i++) {
			ssize_t ret;

			if (fl->slots[i].busy)
				continue;
			ret = post(fl, i, fl->next_seq);
			if (ret == -FI_EAGAIN)
				break;
			if (ret) {
				fl->post_errors++;
				note_error(fl, "post", (int)-ret, NULL);
				pause_ms(1);
				break;
			}
			fl->slots[i].busy = true;
			fl->slots[i].posted_ms = now_ms();
			fl->in_flight++;
			fl->next_seq++;
		}
		in_row += (uint64_t)reap(fl);
		if (fl->errors != errors) {
			in_row = 0;
			errors = fl->errors;
		}
	}
}

/* Waits for everything in flight to end: false if the time ran out. */
static bool drain(struct flap *fl, double until_ms)
{
	while (fl->in_flight && now_ms() < until_ms)
		reap(fl);
	return fl->in_flight == 0;
}

/* After the run: the target's memory must hold the last write that
 * succeeded in each slot, read back; the counter at least every atomic
 * that succeeded and at most those and the ones that failed. */
static bool check_target(struct flap *fl, double until_ms)
{
	struct ex_ctx *c = &fl->c;
	uint64_t counter = 0;
	enum op op = fl->f.op;

	if (op != OP_WRITE && op != OP_ATOMIC)
		return true;
	for (int i = 0; i < (op == OP_WRITE ? WINDOW : 1); i++) {
		uint8_t *dst = send_half(fl, i);
		size_t len = op == OP_WRITE ? fl->size : sizeof(counter);
		uint64_t errors = fl->errors;
		ssize_t ret;

		while ((ret = fi_read(c->objs.ep, dst, len, ex_desc(c), c->peer,
				      peer_slot(fl, i), c->peer_key,
				      &fl->slots[i].ctx)) == -FI_EAGAIN)
			reap(fl);
		if (ret)
			return false;
		/* Its completion (check_done) must leave written[i] as is. */
		fl->slots[i].seq = fl->written[i];
		fl->slots[i].posted_ms = now_ms();
		fl->slots[i].busy = true;
		fl->in_flight++;
		if (!drain(fl, until_ms) || fl->errors != errors)
			return false;
		fl->ok--; /* the check is not one of the run's operations */
		if (op == OP_ATOMIC)
			memcpy(&counter, dst, sizeof(counter));
		if (op == OP_WRITE && fl->written[i] &&
		    !ex_verify(dst, len, (unsigned)fl->written[i])) {
			fprintf(stderr,
				"flap: slot %d lost write %" PRIu64 "\n", i,
				fl->written[i]);
			fl->corrupt = true;
		}
	}
	if (op == OP_ATOMIC &&
	    (counter < fl->ok || counter > fl->ok + fl->errors)) {
		fprintf(stderr,
			"flap: counter %" PRIu64 ", %" PRIu64
			" atomics succeeded and %" PRIu64 " failed\n",
			counter, fl->ok, fl->errors);
		fl->corrupt = true;
	}
	return true;
}

static int send_done(struct flap *fl, double until_ms)
{
	struct ex_ctx *c = &fl->c;
	struct slot *s = &fl->slots[WINDOW];
	uint64_t *count = (uint64_t *)send_half(fl, WINDOW);
	ssize_t ret;

	*count = fl->next_seq;
	while ((ret = fi_tsend(c->objs.ep, count, sizeof(*count), ex_desc(c),
			       c->peer, TAG_DONE, &s->ctx)) == -FI_EAGAIN)
		reap(fl);
	if (ret)
		return (int)ret;
	s->busy = true;
	s->posted_ms = now_ms();
	fl->in_flight++;
	return drain(fl, until_ms) && !fl->slots[WINDOW].busy ? 0 : -FI_EIO;
}

static int active(struct flap *fl)
{
	double end1, hang_by, recover_by;
	bool recovered;
	int status = 0;

	/* The script takes the link down once it reads this. */
	printf("flap: running\n");
	fflush(stdout);
	fl->t0_ms = now_ms();
	end1 = fl->t0_ms + fl->f.run_ms;
	run(fl, end1, 0);
	hang_by = now_ms() + fl->f.drain_ms;
	if (!drain(fl, hang_by)) {
		printf("flap: %s active: HANG: %d operations neither succeeded "
		       "nor failed %d ms after the run (ok %" PRIu64
		       ", errors %" PRIu64 ", first: %s)\n",
		       op_names[fl->f.op], fl->in_flight, fl->f.drain_ms,
		       fl->ok, fl->errors,
		       fl->first_err[0] ? fl->first_err : "none");
		fflush(stdout);
		_exit(3);
	}
	double drained_ms = now_ms() - end1;
	uint64_t errors_before = fl->errors;

	recover_by = now_ms() + fl->f.recover_ms;
	run(fl, recover_by, (uint64_t)fl->f.after);
	recovered =
		drain(fl, now_ms() + fl->f.drain_ms) && now_ms() < recover_by;
	if (recovered && !check_target(fl, now_ms() + fl->f.drain_ms))
		recovered = false;
	if (recovered && (fl->f.op == OP_EAGER || fl->f.op == OP_RNDV) &&
	    send_done(fl, now_ms() + fl->f.drain_ms))
		recovered = false;
	printf("flap: %s active: ok %" PRIu64 ", errors %" PRIu64 " (%" PRIu64
	       " at post), the longest took %.0f ms, all ended "
	       "%.0f ms after the run; "
	       "first error %s%s at %.0f ms; after: %s (%" PRIu64
	       " errors first); data %s\n",
	       op_names[fl->f.op], fl->ok, fl->errors, fl->post_errors,
	       fl->longest_ms, drained_ms, fl->first_err[0] ? "\"" : "",
	       fl->first_err[0] ? fl->first_err : "none", fl->first_err_ms,
	       recovered ? "reached again" : "NOT REACHED",
	       fl->errors - errors_before, fl->corrupt ? "CORRUPT" : "whole");
	fflush(stdout);
	if (fl->corrupt)
		status = 2;
	else if (!recovered)
		status = 4;
	return status;
}

static ssize_t post_recv(struct flap *fl, int i)
{
	struct ex_ctx *c = &fl->c;
	bool done = i == WINDOW;

	fl->slots[i].busy = true;
	return fi_trecv(c->objs.ep, recv_half(fl, i),
			done ? sizeof(uint64_t) : fl->size, ex_desc(c),
			FI_ADDR_UNSPEC, done ? TAG_DONE : TAG_DATA,
			done ? 0 : SEQ_MASK, &fl->slots[i].ctx);
}

/* The receiving side: every message must carry its sequence's data,
 * until the sender's last one. */
static int passive_recv(struct flap *fl, double until_ms)
{
	uint64_t got = 0, bad = 0, errors = 0, sent = 0;
	bool done = false;

	for (int i = 0; i <= WINDOW; i++)
		if (post_recv(fl, i))
			return 1;
	while (!done && now_ms() < until_ms) {
		struct fi_cq_tagged_entry e;
		ssize_t n = fi_cq_read(fl->c.objs.cq, &e, 1);
		struct slot *s;
		int i;

		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = {0};

			if (fi_cq_readerr(fl->c.objs.cq, &err, 0) == 1) {
				errors++;
				i = (int)((struct slot *)err.op_context -
					  fl->slots);
				if (post_recv(fl, i))
					return 1;
			}
			continue;
		}
		if (n != 1)
			continue;
		s = e.op_context;
		i = (int)(s - fl->slots);
		if (i == WINDOW) {
			sent = *(uint64_t *)recv_half(fl, WINDOW);
			done = true;
			break;
		}
		got++;
		if (e.len != fl->size ||
		    !ex_verify(recv_half(fl, i), fl->size,
			       (unsigned)(e.tag & SEQ_MASK)))
			bad++;
		if (post_recv(fl, i))
			return 1;
	}
	printf("flap: %s passive: received %" PRIu64 " of the %" PRIu64
	       " sent, %" PRIu64 " with wrong data, %" PRIu64
	       " receive errors%s\n",
	       op_names[fl->f.op], got, sent, bad, errors,
	       done ? "" : "; the sender's last message NEVER CAME");
	fflush(stdout);
	if (bad || got > sent)
		return 2;
	return done ? 0 : 4;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s -p PROV -d DOMAIN -o eager|rndv|write|read|atomic\n"
		"       -a client|server [-P PORT] [-r RUN_MS] [-t DRAIN_MS]\n"
		"       [-R RECOVER_MS] [-n AFTER] [SERVER]\n",
		prog);
	exit(1);
}

static void parse(int argc, char **argv, struct flap *fl)
{
	struct ex_opts *o = &fl->c.o;
	int ch;

	*o = (struct ex_opts){.prov = "gdrfab", .port = 47593, .window = 1};
	fl->f = (struct flap_opts){.client_active = true,
				   .run_ms = 10000,
				   .drain_ms = 30000,
				   .recover_ms = 30000,
				   .after = 32};
	while ((ch = getopt(argc, argv, "p:d:o:a:P:r:t:R:n:")) != -1) {
		switch (ch) {
		case 'p': o->prov = optarg; break;
		case 'd': o->domain = optarg; break;
		case 'P': o->port = atoi(optarg); break;
		case 'r': fl->f.run_ms = atoi(optarg); break;
		case 't': fl->f.drain_ms = atoi(optarg); break;
		case 'R': fl->f.recover_ms = atoi(optarg); break;
		case 'n': fl->f.after = atoi(optarg); break;
		case 'a':
			fl->f.client_active = !strcmp(optarg, "client");
			break;
		case 'o': {
			int k = 0;

			while (k < 5 && strcmp(optarg, op_names[k]))
				k++;
			if (k == 5)
				usage(argv[0]);
			fl->f.op = (enum op)k;
			break;
		}
		default: usage(argv[0]);
		}
	}
	if (optind < argc)
		o->server = argv[optind];
	/* A rendezvous-sized transfer for all but the eager messages and
	 * the atomics; one slot more than the window for the done
	 * message. */
	fl->size = fl->f.op == OP_EAGER	   ? 4096
		   : fl->f.op == OP_ATOMIC ? 64
					   : 1 << 20;
	o->sizes[0] = fl->size * (WINDOW + 1);
	o->nsizes = 1;
	o->mode = fl->f.op == OP_EAGER || fl->f.op == OP_RNDV ? EX_TAGGED
							      : EX_RMA;
	o->atomics = fl->f.op == OP_ATOMIC;
}

int main(int argc, char **argv)
{
	static struct flap fl;
	bool is_active;
	int status;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse(argc, argv, &fl);
	if (ex_setup(&fl.c))
		return 1;
	is_active = ex_is_server(&fl.c) != fl.f.client_active;
	/* What reads must find: slot i of the receive half holds seed
	 * 1000 + i on the side that is read. */
	if (!is_active && fl.f.op == OP_READ)
		for (int i = 0; i < WINDOW; i++)
			ex_fill(recv_half(&fl, i), fl.size, 1000 + (unsigned)i);
	if (ex_sync(&fl.c))
		return 1;
	if (is_active)
		status = active(&fl);
	else if (fl.f.op == OP_EAGER || fl.f.op == OP_RNDV)
		status = passive_recv(&fl, now_ms() + fl.f.run_ms +
						   2.0 * fl.f.drain_ms +
						   fl.f.recover_ms);
	else
		status = 0; /* the teardown's sync progresses until the end */
	if (status == 0 || status == 2 || status == 4)
		ex_teardown(&fl.c);
	return status;
}
