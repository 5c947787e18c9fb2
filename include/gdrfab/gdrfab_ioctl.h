/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * gdrfab_ioctl.h - the user ABI of /dev/gdrfab (kmod/gdrfab.ko).
 *
 * A process opens /dev/gdrfab, pins a range of its GPU memory with
 * GDRFAB_IOC_PIN, and mmap()s the returned offset to get a CPU mapping of
 * that GPU memory. Only the process that opened the file may pin, map, query
 * or unpin through it; a child that inherits the descriptor gets -EPERM.
 *
 * Every structure has a fixed layout (explicit padding, 64-bit fields
 * aligned) so that 32- and 64-bit callers agree. Fields marked "in" are read
 * by the module, "out" are written by it; reserved fields must be zero.
 *
 * Versioning: GDRFAB_IOC_VERSION returns the ABI the module speaks. A new
 * major version means an incompatible change; a caller must refuse a module
 * whose major differs from GDRFAB_ABI_MAJOR. Minor versions only add
 * ioctls, flags or trailing "out" fields, so a caller built against an older
 * minor keeps working.
 */
#ifndef GDRFAB_IOCTL_H
#define GDRFAB_IOCTL_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define GDRFAB_DEVICE_PATH "/dev/gdrfab"

#define GDRFAB_ABI_MAJOR	    1
#define GDRFAB_ABI_MINOR	    0
#define GDRFAB_ABI_VERSION	    ((GDRFAB_ABI_MAJOR << 16) | GDRFAB_ABI_MINOR)
#define GDRFAB_ABI_VERSION_MAJOR(v) ((v) >> 16)

/* The granule the NVIDIA driver pins in: ranges are rounded out to it. */
#define GDRFAB_GPU_PAGE_SHIFT 16
#define GDRFAB_GPU_PAGE_SIZE  (1ULL << GDRFAB_GPU_PAGE_SHIFT)

/* GDRFAB_IOC_VERSION: what the module speaks and allows (all out). */
struct gdrfab_ioc_version {
	__u32 abi_version;	/* GDRFAB_ABI_VERSION of the module */
	__u32 pin_flags;	/* the GDRFAB_PIN_* flags it accepts */
	__u64 max_pinned_bytes; /* per open file */
	__u32 max_regions;	/* per open file */
	__u32 features;		/* GDRFAB_FEATURE_* */
};

/* The module was built with the persistent p2p API. */
#define GDRFAB_FEATURE_PERSISTENT (1U << 0)
/* CPU mappings are requested write-combining. */
#define GDRFAB_FEATURE_WC (1U << 1)

/*
 * Pin with nvidia_p2p_get_pages() and a revocation callback even where the
 * persistent API exists. The mapping then dies (SIGBUS on access) when the
 * driver revokes it, e.g. when the GPU memory is freed.
 */
#define GDRFAB_PIN_REVOCABLE (1U << 0)
#define GDRFAB_PIN_FLAGS_ALL GDRFAB_PIN_REVOCABLE

/* GDRFAB_IOC_PIN */
struct gdrfab_ioc_pin {
	__u64 addr;	     /* in: GPU virtual address (any alignment) */
	__u64 length;	     /* in: bytes, > 0 */
	__u32 flags;	     /* in: GDRFAB_PIN_* */
	__u32 reserved;	     /* in: 0 */
	__u64 handle;	     /* out: names the region in later calls */
	__u64 mmap_offset;   /* out: pass to mmap() to map the region */
	__u64 pinned_addr;   /* out: addr rounded down to 64 KB */
	__u64 pinned_length; /* out: the 64 KB-rounded length mapped */
};

/* GDRFAB_IOC_UNPIN */
struct gdrfab_ioc_unpin {
	__u64 handle; /* in */
};

/* Region states reported by GDRFAB_IOC_INFO. */
#define GDRFAB_REGION_PINNED  0
#define GDRFAB_REGION_REVOKED 1 /* the driver took it back: mappings fault */

/*
 * Region flags reported by GDRFAB_IOC_INFO: pinned with the persistent API,
 * physically contiguous, mapped write-combining.
 */
#define GDRFAB_REGION_PERSISTENT (1U << 0)
#define GDRFAB_REGION_CONTIGUOUS (1U << 1)
#define GDRFAB_REGION_WC	 (1U << 2)

/* GDRFAB_IOC_INFO */
struct gdrfab_ioc_info {
	__u64 handle;	     /* in */
	__u64 pinned_addr;   /* out */
	__u64 pinned_length; /* out */
	__u64 mmap_offset;   /* out */
	__u32 page_size;     /* out: the GPU page size in bytes */
	__u32 pt_version;    /* out: the driver's page-table version */
	__u32 entries;	     /* out: GPU pages in the region */
	__u32 state;	     /* out: GDRFAB_REGION_* */
	__u32 flags;	     /* out: GDRFAB_REGION_PERSISTENT... */
	__u32 reserved;
	/*
	 * out: how many regions of this file the driver has revoked so far.
	 * A caller that caches mappings can compare it with the value it saw
	 * last instead of querying each region.
	 */
	__u64 generation;
};

#define GDRFAB_IOC_MAGIC   0xD7
#define GDRFAB_IOC_VERSION _IOR(GDRFAB_IOC_MAGIC, 0, struct gdrfab_ioc_version)
#define GDRFAB_IOC_PIN	   _IOWR(GDRFAB_IOC_MAGIC, 1, struct gdrfab_ioc_pin)
#define GDRFAB_IOC_UNPIN   _IOW(GDRFAB_IOC_MAGIC, 2, struct gdrfab_ioc_unpin)
#define GDRFAB_IOC_INFO	   _IOWR(GDRFAB_IOC_MAGIC, 3, struct gdrfab_ioc_info)

#endif /* GDRFAB_IOCTL_H */
