// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_trace.c - the probe semaphores guard the expensive arguments: with
 * no tracer attached the "frag" figures (a UFI pass over the exact bins)
 * are never computed; with the semaphore set, as the kernel sets it when a
 * tracer attaches, they are, at a rate-limited pace. Every probe of the
 * list (bpf/hugekv_probes.h) that libhugekv fires has its semaphore. The
 * tracing itself (real BPF on a real process) is tested by tests/trace/run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "internal.h"
#include "trace.h"

#define NPAGES	(1u << 16)
#define HELD	512

/* alloc/free churn: mutations of the lanes, each a chance to fire frag */
static unsigned long churn(struct hkv_pool *p, unsigned rounds)
{
	static struct hkv_extent ext[HELD][4];
	static int n[HELD];
	unsigned long muts = 0;

	for (unsigned r = 0; r < rounds; r++) {
		unsigned i = (r * 7919u) % HELD;

		if (n[i] > 0) {
			assert_int_equal(hkv_free(p, ext[i], n[i]), 0);
			muts++;
		}
		n[i] = hkv_alloc(p, 1 + r % 37, HKV_LANE_ANY, 0, ext[i], 4);
		assert_true(n[i] > 0);
		muts++;
	}
	for (unsigned i = 0; i < HELD; i++, muts++)
		if (n[i] > 0 && !hkv_free(p, ext[i], n[i]))
			n[i] = 0;
	return muts;
}

static struct hkv_pool *pool(void)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = NPAGES, .nlanes = 2,
				   .backing = HKV_BACKING_NONE, .numa_node = -1 };
	struct hkv_pool *p = NULL;

	assert_int_equal(hkv_pool_create(&o, &p), 0);
	return p;
}

static void frag_not_computed_untraced(void **state)
{
	struct hkv_pool *p = pool();
	unsigned long before = frag_computed;

	(void)state;
	assert_int_equal(hugekv_frag_semaphore, 0);
	churn(p, 20000);
	assert_int_equal(frag_computed, before);
	hkv_pool_destroy(p);
}

static void frag_computed_rate_limited_when_attached(void **state)
{
	struct hkv_pool *p = pool();
	unsigned long before = frag_computed, muts, n;

	(void)state;
	hugekv_frag_semaphore = 1;	/* what a tracer's attach does */
	muts = churn(p, 20000);
	hugekv_frag_semaphore = 0;
	n = frag_computed - before;
	print_message("frag computed %lu times for %lu mutations\n", n, muts);
	assert_true(n > 0);
	assert_true(n < muts / 2);	/* rate-limited, not per operation */
	before = frag_computed;
	churn(p, 1000);
	assert_int_equal(frag_computed, before);	/* detached again */
	hkv_pool_destroy(p);
}

/* the semaphores lib/trace.c generates from the list: one per CORE row,
 * in .probes, 0 while no tracer is attached (a missing one fails the link) */
#define SEMA_ADDR_IF_CORE(name)	{ #name, &HKV_SEMA(name) },
#define SEMA_ADDR_IF_XFER(name)
#define SEMA_ADDR_(lib, name, ...) SEMA_ADDR_IF_##lib(name)

static void every_core_probe_has_a_semaphore(void **state)
{
	static const struct {
		const char *name;
		volatile unsigned short *sema;
	} s[] = { HKV_PROBE_LIST(SEMA_ADDR_) };
	size_t n = sizeof(s) / sizeof(s[0]);

	(void)state;
	assert_int_equal(n, 8);		/* alloc .. named_recover; xfer_* live in the xfer lib */
	for (size_t i = 0; i < n; i++) {
		print_message("semaphore of %s: %u\n", s[i].name, *s[i].sema);
		assert_int_equal(*s[i].sema, 0);
	}
	assert_int_equal(HKV_NARGS_alloc, 6);
	assert_int_equal(HKV_NARGS_xfer_done, 6);
	assert_int_equal(HKV_NARGS_xfer_submit, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_core_probe_has_a_semaphore),
		cmocka_unit_test(frag_not_computed_untraced),
		cmocka_unit_test(frag_computed_rate_limited_when_attached),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
