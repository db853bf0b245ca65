// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pattern.c - what a sender writes into page k of transfer "salt": word 0
 * the salt, word 1 k, then a mix of (salt, k, word index) in every other
 * word. A receiver can check every byte of a page knowing nothing but the
 * page, and can tell a stale page (another salt) or a misplaced one
 * (another k) from a correct one.
 */
#include <string.h>

#include "hkv-xfer.h"

static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

void pattern_fill(void *page, uint64_t bytes, uint64_t salt, uint64_t k)
{
	uint64_t *w = page, n = bytes / 8, base = mix(salt * 0x9e3779b97f4a7c15ull + k), i;

	w[0] = salt;
	w[1] = k;
	for (i = 2; i < n; i++)
		w[i] = base + i * 0x2545f4914f6cdd1dull;
}

uint64_t pattern_check(const void *page, uint64_t bytes, uint64_t *salt, uint64_t *k)
{
	const uint64_t *w = page;
	uint64_t n = bytes / 8, base, i;

	*salt = w[0];
	*k = w[1];
	base = mix(w[0] * 0x9e3779b97f4a7c15ull + w[1]);
	for (i = 2; i < n; i++)
		if (w[i] != base + i * 0x2545f4914f6cdd1dull)
			return i * 8 + 1;
	return 0;
}
