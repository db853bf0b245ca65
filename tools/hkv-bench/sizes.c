// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sizes.c - request-size distributions: the built-in heavy tail or a
 * recorded "pages count" histogram, drawn by inverse CDF.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/parse.h"
#include "common.h"

/* ---- request sizes ------------------------------------------------------ */
#define SIZES_DEFAULT_MAX	4096
#define SIZES_DEFAULT_EXP	1.6

static int sizes_push(struct sizes *d, size_t *cap, uint64_t pages, double w)
{
	if (d->n == *cap) {
		size_t nc = *cap ? 2 * *cap : 256;
		uint32_t *s = realloc(d->size, nc * sizeof(*s));
		double *c;

		if (!s)
			return -ENOMEM;
		d->size = s;
		c = realloc(d->cum, nc * sizeof(*c));
		if (!c)
			return -ENOMEM;
		d->cum = c;
		*cap = nc;
	}
	d->size[d->n] = (uint32_t)pages;
	d->cum[d->n++] = w;
	return 0;
}

static int sizes_read_file(struct sizes *d, size_t *cap, const char *path,
			   uint64_t max_pages)
{
	char line[256];
	unsigned lineno = 0;
	FILE *f = fopen(path, "r");
	int err = 0;

	if (!f) {
		err = -errno;
		fprintf(stderr, "hkv-bench: --sizes %s: %s\n", path, strerror(errno));
		return err;
	}
	while (!err && fgets(line, sizeof(line), f)) {
		char *p = line + strspn(line, " \t"), *save = NULL, *a, *b;
		uint64_t pages, count;

		lineno++;
		if (*p == '#' || *p == '\n' || !*p)
			continue;
		/* two counts (the tools' parser: no sign, no hex, no wrap), and
		 * nothing else on the line */
		a = strtok_r(p, " \t\n", &save);
		b = strtok_r(NULL, " \t\n", &save);
		if (!a || !b || strtok_r(NULL, " \t\n", &save) || tool_parse_count(a, &pages) ||
		    tool_parse_count(b, &count) || !pages) {
			fprintf(stderr, "hkv-bench: %s:%u: want \"pages count\" (whole numbers, "
				"pages > 0)\n", path, lineno);
			err = -EINVAL;
		} else if (pages <= max_pages && count) {
			err = sizes_push(d, cap, pages, (double)count);
		}
	}
	fclose(f);
	return err;
}

/**
 * sizes_load() - load a request-size distribution
 * @d: receives it
 * @spec: "default" (P(n) ~ n^-1.6 for n = 1..4096 pages: mostly small radix
 *	nodes, a heavy tail of long prompts) or a file of "pages count" lines
 * @max_pages: sizes above this are dropped (small spaces)
 *
 * Return: 0, or -EINVAL / -ENOENT / -ENOMEM with a message printed.
 */
int sizes_load(struct sizes *d, const char *spec, uint64_t max_pages)
{
	size_t cap = 0;
	double total = 0, sum = 0;
	int err = 0;

	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", spec);
	if (!strcmp(spec, "default")) {
		for (uint64_t n = 1; n <= SIZES_DEFAULT_MAX && n <= max_pages && !err; n++)
			err = sizes_push(d, &cap, n, pow((double)n, -SIZES_DEFAULT_EXP));
	} else {
		err = sizes_read_file(d, &cap, spec, max_pages);
	}
	if (!err && !d->n) {
		fprintf(stderr, "hkv-bench: --sizes %s: no size <= %llu pages\n",
			spec, (unsigned long long)max_pages);
		err = -EINVAL;
	}
	if (err) {
		sizes_free(d);
		return err;
	}
	for (size_t i = 0; i < d->n; i++)
		total += d->cum[i];
	for (size_t i = 0; i < d->n; i++) {
		sum += d->cum[i];
		d->mean += d->size[i] * d->cum[i] / total;
		d->cum[i] = sum / total;
	}
	d->cum[d->n - 1] = 1.0;
	return 0;
}

void sizes_free(struct sizes *d)
{
	free(d->size);
	free(d->cum);
	d->size = NULL;
	d->cum = NULL;
	d->n = 0;
}

uint32_t sizes_draw(const struct sizes *d, struct rng *r)
{
	double u = rng_unit(r);
	size_t lo = 0, hi = d->n - 1;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (d->cum[mid] > u)
			hi = mid;
		else
			lo = mid + 1;
	}
	return d->size[lo];
}
