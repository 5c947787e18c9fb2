/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The quarantine of closed objects (see gdrfab_quarantine.h). libfabric's
 * fi_close() is inline, fid->ops->close(fid): a second close reads the
 * fid, so the fid must still be mapped and its ops must still be a table
 * of functions. A ring of the last GDRFAB_QUARANTINE_LEN closed objects
 * keeps that true for the usual mistakes (closing twice, a descriptor of
 * the MR just closed) at a bounded cost in memory.
 */
#include <pthread.h>
#include <stdlib.h>

#include "gdrfab.h"
#include "gdrfab_fid_tostr.h"
#include "gdrfab_quarantine.h"

static pthread_mutex_t quarantine_lock = PTHREAD_MUTEX_INITIALIZER;
static void *quarantine[GDRFAB_QUARANTINE_LEN];
static size_t quarantine_next;

void gdrfab_fid_retire(struct fid *fid, void *mem)
{
	void *old;

	fid->ops = &gdrfab_dead_fi_ops;
	gdrfab_dead_ops_install(fid);
	pthread_mutex_lock(&quarantine_lock);
	old = quarantine[quarantine_next];
	quarantine[quarantine_next] = mem;
	quarantine_next = (quarantine_next + 1) % GDRFAB_QUARANTINE_LEN;
	pthread_mutex_unlock(&quarantine_lock);
	free(old);
}

bool gdrfab_fid_dead(const struct fid *fid)
{
	return fid && fid->ops == &gdrfab_dead_fi_ops;
}

void gdrfab_quarantine_fini(void)
{
	pthread_mutex_lock(&quarantine_lock);
	for (size_t i = 0; i < GDRFAB_QUARANTINE_LEN; i++) {
		free(quarantine[i]);
		quarantine[i] = NULL;
	}
	quarantine_next = 0;
	pthread_mutex_unlock(&quarantine_lock);
}

int gdrfab_dead_call(const struct fid *fid, const char *call)
{
	GDRFAB_WARN(FI_LOG_CORE, "%s on a %s that was already closed (%p)\n",
		    call, gdrfab_fclass_name(fid->fclass), (void *)fid);
	return -FI_EINVAL;
}

/* The stubs take the table's exact parameters and use few of them. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

static int dead_close(struct fid *fid)
{
	return gdrfab_dead_call(fid, "fi_close");
}

static int dead_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return gdrfab_dead_call(fid, "fi_bind");
}

static int dead_control(struct fid *fid, int command, void *arg)
{
	return gdrfab_dead_call(fid, "fi_control");
}

static int dead_ops_open(struct fid *fid, const char *name, uint64_t flags,
			 void **ops, void *context)
{
	return gdrfab_dead_call(fid, "fi_open_ops");
}

static int dead_ops_set(struct fid *fid, const char *name, uint64_t flags,
			void *ops, void *context)
{
	return gdrfab_dead_call(fid, "fi_set_ops");
}

struct fi_ops gdrfab_dead_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = dead_close,
	.bind = dead_bind,
	.control = dead_control,
	.ops_open = dead_ops_open,
	.tostr = gdrfab_dead_fid_tostr,
	.ops_set = dead_ops_set,
};
