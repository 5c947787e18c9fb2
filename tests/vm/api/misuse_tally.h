/* SPDX-License-Identifier: BSD-2-Clause */
/* The API-misuse suites (test_misuse*.c): every case is one MISUSE() that
 * asserts the exact code a call returns. Each test runs in its own process;
 * its count of cases reaches the runner through a file, and the runner
 * prints one line at the end: cases tried, and the misuse tests that
 * crashed or hung (timed out). */
#ifndef MISUSE_TALLY_H
#define MISUSE_TALLY_H

#include <criterion/criterion.h>
#include <rdma/fi_errno.h>

extern unsigned misuse_cases;

/* Asserts that call returns want (a 0 or -FI_E* code), counting a case. */
#define MISUSE(call, want)                                                     \
	do {                                                                   \
		long misuse_got_ = (long)(call);                               \
		misuse_cases++;                                                \
		cr_assert_eq(misuse_got_, (long)(want),                        \
			     "%s returned %ld (%s), expected %s", #call,       \
			     misuse_got_, fi_strerror((int)-misuse_got_),      \
			     #want);                                           \
	} while (0)

/* Adds this test's cases to the runner's total (a suite's .fini). */
void misuse_tally_flush(void);

#endif /* MISUSE_TALLY_H */
