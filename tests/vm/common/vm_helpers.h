/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared setup for the integration tests that run in the soft-RoCE VM:
 * gdrfab is reached through libfabric's real fi_getinfo, as applications
 * reach it (FI_PROVIDER_PATH points at the build). */
#ifndef VM_HELPERS_H
#define VM_HELPERS_H

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#define TEST_VERSION FI_VERSION(1, 17)

/* Hints naming gdrfab, with the mr_mode bits applications usually allow. */
struct fi_info *gdrfab_hints(void);

/* fi_getinfo for gdrfab with the given hints (consumed); NULL on error,
 * with the error in *ret when ret is not NULL. */
struct fi_info *gdrfab_getinfo_hints(struct fi_info *hints, uint64_t flags,
				     const char *node, int *ret);

/* The info for one device (e.g. "rxe0"). */
struct fi_info *gdrfab_info_for(const char *device);

struct test_domain {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
};

/* Opens fabric and domain for a device; asserts on failure. */
void test_domain_open(struct test_domain *t, const char *device);
void test_domain_close(struct test_domain *t);

/* A domain on rxe0 for suites that need just one: .init/.fini. */
extern struct test_domain vm_rxe0;
void vm_rxe0_open(void);
void vm_rxe0_close(void);

/* An enabled endpoint with an AV and a CQ bound. */
struct test_ep {
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

void test_ep_open(struct test_domain *t, struct test_ep *e,
		  enum fi_av_type av_type);
void test_ep_close(struct test_ep *e);

/* Skips the test (printing why) when the VM's devices are missing. */
void require_vm(void);

#endif /* VM_HELPERS_H */
