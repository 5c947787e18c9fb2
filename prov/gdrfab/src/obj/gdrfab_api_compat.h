/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Parts of newer libfabric APIs that gdrfab answers for (up to
 * GDRFAB_API_MAX) but that older build headers lack. The values are the
 * ABI's, so the same binary serves an application built with either.
 */
#ifndef GDRFAB_API_COMPAT_H
#define GDRFAB_API_COMPAT_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/fi_domain.h>

#ifndef FI_MR_DMABUF
/* API 1.20: fi_mr_attr's mr_iov is then a struct fi_mr_dmabuf. */
#define FI_MR_DMABUF (1ULL << 40)
struct fi_mr_dmabuf {
	int fd;
	uint64_t offset;
	size_t len;
	void *base_addr;
};
#endif
#ifndef FI_MR_SINGLE_USE
#define FI_MR_SINGLE_USE (1ULL << 41)
#endif

#endif /* GDRFAB_API_COMPAT_H */
