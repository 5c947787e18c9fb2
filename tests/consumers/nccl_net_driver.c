/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Drives a real NCCL network plugin (aws-ofi-nccl's libnccl-net-ofi.so)
 * through its net API, as NCCL's proxy thread does, with host buffers:
 * dlopen()s it, takes ncclNetPlugin_v8, and runs init, devices,
 * getProperties, listen, connect/accept (non-blocking, polled), regMr,
 * irecv/isend/test over message sizes from 0 B to 4 MiB with every byte
 * checked, deregMr and the closes. Both communicators live in this
 * process: the receiver on device 0, the sender on the last device.
 * Built by tests/consumers/run-aws-ofi-nccl.sh against the net API
 * headers that come with the plugin (not part of gdrfab).
 * NCCL_NET_DRIVER_EXPECT_GDR=1: every device must also report
 * NCCL_PTR_CUDA, which the plugin does only once the provider accepted
 * FI_OPT_CUDA_API_PERMITTED=false (its GDR_SUPPORTED).
 *   nccl_net_driver PLUGIN.so
 * Prints a line per check and "nccl-net: N passed, M failed".
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The plugin's copy of NCCL's headers (found with -isystem: its net.h
 * redefines a macro of net_v9.h, which -Werror would refuse). */
#include <net.h>

static ncclNet_v8_t *net;
static int passed, failed;

static void check(bool ok, const char *what, ...)
{
	va_list ap;

	printf("%s: ", ok ? "PASS" : "FAIL");
	va_start(ap, what);
	vprintf(what, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	ok ? passed++ : failed++;
}

/* The plugin's log lines (WARN and INFO; TRACE with NCCL_DEBUG=TRACE). */
static void logger(ncclDebugLogLevel level, unsigned long flags,
		   const char *file, int line, const char *fmt, ...)
{
	const char *dbg = getenv("NCCL_DEBUG");
	va_list ap;

	(void)flags;
	if (level > NCCL_LOG_INFO && !(dbg && !strcmp(dbg, "TRACE")))
		return;
	if (level == NCCL_LOG_INFO && !dbg)
		return;
	fprintf(stderr, "plugin %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 131 + seed * 7 + (i >> 12));
}

static bool same(const uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)(i * 131 + seed * 7 + (i >> 12)))
			return false;
	return true;
}

/* Polls both requests until done; returns false on error or timeout. */
static bool wait_both(void *sreq, void *rreq, int *ssize, int *rsize)
{
	int sdone = !sreq, rdone = !rreq;
	double end = now() + 60;

	while (!(sdone && rdone)) {
		if (!sdone && net->test(sreq, &sdone, ssize) != ncclSuccess)
			return false;
		if (!rdone && net->test(rreq, &rdone, rsize) != ncclSuccess)
			return false;
		if (now() > end)
			return false;
	}
	return true;
}

int main(int argc, char **argv)
{
	static const int sizes[] = {0, 4, 8192, 8193, 65536, 1 << 20, 4 << 20};
	const int max = 4 << 20;
	char handle[NCCL_NET_HANDLE_MAXSIZE] = {0};
	void *lib, *lcomm = NULL, *scomm = NULL, *rcomm = NULL;
	ncclNetDeviceHandle_v8_t *sdev = NULL, *rdev = NULL;
	void *smh = NULL, *rmh = NULL;
	uint8_t *sbuf, *rbuf;
	int ndev = 0, sdevno, ret;
	const char *gdr = getenv("NCCL_NET_DRIVER_EXPECT_GDR");
	bool expect_gdr = gdr && *gdr == '1';
	double end;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PLUGIN.so\n", argv[0]);
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	net = dlsym(lib, "ncclNetPlugin_v8");
	check(net != NULL, "the plugin exports ncclNetPlugin_v8");
	if (!net)
		return 1;
	ret = net->init(logger);
	check(ret == ncclSuccess, "init (%s): %d", net->name, ret);
	if (ret != ncclSuccess)
		goto out;
	ret = net->devices(&ndev);
	check(ret == ncclSuccess && ndev >= 1, "devices: %d", ndev);
	if (ret != ncclSuccess || ndev < 1)
		goto out;
	for (int d = 0; d < ndev; d++) {
		ncclNetProperties_v8_t p;

		ret = net->getProperties(d, &p);
		check(ret == ncclSuccess && (p.ptrSupport & NCCL_PTR_HOST) &&
			      p.maxComms > 0 && p.maxRecvs >= 1 &&
			      (!expect_gdr || (p.ptrSupport & NCCL_PTR_CUDA)),
		      "getProperties(%d): %s, %s, ptrSupport %#x, %d Mbps, maxComms %d, maxRecvs %d, regIsGlobal %d",
		      d, ret ? "?" : p.name, ret ? "?" : p.pciPath,
		      p.ptrSupport, p.speed, p.maxComms, p.maxRecvs,
		      p.regIsGlobal);
	}
	sdevno = ndev - 1;
	ret = net->listen(0, handle, &lcomm);
	check(ret == ncclSuccess && lcomm, "listen(0)");
	if (ret != ncclSuccess)
		goto out;
	/* connect and accept must not block: NCCL calls them again until
	 * each returns its communicator. */
	end = now() + 60;
	while ((!scomm || !rcomm) && now() < end) {
		if (!scomm &&
		    net->connect(sdevno, handle, &scomm, &sdev) != ncclSuccess)
			break;
		if (!rcomm && net->accept(lcomm, &rcomm, &rdev) != ncclSuccess)
			break;
	}
	check(scomm && rcomm, "connect(%d)/accept(0)", sdevno);
	if (!scomm || !rcomm)
		goto out;
	sbuf = aligned_alloc(4096, max);
	rbuf = aligned_alloc(4096, max);
	ret = net->regMr(scomm, sbuf, max, NCCL_PTR_HOST, &smh);
	check(ret == ncclSuccess, "regMr(send comm, 4 MiB host)");
	ret |= net->regMr(rcomm, rbuf, max, NCCL_PTR_HOST, &rmh);
	check(ret == ncclSuccess, "regMr(recv comm, 4 MiB host)");
	if (ret != ncclSuccess)
		goto out;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int size = sizes[i], tag = 1, ssize = -1, rsize = -1;
		void *sreq = NULL, *rreq = NULL, *data = rbuf;
		bool ok;

		fill(sbuf, (size_t)size, (unsigned)i + 1);
		memset(rbuf, 0xee, (size_t)size + 1);
		end = now() + 60;
		/* Either may answer "not now" (a NULL request). */
		while (!rreq && now() < end)
			if (net->irecv(rcomm, 1, &data, &(int){max}, &tag, &rmh,
				       &rreq) != ncclSuccess)
				break;
		while (rreq && !sreq && now() < end) {
			int done = 0;

			if (net->isend(scomm, sbuf, size, tag, smh, &sreq) !=
			    ncclSuccess)
				break;
			if (!sreq)
				net->test(rreq, &done, NULL);
		}
		ok = rreq && sreq && wait_both(sreq, rreq, &ssize, &rsize);
		check(ok && rsize == size &&
			      same(rbuf, (size_t)size, (unsigned)i + 1) &&
			      rbuf[size] == 0xee,
		      "isend/irecv/test %d B: sent %d, received %d, data %s",
		      size, ssize, rsize,
		      ok && same(rbuf, (size_t)size, (unsigned)i + 1)
			      ? "checked"
			      : "WRONG");
	}
	check(net->deregMr(scomm, smh) == ncclSuccess &&
		      net->deregMr(rcomm, rmh) == ncclSuccess,
	      "deregMr");
	check(net->closeSend(scomm) == ncclSuccess, "closeSend");
	check(net->closeRecv(rcomm) == ncclSuccess, "closeRecv");
	check(net->closeListen(lcomm) == ncclSuccess, "closeListen");
	free(sbuf);
	free(rbuf);
out:
	printf("nccl-net: %d passed, %d failed\n", passed, failed);
	return failed || !passed;
}
