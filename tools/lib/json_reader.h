/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * json_reader.h - read a member of the JSON the tools write, with a real
 * tokenizer (strings with escapes, nested objects and arrays are skipped
 * as values), so a key inside a string or a nested object never matches.
 */
#ifndef HKV_TOOLS_JSON_READER_H
#define HKV_TOOLS_JSON_READER_H

#include <stdint.h>

/* the top-level member @key of the JSON object @text, an unsigned integer:
 * 0, -ENOENT (no such member), -ENODATA (it is null), -EINVAL (not an
 * object, malformed, or not a non-negative integer) */
int json_get_u64(const char *text, const char *key, uint64_t *out);

#endif /* HKV_TOOLS_JSON_READER_H */
