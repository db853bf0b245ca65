// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * json.c - report fields: one table (struct col) gives a record's JSON
 * members and its text columns, as lib/stats_print.c does for hkv_stats,
 * so a figure's name and its place in the table are written once.
 */
#include <stdlib.h>
#include <string.h>

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

void json_spread(struct json *j, const char *key, const struct spread *s)
{
	char range[64];

	snprintf(range, sizeof(range), "%s_range", key);
	json_dbl(j, key, s->med);
	json_arr(j, range);
	json_dbl(j, NULL, s->lo);
	json_dbl(j, NULL, s->hi);
	json_arr_end(j);
}

static double col_num(const void *obj, const struct col *c)
{
	const char *p = (const char *)obj + c->off;

	switch (c->type) {
	case COL_U64: return (double)*(const uint64_t *)p;
	case COL_UINT: return *(const unsigned *)p;
	case COL_INT: return *(const int *)p;
	default: return *(const double *)p;
	}
}

/* the width of a cell: its format's ("%9.3f" -> 9) and what follows the
 * conversion ("%6.1f%%" -> 7) */
static int col_width(const char *fmt)
{
	const char *p = fmt + 1 + (fmt[1] == '-');
	int w = atoi(p);

	p += strcspn(p, "diouxXeEfFgGs");
	for (p += !!*p; *p; p++)
		w += !(p[0] == '%' && p[1] == '%');
	return w;
}

void cols_head(FILE *f, const struct col *c, size_t n)
{
	const char *sep = "";

	for (size_t i = 0; i < n; i++)
		if (c[i].head) {
			fprintf(f, "%s%*s", sep, c[i].fmt[1] == '-' ? -col_width(c[i].fmt) :
				col_width(c[i].fmt), c[i].head);
			sep = " ";
		}
	fputc('\n', f);
}

void cols_text(FILE *f, const void *obj, const struct col *c, size_t n)
{
	const char *sep = "";

	for (size_t i = 0; i < n; i++) {
		const char *p = (const char *)obj + c[i].off;

		if (!c[i].head)
			continue;
		fputs(sep, f);
		sep = " ";
		if (c[i].type == COL_STR) {
			fprintf(f, c[i].fmt, *(const char *const *)p);
		} else {
			double v = col_num(obj, &c[i]) * (c[i].mul ? c[i].mul : 1);

			if (strpbrk(c[i].fmt, "du"))	/* "%8llu" style: a count */
				fprintf(f, c[i].fmt, (unsigned long long)v);
			else
				fprintf(f, c[i].fmt, v);
		}
	}
	fputc('\n', f);
}

void cols_json(struct json *j, const void *obj, const struct col *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *p = (const char *)obj + c[i].off;

		if (!c[i].key)
			continue;
		switch (c[i].type) {
		case COL_U64: json_u64(j, c[i].key, *(const uint64_t *)p); break;
		case COL_UINT: json_u64(j, c[i].key, *(const unsigned *)p); break;
		case COL_INT: json_i64(j, c[i].key, *(const int *)p); break;
		case COL_DBL: json_dbl(j, c[i].key, *(const double *)p); break;
		case COL_STR: json_str(j, c[i].key, *(const char *const *)p); break;
		case COL_LAT: json_lat(j, c[i].key, (const struct lat *)p); break;
		}
	}
}
