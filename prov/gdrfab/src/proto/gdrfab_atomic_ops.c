/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The operation table of gdrfab's atomics: which fi_op and fi_datatype
 * pairs each call family serves, and their application at the target.
 *
 * Each element is one compare-and-swap loop on an integer of the element's
 * width (floats go through their bit pattern), so an element is updated
 * atomically with respect to any other CPU atomic on it, wherever it comes
 * from: another endpoint's progress thread, another process mapping the
 * same memory, or the application itself. Arithmetic on signed integers
 * is done in unsigned types (wrapping, as the NIC's would, never undefined
 * behaviour).
 */
#include <string.h>

#include "gdrfab_atomic.h"

size_t gdrfab_atomic_size(enum fi_datatype datatype)
{
	switch (datatype) {
	case FI_INT8:
	case FI_UINT8: return 1;
	case FI_INT16:
	case FI_UINT16: return 2;
	case FI_INT32:
	case FI_UINT32:
	case FI_FLOAT: return 4;
	case FI_INT64:
	case FI_UINT64:
	case FI_DOUBLE: return 8;
	default: return 0;
	}
}

static bool is_float(enum fi_datatype datatype)
{
	return datatype == FI_FLOAT || datatype == FI_DOUBLE;
}

bool gdrfab_atomic_valid(enum gdrfab_atomic_kind kind, enum fi_op op,
			 enum fi_datatype datatype)
{
	if (!gdrfab_atomic_size(datatype))
		return false;
	switch (op) {
	case FI_BOR:
	case FI_BAND:
	case FI_BXOR:
		/* Bitwise: integers only. */
		return kind != GDRFAB_ATOMIC_COMPARE && !is_float(datatype);
	case FI_MIN:
	case FI_MAX:
	case FI_SUM:
	case FI_PROD:
	case FI_LOR:
	case FI_LAND:
	case FI_LXOR:
	case FI_ATOMIC_WRITE: return kind != GDRFAB_ATOMIC_COMPARE;
	case FI_ATOMIC_READ: return kind == GDRFAB_ATOMIC_FETCH;
	case FI_CSWAP:
	case FI_CSWAP_NE:
	case FI_CSWAP_LE:
	case FI_CSWAP_LT:
	case FI_CSWAP_GE:
	case FI_CSWAP_GT: return kind == GDRFAB_ATOMIC_COMPARE;
	case FI_MSWAP:
		return kind == GDRFAB_ATOMIC_COMPARE && !is_float(datatype);
	default: return false;
	}
}

size_t gdrfab_atomic_operands(enum gdrfab_atomic_kind kind, enum fi_op op)
{
	if (op == FI_ATOMIC_READ)
		return 0;
	return kind == GDRFAB_ATOMIC_COMPARE ? 2 : 1;
}

/* The new value of an element holding old, or false when the operation
 * leaves it as it is. Shared by integers and floats (T), with the
 * wrapping arithmetic done in W for integers. */
#define COMMON_OPS(T, W)                                                       \
	case FI_MIN: *out = src < old ? src : old; return src < old;           \
	case FI_MAX: *out = src > old ? src : old; return src > old;           \
	case FI_SUM: *out = (T)((W)old + (W)src); return true;                 \
	case FI_PROD: *out = (T)((W)old * (W)src); return true;                \
	case FI_LOR: *out = (T)(old || src); return true;                      \
	case FI_LAND: *out = (T)(old && src); return true;                     \
	case FI_LXOR: *out = (T)(!old != !src); return true;                   \
	case FI_ATOMIC_WRITE: *out = src; return true;                         \
	case FI_CSWAP: *out = src; return cmp == old;                          \
	case FI_CSWAP_NE: *out = src; return cmp != old;                       \
	case FI_CSWAP_LE: *out = src; return cmp <= old;                       \
	case FI_CSWAP_LT: *out = src; return cmp < old;                        \
	case FI_CSWAP_GE: *out = src; return cmp >= old;                       \
	case FI_CSWAP_GT:                                                      \
		*out = src;                                                    \
		return cmp > old;

#define INT_CALC(name, T, W)                                                   \
	static bool calc_##name(enum fi_op op, T old, T src, T cmp, T *out)    \
	{                                                                      \
		switch (op) {                                                  \
			COMMON_OPS(T, W)                                       \
		case FI_BOR: *out = (T)(old | src); return true;               \
		case FI_BAND: *out = (T)(old & src); return true;              \
		case FI_BXOR: *out = (T)(old ^ src); return true;              \
		case FI_MSWAP:                                                 \
			*out = (T)((src & cmp) | (old & ~cmp));                \
			return true;                                           \
		default: return false; /* FI_ATOMIC_READ */                    \
		}                                                              \
	}

#define FLOAT_CALC(name, T)                                                    \
	static bool calc_##name(enum fi_op op, T old, T src, T cmp, T *out)    \
	{                                                                      \
		switch (op) {                                                  \
			COMMON_OPS(T, T)                                       \
		default: return false; /* FI_ATOMIC_READ */                    \
		}                                                              \
	}

/* Wider unsigned types for products: uint16_t * uint16_t would be done
 * in (overflowing) int. */
INT_CALC(i8, int8_t, uint32_t)
INT_CALC(u8, uint8_t, uint32_t)
INT_CALC(i16, int16_t, uint32_t)
INT_CALC(u16, uint16_t, uint32_t)
INT_CALC(i32, int32_t, uint64_t)
INT_CALC(u32, uint32_t, uint64_t)
INT_CALC(i64, int64_t, uint64_t)
INT_CALC(u64, uint64_t, uint64_t)
FLOAT_CALC(flt, float)
FLOAT_CALC(dbl, double)

/* One element: a compare-and-swap loop on the bits (type B) of a T. */
#define APPLY(name, T, B)                                                      \
	static void apply_##name(enum fi_op op, uint8_t *dst,                  \
				 const uint8_t *src, const uint8_t *cmp,       \
				 uint8_t *old, size_t count)                   \
	{                                                                      \
		for (size_t i = 0; i < count; i++) {                           \
			B *p = (B *)(void *)(dst + i * sizeof(T));             \
			B bits = __atomic_load_n(p, __ATOMIC_ACQUIRE), nbits;  \
			T s = 0, c = 0, o, n;                                  \
                                                                               \
			if (src)                                               \
				memcpy(&s, src + i * sizeof(T), sizeof(T));    \
			if (cmp)                                               \
				memcpy(&c, cmp + i * sizeof(T), sizeof(T));    \
			for (;;) {                                             \
				memcpy(&o, &bits, sizeof(T));                  \
				if (!calc_##name(op, o, s, c, &n))             \
					break;                                 \
				memcpy(&nbits, &n, sizeof(T));                 \
				if (__atomic_compare_exchange_n(               \
					    p, &bits, nbits, false,            \
					    __ATOMIC_ACQ_REL,                  \
					    __ATOMIC_ACQUIRE))                 \
					break;                                 \
			}                                                      \
			if (old)                                               \
				memcpy(old + i * sizeof(T), &bits, sizeof(T)); \
		}                                                              \
	}

APPLY(i8, int8_t, uint8_t)
APPLY(u8, uint8_t, uint8_t)
APPLY(i16, int16_t, uint16_t)
APPLY(u16, uint16_t, uint16_t)
APPLY(i32, int32_t, uint32_t)
APPLY(u32, uint32_t, uint32_t)
APPLY(i64, int64_t, uint64_t)
APPLY(u64, uint64_t, uint64_t)
APPLY(flt, float, uint32_t)
APPLY(dbl, double, uint64_t)

void gdrfab_atomic_apply(enum fi_op op, enum fi_datatype datatype, void *dst,
			 const void *src, const void *cmp, void *old,
			 size_t count)
{
	switch (datatype) {
	case FI_INT8: apply_i8(op, dst, src, cmp, old, count); break;
	case FI_UINT8: apply_u8(op, dst, src, cmp, old, count); break;
	case FI_INT16: apply_i16(op, dst, src, cmp, old, count); break;
	case FI_UINT16: apply_u16(op, dst, src, cmp, old, count); break;
	case FI_INT32: apply_i32(op, dst, src, cmp, old, count); break;
	case FI_UINT32: apply_u32(op, dst, src, cmp, old, count); break;
	case FI_INT64: apply_i64(op, dst, src, cmp, old, count); break;
	case FI_UINT64: apply_u64(op, dst, src, cmp, old, count); break;
	case FI_FLOAT: apply_flt(op, dst, src, cmp, old, count); break;
	case FI_DOUBLE: apply_dbl(op, dst, src, cmp, old, count); break;
	default: break;
	}
}
