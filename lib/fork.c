// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fork.c - what a pool is worth in a child process: nothing but its
 * destruction. The arena is mapped MADV_DONTFORK (a child must not share or
 * copy hundreds of GB of hugepages), so the child has no pages behind its
 * copy of the pool, and any lock another thread held at fork() stays held
 * there. Each pool records the fork generation it was created in; a child
 * handler bumps the generation, so every call on an inherited pool sees
 * the difference with one load and answers -ECHILD.
 */
#include "internal.h"

uint64_t fork_gen;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static int fork_err, fork_warned;

static void fork_child(void)
{
	HKV_STORE(&fork_gen, fork_gen + 1);
	log_fork_child();
	numa_fork_child();
}

/* no logging in here: a log callback that creates a pool would re-enter */
static void fork_register(void)
{
	fork_err = pthread_atfork(NULL, NULL, fork_child);
}

/**
 * fork_generation() - the generation a pool created now belongs to
 *
 * Registers the child handler on first use, before any pool exists.
 *
 * Return: the current generation.
 */
uint64_t fork_generation(void)
{
	pthread_once(&fork_once, fork_register);
	if (fork_err && !__atomic_exchange_n(&fork_warned, 1, __ATOMIC_RELAXED))
		hkv_log(HKV_LOG_WARN, "pthread_atfork: %s; a fork() child will not know "
			"that its pools are not its own", strerror(fork_err));
	return HKV_LOAD(&fork_gen);
}
