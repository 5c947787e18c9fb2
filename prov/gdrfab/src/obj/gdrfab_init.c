/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The provider entry point: libfabric dlopen()s libgdrfab-fi.so and calls
 * fi_prov_ini() once.
 */
#include <errno.h>

#include "gdrfab.h"
#include "gdrfab_cuda.h"
#include "gdrfab_info.h"
#include "gdrfab_kmod.h"
#include "gdrfab_memmon.h"
#include "gdrfab_objs.h"
#include "gdrfab_params.h"
#include "gdrfab_quarantine.h"
#include "gdrfab_topo.h"

/* libfabric unloads the provider: nothing it allocated for the process
 * outlives it (valgrind on fi_info in the VM showed none left). */
static void gdrfab_cleanup(void)
{
	gdrfab_memmon_stop();
	gdrfab_kmod_fini();
	gdrfab_topo_cache_fini();
	gdrfab_verbs_ports_fini();
	gdrfab_cuda_ptr_fini();
	gdrfab_cuda_copy_fini();
	gdrfab_params_fini();
	gdrfab_quarantine_fini();
}

static int gdrfab_fabric(struct fi_fabric_attr *attr,
			 struct fid_fabric **fabric, void *context)
{
	return gdrfab_fabric_open(attr, fabric, context);
}

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
	.getinfo = gdrfab_getinfo,
	.fabric = gdrfab_fabric,
	.cleanup = gdrfab_cleanup,
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

bool gdrfab_fid_is(const struct fid *fid, size_t fclass)
{
	if (gdrfab_fid_dead(fid)) {
		gdrfab_dead_call(fid, "opening an object on it");
		return false;
	}
	return fid && fid->fclass == fclass && fid->ops;
}

FI_EXT_INI
{
	/* fi_version() is the loading core's: answer for its API, so that an
	 * application asking a 2.x core for its own version finds gdrfab. */
	gdrfab_api_version = gdrfab_api_for_core(fi_version());
	gdrfab_prov.fi_version = gdrfab_api_version;
	gdrfab_params_init();
	GDRFAB_INFO(FI_LOG_CORE,
		    "libfabric core %u.%u: answering for API %u.%u\n",
		    FI_MAJOR(fi_version()), FI_MINOR(fi_version()),
		    FI_MAJOR(gdrfab_api_version), FI_MINOR(gdrfab_api_version));
	return &gdrfab_prov;
}
