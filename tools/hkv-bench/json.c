// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * json.c - hkv-bench's JSON values on the tools' writer: latency
 * summaries from a field table.
 */
#include "common.h"

#define LAT_F(m)	JSON_FIELD(struct lat, m, JSON_DBL)
static const struct json_field lat_fields[] = {
	LAT_F(mean), LAT_F(p50), LAT_F(p90), LAT_F(p99), LAT_F(p999), LAT_F(max),
};

void json_lat(struct json *j, const char *key, const struct lat *l)
{
	json_obj(j, key);
	json_u64(j, "n", l->n);
	json_fields(j, l, lat_fields, JSON_NFIELDS(lat_fields));
	json_obj_end(j);
}
