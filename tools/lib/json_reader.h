/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * json_reader.h - read a member of the JSON the tools write, with a real
 * tokenizer (strings with escapes, nested objects and arrays are skipped
 * as values), so a key inside a string or a nested object never matches.
 */
#ifndef HKV_TOOLS_JSON_READER_H
#define HKV_TOOLS_JSON_READER_H

#include <stddef.h>
#include <stdint.h>

/* the top-level member @key of the JSON object @text, an unsigned integer:
 * 0, -ENOENT (no such member), -ENODATA (it is null), -EINVAL (not an
 * object, malformed, or not a non-negative integer) */
int json_get_u64(const char *text, const char *key, uint64_t *out);
/* the top-level member @key, an array of non-negative integers, into @out
 * (room for @max) and its length into @n: 0, -ENOENT, -ENODATA (null),
 * -E2BIG (more than @max), -EINVAL (anything else); @out may be written
 * in part on failure, @n only on success */
int json_get_u64_array(const char *text, const char *key, uint64_t *out, size_t max,
		       size_t *n);

#endif /* HKV_TOOLS_JSON_READER_H */
