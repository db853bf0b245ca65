// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_log_thread.c - the log callback may call back into the library: set
 * another callback, log, read stats, pin units and create pools, even for
 * messages logged while the library held the pool's locks (they are
 * delivered after the release); hkv_set_log_fn() waits for a callback
 * running on another thread (make check runs this under TSan too).
 * hkv_strerror() for every int, INT_MIN included.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "res.h"

struct cb {
	struct hkv_pool *pool;
	unsigned calls, other_calls;
	int stats, pin, unpin, create;
	bool switch_inside;
};

static void other_fn(void *ctx, int level, const char *msg)
{
	(void)level;
	(void)msg;
	((struct cb *)ctx)->other_calls++;
}

static void reenter_fn(void *ctx, int level, const char *msg)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 10 };
	struct hkv_stats st = { .sz = sizeof(st) };
	struct cb *c = ctx;
	struct hkv_pool *q = NULL;

	(void)level;
	(void)msg;
	c->calls++;
	if (c->pool) {
		c->stats = hkv_stats(c->pool, &st);
		c->pin = hkv_unit_pin(c->pool, 1);
		c->unpin = hkv_unit_unpin(c->pool, 1);
	}
	c->create = hkv_pool_create(&o, &q);
	hkv_pool_destroy(q);
	hkv_log(HKV_LOG_DEBUG, "logged from inside the callback");	/* not to us */
	if (c->switch_inside)
		hkv_set_log_fn(other_fn, c);		/* takes effect on return */
}

/* the first hkv_pool_create() of a process runs the one-time setups (the
 * environment, the lane waits), which log; a callback that creates a pool
 * gets those messages after the setup, not inside it, where the nested
 * create would wait on the setup that runs it. In a child, so that this
 * create is the process's first; a hang is killed after 20 s and fails. */
static void test_first_create_reenters(void **state)
{
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	int status = 0;
	pid_t pid, done = 0;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 10 };
		struct cb c = { .create = 1 };
		struct hkv_pool *p = NULL;
		int err;

		hkv_set_log_fn(reenter_fn, &c);
		err = hkv_pool_create(&o, &p);
		hkv_set_log_fn(NULL, NULL);
		hkv_pool_destroy(p);
		/* the lane waits' message reached the callback, which created a pool */
		_exit(err || !c.calls || c.create ? 1 : 0);
	}
	for (int i = 0; i < 2000 && !done; i++) {
		done = waitpid(pid, &status, WNOHANG);
		if (!done)
			nanosleep(&tick, NULL);
	}
	if (!done) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fail_msg("the first pool's creation hung in a re-entering log callback");
	}
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* the callback sets another one: no deadlock, the switch happens on return */
static void test_set_from_callback(void **state)
{
	struct cb c = { .switch_inside = true, .stats = 1, .pin = 1, .create = 1 };

	(void)state;
	alarm(30);		/* a deadlock fails the test instead of hanging it */
	hkv_set_log_fn(reenter_fn, &c);
	hkv_log(HKV_LOG_WARN, "one");
	assert_int_equal(c.calls, 1);
	assert_int_equal(c.other_calls, 0);
	assert_int_equal(c.create, 0);
	hkv_log(HKV_LOG_WARN, "two");
	assert_int_equal(c.calls, 1);
	assert_int_equal(c.other_calls, 1);
	hkv_set_log_fn(NULL, NULL);
	alarm(0);
}

/*
 * A message logged by hkv_check() while it holds the residency lock and every
 * lane lock: the callback reads stats and pins a unit of that very pool.
 */
static void test_callback_under_pool_locks(void **state)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 100, .nlanes = 2 };
	struct cb c = { .stats = 1, .pin = 1, .unpin = 1, .create = 1 };
	struct hkv_extent e, loose;
	struct xindex *x;

	(void)state;
	alarm(30);
	assert_int_equal(hkv_pool_create(&o, &c.pool), 0);
	assert_int_equal(hkv_alloc(c.pool, 10, 0, 0, &e, 1), 1);
	assert_int_equal(hkv_alloc(c.pool, 1, 1, 0, &loose, 1), 1);
	assert_int_equal(hkv_unit_add(c.pool, 1, &e, 1), 0);
	x = &c.pool->lanes[1].xi;
	xi_set_range(x->in_unit, loose.start - x->base, 1, true);	/* broken */
	hkv_set_log_fn(reenter_fn, &c);
	assert_int_equal(hkv_check(c.pool), -EUCLEAN);
	hkv_set_log_fn(NULL, NULL);
	assert_true(c.calls >= 1);
	assert_int_equal(c.stats, 0);
	assert_int_equal(c.pin, 0);
	assert_int_equal(c.unpin, 0);
	assert_int_equal(c.create, 0);
	xi_set_range(x->in_unit, loose.start - x->base, 1, false);
	assert_int_equal(hkv_check(c.pool), 0);
	hkv_pool_destroy(c.pool);
	alarm(0);
}

struct slow {
	volatile int in_cb, done;
};

static void slow_fn(void *ctx, int level, const char *msg)
{
	struct slow *s = ctx;

	(void)level;
	(void)msg;
	__atomic_store_n(&s->in_cb, 1, __ATOMIC_SEQ_CST);
	usleep(200 * 1000);
	__atomic_store_n(&s->done, 1, __ATOMIC_SEQ_CST);
}

static void *log_thread(void *arg)
{
	(void)arg;
	hkv_log(HKV_LOG_WARN, "slow");
	return NULL;
}

/* hkv_set_log_fn() returns only after the old callback has returned */
static void test_set_waits(void **state)
{
	struct slow s = { 0 };
	pthread_t t;

	(void)state;
	hkv_set_log_fn(slow_fn, &s);
	assert_int_equal(pthread_create(&t, NULL, log_thread, NULL), 0);
	while (!__atomic_load_n(&s.in_cb, __ATOMIC_SEQ_CST))
		usleep(1000);
	hkv_set_log_fn(NULL, NULL);
	assert_int_equal(__atomic_load_n(&s.done, __ATOMIC_SEQ_CST), 1);
	pthread_join(t, NULL);
}

static void test_strerror(void **state)
{
	static const int own[] = { EINVAL, ENOMEM, ENOSPC, EBUSY, EEXIST, ENOENT, EUCLEAN,
				   E2BIG, EPERM, EAGAIN, EOVERFLOW, EOPNOTSUPP, EIO, EDEADLK,
				   ECHILD };
	/* not returned by the library itself: the system's text */
	static const int passed_through[] = { ENODEV, EFAULT, EACCES, EHWPOISON };

	(void)state;
	assert_string_equal(hkv_strerror(INT_MIN), "unknown error");
	assert_string_equal(hkv_strerror(INT_MAX), "unknown error");
	assert_string_equal(hkv_strerror(-INT_MAX), "unknown error");
	assert_string_equal(hkv_strerror(0), "success");
	for (unsigned i = 0; i < HKV_ARRAY_SIZE(own); i++) {
		assert_string_equal(hkv_strerror(-own[i]), hkv_strerror(own[i]));
		assert_string_not_equal(hkv_strerror(-own[i]), strerrordesc_np(own[i]));
	}
	for (unsigned i = 0; i < HKV_ARRAY_SIZE(passed_through); i++)
		assert_string_equal(hkv_strerror(-passed_through[i]),
				    strerrordesc_np(passed_through[i]));
	assert_non_null(strstr(hkv_strerror(-EDEADLK), "callback"));
	assert_non_null(strstr(hkv_strerror(-ECHILD), "fork"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_create_reenters),	/* first: no pool yet */
		cmocka_unit_test(test_set_from_callback),
		cmocka_unit_test(test_callback_under_pool_locks),
		cmocka_unit_test(test_set_waits),
		cmocka_unit_test(test_strerror),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
