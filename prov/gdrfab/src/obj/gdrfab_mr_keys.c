/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The domain's MRs by key, for the accesses its own data path makes on a
 * peer's behalf (atomics): the NIC checks an rkey for RDMA, and this table
 * checks it the same way for the CPU: the key must name a live MR of this
 * domain, the MR must allow the access, and the range must lie inside it.
 * Two MRs of one region may share an rkey (the registration cache): every
 * MR under the key is tried.
 */
#include <rdma/fi_domain.h>

#include "gdrfab.h"
#include "gdrfab_objs.h"

static size_t bucket_of(uint64_t key)
{
	return (size_t)((key ^ key >> 8 ^ key >> 16) % GDRFAB_MR_KEY_BUCKETS);
}

void gdrfab_mr_keys_init(struct gdrfab_domain *domain)
{
	pthread_mutex_init(&domain->keys.lock, NULL);
}

void gdrfab_mr_keys_fini(struct gdrfab_domain *domain)
{
	pthread_mutex_destroy(&domain->keys.lock);
}

void gdrfab_mr_keys_add(struct gdrfab_domain *domain, struct gdrfab_mr *mr)
{
	struct gdrfab_mr **b = &domain->keys.bucket[bucket_of(mr->fid.key)];

	pthread_mutex_lock(&domain->keys.lock);
	mr->next_key = *b;
	*b = mr;
	mr->keyed = true;
	pthread_mutex_unlock(&domain->keys.lock);
}

void gdrfab_mr_keys_remove(struct gdrfab_domain *domain, struct gdrfab_mr *mr)
{
	struct gdrfab_mr **it = &domain->keys.bucket[bucket_of(mr->fid.key)];

	if (!mr->keyed)
		return;
	pthread_mutex_lock(&domain->keys.lock);
	for (; *it; it = &(*it)->next_key) {
		if (*it == mr) {
			*it = mr->next_key;
			break;
		}
	}
	mr->keyed = false;
	pthread_mutex_unlock(&domain->keys.lock);
}

/* Why mr refuses the access, or NULL; *err is the FI_E* to answer. */
static const char *refusal(const struct gdrfab_mr *mr, uint64_t addr,
			   uint64_t len, uint64_t access, int *err)
{
	uintptr_t base = (uintptr_t)mr->desc.base;

	*err = FI_EACCES;
	if ((mr->access & access) != access)
		return access & FI_REMOTE_WRITE ? "key does not allow writes"
						: "key does not allow reads";
	if (addr < base || addr - base > mr->desc.len ||
	    len > mr->desc.len - (addr - base))
		return "range outside the registration";
	if (mr->desc.iface != FI_HMEM_SYSTEM) {
		*err = FI_EOPNOTSUPP;
		return "atomics on GPU memory are not supported";
	}
	return NULL;
}

int gdrfab_mr_keys_access(struct gdrfab_domain *domain, uint64_t key,
			  uint64_t addr, uint64_t len, uint64_t access,
			  void (*fn)(void *mem, void *arg), void *arg,
			  const char **why)
{
	int err = FI_EACCES;

	*why = "unknown or closed key";
	if ((key & ~(uint64_t)UINT32_MAX) == GDRFAB_EMU_KEY) {
		/* Staged GPU memory: no CPU mapping to apply atomics to. */
		*why = "atomics on GPU memory are not supported";
		return FI_EOPNOTSUPP;
	}
	pthread_mutex_lock(&domain->keys.lock);
	for (struct gdrfab_mr *mr = domain->keys.bucket[bucket_of(key)]; mr;
	     mr = mr->next_key) {
		int e;
		const char *r;

		if (mr->fid.key != key)
			continue;
		r = refusal(mr, addr, len, access, &e);
		if (!r) {
			fn((void *)(uintptr_t)addr, arg);
			pthread_mutex_unlock(&domain->keys.lock);
			*why = NULL;
			return 0;
		}
		*why = r;
		err = e;
	}
	pthread_mutex_unlock(&domain->keys.lock);
	return err;
}

size_t gdrfab_mr_keys_rails(struct gdrfab_domain *domain, uint64_t key,
			    uint32_t *rkey, size_t max, bool gpu_ok)
{
	size_t n = 0;

	if (!gdrfab_key_is_rail(key) || domain->rails.count < 2)
		return 0;
	max = GDRFAB_MIN(max, domain->rails.count - 1);
	pthread_mutex_lock(&domain->keys.lock);
	for (struct gdrfab_mr *mr = domain->keys.bucket[bucket_of(key)]; mr;
	     mr = mr->next_key) {
		const struct gdrfab_reg *reg = mr->desc.reg;

		if (mr->fid.key != key || !reg)
			continue;
		/* A READ flush orders its own NIC's writes only: GPU
		 * memory it may flush is written on rail 0 alone. */
		if (mr->desc.iface != FI_HMEM_SYSTEM &&
		    (mr->access & FI_REMOTE_WRITE) && !gpu_ok)
			break;
		for (n = 0; n < max && reg->more_mr[n]; n++)
			rkey[n] = reg->more_mr[n]->rkey;
		if (n < max)
			n = 0;
		break;
	}
	pthread_mutex_unlock(&domain->keys.lock);
	return n;
}
