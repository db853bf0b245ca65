// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * opts.c - the one option check (and the check of a pool's name, which
 * attach and unlink share). hkv_pool_create() and the dry run
 * hkv_pool_plan() both turn the caller's struct hkv_pool_opts into the
 * effective options here, so the planner can never accept a pool that a
 * create refuses (or the other way round).
 *
 * Order: the caller's own values are checked first (a bad value is the
 * caller's error even where HUGEKV_* would override it), then the HUGEKV_*
 * overrides are applied. An override that cannot apply on this machine (a
 * node without memory) is reported and ignored, never fatal.
 */
#include <stddef.h>

#include "internal.h"

/* pages in the largest lane, without overflow */
static uint64_t lane_pages_max(uint64_t npages, unsigned nlanes)
{
	return npages / nlanes + (npages % nlanes != 0);
}

static bool watermarks_ok(double low, double high)
{
	if (low == 0 && high == 0)
		return true;
	/* written so that NaN fails too */
	return low >= 0 && low <= high && high <= 1;
}

/* a label: shown in tables, JSON and metric labels; short, no controls */
static bool label_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (i >= HKV_LABEL_MAX - 1 || (unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

/**
 * named_name_ok() - is @name a valid pool name?
 * @name: the name
 *
 * Return: true for 1..HKV_NAME_MAX letters, digits, '.', '_' and '-', not
 * starting with '.'.
 */
bool named_name_ok(const char *name)
{
	size_t i;

	if (!name || !name[0] || name[0] == '.')
		return false;
	for (i = 0; name[i]; i++) {
		char c = name[i];

		if (i >= HKV_NAME_MAX)
			return false;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* the caller's options as given (nlanes already defaulted); 0 or -errno */
static int check_caller(const struct hkv_pool_opts *o)
{
	unsigned known = HKV_POOL_STRICT | HKV_POOL_NO_PREFAULT;

	if (o->nlanes > HKV_MAX_LANES)
		return -E2BIG;
	if (!o->npages || o->nlanes > o->npages || (o->flags & ~known) ||
	    o->backing < HKV_BACKING_AUTO || o->backing > HKV_BACKING_NONE ||
	    o->numa_node < -1 || o->evict_window > HKV_MAX_EVICT_WINDOW)
		return -EINVAL;
	if (!o->page_bytes && o->backing != HKV_BACKING_AUTO && o->backing != HKV_BACKING_NONE)
		return -EINVAL;		/* index-only pools hold no memory */
	/* half the address space at most, so sizes and offsets never wrap */
	if (o->page_bytes && (o->backing == HKV_BACKING_NONE ||
			      o->npages > UINT64_MAX / 2 / o->page_bytes))
		return -EINVAL;
	if (o->chunk_bytes && (!o->page_bytes || o->chunk_bytes < o->page_bytes))
		return -EINVAL;
	if (!watermarks_ok(o->free_room_low, o->free_room_high))
		return -EINVAL;
	if (lane_pages_max(o->npages, o->nlanes) > XI_MAX_PAGES)
		return -E2BIG;
	if (o->label && !label_ok(o->label))
		return -EINVAL;
	if (o->name && !named_name_ok(o->name))
		return -EINVAL;
	return 0;
}

/* a node the kernel knows and that has memory */
static bool node_has_memory(int node)
{
	if (os->numa_available() < 0)
		return node == 0;
	return node <= os->numa_max_node() && os->node_size(node) > 0;
}

/* HUGEKV_* override memory options; each override is logged */
static void apply_env(struct hkv_pool_opts *o)
{
	const struct hkv_env *e = env_get();

	if (!o->page_bytes)
		return;
	if (e->backing >= 0 && e->backing != HKV_BACKING_NONE && e->backing != o->backing) {
		hkv_log(HKV_LOG_INFO, "HUGEKV_BACKING overrides backing %s -> %s",
			hkv_backing_name(o->backing), hkv_backing_name(e->backing));
		o->backing = e->backing;
	}
	if (e->node >= 0 && !node_has_memory(e->node))
		hkv_log(HKV_LOG_WARN, "HUGEKV_NODE=%d: no such node with memory; ignored",
			e->node);
	else if (e->node >= -1 && e->node != o->numa_node) {
		hkv_log(HKV_LOG_INFO, "HUGEKV_NODE overrides node %d -> %d", o->numa_node, e->node);
		o->numa_node = e->node;
	}
	if (e->prefault_threads > 0)
		o->prefault_threads = (unsigned)e->prefault_threads;
	if (e->strict == 1)
		o->flags |= HKV_POOL_STRICT;
	else if (e->strict == 0)
		o->flags &= ~HKV_POOL_STRICT;
}

/**
 * opts_effective() - the options a pool is built with
 * @in: the caller's options (@in->sz checked)
 * @out: receives the full struct: defaults and HUGEKV_* applied
 *
 * Return: 0, -EINVAL (bad size, count, backing, node, flags, watermarks,
 * chunk, evict window, label) or -E2BIG (a lane over 2^32-2 pages, too many lanes).
 * @out is written only on success.
 */
int opts_effective(const struct hkv_pool_opts *in, struct hkv_pool_opts *out)
{
	struct hkv_pool_opts o;
	int err;

	if (!in || !out || in->sz < HKV_OPTS_SZ0)
		return -EINVAL;
	memset(&o, 0, sizeof(o));
	memcpy(&o, in, HKV_MIN(in->sz, sizeof(o)));
	o.sz = sizeof(o);
	if (!o.nlanes)
		o.nlanes = 1;
	err = check_caller(&o);
	if (err)
		return err;
	if (!o.page_bytes)
		o.backing = HKV_BACKING_NONE;
	apply_env(&o);
	*out = o;
	return 0;
}
