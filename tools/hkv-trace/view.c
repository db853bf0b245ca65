// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * view.c - read the maps and print: the live per-pool and per-peer view,
 * the event stream, the histograms, and the JSON object printed at exit.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>

#include <bpf/bpf.h>

#include "../lib/json_writer.h"
#include "../lib/tool.h"
#include "hkv-trace.h"

#define MAX_SHOWN_EVENTS 16	/* events listed per live interval */

struct pool_row {
	struct hkv_pool_key key;
	struct hkv_pool_stats st;
	uint64_t free_pages, free_extents, largest;	/* summed over lanes */
	unsigned lanes;					/* lanes with a frag hit */
};

struct peer_row {
	struct hkv_peer_key key;
	struct hkv_xfer_stats st;
};

struct view {
	struct tracer *t;
	const struct tr_opts *o;
	struct pool_row *cur, *prev;
	unsigned ncur, nprev;
	struct peer_row *xcur, *xprev;
	unsigned nxcur, nxprev;
	uint64_t start_ns;
	struct hkv_event shown[MAX_SHOWN_EVENTS];
	unsigned nshown;
	uint64_t interval_events, total_events;
};

static const char *const hist_name[HKV_H_NR] = {
	"alloc_pages", "alloc_extents", "evict_pages", "xfer_ns",
};
static const char *const hist_desc[HKV_H_NR] = {
	"pages asked per allocation", "extents per successful allocation",
	"pages per evicted unit", "ns per transfer",
};

/**
 * view_new() - state for printing what a tracer's maps hold
 * @t: a loaded tracer
 * @o: options (mode, json)
 *
 * Return: the view, or NULL without memory.
 */
struct view *view_new(struct tracer *t, const struct tr_opts *o)
{
	struct view *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	v->cur = calloc(HKV_MAX_POOLS, sizeof(*v->cur));
	v->prev = calloc(HKV_MAX_POOLS, sizeof(*v->prev));
	v->xcur = calloc(HKV_MAX_PEERS, sizeof(*v->xcur));
	v->xprev = calloc(HKV_MAX_PEERS, sizeof(*v->xprev));
	if (!v->cur || !v->prev || !v->xcur || !v->xprev) {
		view_free(v);
		return NULL;
	}
	v->t = t;
	v->o = o;
	v->start_ns = tool_now_ns();	/* the clock of bpf_ktime_get_ns */
	return v;
}

/**
 * view_free() - free a view
 * @v: the view, or NULL
 */
void view_free(struct view *v)
{
	if (!v)
		return;
	free(v->cur);
	free(v->prev);
	free(v->xcur);
	free(v->xprev);
	free(v);
}

static struct pool_row *row_find(struct pool_row *rows, unsigned n, uint32_t tgid, uint64_t pool)
{
	for (unsigned i = 0; i < n; i++)
		if (rows[i].key.tgid == tgid && rows[i].key.pool == pool)
			return &rows[i];
	return NULL;
}

/* snapshot the pools and lanes maps into v->cur */
static void read_pools(struct view *v)
{
	struct hkv_pool_key pk, *ppk = NULL;
	struct hkv_lane_key lk, *plk = NULL;
	struct hkv_lane_frag g;
	struct pool_row *r;

	v->ncur = 0;
	while (v->ncur < HKV_MAX_POOLS && !bpf_map_get_next_key(v->t->map_pools, ppk, &pk)) {
		ppk = &pk;
		r = &v->cur[v->ncur];
		memset(r, 0, sizeof(*r));
		r->key = pk;
		if (!bpf_map_lookup_elem(v->t->map_pools, &pk, &r->st))
			v->ncur++;
	}
	while (!bpf_map_get_next_key(v->t->map_lanes, plk, &lk)) {
		plk = &lk;
		r = row_find(v->cur, v->ncur, lk.tgid, lk.pool);
		if (!r || bpf_map_lookup_elem(v->t->map_lanes, &lk, &g))
			continue;
		r->free_pages += g.free_pages;
		r->free_extents += g.free_extents;
		if (g.largest_free_extent > r->largest)
			r->largest = g.largest_free_extent;
		r->lanes++;
	}
}

static struct peer_row *peer_find(struct peer_row *rows, unsigned n,
				   const struct hkv_peer_key *k)
{
	for (unsigned i = 0; i < n; i++)
		if (rows[i].key.tgid == k->tgid && rows[i].key.pool == k->pool &&
		    rows[i].key.peer == k->peer)
			return &rows[i];
	return NULL;
}

/* snapshot the xfers map into v->xcur */
static void read_xfers(struct view *v)
{
	struct hkv_peer_key k, *pk = NULL;
	struct peer_row *r;

	v->nxcur = 0;
	while (v->nxcur < HKV_MAX_PEERS && !bpf_map_get_next_key(v->t->map_xfers, pk, &k)) {
		pk = &k;
		r = &v->xcur[v->nxcur];
		r->key = k;
		if (!bpf_map_lookup_elem(v->t->map_xfers, &k, &r->st))
			v->nxcur++;
	}
}

static bool xfer_traced(const struct view *v)
{
	return v->t->attached[HKV_P_XFER_SUBMIT] || v->t->attached[HKV_P_XFER_DONE];
}

static uint64_t count_of(struct view *v, uint32_t id)
{
	uint64_t c = 0;

	bpf_map_lookup_elem(v->t->map_counts, &id, &c);
	return c;
}

static void print_event(FILE *f, const struct view *v, const struct hkv_event *e)
{
	const __s64 *a = e->arg;

	const char *name = trace_pool_name(e->tgid, e->pool);

	fprintf(f, "  %+9.3fs pid %u pool %llu%s%s ", (double)(int64_t)(e->ts_ns - v->start_ns) / 1e9,
		e->tgid, (unsigned long long)e->pool, name[0] ? " named " : "", name);
	switch (e->type) {
	case HKV_P_ALLOC:
		fprintf(f, "alloc failed: lane %lld, %lld pages: %s\n", (long long)a[0],
			(long long)a[1], strerror((int)-a[2]));
		break;
	case HKV_P_EVICT_RUN:
		fprintf(f, "evict_run: free %lld -> target %lld, freed %lld pages in %lld units\n",
			(long long)a[0], (long long)a[1], (long long)a[2], (long long)a[3]);
		break;
	case HKV_P_ARENA_MAP:
		fprintf(f, "arena_map: node %lld, %lld bytes on %lld-byte pages, %.3f ms\n",
			(long long)a[0], (long long)a[1], (long long)a[2], a[3] / 1e6);
		break;
	case HKV_P_ARENA_FALLBACK:
		fprintf(f, "arena_fallback: node %lld, %lld bytes, %lld-byte pages not obtained: "
			"%s, %.3f ms\n", (long long)a[0], (long long)a[1], (long long)a[2],
			strerror((int)(a[3] < 0 ? -a[3] : a[3])), a[4] / 1e6);
		break;
	case HKV_P_NAMED_RECOVER:
		fprintf(f, "named_recover: a process died holding the pool; %lld pages it held "
			"given back, %lld units kept, %lld dropped\n", (long long)a[0],
			(long long)a[1], (long long)a[2]);
		break;
	case HKV_P_XFER_DONE:
		if (a[3] < 0)
			fprintf(f, "xfer_done failed: peer %llu, %lld bytes in %lld ops: %s, %.3f ms\n",
				(unsigned long long)a[0], (long long)a[2], (long long)a[1],
				strerror((int)-a[3]), a[4] / 1e6);
		else
			fprintf(f, "xfer_done straggler: peer %llu, %lld bytes in %lld ops, %.3f ms "
				"(over %dx the peer's mean)\n", (unsigned long long)a[0],
				(long long)a[2], (long long)a[1], a[4] / 1e6, HKV_STRAGGLER_FACTOR);
		break;
	default:
		fprintf(f, "event %u\n", e->type);
	}
}

/**
 * view_event() - ring buffer callback: one rare event
 * @ctx: the view
 * @data: a struct hkv_event
 * @sz: its size
 *
 * Return: 0 (keep polling).
 */
int view_event(void *ctx, void *data, size_t sz)
{
	struct view *v = ctx;

	if (sz < sizeof(struct hkv_event))
		return 0;
	v->interval_events++;
	v->total_events++;
	if (v->o->mode == MODE_EVENTS) {
		if (!v->o->json) {
			print_event(stdout, v, data);
			fflush(stdout);
		}
	} else if (v->nshown < MAX_SHOWN_EVENTS) {
		memcpy(&v->shown[v->nshown++], data, sizeof(struct hkv_event));
	}
	return 0;
}

static void print_rate(uint64_t now, uint64_t was, double dt, bool on)
{
	if (on)
		printf(" %9.0f", (double)(now - was) / dt);
	else
		printf(" %9s", "-");
}

static void print_row(const struct view *v, const struct pool_row *r, double dt)
{
	const struct pool_row *p = row_find(v->prev, v->nprev, r->key.tgid, r->key.pool);
	struct pool_row zero = { 0 };
	uint64_t ok_allocs, ext;

	if (!p)
		p = &zero;
	printf("%8u %6llu %-16.16s", r->key.tgid, (unsigned long long)r->key.pool,
	       trace_pool_label(r->key.tgid, r->key.pool));
	print_rate(r->st.allocs, p->st.allocs, dt, v->t->attached[HKV_P_ALLOC]);
	print_rate(r->st.frees + r->st.free_failures, p->st.frees + p->st.free_failures, dt,
		   v->t->attached[HKV_P_FREE]);
	print_rate(r->st.evictions, p->st.evictions, dt, true);
	if (r->lanes)
		printf(" %11llu %9llu %9llu", (unsigned long long)r->free_pages,
		       (unsigned long long)r->free_extents, (unsigned long long)r->largest);
	else
		printf(" %11s %9s %9s", "-", "-", "-");
	ok_allocs = (r->st.allocs - r->st.alloc_failures) - (p->st.allocs - p->st.alloc_failures);
	ext = r->st.alloc_extents - p->st.alloc_extents;
	if (ok_allocs)
		printf(" %9.3f\n", (double)ext / ok_allocs);
	else
		printf(" %9s\n", "-");
}

/* worth a line: its process is alive, or it moved in this interval */
static bool row_live(const struct view *v, const struct pool_row *r)
{
	const struct pool_row *p = row_find(v->prev, v->nprev, r->key.tgid, r->key.pool);

	if (kill((pid_t)r->key.tgid, 0) == 0 || errno != ESRCH)
		return true;
	return !p || memcmp(&p->st, &r->st, sizeof(r->st));
}

/* one line per peer: the interval's transfers, bytes and latency */
static void print_peers(const struct view *v, double dt)
{
	printf("%8s %6s %6s %9s %9s %9s %10s %10s %6s %6s\n", "PID", "POOL", "PEER", "XFER/s",
	       "MB/s", "OPS/XFER", "LAT_MEAN", "LAT_MAX", "SLOW", "FAILED");
	for (unsigned i = 0; i < v->nxcur; i++) {
		const struct peer_row *r = &v->xcur[i];
		const struct peer_row *p = peer_find(v->xprev, v->nxprev, &r->key);
		struct peer_row zero = { 0 };
		uint64_t n, ns;

		if (!p)
			p = &zero;
		n = r->st.dones - p->st.dones;
		ns = r->st.ns_sum - p->st.ns_sum;
		printf("%8u %6llu %6llu %9.0f %9.1f", r->key.tgid, (unsigned long long)r->key.pool,
		       (unsigned long long)r->key.peer, (double)n / dt,
		       (double)(r->st.done_bytes - p->st.done_bytes) / dt / 1e6);
		if (n)
			printf(" %9.2f %8.3fms", (double)(r->st.done_ops - p->st.done_ops) / n,
			       (double)ns / n / 1e6);
		else
			printf(" %9s %10s", "-", "-");
		printf(" %8.3fms %6llu %6llu\n", r->st.ns_max / 1e6,
		       (unsigned long long)(r->st.stragglers - p->st.stragglers),
		       (unsigned long long)r->st.failures);
	}
}

/**
 * view_moved() - did any pool move since the last tick?
 * @v: the view
 *
 * Return: true when a pool is new or its counters changed.
 */
bool view_moved(struct view *v)
{
	read_pools(v);
	for (unsigned i = 0; i < v->ncur; i++) {
		const struct pool_row *r = &v->cur[i];
		const struct pool_row *p = row_find(v->prev, v->nprev, r->key.tgid, r->key.pool);

		if (!p || memcmp(&p->st, &r->st, sizeof(r->st)))
			return true;
	}
	return false;
}

/**
 * view_tick() - print the live view for the interval that just ended
 * @v: the view
 * @dt: seconds since the previous tick
 */
void view_tick(struct view *v, double dt)
{
	struct pool_row *swap;
	struct peer_row *xswap;
	char stamp[16];
	time_t now = time(NULL);
	unsigned i;

	read_pools(v);
	read_xfers(v);
	if (v->o->mode == MODE_LIVE && !v->o->json) {
		strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime(&now));
		printf("\n%s  %u pool(s) seen%s\n", stamp, v->ncur,
		       v->t->attached[HKV_P_ALLOC] ? "" : "  (alloc/free rates: run with --ops)");
		printf("%8s %6s %-16s %9s %9s %9s %11s %9s %9s %9s\n", "PID", "POOL", "LABEL",
		       "ALLOC/s",
		       "FREE/s", "EVICT/s", "FREE_PAGES", "FREE_EXT", "LARGEST", "EXT/ALLOC");
		for (i = 0; i < v->ncur; i++)
			if (row_live(v, &v->cur[i]))
				print_row(v, &v->cur[i], dt > 0 ? dt : 1);
		if (xfer_traced(v))
			print_peers(v, dt > 0 ? dt : 1);
		printf("events: %llu\n", (unsigned long long)v->interval_events);
		for (i = 0; i < v->nshown; i++)
			print_event(stdout, v, &v->shown[i]);
		if (v->interval_events > v->nshown)
			printf("  ... %llu more\n",
			       (unsigned long long)(v->interval_events - v->nshown));
		fflush(stdout);
	}
	v->nshown = 0;
	v->interval_events = 0;
	swap = v->prev;
	v->prev = v->cur;
	v->cur = swap;
	v->nprev = v->ncur;
	xswap = v->xprev;
	v->xprev = v->xcur;
	v->xcur = xswap;
	v->nxprev = v->nxcur;
}

static void slot_range(unsigned s, unsigned long long *lo, unsigned long long *hi)
{
	*lo = s ? 1ull << (s - 1) : 0;
	*hi = s == 0 ? 0 : s == HKV_HIST_SLOTS - 1 ? ~0ull : (1ull << s) - 1;
}

static void print_hist(const char *name, const char *desc, const struct hkv_hist *h)
{
	uint64_t max = 0;
	unsigned s, first = HKV_HIST_SLOTS, last = 0;
	unsigned long long lo, hi;

	for (s = 0; s < HKV_HIST_SLOTS; s++) {
		if (!h->slot[s])
			continue;
		first = s < first ? s : first;
		last = s;
		max = h->slot[s] > max ? h->slot[s] : max;
	}
	printf("\n%s (%s)\n", name, desc);
	if (!max) {
		printf("  (no samples)\n");
		return;
	}
	for (s = first; s <= last; s++) {
		int bar = (int)(h->slot[s] * 40 / max);

		slot_range(s, &lo, &hi);
		printf("  [%llu, %llu]%*s %10llu |%-40.*s|\n", lo, hi, 20 - snprintf(NULL, 0,
		       "[%llu, %llu]", lo, hi), "", (unsigned long long)h->slot[s], bar,
		       "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@");
	}
}

static void json_hist(struct json *j, const char *key, const struct hkv_hist *h)
{
	unsigned long long lo, hi;

	json_arr(j, key);
	for (unsigned s = 0; s < HKV_HIST_SLOTS; s++) {
		if (!h->slot[s])
			continue;
		slot_range(s, &lo, &hi);
		json_obj(j, NULL);
		json_u64(j, "lo", lo);
		json_u64(j, "hi", hi);
		json_u64(j, "count", h->slot[s]);
		json_close(j);
	}
	json_close(j);
}

/* per-pool counters and per-peer transfer counters: the BPF structs'
 * fields, named as they are there */
#define POOL_F(m)	JSON_FIELD(struct hkv_pool_stats, m, JSON_U64)
static const struct json_field pool_fields[] = {
	POOL_F(allocs), POOL_F(alloc_failures), POOL_F(alloc_pages), POOL_F(alloc_extents),
	POOL_F(multi_extent_allocs), POOL_F(frees), POOL_F(free_failures), POOL_F(freed_pages),
	POOL_F(evictions), POOL_F(evicted_pages), POOL_F(evict_runs), POOL_F(frags),
	POOL_F(arena_maps), POOL_F(mapped_bytes), POOL_F(fallbacks),
};

#define XFER_F(m)	JSON_FIELD(struct hkv_xfer_stats, m, JSON_U64)
static const struct json_field xfer_fields[] = {
	XFER_F(submits), XFER_F(submit_pages), XFER_F(submit_ops), XFER_F(submit_bytes),
	XFER_F(dones), XFER_F(done_ops), XFER_F(done_bytes), XFER_F(failures),
	XFER_F(ns_max), XFER_F(stragglers),
};

static void json_pools(struct json *j, const struct view *v)
{
	json_arr(j, "pools");
	for (unsigned i = 0; i < v->ncur; i++) {
		const struct pool_row *r = &v->cur[i];

		json_obj(j, NULL);
		json_u64(j, "pid", r->key.tgid);
		json_u64(j, "pool", r->key.pool);
		json_str(j, "name", trace_pool_name(r->key.tgid, r->key.pool));
		json_str(j, "label", trace_pool_label(r->key.tgid, r->key.pool));
		json_fields(j, &r->st, pool_fields, JSON_NFIELDS(pool_fields));
		json_u64(j, "free_pages", r->free_pages);
		json_u64(j, "free_extents", r->free_extents);
		json_u64(j, "largest_free_extent", r->largest);
		json_close(j);
	}
	json_close(j);
}

static void json_xfers(struct json *j, const struct view *v, double elapsed)
{
	json_arr(j, "xfers");
	for (unsigned i = 0; i < v->nxcur; i++) {
		const struct peer_row *r = &v->xcur[i];
		const struct hkv_xfer_stats *s = &r->st;

		json_obj(j, NULL);
		json_u64(j, "pid", r->key.tgid);
		json_u64(j, "pool", r->key.pool);
		json_u64(j, "peer", r->key.peer);
		json_fields(j, s, xfer_fields, JSON_NFIELDS(xfer_fields));
		json_dbl(j, "ns_mean", s->dones ? (double)s->ns_sum / s->dones : 0);
		json_dbl(j, "bytes_per_s", elapsed > 0 ? s->done_bytes / elapsed : 0);
		json_close(j);
	}
	json_close(j);
}

static void print_json(struct view *v, const struct hkv_hist *h, double elapsed)
{
	struct json j;
	unsigned id;

	json_begin(&j, stdout);
	json_dbl(&j, "duration_s", elapsed);
	json_i64(&j, "pid", v->o->pid);
	json_str(&j, "library", v->t->lib);
	json_str(&j, "xfer_library", v->t->xfer_lib[0] ? v->t->xfer_lib : NULL);
	json_bool(&j, "ops", v->o->ops);
	/* a probe that was not attached has no count: null, not 0 */
	for (id = 0; id < HKV_P_NR; id++) {
		if (v->t->attached[id])
			json_u64(&j, tr_probes[id].name, count_of(v, id));
		else
			json_null(&j, tr_probes[id].name);
	}
	json_u64(&j, "events", v->total_events);
	json_u64(&j, "dropped", count_of(v, HKV_C_DROPPED));
	json_pools(&j, v);
	json_xfers(&j, v, elapsed);
	json_obj(&j, "hist");
	for (id = 0; id < HKV_H_NR; id++)
		json_hist(&j, hist_name[id], &h[id]);
	json_close(&j);
	json_end(&j);
}

/**
 * view_final() - at exit: the histograms (hist mode) or the JSON object
 * @v: the view
 * @elapsed: seconds traced
 */
void view_final(struct view *v, double elapsed)
{
	struct hkv_hist h[HKV_H_NR];
	uint32_t id;

	memset(h, 0, sizeof(h));
	for (id = 0; id < HKV_H_NR; id++)
		bpf_map_lookup_elem(v->t->map_hists, &id, &h[id]);
	read_pools(v);
	read_xfers(v);
	if (v->o->json) {
		print_json(v, h, elapsed);
	} else if (v->o->mode == MODE_HIST) {
		for (id = 0; id < HKV_H_NR; id++)
			print_hist(hist_name[id], hist_desc[id], &h[id]);
	}
	if (count_of(v, HKV_C_DROPPED))
		fprintf(stderr, "hkv-trace: %llu events dropped (ring buffer full)\n",
			(unsigned long long)count_of(v, HKV_C_DROPPED));
	fflush(stdout);
}
