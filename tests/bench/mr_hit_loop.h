/* SPDX-License-Identifier: BSD-2-Clause */
/* The loops of mr_hit_bench (mr_hit_loop.c); each returns non-zero when a
 * call failed. */
#ifndef MR_HIT_LOOP_H
#define MR_HIT_LOOP_H

#include <stdint.h>

#define MRHIT_API __attribute__((visibility("default")))

MRHIT_API int mrhit_setup(void);
MRHIT_API void mrhit_teardown(void);
MRHIT_API uint64_t mrhit_fast_hits(void);
MRHIT_API int mrhit_hit(long n);
MRHIT_API int mrhit_locked_hit(long n);
MRHIT_API int mrhit_miss(long n);
MRHIT_API int mrhit_floor(long n);
/* With a libcuda.so.1 (the stand-in): 0, or -1 without one. */
MRHIT_API int mrhit_cuda_setup(void);
MRHIT_API int mrhit_classify(long n);
MRHIT_API int mrhit_classify_hit(long n);

#endif /* MR_HIT_LOOP_H */
