/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The provider entry point: libfabric dlopen()s libgdrfab-fi.so and calls
 * fi_prov_ini() once.
 */
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

FI_EXT_INI
{
	/* fi_version() is the loading core's: answer for its API, so that an
	 * application asking a 2.x core for its own version finds gdrfab. */
	gdrfab_api_version = gdrfab_api_for_core(fi_version());
	gdrfab_prov.fi_version = gdrfab_api_version;
	/* The provider's entry points are the object layer's: set here, so
	 * that util/, which defines the provider for every layer's logging,
	 * calls nothing above it. */
	gdrfab_prov.getinfo = gdrfab_getinfo;
	gdrfab_prov.fabric = gdrfab_fabric;
	gdrfab_prov.cleanup = gdrfab_cleanup;
	gdrfab_params_init();
	GDRFAB_INFO(FI_LOG_CORE,
		    "libfabric core %u.%u: answering for API %u.%u\n",
		    FI_MAJOR(fi_version()), FI_MINOR(fi_version()),
		    FI_MAJOR(gdrfab_api_version), FI_MINOR(gdrfab_api_version));
	return &gdrfab_prov;
}
