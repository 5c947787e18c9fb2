// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * CPU mappings of pinned regions. Pages are inserted lazily, one fault at
 * a time, under the region's map_lock: the driver may revoke a region
 * before mmap() has linked the new VMA, where an eager mapping would escape
 * the revocation's zap and keep pointing at freed GPU pages. With lazy
 * faults such a VMA has no PTEs, and its first access finds the region
 * revoked and gets SIGBUS.
 */
#include <linux/mm.h>
#include <linux/version.h>

#include "gdrfab_drv.h"

static void gdrfab_vma_open(struct vm_area_struct *vma)
{
	/* A split or a moved VMA: each one holds the region. */
	gdrfab_region_get(vma->vm_private_data);
}

static void gdrfab_vma_close(struct vm_area_struct *vma)
{
	gdrfab_region_put(vma->vm_private_data);
}

static vm_fault_t gdrfab_vma_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct gdrfab_region *r = vma->vm_private_data;
	u64 off = ((u64)vmf->pgoff << PAGE_SHIFT) - r->mmap_offset;
	unsigned long pfn;
	vm_fault_t ret = VM_FAULT_SIGBUS;

	/* map_lock (read), in the fault path: the region stays LIVE
	 * and its page table allocated until the PTE is in. */
	down_read(&r->map_lock);
	if (atomic_read(&r->state) == GDRFAB_R_LIVE) {
		pfn = gdrfab_region_pfn(r, off);
		if (pfn)
			ret = vmf_insert_pfn_prot(vma, vmf->address, pfn,
						  vma->vm_page_prot);
	}
	up_read(&r->map_lock);
	return ret;
}

static const struct vm_operations_struct gdrfab_vm_ops = {
	.open = gdrfab_vma_open,
	.close = gdrfab_vma_close,
	.fault = gdrfab_vma_fault,
};

static void gdrfab_vma_set_flags(struct vm_area_struct *vma)
{
	/*
	 * PFN memory without struct pages; never copied into a child
	 * (DONTCOPY), grown by mremap (DONTEXPAND) or dumped to a core file.
	 */
	const unsigned long flags =
		VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP | VM_DONTCOPY;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

int gdrfab_vma_mmap(struct gdrfab_file *f, struct vm_area_struct *vma)
{
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	u64 len = vma->vm_end - vma->vm_start;
	struct gdrfab_region *r, *found = NULL;

	if (!gdrfab_file_is_owner(f))
		return -EPERM;
	/* A private mapping would copy GPU pages on write: refuse it. */
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_pgoff > U64_MAX >> PAGE_SHIFT)
		return -EINVAL;

	/* f->lock (under the mm's mmap_lock): the region list. */
	mutex_lock(&f->lock);
	list_for_each_entry(r, &f->regions, link) {
		if (off >= r->mmap_offset && off - r->mmap_offset < r->len &&
		    len <= r->len - (off - r->mmap_offset)) {
			found = r;
			break;
		}
	}
	if (found && atomic_read(&found->state) == GDRFAB_R_LIVE)
		gdrfab_region_get(found);
	else
		found = NULL;
	mutex_unlock(&f->lock);
	if (!found)
		return -EINVAL;

	gdrfab_vma_set_flags(vma);
	vma->vm_page_prot = found->wc ? pgprot_writecombine(vma->vm_page_prot) :
					pgprot_noncached(vma->vm_page_prot);
	vma->vm_private_data = found;
	vma->vm_ops = &gdrfab_vm_ops;
	return 0;
}
