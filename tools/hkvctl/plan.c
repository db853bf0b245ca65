// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * plan.c - `hkvctl plan`: a dry run of hkv_pool_create() through the
 * library's own planner (hkv_pool_plan()), so what it prints is what a
 * create would try first: page size per node segment, shortfalls, and the
 * hkvctl reserve lines that would remove them.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "hugekv.h"
#include "machine.h"

#define PLAN_KV_PAGE	(64ull << 10)	/* default KV page: 64 KiB */

struct plan_args {
	struct hkv_pool_opts o;
	uint64_t bytes;
	bool json;
};

static void plan_usage(FILE *f)
{
	fprintf(f,
"usage: hkvctl plan --size SIZE [--node N] [--backing auto|1g|2m|thp|4k]\n"
"                   [--kv-page SIZE] [--lanes N] [--strict] [--json]\n"
"\n"
"Dry run of hkv_pool_create() with the library's own planner\n"
"(hkv_pool_plan()): for each node segment of the arena, the page size it would\n"
"get, the hugepages it needs, the node's free and total pool, the shortfall,\n"
"and the `hkvctl reserve` line that removes it. Reserves and maps nothing.\n"
"HUGEKV_BACKING, HUGEKV_NODE and HUGEKV_STRICT apply as they would to the\n"
"engine. The answer is a snapshot: other processes may take free pages.\n"
"\n"
"  --size SIZE     KV cache bytes, K/M/G/T suffixes (powers of 1024)\n"
"  --node N        bind to node N (default: one segment per node)\n"
"  --backing B     auto (1G, 2M, THP, 4K, best first; default), 1g, 2m, thp, 4k\n"
"  --kv-page SIZE  bytes per KV page (default 64K)\n"
"  --lanes N       owner lanes (default 1)\n"
"  --strict        fail instead of falling back (HKV_POOL_STRICT)\n"
"  --json          one JSON object on stdout\n"
"  -h, --help      this text\n"
"\n"
"Exit status: 0 the pool would get the backing asked for, 1 it would fall\n"
"back (or, strict, fail), 2 usage.\n");
}

/* the library's names; "none" (an index-only pool) maps nothing to plan */
static int parse_backing(const char *s)
{
	int b;

	if (hkv_backing_parse(s, &b) || b == HKV_BACKING_NONE)
		return -1;
	return b;
}

static const struct option plan_opts[] = {
	{ "size", required_argument, NULL, 's' },
	{ "node", required_argument, NULL, 'n' },
	{ "backing", required_argument, NULL, 'b' },
	{ "kv-page", required_argument, NULL, 'k' },
	{ "lanes", required_argument, NULL, 'l' },
	{ "strict", no_argument, NULL, 'S' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 }
};

static int plan_args(int argc, char **argv, struct plan_args *a)
{
	long v;
	int c;

	while ((c = getopt_long(argc, argv, "s:n:b:k:l:Sjh", plan_opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (ctl_arg_size("plan", "size", optarg, 1, &a->bytes))
				return -EINVAL;
			break;
		case 'n':
			if (ctl_arg_int("plan", "node", optarg, 0, CTL_MAX_NODES - 1, &v))
				return -EINVAL;
			a->o.numa_node = (int)v;
			break;
		case 'b':
			if ((a->o.backing = parse_backing(optarg)) < 0) {
				ctl_err("plan", "bad --backing '%s' (auto, 1g, 2m, thp, 4k)", optarg);
				return -EINVAL;
			}
			break;
		case 'k':
			if (ctl_arg_size("plan", "kv-page", optarg, 1, &a->o.page_bytes))
				return -EINVAL;
			break;
		case 'l':
			if (ctl_arg_int("plan", "lanes", optarg, 1, 1 << 20, &v))
				return -EINVAL;
			a->o.nlanes = (unsigned)v;
			break;
		case 'S': a->o.flags |= HKV_POOL_STRICT; break;
		case 'j': a->json = true; break;
		case 'h': plan_usage(stdout); return 1;
		default: plan_usage(stderr); return -EINVAL;
		}
	}
	if (ctl_no_operands("plan", argc, argv))
		return -EINVAL;
	if (!a->bytes) {
		ctl_err("plan", "--size is required (KV cache bytes, e.g. 200G)");
		return -EINVAL;
	}
	a->o.npages = ctl_units(a->bytes, a->o.page_bytes);
	return 0;
}

/* what to reserve on a node so its segment gets hugepages: the wanted size
 * when the kernel offers it, else 2 MiB (AUTO on a machine without 1 GiB) */
struct reco {
	uint64_t page, need, free, total, shortfall, target;
};

static int size_index(const struct machine *t, uint64_t page)
{
	for (int k = 0; k < t->nsizes; k++)
		if (t->size[k].page_bytes == page)
			return k;
	return -1;
}

static bool node_reco(const struct machine *t, const struct hkv_plan_node *pn, int backing_asked,
		      struct reco *r)
{
	int ni = machine_node_index(t, pn->node), k;

	memset(r, 0, sizeof(*r));
	if (ni < 0 || pn->hugepage_bytes > 4096 ||
	    backing_asked == HKV_BACKING_THP || backing_asked == HKV_BACKING_SMALL)
		return false;	/* hugetlb already, or no hugetlb wanted */
	k = size_index(t, pn->wanted_bytes);
	if (k < 0)
		k = size_index(t, 2ull << 20);
	if (k < 0)
		return false;
	r->page = t->size[k].page_bytes;
	r->free = t->node[ni].pool[k].free;
	r->total = t->node[ni].pool[k].total;
	r->need = (pn->bytes + r->page - 1) / r->page;
	r->shortfall = r->need > r->free ? r->need - r->free : 0;
	r->target = r->total + r->shortfall;
	return r->shortfall > 0;
}

/* AUTO is satisfied by any hugetlb size, an explicit backing by itself */
static bool plan_ok(const struct hkv_plan *p, int ret)
{
	if (ret)
		return false;
	for (unsigned i = 0; i < p->nnodes && i < HKV_PLAN_NODES; i++) {
		const struct hkv_plan_node *pn = &p->node[i];

		/* AUTO: what the size rule chose is ok, a shortfall is not */
		if (p->backing_wanted == HKV_BACKING_AUTO ? pn->fallback_errno != 0 :
		    pn->backing != p->backing_wanted)
			return false;
	}
	return true;
}

#define NODE_F(m, t)	JSON_FIELD(struct hkv_plan_node, m, t)
static const struct json_field node_fields[] = {
	NODE_F(node, JSON_INT), NODE_F(ncpus, JSON_UINT), NODE_F(first_page, JSON_U64),
	NODE_F(npages, JSON_U64), NODE_F(bytes, JSON_U64), NODE_F(hugepage_bytes, JSON_U64),
	NODE_F(hugepages_needed, JSON_U64), NODE_F(wanted_bytes, JSON_U64),
	NODE_F(wanted_needed, JSON_U64), NODE_F(wanted_free, JSON_U64),
	NODE_F(wanted_total, JSON_U64), NODE_F(shortfall, JSON_U64),
	NODE_F(reserve_total, JSON_U64), NODE_F(fallback_errno, JSON_INT),
};

#define RECO_F(m, key)	JSON_FIELD_AS(struct reco, m, key, JSON_U64)
static const struct json_field reco_fields[] = {
	RECO_F(page, "page_bytes"), RECO_F(need, "needed"), RECO_F(free, "free"),
	RECO_F(shortfall, "shortfall"), RECO_F(target, "nr_hugepages"),
};

#define PART_F(m, t)	JSON_FIELD(struct hkv_plan_part, m, t)
static const struct json_field part_fields[] = {
	PART_F(node, JSON_INT), PART_F(hugepage_bytes, JSON_U64), PART_F(bytes, JSON_U64),
	PART_F(first_page, JSON_U64), PART_F(npages, JSON_U64), PART_F(hugepages, JSON_U64),
	PART_F(node_free, JSON_U64), PART_F(shortfall, JSON_U64),
	PART_F(wanted_bytes, JSON_U64), PART_F(fallback_errno, JSON_INT),
};

static void json_node(struct json *j, const struct hkv_plan_node *pn,
		      const struct reco *r, bool has_reco)
{
	json_obj(j, NULL);
	json_fields(j, pn, node_fields, JSON_NFIELDS(node_fields));
	json_str(j, "backing", hkv_backing_name(pn->backing));
	json_str(j, "wanted_backing", hkv_backing_name(pn->wanted_backing));
	json_str(j, "fallback_reason", pn->fallback_errno ? strerror(-pn->fallback_errno) : NULL);
	if (has_reco) {
		json_obj(j, "reserve");
		json_fields(j, r, reco_fields, JSON_NFIELDS(reco_fields));
		json_close(j);
	} else {
		json_null(j, "reserve");
	}
	json_close(j);
}

static void json_part(struct json *j, const struct hkv_plan_part *pt)
{
	json_obj(j, NULL);
	json_fields(j, pt, part_fields, JSON_NFIELDS(part_fields));
	json_str(j, "backing", hkv_backing_name(pt->backing));
	json_bool(j, "fallback", pt->flags & HKV_REGION_FALLBACK);
	json_bool(j, "round_up", pt->flags & HKV_REGION_ROUND_UP);
	json_close(j);
}

static void plan_json(const struct plan_args *a, const struct hkv_plan *p,
		      const struct machine *t, int ret)
{
	struct json j;
	struct reco r;

	json_begin(&j, stdout);
	json_u64(&j, "size_bytes", a->bytes);
	json_u64(&j, "kv_page_bytes", a->o.page_bytes);
	json_u64(&j, "npages", a->o.npages);
	json_str(&j, "backing_wanted", hkv_backing_name(p->backing_wanted));
	json_str(&j, "backing", hkv_backing_name(p->backing));
	json_i64(&j, "numa_node", p->numa_node);
	json_bool(&j, "strict", p->flags & HKV_POOL_STRICT);
	json_u64(&j, "kv_bytes", p->kv_bytes);
	json_u64(&j, "arena_bytes", p->arena_bytes);
	json_u64(&j, "round_up_bytes", p->round_up_bytes);
	if (p->memlock_limit == UINT64_MAX)
		json_i64(&j, "memlock_limit", -1);
	else
		json_u64(&j, "memlock_limit", p->memlock_limit);
	json_str(&j, "thp_mode", p->thp_mode);
	json_u64(&j, "fallbacks", p->fallbacks);
	json_bool(&j, "would_fail", ret == -ENOMEM);
	json_bool(&j, "ok", plan_ok(p, ret));
	json_arr(&j, "nodes");
	for (unsigned i = 0; i < p->nnodes && i < HKV_PLAN_NODES; i++)
		json_node(&j, &p->node[i], &r, node_reco(t, &p->node[i], a->o.backing, &r));
	json_close(&j);
	/* each run of one page size, in address order: one region each */
	json_arr(&j, "parts");
	for (unsigned i = 0; i < p->nparts && i < HKV_PLAN_PARTS; i++)
		json_part(&j, &p->part[i]);
	json_close(&j);
	json_end(&j);
}

static unsigned node_parts(const struct hkv_plan *p, int node)
{
	unsigned i, n = 0;

	for (i = 0; i < p->nparts && i < HKV_PLAN_PARTS; i++)
		n += p->part[i].node == node;
	return n;
}

/* the runs of one page size that make up node @node's segment, when it
 * has more than one */
static void plan_text_parts(const struct hkv_plan *p, int node)
{
	char a[32], b[32], c[32];
	unsigned i;

	if (node_parts(p, node) < 2)
		return;
	for (i = 0; i < p->nparts && i < HKV_PLAN_PARTS; i++) {
		const struct hkv_plan_part *pt = &p->part[i];

		if (pt->node != node)
			continue;
		printf("    part: KV pages %" PRIu64 "-%" PRIu64 ", %s on %s pages (%s)",
		       pt->first_page, pt->first_page + pt->npages - 1,
		       ctl_fmt_size(pt->bytes, a, sizeof(a)),
		       ctl_fmt_size(pt->hugepage_bytes, b, sizeof(b)),
		       hkv_backing_name(pt->backing));
		if (pt->hugepages)
			printf(", %" PRIu64 " hugepages of %" PRIu64 " free", pt->hugepages,
			       pt->node_free);
		if (pt->flags & HKV_REGION_FALLBACK)
			printf(", fallback from %s (%s)",
			       ctl_fmt_size(pt->wanted_bytes, c, sizeof(c)),
			       pt->fallback_errno == -EOPNOTSUPP ? "not offered" :
			       "not enough free");
		if (pt->flags & HKV_REGION_ROUND_UP)
			printf(", smaller pages: a larger size would round up too much");
		printf("\n");
	}
}

static void plan_text_node(const struct machine *t, const struct hkv_plan *p,
			   const struct hkv_plan_node *pn, int asked)
{
	unsigned nparts = node_parts(p, pn->node);
	char a[32], b[32], c[32];
	struct reco r;

	printf("  node %d (%u CPUs): KV pages %" PRIu64 "-%" PRIu64 ", %s %s %s pages (%s)",
	       pn->node, pn->ncpus, pn->first_page, pn->first_page + pn->npages - 1,
	       ctl_fmt_size(pn->bytes, a, sizeof(a)), nparts > 1 ? "in parts, the smallest on" :
	       "on", ctl_fmt_size(pn->hugepage_bytes, b, sizeof(b)),
	       hkv_backing_name(pn->backing));
	if (pn->hugepages_needed)
		printf(", %" PRIu64 " hugepages", pn->hugepages_needed);
	printf("\n");
	if (pn->fallback_errno)
		printf("    wanted %s: %s", ctl_fmt_size(pn->wanted_bytes, c, sizeof(c)),
		       pn->fallback_errno == -EOPNOTSUPP ? "not offered by this machine" :
		       "not enough free hugepages");
	if (pn->fallback_errno == -ENOMEM)
		printf(" (needs %" PRIu64 ", %" PRIu64 " free of %" PRIu64
		       ", short %" PRIu64 ")", pn->wanted_needed, pn->wanted_free,
		       pn->wanted_total, pn->shortfall);
	if (pn->fallback_errno)
		printf("\n");
	if (node_reco(t, pn, asked, &r))
		printf("    short %" PRIu64 " x %s pages: hkvctl reserve --node %d --page %s "
		       "--size %s\n", r.shortfall, ctl_fmt_size(r.page, a, sizeof(a)), pn->node,
		       a, ctl_fmt_size(r.target * r.page, b, sizeof(b)));
}

/* what the arena gets, by page size: "2 x 1G + 128 x 2M pages" */
static const char *plan_summary(const struct hkv_plan *p, char *buf, size_t len)
{
	static const int sizes[] = { HKV_BACKING_HUGE_1G, HKV_BACKING_HUGE_2M, HKV_BACKING_THP,
				     HKV_BACKING_SMALL };
	size_t at = 0;

	buf[0] = '\0';
	for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		uint64_t n = 0, bytes = 0;
		char sz[32];

		for (unsigned i = 0; i < p->nparts && i < HKV_PLAN_PARTS; i++)
			if (p->part[i].backing == sizes[k]) {
				n += p->part[i].hugepages;
				bytes += p->part[i].bytes;
			}
		if (!bytes || at >= len)
			continue;
		if (n)
			at += snprintf(buf + at, len - at, "%s%" PRIu64 " x %s", at ? " + " : "", n,
				       sizes[k] == HKV_BACKING_HUGE_1G ? "1G" : "2M");
		else
			at += snprintf(buf + at, len - at, "%s%s on %s", at ? " + " : "",
				       ctl_fmt_size(bytes, sz, sizeof(sz)), hkv_backing_name(sizes[k]));
	}
	if (at && at < len)
		snprintf(buf + at, len - at, " pages");
	return buf[0] ? buf : hkv_backing_name(p->backing);
}

static void plan_text(const struct plan_args *a, const struct hkv_plan *p,
		      const struct machine *t, int ret)
{
	char x[96], y[32], z[32];

	printf("pool: %s as %" PRIu64 " KV pages of %s, backing %s, %s, %s\n",
	       ctl_fmt_size(p->kv_bytes, x, sizeof(x)), a->o.npages,
	       ctl_fmt_size(a->o.page_bytes, y, sizeof(y)), hkv_backing_name(p->backing_wanted),
	       p->numa_node < 0 ? "a segment per node" : "one node",
	       p->flags & HKV_POOL_STRICT ? "strict" : "may fall back");
	printf("arena: %s mapped (%s round-up); THP %s; memlock %s (hugetlb is not "
	       "charged to it)\n", ctl_fmt_size(p->arena_bytes, x, sizeof(x)),
	       ctl_fmt_size(p->round_up_bytes, y, sizeof(y)),
	       p->thp_mode[0] ? p->thp_mode : "unavailable",
	       p->memlock_limit == UINT64_MAX ? "unlimited" :
	       ctl_fmt_size(p->memlock_limit, z, sizeof(z)));
	for (unsigned i = 0; i < p->nnodes && i < HKV_PLAN_NODES; i++) {
		plan_text_node(t, p, &p->node[i], a->o.backing);
		plan_text_parts(p, p->node[i].node);
	}
	if (ret == -ENOMEM)
		printf("verdict: hkv_pool_create would fail (strict, shortfall above)\n");
	else if (plan_ok(p, ret))
		printf("verdict: ok, the pool gets %s\n", plan_summary(p, x, sizeof(x)));
	else
		printf("verdict: the pool would fall back to %s on %u node%s\n",
		       hkv_backing_name(p->backing), p->fallbacks, p->fallbacks == 1 ? "" : "s");
}

int cmd_plan(int argc, char **argv)
{
	struct plan_args a = { .o = { .sz = sizeof(a.o), .numa_node = -1,
				      .page_bytes = PLAN_KV_PAGE, .nlanes = 1 } };
	struct hkv_plan p = { .sz = sizeof(p) };
	struct machine *t;
	int ret;

	ret = plan_args(argc, argv, &a);
	if (ret)
		return ret > 0 ? TOOL_OK : TOOL_USAGE;
	if (ctl_fake_root())
		ctl_err("plan", "note: the library plans on the live machine, "
			"HKVCTL_ROOT is not used for the plan");
	ret = hkv_pool_plan(&a.o, &p);
	if (ret && ret != -ENOMEM) {
		ctl_err("plan", "%s", ret == -EINVAL ? "invalid pool (bad --node, or a "
			"size that overflows)" : hkv_strerror(ret));
		return TOOL_FAIL;
	}
	if (machine_read(&t)) {
		ctl_err("plan", "cannot read the topology");
		return TOOL_FAIL;
	}
	if (a.json)
		plan_json(&a, &p, t, ret);
	else
		plan_text(&a, &p, t, ret);
	machine_free(t);
	return plan_ok(&p, ret) ? TOOL_OK : TOOL_FAIL;
}
