// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * json.c - a small JSON writer (commas and nesting tracked, no allocation)
 * and CSV files for hkv-bench.
 */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"

/* ---- JSON --------------------------------------------------------------- */
static void json_sep(struct json *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = false;
	fprintf(j->f, "\n%*s", 2 * j->depth, "");
	if (key)
		fprintf(j->f, "\"%s\": ", key);
}

static void json_open(struct json *j, const char *key, char c)
{
	json_sep(j, key);
	fputc(c, j->f);
	if (j->depth < (int)HKV_BENCH_ARRAY(j->first) - 1)
		j->depth++;
	j->first[j->depth] = true;
}

static void json_close(struct json *j, char c)
{
	j->depth--;
	fprintf(j->f, "\n%*s%c", 2 * j->depth, "", c);
}

void json_begin(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	fputc('{', f);
	j->first[0] = true;
	j->depth = 1;
	j->first[1] = true;
}

void json_end(struct json *j)
{
	json_close(j, '}');
	fputc('\n', j->f);
	fflush(j->f);
}

void json_obj(struct json *j, const char *key) { json_open(j, key, '{'); }
void json_obj_end(struct json *j) { json_close(j, '}'); }
void json_arr(struct json *j, const char *key) { json_open(j, key, '['); }
void json_arr_end(struct json *j) { json_close(j, ']'); }

void json_u64(struct json *j, const char *key, uint64_t v)
{
	json_sep(j, key);
	fprintf(j->f, "%llu", (unsigned long long)v);
}

void json_dbl(struct json *j, const char *key, double v)
{
	json_sep(j, key);
	if (isfinite(v))
		fprintf(j->f, "%.6g", v);
	else
		fputs("null", j->f);	/* JSON has no inf/nan */
}

void json_str(struct json *j, const char *key, const char *v)
{
	json_sep(j, key);
	fputc('"', j->f);
	for (; *v; v++) {
		if (*v == '"' || *v == '\\')
			fputc('\\', j->f);
		if ((unsigned char)*v >= 0x20)
			fputc(*v, j->f);
	}
	fputc('"', j->f);
}

void json_key(struct json *j, const char *key)
{
	json_sep(j, key);
}

void json_bool(struct json *j, const char *key, bool v)
{
	json_sep(j, key);
	fputs(v ? "true" : "false", j->f);
}

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
