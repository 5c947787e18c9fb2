/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Atomics (fi_atomic(3)): which operation and datatype pairs gdrfab
 * serves, and how the target applies one. Every atomic is executed by the
 * target's data path with the CPU's lock-free atomic instructions, element
 * by element, so it is atomic with respect to every other gdrfab atomic on
 * that location (from any endpoint or process) and to the application's
 * own atomic instructions of the same width (man/fi_gdrfab.7 says why no
 * NIC atomics are mixed in).
 */
#ifndef GDRFAB_ATOMIC_H
#define GDRFAB_ATOMIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fi_atomic.h>

/* The three call families: fi_atomic, fi_fetch_atomic, fi_compare_atomic. */
enum gdrfab_atomic_kind {
	GDRFAB_ATOMIC_WRITE = 1,
	GDRFAB_ATOMIC_FETCH = 2,
	GDRFAB_ATOMIC_COMPARE = 3,
};

/* Bytes of one element of datatype, or 0 for a datatype gdrfab does not
 * serve (complex, long double, 128-bit). */
size_t gdrfab_atomic_size(enum fi_datatype datatype);

/* Whether the call family serves op on datatype. */
bool gdrfab_atomic_valid(enum gdrfab_atomic_kind kind, enum fi_op op,
			 enum fi_datatype datatype);

/* Operand arrays a request carries: 0 (FI_ATOMIC_READ), 1, or 2 (compare
 * and swap: the operand and the compare values). */
size_t gdrfab_atomic_operands(enum gdrfab_atomic_kind kind, enum fi_op op);

/* Applies op to count elements at dst (naturally aligned, in memory the
 * caller may write), each element atomically: src holds the operands
 * (unused for FI_ATOMIC_READ), cmp the compare values (compare family),
 * and old, when not NULL, receives each element's value before the
 * operation. The pair must be valid for kind. */
void gdrfab_atomic_apply(enum fi_op op, enum fi_datatype datatype, void *dst,
			 const void *src, const void *cmp, void *old,
			 size_t count);

#endif /* GDRFAB_ATOMIC_H */
