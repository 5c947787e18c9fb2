/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The provider object every layer logs through, the libfabric API gdrfab
 * answers for, and errno mapping. The entry points (getinfo, fabric,
 * cleanup) are the object layer's: fi_prov_ini (obj/gdrfab_init.c) sets
 * them, so that nothing here calls upward.
 */
#include <errno.h>

#include "gdrfab.h"

uint32_t gdrfab_api_version = GDRFAB_API_MIN;

uint32_t gdrfab_api_for_core(uint32_t core)
{
	if (FI_VERSION_LT(core, GDRFAB_API_MIN))
		return GDRFAB_API_MIN;
	if (FI_VERSION_LT(GDRFAB_API_MAX, core))
		return GDRFAB_API_MAX;
	return core;
}

struct fi_provider gdrfab_prov = {
	.version = GDRFAB_PROV_VERSION,
	.fi_version = GDRFAB_API_MIN,
	.name = FI_GDRFAB_PROV_NAME,
};

int gdrfab_errno_to_fi(int err)
{
	switch (err) {
	case 0: return 0;
	case ENOMEM: return -FI_ENOMEM;
	case EINVAL: return -FI_EINVAL;
	case EACCES:
	case EPERM: return -FI_EACCES;
	case EAGAIN: return -FI_EAGAIN;
	case EBUSY: return -FI_EBUSY;
	case ENODEV:
	case ENXIO: return -FI_ENODEV;
	case ENOSPC: return -FI_ENOSPC;
	case EFAULT: return -FI_EFAULT;
	case EOPNOTSUPP: return -FI_EOPNOTSUPP;
	case ENOSYS: return -FI_ENOSYS;
	case ETIMEDOUT: return -FI_ETIMEDOUT;
	case EMFILE: return -FI_EMFILE;
	default: return -FI_EOTHER;
	}
}
