// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * env.c - HUGEKV_<OPTION> environment variables, parsed once per process.
 * A bad value is reported and ignored, never fatal.
 */
#include "internal.h"
#include <limits.h>
#include <strings.h>

static struct hkv_env env = {
	.backing = -1, .node = -2, .prefault_threads = -1, .strict = -1,
	.log_level = HKV_LOG_WARN, .lane_bias = -1, .lane_defer = -1,
};
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

/* the one table of backing names (documented in hugekv.h) */
const char *hkv_backing_name(int backing)
{
	static const char *const names[] = {
		[HKV_BACKING_AUTO] = "auto", [HKV_BACKING_HUGE_1G] = "1g",
		[HKV_BACKING_HUGE_2M] = "2m", [HKV_BACKING_THP] = "thp",
		[HKV_BACKING_SMALL] = "4k", [HKV_BACKING_NONE] = "none",
	};

	if (backing < 0 || backing >= (int)HKV_ARRAY_SIZE(names))
		return "?";
	return names[backing];
}

/**
 * env_parse_backing() - parse a backing name
 * @s: 1g, 2m, thp, 4k, auto or none (any case)
 * @out: receives HKV_BACKING_*
 *
 * Return: 0 or -EINVAL.
 */
int env_parse_backing(const char *s, int *out)
{
	int b;

	if (!s)
		return -EINVAL;
	for (b = HKV_BACKING_AUTO; b <= HKV_BACKING_NONE; b++) {
		if (!strcasecmp(s, hkv_backing_name(b))) {
			*out = b;
			return 0;
		}
	}
	return -EINVAL;
}

int hkv_backing_parse(const char *name, int *backing)
{
	return backing ? env_parse_backing(name, backing) : -EINVAL;
}

/**
 * env_parse_uint() - parse a whole decimal number
 * @s: the text
 * @max: largest value accepted
 * @out: receives the value
 *
 * Return: 0 or -EINVAL.
 */
int env_parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	unsigned long v;
	char *end;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static void parse_log(const char *s)
{
	static const char *const levels[] = { "error", "warn", "info", "debug" };
	int i;

	if (!strcasecmp(s, "quiet")) {
		env.log_level = -1;
		log_set_level(-1);
		return;
	}
	for (i = 0; i < 4; i++) {
		if (!strcasecmp(s, levels[i])) {
			env.log_level = i;
			log_set_level(i);
			return;
		}
	}
	hkv_log(HKV_LOG_WARN, "HUGEKV_LOG=%s: ignored (quiet|error|warn|info|debug)", s);
}

static void env_parse(void)
{
	unsigned long v;
	const char *s;

	/* HUGEKV_LOG first: it governs how the others are reported */
	if ((s = getenv("HUGEKV_LOG")))
		parse_log(s);
	if ((s = getenv("HUGEKV_BACKING")) && env_parse_backing(s, &env.backing)) {
		env.backing = -1;
		hkv_log(HKV_LOG_WARN, "HUGEKV_BACKING=%s: ignored (1g|2m|thp|4k|auto)", s);
	}
	if ((s = getenv("HUGEKV_NODE"))) {
		if (!strcmp(s, "-1"))
			env.node = -1;
		else if (!env_parse_uint(s, 4095, &v))
			env.node = (int)v;
		else
			hkv_log(HKV_LOG_WARN, "HUGEKV_NODE=%s: ignored (a node number or -1)", s);
	}
	if ((s = getenv("HUGEKV_PREFAULT_THREADS"))) {
		if (!env_parse_uint(s, 4096, &v) && v > 0)
			env.prefault_threads = (int)v;
		else
			hkv_log(HKV_LOG_WARN, "HUGEKV_PREFAULT_THREADS=%s: ignored (1..4096)", s);
	}
	if ((s = getenv("HUGEKV_STRICT"))) {
		if (!env_parse_uint(s, 1, &v))
			env.strict = (int)v;
		else
			hkv_log(HKV_LOG_WARN, "HUGEKV_STRICT=%s: ignored (0 or 1)", s);
	}
	if ((s = getenv("HUGEKV_LANE_BIAS"))) {
		if (!env_parse_uint(s, 1, &v))
			env.lane_bias = (int)v;
		else
			hkv_log(HKV_LOG_WARN, "HUGEKV_LANE_BIAS=%s: ignored (0 or 1)", s);
	}
	if ((s = getenv("HUGEKV_LANE_DEFER"))) {
		if (!env_parse_uint(s, 1, &v))
			env.lane_defer = (int)v;
		else
			hkv_log(HKV_LOG_WARN, "HUGEKV_LANE_DEFER=%s: ignored (0 or 1)", s);
	}
}

/**
 * env_get() - the parsed HUGEKV_* options
 *
 * Return: the options; parsed on the first call.
 */
const struct hkv_env *env_get(void)
{
	log_once(&env_once, env_parse);	/* the parse reports bad values */
	return &env;
}

/**
 * env_reload() - parse the environment again (tests only)
 */
void env_reload(void)
{
	env_get();
	env = (struct hkv_env){ .backing = -1, .node = -2, .prefault_threads = -1,
				.strict = -1, .log_level = HKV_LOG_WARN, .lane_bias = -1,
				.lane_defer = -1 };
	log_set_level(HKV_LOG_WARN);
	env_parse();
}
