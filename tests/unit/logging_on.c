/* SPDX-License-Identifier: BSD-2-Clause */
/* With FI_LOG_LEVEL set, the unit tests run with libfabric's logging on:
 * libfabric reads the variable when it starts, at its first fi_getinfo,
 * which a unit test calling the provider's code directly never makes, so
 * every log line would go unformatted. This starts it before any test,
 * in every test's process, asking for a provider that does not exist so
 * that no NIC is opened. tests/sanitize/run-sanitized.sh runs the suite
 * this way once more (issue 33: a log line must never change what a call
 * does). */
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>

__attribute__((constructor)) static void start_logging(void)
{
	struct fi_info *hints, *info = NULL;

	if (!getenv("FI_LOG_LEVEL"))
		return;
	hints = fi_allocinfo();
	if (!hints)
		return;
	hints->fabric_attr->prov_name = strdup("gdrfab-unit-none");
	(void)fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}
