// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_env.c - HUGEKV_* options (bad values reported and ignored, never
 * fatal), the log callback, and that the overrides reach a pool.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "internal.h"

struct logged {
	int n, level;
	char last[512];
};

static void capture(void *ctx, int level, const char *msg)
{
	struct logged *l = ctx;

	l->n++;
	l->level = level;
	snprintf(l->last, sizeof(l->last), "%s", msg);
}

static void clear_env(void)
{
	unsetenv("HUGEKV_BACKING");
	unsetenv("HUGEKV_NODE");
	unsetenv("HUGEKV_PREFAULT_THREADS");
	unsetenv("HUGEKV_STRICT");
	unsetenv("HUGEKV_LOG");
	unsetenv("HUGEKV_LANE_BIAS");
	unsetenv("HUGEKV_LANE_DEFER");
}

/* a log callback that creates a pool: it runs while the first parse of
 * the environment reports a bad value */
static int reentered;

static void create_from_callback(void *ctx, int level, const char *msg)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 8, .numa_node = -1 };
	struct hkv_pool *p;

	(void)ctx;
	(void)level;
	(void)msg;
	if (reentered++)
		return;
	if (!hkv_pool_create(&o, &p))
		hkv_pool_destroy(p);
}

/* first of the suite: the process has not parsed HUGEKV_* yet; in a child,
 * so that parse is the child's own, with an alarm against a deadlock */
static void test_callback_during_first_parse(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 8, .numa_node = -1 };
		struct hkv_pool *p;

		alarm(10);
		setenv("HUGEKV_BACKING", "bogus", 1);
		hkv_set_log_fn(create_from_callback, NULL);
		if (hkv_pool_create(&o, &p))
			_exit(2);
		hkv_pool_destroy(p);
		_exit(reentered ? 0 : 3);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));		/* not killed by the alarm */
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_parsers(void **state)
{
	unsigned long v;
	int b;

	(void)state;
	assert_int_equal(env_parse_backing("2M", &b), 0);
	assert_int_equal(b, HKV_BACKING_HUGE_2M);
	assert_int_equal(env_parse_backing("1g", &b), 0);
	assert_int_equal(b, HKV_BACKING_HUGE_1G);
	assert_int_equal(env_parse_backing("thp", &b), 0);
	assert_int_equal(env_parse_backing("4k", &b), 0);
	assert_int_equal(b, HKV_BACKING_SMALL);
	assert_int_equal(env_parse_backing("auto", &b), 0);
	assert_int_equal(env_parse_backing("3m", &b), -EINVAL);
	/* the exported pair: every name round-trips, bad input changes nothing */
	for (int i = HKV_BACKING_AUTO; i <= HKV_BACKING_NONE; i++) {
		assert_int_equal(hkv_backing_parse(hkv_backing_name(i), &b), 0);
		assert_int_equal(b, i);
	}
	b = 77;
	assert_int_equal(hkv_backing_parse("small", &b), -EINVAL);
	assert_int_equal(hkv_backing_parse(NULL, &b), -EINVAL);
	assert_int_equal(b, 77);
	assert_int_equal(hkv_backing_parse("2m", NULL), -EINVAL);
	assert_string_equal(hkv_backing_name(-1), "?");
	assert_string_equal(hkv_backing_name(HKV_BACKING_NONE + 1), "?");
	assert_int_equal(env_parse_uint("17", 100, &v), 0);
	assert_int_equal(v, 17);
	assert_int_equal(env_parse_uint("101", 100, &v), -EINVAL);
	assert_int_equal(env_parse_uint("-1", 100, &v), -EINVAL);
	assert_int_equal(env_parse_uint("", 100, &v), -EINVAL);
	assert_int_equal(env_parse_uint("12x", 100, &v), -EINVAL);
	assert_int_equal(env_parse_uint("99999999999999999999999", ~0ul, &v), -EINVAL);
}

static void test_good_values(void **state)
{
	const struct hkv_env *e;

	(void)state;
	clear_env();
	setenv("HUGEKV_BACKING", "2m", 1);
	setenv("HUGEKV_NODE", "0", 1);
	setenv("HUGEKV_PREFAULT_THREADS", "8", 1);
	setenv("HUGEKV_STRICT", "1", 1);
	setenv("HUGEKV_LANE_BIAS", "0", 1);
	setenv("HUGEKV_LANE_DEFER", "0", 1);
	env_reload();
	e = env_get();
	assert_int_equal(e->backing, HKV_BACKING_HUGE_2M);
	assert_int_equal(e->node, 0);
	assert_int_equal(e->prefault_threads, 8);
	assert_int_equal(e->strict, 1);
	assert_int_equal(e->lane_bias, 0);
	assert_int_equal(e->lane_defer, 0);
	clear_env();
	env_reload();
}

static void test_bad_values_reported_and_ignored(void **state)
{
	struct logged l = { 0 };
	const struct hkv_env *e;

	(void)state;
	clear_env();
	hkv_set_log_fn(capture, &l);
	setenv("HUGEKV_BACKING", "huge", 1);
	setenv("HUGEKV_NODE", "x", 1);
	setenv("HUGEKV_PREFAULT_THREADS", "0", 1);
	setenv("HUGEKV_STRICT", "2", 1);
	setenv("HUGEKV_LOG", "loud", 1);
	setenv("HUGEKV_LANE_BIAS", "yes", 1);
	setenv("HUGEKV_LANE_DEFER", "2", 1);
	env_reload();
	e = env_get();
	assert_int_equal(l.n, 7);
	assert_int_equal(l.level, HKV_LOG_WARN);
	assert_non_null(strstr(l.last, "HUGEKV_LANE_DEFER=2: ignored (0 or 1)"));
	assert_int_equal(e->lane_bias, -1);
	assert_int_equal(e->lane_defer, -1);
	assert_int_equal(e->backing, -1);
	assert_int_equal(e->node, -2);
	assert_int_equal(e->prefault_threads, -1);
	assert_int_equal(e->strict, -1);
	assert_int_equal(e->log_level, HKV_LOG_WARN);
	hkv_set_log_fn(NULL, NULL);
	clear_env();
	env_reload();
}

/* overrides apply to memory pools only; index-only pools ignore them */
static void test_index_only_ignores_memory_env(void **state)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 8 };
	struct hkv_stats st = { .sz = sizeof(st) };
	struct hkv_pool *p;

	(void)state;
	setenv("HUGEKV_BACKING", "4k", 1);
	setenv("HUGEKV_STRICT", "1", 1);
	env_reload();
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	assert_int_equal(hkv_stats(p, &st), 0);
	assert_int_equal(st.backing, HKV_BACKING_NONE);
	assert_int_equal(st.flags & HKV_POOL_STRICT, 0);
	hkv_pool_destroy(p);
	clear_env();
	env_reload();
}

static void test_log_levels(void **state)
{
	struct logged l = { 0 };

	(void)state;
	hkv_set_log_fn(capture, &l);
	hkv_log(HKV_LOG_INFO, "hello %d", 42);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.last, "hello 42");
	hkv_set_log_fn(NULL, NULL);
	setenv("HUGEKV_LOG", "quiet", 1);
	env_reload();
	assert_int_equal(log_level(), -1);
	hkv_log(HKV_LOG_ERR, "not printed");
	clear_env();
	env_reload();
	assert_int_equal(log_level(), HKV_LOG_WARN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_callback_during_first_parse),
		cmocka_unit_test(test_parsers),
		cmocka_unit_test(test_good_values),
		cmocka_unit_test(test_bad_values_reported_and_ignored),
		cmocka_unit_test(test_index_only_ignores_memory_env),
		cmocka_unit_test(test_log_levels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
