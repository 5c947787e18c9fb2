/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a small host<->GPU copy costs through gdrfab.ko's CPU mapping
 * (gdrfab_kmod_copy: classification, window lookup under the table lock,
 * reference, memcpy, store fence, reference dropped under the lock)
 * against a bare memcpy to or from the same pages through a mapping of our
 * own (the floor: what no software overhead would cost), in the same run,
 * interleaved round by round; medians of rounds. Then the one-time costs:
 * pin, mmap, first touch (a fault per page), unmap + unpin, and the
 * provider's first copy into a fresh allocation.
 *
 * Runs in the VM with gdrfab.ko over nvp2p_standin.ko (backing=process)
 * and the CUDA stand-in as the GPU (tests/bench/kmod-copy-bench.sh). The
 * "GPU" pages are RAM there: the table measures gdrfab's software path,
 * not a PCIe BAR (docs/results.md says what a real BAR adds).
 *
 * Where CUDA is real but /dev/gdrfab is absent (the lent GPU machine, which
 * loads no module), it times the path the provider takes there instead:
 * gdrfab_cuda_copy_to_device/_to_host (an asynchronous copy on gdrfab's
 * stream, its event polled), from pageable and from pinned host memory,
 * against memcpy between host buffers.
 *
 * Exit 77 without CUDA, or without /dev/gdrfab where CUDA is the stand-in;
 * 1 when a copy fails, does not take the path measured, or its bytes are
 * wrong.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "gdrfab/gdrfab_ioctl.h"
#include "gdrfab_cuda.h"
#include "gdrfab_kmod.h"
#include "gdrfab_params.h"

#define ROUNDS	  21
#define FRESH	  15		/* one-time cost trials */
#define BUF_LEN	  (1UL << 20)	/* the steady-state allocation */
#define FRESH_LEN (2UL << 20)	/* gdrfab_kmod_copy.c's window */
#define MAX_SIZE  (64UL * 1024) /* the largest copy measured */

static const size_t sizes[] = {8, 32, 128, 512, 2048, 8192, 32768, 65536};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static int (*cu_alloc)(unsigned long long *, size_t);
static int (*cu_free)(unsigned long long);
static void *cu_lib;

static void die(const char *what)
{
	printf("FAIL %s\n", what);
	exit(1);
}

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void *gpu_alloc(size_t len)
{
	unsigned long long p = 0;

	if (cu_alloc(&p, len))
		die("cuMemAlloc");
	return (void *)(uintptr_t)p;
}

/* Our own pin and mapping of [gpu, gpu + len): the floor's pages. */
struct raw_map {
	struct gdrfab_ioc_pin pin;
	uint8_t *map;
};

static double raw_pin(int fd, void *gpu, size_t len, struct raw_map *r)
{
	double t = now_ns();

	r->pin = (struct gdrfab_ioc_pin){.addr = (uintptr_t)gpu, .length = len};
	if (ioctl(fd, GDRFAB_IOC_PIN, &r->pin))
		die("GDRFAB_IOC_PIN");
	return now_ns() - t;
}

static double raw_mmap(int fd, struct raw_map *r)
{
	double t = now_ns();

	r->map = mmap(NULL, r->pin.pinned_length, PROT_READ | PROT_WRITE,
		      MAP_SHARED, fd, (off_t)r->pin.mmap_offset);
	if (r->map == MAP_FAILED)
		die("mmap of /dev/gdrfab");
	return now_ns() - t;
}

static double raw_unmap_unpin(int fd, struct raw_map *r)
{
	struct gdrfab_ioc_unpin u = {.handle = r->pin.handle};
	double t = now_ns();

	munmap(r->map, r->pin.pinned_length);
	if (ioctl(fd, GDRFAB_IOC_UNPIN, &u))
		die("GDRFAB_IOC_UNPIN");
	return now_ns() - t;
}

/* Calls per timed batch: enough that the clock's cost vanishes. */
static unsigned batch_of(size_t len)
{
	return len <= 512 ? 2000 : len <= 8192 ? 500 : 100;
}

static void kmod_copy(void *gpu, void *host, size_t len, bool to_device)
{
	if (!gdrfab_kmod_copy(gpu, host, len, to_device))
		die("gdrfab_kmod_copy did not take the kmod path");
}

/* ns per call of one batch. */
static double time_kmod(void *gpu, void *host, size_t len, bool to_device)
{
	unsigned n = batch_of(len);
	double t = now_ns();

	for (unsigned i = 0; i < n; i++)
		kmod_copy(gpu, host, len, to_device);
	return (now_ns() - t) / n;
}

static double time_memcpy(void *dst, const void *src, size_t len)
{
	unsigned n = batch_of(len);
	double t = now_ns();

	for (unsigned i = 0; i < n; i++) {
		memcpy(dst, src, len);
		/* Keep the compiler from merging or dropping the copies. */
		__asm__ volatile("" : : "r"(dst) : "memory");
	}
	return (now_ns() - t) / n;
}

/* The pieces of the fixed overhead that differ between this VM and a
 * real GPU machine, each timed alone. */
static void print_parts(void *gpu)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	double cls[ROUNDS], mtx[ROUNDS], fence[ROUNDS];
	struct gdrfab_cuda_ptr p;
	const unsigned n = 2000;

	for (int r = 0; r < ROUNDS; r++) {
		double t = now_ns();

		for (unsigned i = 0; i < n; i++)
			if (gdrfab_cuda_classify(gpu, &p))
				die("gdrfab_cuda_classify");
		cls[r] = (now_ns() - t) / n;
		t = now_ns();
		for (unsigned i = 0; i < n; i++) {
			pthread_mutex_lock(&m);
			pthread_mutex_unlock(&m);
		}
		mtx[r] = (now_ns() - t) / n;
		t = now_ns();
		for (unsigned i = 0; i < n; i++) {
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
#if defined(__x86_64__) || defined(__i386__)
			__builtin_ia32_sfence();
#endif
		}
		fence[r] = (now_ns() - t) / n;
	}
	printf("parts of the fixed overhead, each alone (ns per call): classification %.0f (the CUDA stand-in's cuPointerGetAttributes), uncontended mutex lock+unlock %.0f (the path takes two), fence %.0f\n",
	       median(cls, ROUNDS), median(mtx, ROUNDS), median(fence, ROUNDS));
}

static void steady_state(int fd)
{
	uint8_t *gpu = gpu_alloc(BUF_LEN);
	uint8_t *host = aligned_alloc(64, MAX_SIZE), *back;
	double v[4][NSIZES][ROUNDS], over[2][NSIZES];
	struct raw_map r;
	uint8_t *floor_map;

	back = aligned_alloc(64, MAX_SIZE);
	if (!host || !back)
		die("malloc");
	raw_pin(fd, gpu, BUF_LEN, &r);
	raw_mmap(fd, &r);
	floor_map = r.map + ((uintptr_t)gpu - r.pin.pinned_addr);

	/* The bytes land: through gdrfab's window, seen through ours, and
	 * back. Also makes the window and faults every page once. */
	for (size_t i = 0; i < MAX_SIZE; i++)
		host[i] = (uint8_t)(i * 7 + 3);
	kmod_copy(gpu, host, MAX_SIZE, true);
	if (memcmp(floor_map, host, MAX_SIZE))
		die("host->GPU bytes differ");
	memset(back, 0, MAX_SIZE);
	kmod_copy(gpu, back, MAX_SIZE, false);
	if (memcmp(back, host, MAX_SIZE))
		die("GPU->host bytes differ");

	for (int rd = 0; rd < ROUNDS; rd++)
		for (size_t s = 0; s < NSIZES; s++) {
			size_t len = sizes[s];

			/* Alternate which goes first. */
			if (rd % 2) {
				v[1][s][rd] = time_memcpy(floor_map, host, len);
				v[0][s][rd] = time_kmod(gpu, host, len, true);
				v[3][s][rd] = time_memcpy(back, floor_map, len);
				v[2][s][rd] = time_kmod(gpu, back, len, false);
			} else {
				v[0][s][rd] = time_kmod(gpu, host, len, true);
				v[1][s][rd] = time_memcpy(floor_map, host, len);
				v[2][s][rd] = time_kmod(gpu, back, len, false);
				v[3][s][rd] = time_memcpy(back, floor_map, len);
			}
		}

	printf("\nsteady state: ns per copy, medians of %d interleaved rounds (window pinned and mapped, pages faulted in)\n",
	       ROUNDS);
	printf("%8s | %9s %9s %6s %9s | %9s %9s %6s %9s\n", "", "host->GPU", "",
	       "", "", "GPU->host", "", "", "");
	printf("%8s | %9s %9s %6s %9s | %9s %9s %6s %9s\n", "bytes", "kmod",
	       "memcpy", "ratio", "overhead", "kmod", "memcpy", "ratio",
	       "overhead");
	for (size_t s = 0; s < NSIZES; s++) {
		double m[4];

		for (int k = 0; k < 4; k++)
			m[k] = median(v[k][s], ROUNDS);
		over[0][s] = m[0] - m[1];
		over[1][s] = m[2] - m[3];
		printf("%8zu | %9.0f %9.0f %5.2fx %9.0f | %9.0f %9.0f %5.2fx %9.0f\n",
		       sizes[s], m[0], m[1], m[0] / m[1], over[0][s], m[2],
		       m[3], m[2] / m[3], over[1][s]);
	}
	printf("fixed overhead per copy (median over the sizes of kmod - memcpy): host->GPU %.0f ns, GPU->host %.0f ns\n",
	       median(over[0], NSIZES), median(over[1], NSIZES));
	print_parts(gpu);

	raw_unmap_unpin(fd, &r);
	gdrfab_kmod_fini();
	cu_free((uintptr_t)gpu);
	free(host);
	free(back);
}

static void one_time(int fd)
{
	double pin[FRESH], map[FRESH], first[FRESH], all[FRESH], drop[FRESH];
	double pfirst[FRESH], psecond[FRESH];
	uint8_t *bufs[FRESH];
	uint64_t host = 0x1122334455667788ULL;
	const size_t pages = FRESH_LEN / 4096;

	for (int i = 0; i < FRESH; i++) {
		struct raw_map r;
		volatile uint8_t *p;
		uint8_t *gpu = gpu_alloc(FRESH_LEN);
		double t;

		pin[i] = raw_pin(fd, gpu, FRESH_LEN, &r);
		map[i] = raw_mmap(fd, &r);
		p = r.map;
		t = now_ns();
		(void)p[0];
		first[i] = now_ns() - t;
		t = now_ns();
		for (size_t k = 1; k < pages; k++)
			(void)p[k * 4096];
		all[i] = (now_ns() - t) / (double)(pages - 1);
		drop[i] = raw_unmap_unpin(fd, &r);
		cu_free((uintptr_t)gpu);
	}
	/* The provider's first copy into an allocation it has not seen:
	 * classification, pin, mmap, listing, one fault, the copy. The
	 * allocations stay live until the end, so no stale window is
	 * dropped on the way (that would add an unpin). */
	for (int i = 0; i < FRESH; i++) {
		double t;

		bufs[i] = gpu_alloc(FRESH_LEN);
		t = now_ns();
		kmod_copy(bufs[i] + 64, &host, sizeof(host), true);
		pfirst[i] = now_ns() - t;
		t = now_ns();
		kmod_copy(bufs[i] + 64, &host, sizeof(host), true);
		psecond[i] = now_ns() - t;
	}
	gdrfab_kmod_fini();
	for (int i = 0; i < FRESH; i++)
		cu_free((uintptr_t)bufs[i]);

	printf("\none-time costs, medians of %d fresh %lu KiB allocations (ns):\n",
	       FRESH, FRESH_LEN >> 10);
	printf("  pin (GDRFAB_IOC_PIN)                 %9.0f\n",
	       median(pin, FRESH));
	printf("  mmap                                 %9.0f\n",
	       median(map, FRESH));
	printf("  first touch (one fault)              %9.0f\n",
	       median(first, FRESH));
	printf("  each further page's first touch      %9.0f (4 KiB pages here; a GPU maps 64 KiB)\n",
	       median(all, FRESH));
	printf("  munmap + unpin                       %9.0f\n",
	       median(drop, FRESH));
	printf("  provider: first 8 B copy, fresh buffer %7.0f (pin, map, fault, copy)\n",
	       median(pfirst, FRESH));
	printf("  provider: the same copy again        %9.0f (one call, clock included)\n",
	       median(psecond, FRESH));
}

static void cuda_copy(void *dst, const void *src, size_t len, bool to_device)
{
	if (to_device ? gdrfab_cuda_copy_to_device(dst, src, len, 0)
		      : gdrfab_cuda_copy_to_host(dst, src, len, 0))
		die("gdrfab_cuda_copy_*");
}

/* ns per call of one batch of the provider's CUDA copies. */
static double time_cuda(void *gpu, void *host, size_t len, bool to_device)
{
	unsigned n = batch_of(len) / 10;
	double t = now_ns();

	for (unsigned i = 0; i < n; i++)
		cuda_copy(to_device ? gpu : host, to_device ? host : gpu, len,
			  to_device);
	return (now_ns() - t) / n;
}

/* Without gdrfab.ko: what the provider's small copies cost through CUDA.
 * Columns: pageable H->D, pinned H->D, pageable D->H, pinned D->H, host
 * memcpy. */
static int cuda_path(void)
{
	uint8_t *gpu = gpu_alloc(BUF_LEN);
	uint8_t *page = aligned_alloc(4096, MAX_SIZE);
	uint8_t *pin = aligned_alloc(4096, MAX_SIZE);
	uint8_t *other = aligned_alloc(4096, MAX_SIZE);
	double v[5][NSIZES][ROUNDS];

	if (!page || !pin || !other)
		die("malloc");
	if (gdrfab_cuda_host_register(pin, MAX_SIZE))
		die("gdrfab_cuda_host_register");
	for (size_t i = 0; i < MAX_SIZE; i++)
		page[i] = (uint8_t)(i * 7 + 3);
	cuda_copy(gpu, page, MAX_SIZE, true);
	cuda_copy(pin, gpu, MAX_SIZE, false);
	if (memcmp(pin, page, MAX_SIZE))
		die("bytes differ after a round trip through CUDA");
	memcpy(other, page, MAX_SIZE);

	for (int rd = 0; rd < ROUNDS; rd++)
		for (size_t s = 0; s < NSIZES; s++) {
			size_t len = sizes[s];

			v[0][s][rd] = time_cuda(gpu, page, len, true);
			v[1][s][rd] = time_cuda(gpu, pin, len, true);
			v[2][s][rd] = time_cuda(gpu, page, len, false);
			v[3][s][rd] = time_cuda(gpu, pin, len, false);
			v[4][s][rd] = time_memcpy(other, page, len);
		}
	printf("\nno %s: the CUDA path (gdrfab_cuda_copy_to_device/_to_host: copy on gdrfab's stream, event polled), ns per copy, medians of %d interleaved rounds\n",
	       GDRFAB_DEVICE_PATH, ROUNDS);
	printf("%8s | %9s %9s | %9s %9s | %9s %9s\n", "bytes", "H->D", "H->D",
	       "D->H", "D->H", "host", "pinned");
	printf("%8s | %9s %9s | %9s %9s | %9s %9s\n", "", "pageable", "pinned",
	       "pageable", "pinned", "memcpy", "/memcpy");
	for (size_t s = 0; s < NSIZES; s++) {
		double m[5];

		for (int k = 0; k < 5; k++)
			m[k] = median(v[k][s], ROUNDS);
		printf("%8zu | %9.0f %9.0f | %9.0f %9.0f | %9.0f %8.0fx\n",
		       sizes[s], m[0], m[1], m[2], m[3], m[4],
		       (m[1] + m[3]) / 2 / m[4]);
	}
	gdrfab_cuda_host_unregister(pin);
	cu_free((uintptr_t)gpu);
	free(page);
	free(pin);
	free(other);
	printf("kmod copy bench (CUDA path): ok\n");
	return 0;
}

/* The primary context current, as an application has it (the stand-in
 * needs none and has no cuCtxSetCurrent). */
static void make_context_current(void)
{
	int (*retain)(void **, int) =
		(__typeof__(retain))dlsym(cu_lib, "cuDevicePrimaryCtxRetain");
	int (*set)(void *) = (__typeof__(set))dlsym(cu_lib, "cuCtxSetCurrent");
	void *ctx = NULL;

	if (retain && set && (retain(&ctx, 0) || set(ctx)))
		die("making the primary context current");
}

int main(void)
{
	const char *why = NULL;
	void *lib;
	int fd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!gdrfab_cuda_available(&why)) {
		printf("SKIP: kmod copy benchmark: no CUDA: %s\n", why);
		return 77;
	}
	lib = cu_lib = dlopen("libcuda.so.1", RTLD_NOW);
	cu_alloc =
		lib ? (__typeof__(cu_alloc))dlsym(lib, "cuMemAlloc_v2") : NULL;
	cu_free = lib ? (__typeof__(cu_free))dlsym(lib, "cuMemFree_v2") : NULL;
	if (!cu_alloc || !cu_free)
		die("libcuda.so.1 lacks cuMemAlloc_v2/cuMemFree_v2");
	make_context_current();
	if (access(GDRFAB_DEVICE_PATH, R_OK | W_OK)) {
		/* The stand-in's copies are memcpy's: nothing to learn. */
		if (dlsym(lib, "standin_stats")) {
			printf("SKIP: kmod copy benchmark: no %s (gdrfab.ko is not loaded)\n",
			       GDRFAB_DEVICE_PATH);
			return 77;
		}
		return cuda_path();
	}
	fd = open(GDRFAB_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		die("open /dev/gdrfab");
	/* Past the default FI_GDRFAB_KMOD_COPY_MAX, to show where the
	 * threshold sits. */
	gdrfab_params.kmod_copy_max = GDRFAB_MAX_KMOD_COPY;
	printf("gdrfab_kmod_copy vs memcpy through a mapping of the same pages; default FI_GDRFAB_KMOD_COPY_MAX %d\n",
	       GDRFAB_DEFAULT_KMOD_COPY_MAX);
	steady_state(fd);
	one_time(fd);
	close(fd);
	printf("kmod copy bench: ok\n");
	return 0;
}
