/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * parse.h - the one number parser of the hugekv tools. One meaning of the
 * suffixes, everywhere:
 *
 *   sizes (bytes):  K M G T P E are powers of 1024, an optional trailing
 *                   "B" or "iB" ("64K", "64KiB", "1.5G", "4096", "4096B")
 *   counts:         K M G T are powers of 1000 ("3.5M" ops = 3500000,
 *                   "16K" pages = 16000)
 *
 * Decimal digits only, with an optional fraction; the value must come to a
 * whole number. Rejected with -EINVAL: signs, spaces, hex ("0x10M"),
 * exponents, "inf"/"nan", unknown suffixes, a fraction of a byte or of a
 * count; with -ERANGE: anything above 2^64 - 1. Nothing is written to @out
 * on failure.
 */
#ifndef HKV_TOOLS_PARSE_H
#define HKV_TOOLS_PARSE_H

#include <stdint.h>

int tool_parse_size(const char *s, uint64_t *out);
int tool_parse_count(const char *s, uint64_t *out);
/* a decimal integer in [min, max]; -EINVAL otherwise (-ERANGE outside) */
int tool_parse_int(const char *s, long min, long max, long *out);
/* a finite decimal number in [lo, hi] (seconds, fractions); -EINVAL for
 * NaN, infinities, hex and junk, -ERANGE outside [lo, hi] */
int tool_parse_double(const char *s, double lo, double hi, double *out);
/* what a parser's -errno means, for a message: "not a number ...", ... */
const char *tool_parse_strerror(int err);

#endif /* HKV_TOOLS_PARSE_H */
