/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The NVIDIA peer-to-peer kernel API that gdrfab.ko calls, declared from
 * NVIDIA's documentation (GPUDirect RDMA guide, "Kernel API", and the
 * persistent calls of its CUDA 12.2 notes). Used when the module is built
 * without the driver's own nv-p2p.h (no NVIDIA_SRC=); the symbols resolve
 * at load time against nvidia.ko, or against the test stand-in.
 *
 * Structure versions: the upper 16 bits are the major version, which
 * changes with incompatible layouts; the lower 16 the minor, which grows
 * with compatible additions. Driver 580 reports page tables of major 2
 * (a trailing flags member); earlier drivers major 1. gdrfab reads only the
 * leading members both majors share.
 */
#ifndef GDRFAB_NV_P2P_H
#define GDRFAB_NV_P2P_H

#include <linux/types.h>

#define NVIDIA_P2P_MAJOR_VERSION_MASK 0xffff0000
#define NVIDIA_P2P_MINOR_VERSION_MASK 0x0000ffff
#define NVIDIA_P2P_MAJOR_VERSION(v) (((v) & NVIDIA_P2P_MAJOR_VERSION_MASK) >> 16)
#define NVIDIA_P2P_MINOR_VERSION(v) ((v) & NVIDIA_P2P_MINOR_VERSION_MASK)
#define NVIDIA_P2P_MAJOR_VERSION_MATCHES(p, v) \
	(NVIDIA_P2P_MAJOR_VERSION((p)->version) == NVIDIA_P2P_MAJOR_VERSION(v))
#define NVIDIA_P2P_VERSION_COMPATIBLE(p, v)    \
	(NVIDIA_P2P_MAJOR_VERSION_MATCHES(p, v) && \
	 NVIDIA_P2P_MINOR_VERSION((p)->version) >= NVIDIA_P2P_MINOR_VERSION(v))

enum nvidia_p2p_page_size_type {
	NVIDIA_P2P_PAGE_SIZE_4KB = 0,
	NVIDIA_P2P_PAGE_SIZE_64KB,
	NVIDIA_P2P_PAGE_SIZE_128KB,
	NVIDIA_P2P_PAGE_SIZE_COUNT
};

struct nvidia_p2p_page {
	u64 physical_address;
	union nvidia_p2p_request_registers {
		struct {
			u32 wreqmb_h;
			u32 rreqmb_h;
			u32 rreqmb_0;
			u32 reserved[3];
		} fermi;
	} registers;
};

#define NVIDIA_P2P_PAGE_TABLE_VERSION 0x00010002
#define NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(p) \
	NVIDIA_P2P_VERSION_COMPATIBLE(p, NVIDIA_P2P_PAGE_TABLE_VERSION)

struct nvidia_p2p_page_table {
	u32 version;
	u32 page_size; /* enum nvidia_p2p_page_size_type */
	struct nvidia_p2p_page **pages;
	u32 entries;
	u8 *gpu_uuid;
	u32 flags; /* major 2 only: do not read for major 1 tables */
};

int nvidia_p2p_get_pages(u64 p2p_token, u32 va_space, u64 virtual_address,
			 u64 length, struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data);
int nvidia_p2p_put_pages(u64 p2p_token, u32 va_space, u64 virtual_address,
			 struct nvidia_p2p_page_table *page_table);
int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table);

/* The persistent calls (driver R535 and later): no callback, no revocation. */
#define NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API
#define NVIDIA_P2P_FLAGS_DEFAULT 0
int nvidia_p2p_get_pages_persistent(u64 virtual_address, u64 length,
				    struct nvidia_p2p_page_table **page_table,
				    u32 flags);
int nvidia_p2p_put_pages_persistent(u64 virtual_address,
				    struct nvidia_p2p_page_table *page_table,
				    u32 flags);

#endif /* GDRFAB_NV_P2P_H */
