// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * main.c - hkv-bench: separates allocator and descriptor quality from
 * end-to-end noise. Runs one benchmark of the registry (bench.h): its
 * options, then validate, measure and report, with --help, --json, the
 * JSON envelope and the exit statuses the same for every one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "common.h"

static const struct bench *const benches[] = {
	&bench_churn, &bench_scale, &bench_lanes, &bench_prefault, &bench_access,
	&bench_trace, &bench_evict, &bench_replay, &bench_named,
};
/* for the listing of a benchmark that is not built in */
static const char *const bench_names[] = {
	"churn", "scale", "lanes", "prefault", "access", "trace", "evict", "replay", "named",
};

#define BENCH_MAX_OPTS	64

static void usage(FILE *f)
{
	fprintf(f, "usage: hkv-bench BENCHMARK [options]   (hkv-bench BENCHMARK --help)\n\n");
	for (size_t i = 0; i < HKV_BENCH_ARRAY(benches); i++)
		fprintf(f, "  %-10s %s\n", bench_names[i],
			benches[i] ? benches[i]->what : "[not built in]");
	fprintf(f, "\nEach benchmark takes --json (one JSON object on stdout); `make bench`\n"
		"runs the standard suite into bench-results/ (JSON, plots, summary.txt).\n");
}

/* the benchmark's tables and the two options every benchmark has */
static size_t bench_opts(const struct bench *b, struct option *o)
{
	const struct option *t[2] = { b->opts, b->more_opts };
	size_t n = 0;

	for (int k = 0; k < 2; k++)
		for (const struct option *p = t[k]; p && p->name; p++)
			if (n < BENCH_MAX_OPTS - 3)
				o[n++] = *p;
	o[n++] = (struct option){ "json", 0, NULL, BENCH_OPT_JSON };
	o[n++] = (struct option){ "help", 0, NULL, BENCH_OPT_HELP };
	o[n] = (struct option){ NULL, 0, NULL, 0 };
	return n;
}

static const char *opt_name(const struct option *o, int val)
{
	for (; o->name; o++)
		if (o->val == val)
			return o->name;
	return "?";
}

/* options and validate: 0, 1 (--help printed) or -EINVAL (said why) */
static int bench_args(const struct bench *b, void *st, int argc, char **argv, int *json)
{
	struct option o[BENCH_MAX_OPTS];
	int c;

	bench_opts(b, o);
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", o, NULL)) != -1) {
		if (c == BENCH_OPT_HELP) {
			fputs(b->usage, stdout);
			printf("  --json               one JSON object on stdout\n"
			       "  -h, --help           this text\n");
			return 1;
		}
		if (c == BENCH_OPT_JSON) {
			*json = 1;
			continue;
		}
		if (c == '?' || b->parse(st, c, optarg)) {
			if (c != '?')
				fprintf(stderr, "hkv-bench %s: bad value for --%s: '%s'\n",
					b->name, opt_name(o, c), optarg ? optarg : "");
			goto bad;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "hkv-bench %s: unexpected argument '%s'\n", b->name, argv[optind]);
		goto bad;
	}
	if (!b->validate || !b->validate(st, *json))
		return 0;
bad:
	fprintf(stderr, "try 'hkv-bench %s --help'\n", b->name);
	return -EINVAL;
}

static int bench_main(const struct bench *b, int argc, char **argv)
{
	void *st = calloc(1, b->size);
	int json = 0, err, rc = 2;

	if (!st)
		return 1;
	if (b->init)
		b->init(st);
	err = bench_args(b, st, argc, argv, &json);
	if (err) {
		rc = err > 0 ? 0 : 2;
		goto out;
	}
	bench_pin_cpu();
	timer_init();
	err = b->measure(st);
	rc = err ? 1 : 0;
	if (err < 0)
		goto out;
	if (json) {
		struct json j;

		json_begin(&j, stdout);
		json_str(&j, "bench", b->name);
		json_u64(&j, "version", 1);
		b->report(st, &j);
		json_end(&j);
	} else {
		b->report(st, NULL);
	}
out:
	if (b->fini)
		b->fini(st);
	free(st);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "--version"))
		return tool_version("hkv-bench");
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < HKV_BENCH_ARRAY(benches); i++) {
		if (strcmp(argv[1], bench_names[i]))
			continue;
		if (!benches[i]) {
			fprintf(stderr, "hkv-bench: benchmark %s is not built in\n", argv[1]);
			return 2;
		}
		return bench_main(benches[i], argc - 1, argv + 1);
	}
	fprintf(stderr, "hkv-bench: unknown benchmark '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
