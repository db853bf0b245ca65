// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * json.c - hkv-bench's JSON values on the tools' writer (latency
 * summaries) and its CSV files.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"

/* ---- JSON --------------------------------------------------------------- */
void json_lat(struct json *j, const char *key, const struct lat *l)
{
	json_obj(j, key);
	json_u64(j, "n", l->n);
	json_dbl(j, "mean", l->mean);
	json_dbl(j, "p50", l->p50);
	json_dbl(j, "p90", l->p90);
	json_dbl(j, "p99", l->p99);
	json_dbl(j, "p999", l->p999);
	json_dbl(j, "max", l->max);
	json_obj_end(j);
}

/* ---- CSV ---------------------------------------------------------------- */
FILE *csv_open(const char *dir, const char *name, const char *header)
{
	char path[4096];
	FILE *f;

	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "hkv-bench: mkdir %s: %s\n", dir, strerror(errno));
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "hkv-bench: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	if (*header)
		fprintf(f, "%s\n", header);
	return f;
}
