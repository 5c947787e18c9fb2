// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gdrfab.ko: /dev/gdrfab pins GPU memory through NVIDIA's p2p API and maps
 * it for the CPU, so that gdrfab's libfabric provider can copy small
 * messages to and from GPU memory with loads and stores instead of a CUDA
 * copy. The user ABI is include/gdrfab/gdrfab_ioctl.h.
 */
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/uaccess.h>

#include "gdrfab_drv.h"

bool gdrfab_persistent = true;
module_param_named(persistent, gdrfab_persistent, bool, 0644);
MODULE_PARM_DESC(persistent,
		 "Pin with the persistent p2p API where the driver has it (default 1); pins asking GDRFAB_PIN_REVOCABLE use the callback API anyway");

bool gdrfab_wc = true;
module_param_named(wc, gdrfab_wc, bool, 0644);
MODULE_PARM_DESC(wc, "Map GPU memory write-combining (default 1), else uncached");

unsigned long gdrfab_max_pinned_bytes = 8UL << 30;
module_param_named(max_pinned_bytes, gdrfab_max_pinned_bytes, ulong, 0644);
MODULE_PARM_DESC(max_pinned_bytes, "Bytes one open file may keep pinned (default 8 GiB)");

unsigned int gdrfab_max_regions = 16384;
module_param_named(max_regions, gdrfab_max_regions, uint, 0644);
MODULE_PARM_DESC(max_regions, "Regions one open file may keep pinned (default 16384)");

static int gdrfab_open(struct inode *inode, struct file *file)
{
	struct gdrfab_file *f = gdrfab_file_new();

	if (!f)
		return -ENOMEM;
	f->mapping = file->f_mapping;
	file->private_data = f;
	return 0;
}

static int gdrfab_release(struct inode *inode, struct file *file)
{
	struct gdrfab_file *f = file->private_data;

	gdrfab_region_release_all(f);
	gdrfab_file_put(f);
	return 0;
}

static int gdrfab_mmap(struct file *file, struct vm_area_struct *vma)
{
	return gdrfab_vma_mmap(file->private_data, vma);
}

static long gdrfab_ioc_version(void __user *uarg)
{
	struct gdrfab_ioc_version v = {
		.abi_version = GDRFAB_ABI_VERSION,
		.pin_flags = GDRFAB_PIN_FLAGS_ALL,
		.max_pinned_bytes = gdrfab_max_pinned_bytes,
		.max_regions = gdrfab_max_regions,
		.features = (gdrfab_wc ? GDRFAB_FEATURE_WC : 0),
	};

#ifdef NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API
	if (gdrfab_persistent)
		v.features |= GDRFAB_FEATURE_PERSISTENT;
#endif
	return copy_to_user(uarg, &v, sizeof(v)) ? -EFAULT : 0;
}

static long gdrfab_ioc_pin(struct gdrfab_file *f, void __user *uarg)
{
	struct gdrfab_ioc_pin arg;
	long ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	ret = gdrfab_region_pin(f, &arg);
	if (ret)
		return ret;
	if (copy_to_user(uarg, &arg, sizeof(arg))) {
		/* The caller cannot learn the handle: do not leak the pin. */
		gdrfab_region_unpin(f, arg.handle);
		return -EFAULT;
	}
	return 0;
}

static long gdrfab_ioc_unpin(struct gdrfab_file *f, void __user *uarg)
{
	struct gdrfab_ioc_unpin arg;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	return gdrfab_region_unpin(f, arg.handle);
}

static long gdrfab_ioc_info(struct gdrfab_file *f, void __user *uarg)
{
	struct gdrfab_ioc_info arg;
	long ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	ret = gdrfab_region_info(f, &arg);
	if (ret)
		return ret;
	return copy_to_user(uarg, &arg, sizeof(arg)) ? -EFAULT : 0;
}

static long gdrfab_ioctl(struct file *file, unsigned int cmd,
			 unsigned long uarg)
{
	struct gdrfab_file *f = file->private_data;
	void __user *p = (void __user *)uarg;

	if (!gdrfab_file_is_owner(f))
		return -EPERM;
	switch (cmd) {
	case GDRFAB_IOC_VERSION:
		return gdrfab_ioc_version(p);
	case GDRFAB_IOC_PIN:
		return gdrfab_ioc_pin(f, p);
	case GDRFAB_IOC_UNPIN:
		return gdrfab_ioc_unpin(f, p);
	case GDRFAB_IOC_INFO:
		return gdrfab_ioc_info(f, p);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations gdrfab_fops = {
	.owner = THIS_MODULE,
	.open = gdrfab_open,
	.release = gdrfab_release,
	.unlocked_ioctl = gdrfab_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = gdrfab_mmap,
	.llseek = noop_llseek,
};

static struct miscdevice gdrfab_miscdev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "gdrfab",
	.fops = &gdrfab_fops,
	.mode = 0666,
};

static int __init gdrfab_init(void)
{
	int ret = misc_register(&gdrfab_miscdev);

	if (ret)
		pr_err("gdrfab: cannot register /dev/gdrfab: %d\n", ret);
	else
		pr_info("gdrfab: ABI %u.%u, %s pins, %s mappings\n",
			GDRFAB_ABI_MAJOR, GDRFAB_ABI_MINOR,
			gdrfab_persistent ? "persistent" : "revocable",
			gdrfab_wc ? "write-combining" : "uncached");
	return ret;
}

/*
 * Every open file holds the module, and so does every pin whose
 * revocation callback the driver may still call: by the time this runs,
 * nothing of ours is left for the driver to reach.
 */
static void __exit gdrfab_exit(void)
{
	misc_deregister(&gdrfab_miscdev);
}

module_init(gdrfab_init);
module_exit(gdrfab_exit);
MODULE_LICENSE("Dual MIT/GPL");
MODULE_DESCRIPTION("gdrfab: pin GPU memory with NVIDIA's p2p API and map it for the CPU");
MODULE_VERSION("1.0");
