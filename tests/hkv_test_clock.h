/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hkv_test_clock.h - the monotonic clock in milliseconds, for the test
 * programs' deadlines (header only: the transfer and metrics programs link
 * no test library).
 */
#ifndef HKV_TEST_CLOCK_H
#define HKV_TEST_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

#endif /* HKV_TEST_CLOCK_H */
