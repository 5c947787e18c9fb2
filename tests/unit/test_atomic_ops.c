/* SPDX-License-Identifier: BSD-2-Clause */
/* The atomics' operation table: every operation on every datatype, each
 * family, applied to arrays of value pairs and checked element by element
 * (new value and fetched value) against fi_atomic(3)'s definitions written
 * out plainly here; pairs gdrfab does not serve are refused. */
#include <criterion/criterion.h>
#include <string.h>

#include "gdrfab_atomic.h"

#define NV 12

/* fi_atomic(3)'s definitions, element by element; wrapping arithmetic
 * through 64-bit integers (two's complement, as gcc converts). */
#define REFERENCE(name, T, FLOAT)                                              \
	static T ref_##name(enum fi_op op, T old, T src, T cmp)                \
	{                                                                      \
		switch (op) {                                                  \
		case FI_MIN: return old < src ? old : src;                     \
		case FI_MAX: return old > src ? old : src;                     \
		case FI_SUM:                                                   \
			return FLOAT ? (T)(old + src)                          \
				     : (T)((unsigned long long)old +           \
					   (unsigned long long)src);           \
		case FI_PROD:                                                  \
			return FLOAT ? (T)(old * src)                          \
				     : (T)((unsigned long long)old *           \
					   (unsigned long long)src);           \
		case FI_LOR: return (old != 0 || src != 0) ? 1 : 0;            \
		case FI_LAND: return (old != 0 && src != 0) ? 1 : 0;           \
		case FI_LXOR: return ((old != 0) ^ (src != 0)) ? 1 : 0;        \
		case FI_ATOMIC_READ: return old;                               \
		case FI_ATOMIC_WRITE: return src;                              \
		case FI_CSWAP: return cmp == old ? src : old;                  \
		case FI_CSWAP_NE: return cmp != old ? src : old;               \
		case FI_CSWAP_LE: return cmp <= old ? src : old;               \
		case FI_CSWAP_LT: return cmp < old ? src : old;                \
		case FI_CSWAP_GE: return cmp >= old ? src : old;               \
		case FI_CSWAP_GT: return cmp > old ? src : old;                \
		default: return bitwise_##name(op, old, src, cmp);             \
		}                                                              \
	}

#define BITWISE(name, T)                                                       \
	static T bitwise_##name(enum fi_op op, T old, T src, T cmp)            \
	{                                                                      \
		unsigned long long o = (unsigned long long)old,                \
				   s = (unsigned long long)src,                \
				   c = (unsigned long long)cmp;                \
		switch (op) {                                                  \
		case FI_BOR: return (T)(o | s);                                \
		case FI_BAND: return (T)(o & s);                               \
		case FI_BXOR: return (T)(o ^ s);                               \
		case FI_MSWAP: return (T)((s & c) | (o & ~c));                 \
		default: cr_assert_fail("op %d has no reference", op);         \
		}                                                              \
		return 0;                                                      \
	}

#define NO_BITWISE(name, T)                                                    \
	static T bitwise_##name(enum fi_op op, T old, T src, T cmp)            \
	{                                                                      \
		(void)old, (void)src, (void)cmp;                               \
		cr_assert_fail("op %d on a float has no reference", op);       \
		return 0;                                                      \
	}

static const long long ints[NV] = {0,	1,    2,   -1,	-3,    7,
				   100, -128, 127, 255, 65535, 1LL << 40};
static const double reals[NV] = {0,   1,    -1,	  2.5,	-3.25, 1e10,
				 0.5, -0.5, 1e-3, 42.0, -1e10, 3.0};

/* Applies op to NV*NV elements (every old and operand pair, the compare
 * value cycling) and checks each against the reference. */
#define CHECK(name, T, FLOAT, VALUES)                                          \
	BITWISE_##FLOAT(name, T)                                               \
		REFERENCE(name, T, FLOAT) static void check_##name(            \
			enum fi_op op, enum fi_datatype dt)                    \
	{                                                                      \
		T dst[NV * NV], src[NV * NV], cmp[NV * NV], old[NV * NV];      \
		T want[NV * NV];                                               \
                                                                               \
		for (int i = 0; i < NV; i++) {                                 \
			for (int j = 0; j < NV; j++) {                         \
				int k = i * NV + j;                            \
				dst[k] = (T)VALUES[i];                         \
				src[k] = (T)VALUES[j];                         \
				cmp[k] = (T)VALUES[(i + j) % 3 ? j : i];       \
				want[k] = ref_##name(op, dst[k], src[k],       \
						     cmp[k]);                  \
			}                                                      \
		}                                                              \
		memset(old, 0x5a, sizeof(old));                                \
		T before[NV * NV];                                             \
		memcpy(before, dst, sizeof(dst));                              \
		gdrfab_atomic_apply(op, dt, dst, src, cmp, old, NV *NV);       \
		for (int k = 0; k < NV * NV; k++) {                            \
			cr_assert(memcmp(&dst[k], &want[k], sizeof(T)) == 0,   \
				  "%s on %s, element %d: new value differs",   \
				  fi_tostr(&op, FI_TYPE_ATOMIC_OP),            \
				  fi_tostr(&dt, FI_TYPE_ATOMIC_TYPE), k);      \
			cr_assert(memcmp(&old[k], &before[k], sizeof(T)) == 0, \
				  "%s on %s, element %d: fetched value "       \
				  "differs",                                   \
				  fi_tostr(&op, FI_TYPE_ATOMIC_OP),            \
				  fi_tostr(&dt, FI_TYPE_ATOMIC_TYPE), k);      \
		}                                                              \
	}

#define BITWISE_0(name, T) BITWISE(name, T)
#define BITWISE_1(name, T) NO_BITWISE(name, T)

CHECK(i8, int8_t, 0, ints)
CHECK(u8, uint8_t, 0, ints)
CHECK(i16, int16_t, 0, ints)
CHECK(u16, uint16_t, 0, ints)
CHECK(i32, int32_t, 0, ints)
CHECK(u32, uint32_t, 0, ints)
CHECK(i64, int64_t, 0, ints)
CHECK(u64, uint64_t, 0, ints)
CHECK(flt, float, 1, reals)
CHECK(dbl, double, 1, reals)

static void check(enum fi_op op, enum fi_datatype dt)
{
	switch (dt) {
	case FI_INT8: check_i8(op, dt); break;
	case FI_UINT8: check_u8(op, dt); break;
	case FI_INT16: check_i16(op, dt); break;
	case FI_UINT16: check_u16(op, dt); break;
	case FI_INT32: check_i32(op, dt); break;
	case FI_UINT32: check_u32(op, dt); break;
	case FI_INT64: check_i64(op, dt); break;
	case FI_UINT64: check_u64(op, dt); break;
	case FI_FLOAT: check_flt(op, dt); break;
	case FI_DOUBLE: check_dbl(op, dt); break;
	default: cr_assert_fail("datatype %d", dt);
	}
}

static bool any_family(enum fi_op op, enum fi_datatype dt)
{
	return gdrfab_atomic_valid(GDRFAB_ATOMIC_WRITE, op, dt) ||
	       gdrfab_atomic_valid(GDRFAB_ATOMIC_FETCH, op, dt) ||
	       gdrfab_atomic_valid(GDRFAB_ATOMIC_COMPARE, op, dt);
}

Test(atomic_ops, every_served_op_and_datatype_matches_the_reference)
{
	int checked = 0;

	for (enum fi_datatype dt = FI_INT8; dt <= FI_DOUBLE; dt++) {
		for (enum fi_op op = FI_MIN; op <= FI_MSWAP; op++) {
			if (!any_family(op, dt))
				continue;
			check(op, dt);
			checked++;
		}
	}
	/* 8 integer types x 19 ops, 2 float types x 15 (no BOR, BAND,
	 * BXOR, MSWAP). */
	cr_assert_eq(checked, 8 * 19 + 2 * 15);
}

Test(atomic_ops, the_families_take_the_ops_fi_atomic_3_gives_them)
{
	/* fi_atomic: the arithmetic, logical, bitwise ops and WRITE. */
	cr_assert(gdrfab_atomic_valid(GDRFAB_ATOMIC_WRITE, FI_SUM, FI_INT8));
	cr_assert(gdrfab_atomic_valid(GDRFAB_ATOMIC_WRITE, FI_ATOMIC_WRITE,
				      FI_DOUBLE));
	cr_assert_not(gdrfab_atomic_valid(GDRFAB_ATOMIC_WRITE, FI_ATOMIC_READ,
					  FI_UINT64));
	cr_assert_not(
		gdrfab_atomic_valid(GDRFAB_ATOMIC_WRITE, FI_CSWAP, FI_UINT64));
	/* fi_fetch_atomic: those and READ. */
	cr_assert(gdrfab_atomic_valid(GDRFAB_ATOMIC_FETCH, FI_ATOMIC_READ,
				      FI_FLOAT));
	cr_assert(gdrfab_atomic_valid(GDRFAB_ATOMIC_FETCH, FI_BXOR, FI_INT16));
	cr_assert_not(
		gdrfab_atomic_valid(GDRFAB_ATOMIC_FETCH, FI_MSWAP, FI_UINT32));
	/* fi_compare_atomic: the swaps only. */
	cr_assert(gdrfab_atomic_valid(GDRFAB_ATOMIC_COMPARE, FI_CSWAP_GT,
				      FI_DOUBLE));
	cr_assert_not(
		gdrfab_atomic_valid(GDRFAB_ATOMIC_COMPARE, FI_SUM, FI_UINT64));
	/* Bitwise on floats, and unserved datatypes. */
	cr_assert_not(
		gdrfab_atomic_valid(GDRFAB_ATOMIC_WRITE, FI_BOR, FI_FLOAT));
	cr_assert_not(gdrfab_atomic_valid(GDRFAB_ATOMIC_COMPARE, FI_MSWAP,
					  FI_DOUBLE));
	for (enum fi_datatype dt = FI_FLOAT_COMPLEX;
	     dt <= FI_LONG_DOUBLE_COMPLEX; dt++)
		cr_assert_not(any_family(FI_SUM, dt) ||
				      any_family(FI_CSWAP, dt),
			      "datatype %d", dt);
	cr_assert_not(any_family(FI_SUM, (enum fi_datatype)99));
	cr_assert_not(any_family((enum fi_op)99, FI_INT32));
	cr_assert_eq(gdrfab_atomic_size(FI_UINT16), 2);
	cr_assert_eq(gdrfab_atomic_size(FI_DOUBLE), 8);
	cr_assert_eq(gdrfab_atomic_size(FI_LONG_DOUBLE), 0);
	cr_assert_eq(
		gdrfab_atomic_operands(GDRFAB_ATOMIC_FETCH, FI_ATOMIC_READ), 0);
	cr_assert_eq(gdrfab_atomic_operands(GDRFAB_ATOMIC_COMPARE, FI_CSWAP),
		     2);
}

Test(atomic_ops, a_read_changes_nothing_and_a_null_old_is_allowed)
{
	uint32_t v[3] = {1, 2, 3}, got[3];
	uint32_t one[3] = {5, 5, 5};

	gdrfab_atomic_apply(FI_ATOMIC_READ, FI_UINT32, v, NULL, NULL, got, 3);
	cr_assert(v[0] == 1 && v[1] == 2 && v[2] == 3);
	cr_assert(got[0] == 1 && got[1] == 2 && got[2] == 3);
	gdrfab_atomic_apply(FI_SUM, FI_UINT32, v, one, NULL, NULL, 3);
	cr_assert(v[0] == 6 && v[1] == 7 && v[2] == 8);
}
