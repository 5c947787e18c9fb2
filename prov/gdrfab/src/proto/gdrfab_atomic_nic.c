/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Atomics the NIC executes (the policy below says which): one 8-byte
 * element, as an IBV_WR_ATOMIC_FETCH_AND_ADD or IBV_WR_ATOMIC_CMP_AND_SWP
 * to the target MR's rkey. The operands are copied into the request at the
 * call (so the application may reuse its buffers at once); the NIC writes
 * the value the element held into the request's registered control area,
 * from where it is copied into the result buffers (host or GPU memory)
 * before the completion (gdrfab_atomic_result_step). A key or range the
 * target's NIC refuses comes back as a work completion error: an error
 * completion (FI_EACCES), a log line here, and the connection is made anew (as
 * for refused RMA).
 */
#include <string.h>

#include <rdma/fi_atomic.h>

#include "gdrfab.h"
#include "gdrfab_atomic.h"
#include "gdrfab_hmem.h"
#include "gdrfab_proto.h"
#include "gdrfab_req.h"
#include "gdrfab_strerror.h"

/* Gathers one 8-byte element spread over iovecs (some may be empty).
 * Host memory: GPU operands were copied before the endpoint's lock was
 * taken (gdrfab_atomic_api.c). */
static int gather8(uint64_t *out, const struct iovec *iov, size_t cnt)
{
	uint8_t *p = (uint8_t *)out;
	size_t got = 0;

	for (size_t i = 0; i < cnt && got < sizeof(*out); i++) {
		size_t n = GDRFAB_MIN(iov[i].iov_len, sizeof(*out) - got);

		if (n)
			memcpy(p + got, iov[i].iov_base, n);
		got += n;
	}
	return got == sizeof(*out) ? 0 : -FI_EINVAL;
}

int gdrfab_atomic_nic_prepare(struct gdrfab_proto *proto,
			      struct gdrfab_req *req,
			      const struct gdrfab_atomic_args *a)
{
	int ret = gather8(&req->nic_operand, a->src, a->src_cnt);

	(void)proto; /* called as gdrfab_atomic_prepare is */
	if (!ret && a->kind == GDRFAB_ATOMIC_COMPARE)
		ret = gather8(&req->nic_compare, a->cmp, a->cmp_cnt);
	if (ret)
		return ret;
	req->op = GDRFAB_OP_NIC_ATOMIC;
	req->rseg[0].addr = a->addr;
	req->rseg[0].len = sizeof(uint64_t);
	req->rseg[0].rkey = (uint32_t)a->key;
	req->rseg_count = 1;
	req->len = sizeof(uint64_t);
	req->nic_cswap = a->kind == GDRFAB_ATOMIC_COMPARE;
	if (a->kind != GDRFAB_ATOMIC_WRITE) {
		memcpy(req->iov, a->res, a->res_cnt * sizeof(*a->res));
		for (size_t i = 0; i < a->res_cnt; i++)
			req->desc[i] = a->res_desc ? a->res_desc[i] : NULL;
		req->iov_count = a->res_cnt;
	}
	gdrfab_atomic_add_steps(req);
	return 0;
}

/* ---- which atomics go to the NIC (gdrfab_atomic.h) ---- */
bool gdrfab_nic_atomic_cap_usable(int mode, enum ibv_atomic_cap cap)
{
	switch (mode) {
	case GDRFAB_NIC_ATOMICS_AUTO: return cap == IBV_ATOMIC_GLOB;
	case GDRFAB_NIC_ATOMICS_UNSAFE_HCA:
		return cap == IBV_ATOMIC_GLOB || cap == IBV_ATOMIC_HCA;
	default: return false;
	}
}

uint16_t gdrfab_nic_atomic_cm_flag(int mode, enum ibv_atomic_cap cap)
{
	if (!gdrfab_nic_atomic_cap_usable(mode, cap))
		return 0;
	return cap == IBV_ATOMIC_GLOB ? GDRFAB_CM_F_NIC_ATOMIC_GLOB
				      : GDRFAB_CM_F_NIC_ATOMIC_HCA;
}

bool gdrfab_nic_atomic_pair(int mode, enum ibv_atomic_cap local_cap,
			    uint16_t peer_cm_flags)
{
	uint16_t ok = GDRFAB_CM_F_NIC_ATOMIC_GLOB;

	if (!gdrfab_nic_atomic_cap_usable(mode, local_cap))
		return false;
	if (mode == GDRFAB_NIC_ATOMICS_UNSAFE_HCA)
		ok |= GDRFAB_CM_F_NIC_ATOMIC_HCA;
	return (peer_cm_flags & ok) != 0;
}

bool gdrfab_nic_atomic_eligible(const struct gdrfab_nic_atomic_query *q)
{
	if (q->datatype != FI_INT64 && q->datatype != FI_UINT64)
		return false;
	if (q->count != 1 || q->addr % 8 || q->remote_data)
		return false;
	/* Keys above 32 bits name staged GPU memory, which only the
	 * target's CPU reaches, but for a rail-set domain's, whose low 32
	 * bits are rail 0's rkey. */
	if (q->key > UINT32_MAX && !gdrfab_key_is_rail(q->key))
		return false;
	switch (q->kind) {
	case GDRFAB_ATOMIC_WRITE:
	case GDRFAB_ATOMIC_FETCH: return q->op == FI_SUM;
	case GDRFAB_ATOMIC_COMPARE: return q->op == FI_CSWAP;
	default: return false;
	}
}
