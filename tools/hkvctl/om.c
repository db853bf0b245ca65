// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * om.c - the pools' stats pages as metrics with Prometheus conventions:
 * hugekv_ prefix, counters ending _total, base units (_bytes, _seconds),
 * labels pool (name, else PID.ID) and label on every sample. Written as
 * OpenMetrics 1.0 (what Prometheus asks a /metrics endpoint for) or as the
 * Prometheus text format 0.0.4 (node_exporter's textfile collector,
 * promtool check metrics). One table of families; each family's samples
 * for every pool follow its TYPE and HELP lines, as both formats require.
 */
#include <inttypes.h>
#include <string.h>

#include "pages.h"

struct om {
	FILE *f;
	bool om;		/* OpenMetrics, else text 0.0.4 */
	const struct fam *fam;	/* the family being written */
	bool head;		/* its TYPE and HELP are out */
	uint64_t now;		/* CLOCK_REALTIME ns */
	const struct ctl_pages *set;
};

enum ftype { COUNTER, GAUGE, HISTOGRAM, INFO };

struct fam {
	const char *name;	/* without _total (counters) or _info */
	enum ftype type;
	const char *unit;	/* OpenMetrics UNIT, the name's suffix; or NULL */
	const char *help;
	void (*emit)(struct om *w, const struct ctl_page *p);
	bool stale_too;		/* also for pages whose process is gone */
	/* e_xf_at(): the transfer figure at @at, of pages whose layout
	 * (hkv_page_xfer.sz) goes past @since */
	size_t since, at;
};

static void put_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n') {
			fputs("\\n", f);
			continue;
		}
		fputc(*s, f);
	}
}

static const char *suffix_of(enum ftype t, bool om)
{
	if (t == COUNTER)
		return "_total";
	if (t == INFO)
		return "_info";
	(void)om;
	return "";
}

static void head(struct om *w)
{
	const struct fam *m = w->fam;
	static const char *const types[] = { "counter", "gauge", "histogram", "info" };

	if (w->head)
		return;
	w->head = true;
	if (w->om) {
		fprintf(w->f, "# TYPE %s %s\n", m->name, types[m->type]);
		if (m->unit)
			fprintf(w->f, "# UNIT %s %s\n", m->name, m->unit);
		fprintf(w->f, "# HELP %s %s\n", m->name, m->help);
	} else {
		const char *sfx = suffix_of(m->type, false);

		fprintf(w->f, "# HELP %s%s %s\n", m->name, sfx, m->help);
		fprintf(w->f, "# TYPE %s%s %s\n", m->name, sfx,
			m->type == INFO ? "gauge" : types[m->type]);
	}
}

/* one sample: family name + @sfx, the pool's labels, @extra (already
 * escaped: built from numbers and fixed words here, or NULL) */
static void sample(struct om *w, const struct ctl_page *p, const char *sfx, const char *extra,
		   const char *value)
{
	head(w);
	fprintf(w->f, "%s%s{pool=\"", w->fam->name, sfx);
	put_escaped(w->f, p->key);
	fputs("\",label=\"", w->f);
	put_escaped(w->f, p->pg.label);
	fprintf(w->f, "\"%s%s} %s\n", extra ? "," : "", extra ? extra : "", value);
}

static void u64(struct om *w, const struct ctl_page *p, const char *extra, uint64_t v)
{
	char b[32];

	snprintf(b, sizeof(b), "%" PRIu64, v);
	sample(w, p, suffix_of(w->fam->type, w->om), extra, b);
}

static void dbl(struct om *w, const struct ctl_page *p, const char *extra, double v)
{
	char b[40];

	snprintf(b, sizeof(b), "%.9g", v);
	sample(w, p, suffix_of(w->fam->type, w->om), extra, b);
}

/* a bucket bound: OpenMetrics wants canonical floats (1.0, not 1) */
static void fmt_le(char *b, size_t n, double v, bool om)
{
	if (om && v == (double)(uint64_t)v)
		snprintf(b, n, "%.1f", v);
	else
		snprintf(b, n, "%g", v);
}

/* a histogram from counts per range (or cumulative ones) and the bounds
 * of all ranges but the last, which is +Inf */
static void hist(struct om *w, const struct ctl_page *p, const char *extra, const double *le,
		 const uint64_t *count, unsigned n, double sum, bool cumulative)
{
	char lab[160], v[40], b[32];
	uint64_t acc = 0;

	for (unsigned i = 0; i < n; i++) {
		acc = cumulative ? count[i] : acc + count[i];
		if (i + 1 < n)
			fmt_le(b, sizeof(b), le[i], w->om);
		else
			snprintf(b, sizeof(b), "+Inf");
		snprintf(lab, sizeof(lab), "%s%sle=\"%s\"", extra ? extra : "", extra ? "," : "", b);
		snprintf(v, sizeof(v), "%" PRIu64, acc);
		sample(w, p, "_bucket", lab, v);
	}
	snprintf(v, sizeof(v), "%" PRIu64, acc);
	sample(w, p, "_count", extra, v);
	snprintf(v, sizeof(v), "%.9g", sum);
	sample(w, p, "_sum", extra, v);
}

#define ST(p)	(&(p)->pg.stats)

/* ---- pools ---------------------------------------------------------------- */
static void e_info(struct om *w, const struct ctl_page *p)
{
	char extra[256];

	snprintf(extra, sizeof(extra), "pid=\"%d\",backing=\"%s\",backing_wanted=\"%s\","
		 "numa_node=\"%d\"", p->pg.pid, hkv_backing_name(ST(p)->backing),
		 hkv_backing_name(ST(p)->backing_wanted), ST(p)->numa_node);
	u64(w, p, extra, 1);
}

static void e_stale(struct om *w, const struct ctl_page *p)
{
	u64(w, p, NULL, !!(p->pg.flags & HKV_PAGE_STALE));
}

static void e_procs(struct om *w, const struct ctl_page *p) { u64(w, p, NULL, p->npids); }

static void e_page_age(struct om *w, const struct ctl_page *p)
{
	dbl(w, p, NULL, w->now > p->pg.published_ns ? (double)(w->now - p->pg.published_ns) / 1e9 : 0);
}

static void e_start(struct om *w, const struct ctl_page *p)
{
	dbl(w, p, NULL, (double)p->pg.created_ns / 1e9);
}

static void e_size(struct om *w, const struct ctl_page *p) { u64(w, p, NULL, ST(p)->npages); }
static void e_page_bytes(struct om *w, const struct ctl_page *p)
{
	u64(w, p, NULL, ST(p)->page_bytes);
}

static void e_pages(struct om *w, const struct ctl_page *p)
{
	struct ctl_states s;

	ctl_page_figures(ST(p), &s);
	u64(w, p, "state=\"free\"", s.free);
	u64(w, p, "state=\"allocated\"", s.allocated);
	u64(w, p, "state=\"cached\"", s.cached);
	u64(w, p, "state=\"pinned\"", s.pinned);
}

static void e_low(struct om *w, const struct ctl_page *p)
{
	u64(w, p, NULL, (uint64_t)(p->pg.free_room_low * (double)ST(p)->npages));
}

static void e_high(struct om *w, const struct ctl_page *p)
{
	u64(w, p, NULL, (uint64_t)(p->pg.free_room_high * (double)ST(p)->npages));
}

static void e_extents(struct om *w, const struct ctl_page *p) { u64(w, p, NULL, ST(p)->free_extents); }
static void e_largest(struct om *w, const struct ctl_page *p)
{
	u64(w, p, NULL, ST(p)->largest_free_extent);
}

static void e_ufi(struct om *w, const struct ctl_page *p)
{
	char extra[48];

	for (unsigned i = 0; i < HKV_UFI_SIZES; i++) {
		snprintf(extra, sizeof(extra), "request_pages=\"%" PRIu64 "\"", ST(p)->ufi_size[i]);
		dbl(w, p, extra, ST(p)->ufi[i]);
	}
}

static void e_lane_free(struct om *w, const struct ctl_page *p)
{
	char extra[32];

	for (unsigned i = 0; i < ST(p)->nlanes && i < HKV_STATS_LANES; i++) {
		snprintf(extra, sizeof(extra), "lane=\"%u\"", i);
		u64(w, p, extra, ST(p)->lane_free_pages[i]);
	}
}

static void e_lane_largest(struct om *w, const struct ctl_page *p)
{
	char extra[32];

	for (unsigned i = 0; i < ST(p)->nlanes && i < HKV_STATS_LANES; i++) {
		snprintf(extra, sizeof(extra), "lane=\"%u\"", i);
		u64(w, p, extra, ST(p)->lane_largest_free_extent[i]);
	}
}

static void e_units(struct om *w, const struct ctl_page *p) { u64(w, p, NULL, ST(p)->units); }
static void e_pinned_units(struct om *w, const struct ctl_page *p)
{
	u64(w, p, NULL, ST(p)->pinned_units);
}

static void e_oldest_pin(struct om *w, const struct ctl_page *p)
{
	dbl(w, p, NULL, ctl_page_oldest_pin_s(&p->pg, w->now));
}

/* ---- allocations ------------------------------------------------------- */
static void e_allocs(struct om *w, const struct ctl_page *p) { u64(w, p, NULL, ST(p)->allocs); }

static void e_alloc_fail(struct om *w, const struct ctl_page *p)
{
	uint64_t nospc = ST(p)->alloc_failures_nospc;

	u64(w, p, "reason=\"no_room\"", ST(p)->alloc_failures - HKV_MIN_U64(nospc,
								 ST(p)->alloc_failures));
	u64(w, p, "reason=\"max_extents\"", nospc);
}

static void e_frees(struct om *w, const struct ctl_page *p) { u64(w, p, NULL, ST(p)->frees); }
static void e_pages_alloc(struct om *w, const struct ctl_page *p)
{
	u64(w, p, NULL, ST(p)->pages_allocated);
}

static void e_pages_freed(struct om *w, const struct ctl_page *p)
{
	u64(w, p, NULL, ST(p)->pages_freed);
}

static void e_ext_hist(struct om *w, const struct ctl_page *p)
{
	static const double le[HKV_EXTENTS_HIST - 1] = { 1, 2, 4, 8, 16 };

	hist(w, p, NULL, le, ST(p)->extents_hist, HKV_EXTENTS_HIST,
	     (double)ST(p)->extents_returned, false);
}

/* ---- eviction ---------------------------------------------------------- */
static void e_evictions(struct om *w, const struct ctl_page *p) { u64(w, p, NULL, ST(p)->evictions); }
static void e_evicted_pages(struct om *w, const struct ctl_page *p)
{
	u64(w, p, NULL, ST(p)->evicted_pages);
}

static void e_runs(struct om *w, const struct ctl_page *p) { u64(w, p, NULL, ST(p)->eviction_runs); }
static void e_evict_fail(struct om *w, const struct ctl_page *p)
{
	u64(w, p, NULL, ST(p)->evict_failures);
}

static void e_age_hist(struct om *w, const struct ctl_page *p)
{
	static const double le[HKV_AGE_HIST - 1] = { 0.01, 0.1, 1, 10, 60, 600, 3600 };

	hist(w, p, NULL, le, ST(p)->evict_age_hist, HKV_AGE_HIST,
	     (double)ST(p)->evict_age_ns / 1e9, false);
}

/* ---- lanes ------------------------------------------------------------- */
static void e_served(struct om *w, const struct ctl_page *p) { u64(w, p, NULL, ST(p)->served_calls); }
static void e_revoc(struct om *w, const struct ctl_page *p)
{
	u64(w, p, NULL, ST(p)->bias_revocations);
}

static void e_deferred(struct om *w, const struct ctl_page *p)
{
	u64(w, p, NULL, ST(p)->deferred_frees);
}

/* ---- bring-up ---------------------------------------------------------- */
static void e_arena(struct om *w, const struct ctl_page *p)
{
	uint64_t size[HKV_STATS_REGIONS], bytes[HKV_STATS_REGIONS];
	unsigned n = 0, i, k;
	char extra[48];

	for (i = 0; i < ST(p)->nregions && i < HKV_STATS_REGIONS; i++) {
		const struct hkv_region_stats *r = &ST(p)->region[i];

		for (k = 0; k < n && size[k] != r->hugepage_bytes; k++)
			;
		if (k == n) {
			size[n] = r->hugepage_bytes;
			bytes[n++] = 0;
		}
		bytes[k] += r->bytes;
	}
	for (k = 0; k < n; k++) {
		snprintf(extra, sizeof(extra), "page_size=\"%" PRIu64 "\"", size[k]);
		u64(w, p, extra, bytes[k]);
	}
}

static void e_fallbacks(struct om *w, const struct ctl_page *p) { u64(w, p, NULL, ST(p)->fallbacks); }
static void e_prefault(struct om *w, const struct ctl_page *p)
{
	dbl(w, p, NULL, (double)ST(p)->prefault_ns / 1e9);
}

static void e_misplaced(struct om *w, const struct ctl_page *p)
{
	u64(w, p, NULL, ST(p)->misplaced_pages);
}

static void e_meta(struct om *w, const struct ctl_page *p) { u64(w, p, NULL, ST(p)->metadata_bytes); }

/* ---- transfers (pages an endpoint publishes into) ---------------------- */
#define XF(p)	(&(p)->pg.xfer)

static void e_xf(struct om *w, const struct ctl_page *p, uint64_t v)
{
	if (XF(p)->endpoints)
		u64(w, p, NULL, v);
}

static void e_xf_n(struct om *w, const struct ctl_page *p) { e_xf(w, p, XF(p)->transfers); }
static void e_xf_bytes(struct om *w, const struct ctl_page *p) { e_xf(w, p, XF(p)->bytes); }
static void e_xf_pages(struct om *w, const struct ctl_page *p) { e_xf(w, p, XF(p)->pages); }
static void e_xf_ops(struct om *w, const struct ctl_page *p) { e_xf(w, p, XF(p)->ops); }
static void e_xf_peerfail(struct om *w, const struct ctl_page *p)
{
	e_xf(w, p, XF(p)->peer_failures);
}

static void e_xf_fail(struct om *w, const struct ctl_page *p)
{
	const struct hkv_page_xfer *x = XF(p);
	uint64_t known = x->timeouts + x->refused;

	if (!x->endpoints)
		return;
	u64(w, p, "reason=\"timeout\"", x->timeouts);
	u64(w, p, "reason=\"refused\"", x->refused);
	u64(w, p, "reason=\"error\"", x->failures - HKV_MIN_U64(known, x->failures));
}

static void e_xf_lat(struct om *w, const struct ctl_page *p)
{
	const struct hkv_page_xfer *x = XF(p);
	double le[HKV_PAGE_XFER_LAT];
	uint64_t c[HKV_PAGE_XFER_LAT + 1];

	if (!x->endpoints)
		return;
	for (unsigned i = 0; i < HKV_PAGE_XFER_LAT; i++) {
		le[i] = (double)x->lat_le_ns[i] / 1e9;
		c[i] = x->lat_count[i];
	}
	c[HKV_PAGE_XFER_LAT] = x->lat_n;
	hist(w, p, NULL, le, c, HKV_PAGE_XFER_LAT + 1, (double)x->lat_sum_ns / 1e9, true);
}

static void e_peer(struct om *w, const struct ctl_page *p, unsigned what)
{
	char extra[48];

	for (unsigned i = 0; i < XF(p)->npeers && i < HKV_PAGE_XFER_PEERS; i++) {
		const struct hkv_page_peer *q = &XF(p)->peer[i];

		snprintf(extra, sizeof(extra), "peer=\"%" PRIu64 "\"", q->peer);
		u64(w, p, extra, what == 0 ? q->transfers : what == 1 ? q->failures : q->bytes);
	}
}

static void e_peer_n(struct om *w, const struct ctl_page *p) { e_peer(w, p, 0); }
static void e_peer_fail(struct om *w, const struct ctl_page *p) { e_peer(w, p, 1); }
static void e_peer_bytes(struct om *w, const struct ctl_page *p) { e_peer(w, p, 2); }

/* the pool as a transfer target: the grants its endpoint gives peers;
 * from pages of a layout that carries them */
static bool has_grants(const struct ctl_page *p)
{
	return XF(p)->endpoints && XF(p)->sz > HKV_PAGE_XFER_SZ0;
}

static void e_gr(struct om *w, const struct ctl_page *p, uint64_t v)
{
	if (has_grants(p))
		u64(w, p, NULL, v);
}

static void e_gr_n(struct om *w, const struct ctl_page *p) { e_gr(w, p, XF(p)->grants); }
static void e_gr_act(struct om *w, const struct ctl_page *p) { e_gr(w, p, XF(p)->grants_active); }
static void e_gr_pages(struct om *w, const struct ctl_page *p) { e_gr(w, p, XF(p)->grant_pages); }
static void e_gr_bytes(struct om *w, const struct ctl_page *p) { e_gr(w, p, XF(p)->grant_bytes); }
static void e_gr_mem(struct om *w, const struct ctl_page *p) { e_gr(w, p, XF(p)->grant_mem); }
static void e_gr_exp(struct om *w, const struct ctl_page *p) { e_gr(w, p, XF(p)->grants_expired); }
static void e_auth_fail(struct om *w, const struct ctl_page *p)
{
	e_gr(w, p, XF(p)->auth_failures);
}

static void e_peers_rej(struct om *w, const struct ctl_page *p)
{
	e_gr(w, p, XF(p)->peers_rejected);
}

/* refusals by reason: limit (-ENOBUFS), busy (-EBUSY), denied (the rest:
 * the checks of the pages, the access callback) */
static void refused(struct om *w, const struct ctl_page *p, const char *peer, uint64_t all,
		    uint64_t limit, uint64_t busy)
{
	char extra[80];
	static const char *const why[] = { "limit", "busy", "denied" };
	uint64_t v[3] = { limit, busy, all - HKV_MIN_U64(limit + busy, all) };

	for (unsigned k = 0; k < 3; k++) {
		snprintf(extra, sizeof(extra), "%s%sreason=\"%s\"", peer ? peer : "",
			 peer ? "," : "", why[k]);
		u64(w, p, extra, v[k]);
	}
}

static void e_gr_ref(struct om *w, const struct ctl_page *p)
{
	const struct hkv_page_xfer *x = XF(p);

	if (has_grants(p))
		refused(w, p, NULL, x->grants_refused, x->grants_refused_limit,
			x->grants_refused_busy);
}

enum { PG_N, PG_ACT, PG_PAGES, PG_BYTES, PG_EXP, PG_REF };

static void e_peer_gr(struct om *w, const struct ctl_page *p, unsigned what)
{
	char extra[48];

	if (!has_grants(p))
		return;
	for (unsigned i = 0; i < XF(p)->npeers && i < HKV_PAGE_XFER_PEERS; i++) {
		const struct hkv_page_grants *q = &XF(p)->peer_grants[i];
		const uint64_t v[] = { q->grants, q->active, q->pages, q->bytes, q->expired };

		snprintf(extra, sizeof(extra), "peer=\"%" PRIu64 "\"", q->peer);
		if (what == PG_REF)
			refused(w, p, extra, q->refused, q->refused_limit, q->refused_busy);
		else
			u64(w, p, extra, v[what]);
	}
}

static void e_peer_gr_n(struct om *w, const struct ctl_page *p) { e_peer_gr(w, p, PG_N); }
static void e_peer_gr_act(struct om *w, const struct ctl_page *p) { e_peer_gr(w, p, PG_ACT); }
static void e_peer_gr_pages(struct om *w, const struct ctl_page *p) { e_peer_gr(w, p, PG_PAGES); }
static void e_peer_gr_bytes(struct om *w, const struct ctl_page *p) { e_peer_gr(w, p, PG_BYTES); }
static void e_peer_gr_exp(struct om *w, const struct ctl_page *p) { e_peer_gr(w, p, PG_EXP); }
static void e_peer_gr_ref(struct om *w, const struct ctl_page *p) { e_peer_gr(w, p, PG_REF); }

/* one transfer figure, named by its family: from pages of a layout that
 * carries it */
static void e_xf_at(struct om *w, const struct ctl_page *p)
{
	uint64_t v;

	if (!XF(p)->endpoints || XF(p)->sz <= w->fam->since)
		return;
	memcpy(&v, (const char *)XF(p) + w->fam->at, sizeof(v));
	u64(w, p, NULL, v);
}

/* the single copy between processes of one host: past HKV_PAGE_XFER_SZ1 */
#define CMA(f)	e_xf_at, false, HKV_PAGE_XFER_SZ1, offsetof(struct hkv_page_xfer, f)

static const struct fam fams[] = {
	{ "hugekv_pool", INFO, NULL, "A pool that publishes a stats page.", e_info, true },
	{ "hugekv_pool_stale", GAUGE, NULL,
	  "1 when the process that published the page is gone (its last figures are not exported).",
	  e_stale, true },
	{ "hugekv_pool_processes", GAUGE, NULL,
	  "Live processes publishing the pool's page: those attached to a named pool, 1 for "
	  "a private one.", e_procs, true },
	{ "hugekv_stats_page_age_seconds", GAUGE, "seconds",
	  "Time since the page was last published.", e_page_age, true },
	{ "hugekv_pool_start_time_seconds", GAUGE, "seconds",
	  "When the pool was created, seconds since the epoch.", e_start, true },
	{ "hugekv_pool_size_pages", GAUGE, NULL, "KV pages in the pool.", e_size },
	{ "hugekv_page_size_bytes", GAUGE, "bytes", "Bytes per KV page (0: index-only pool).",
	  e_page_bytes },
	{ "hugekv_pages", GAUGE, NULL,
	  "KV pages by state: free, allocated outside units, cached in unpinned units, pinned.",
	  e_pages },
	{ "hugekv_free_room_low_pages", GAUGE, NULL,
	  "Low free-room watermark in pages (0: off).", e_low },
	{ "hugekv_free_room_high_pages", GAUGE, NULL, "High free-room watermark in pages.", e_high },
	{ "hugekv_free_extents", GAUGE, NULL, "Free extents (runs of free pages).", e_extents },
	{ "hugekv_largest_free_extent_pages", GAUGE, NULL, "Pages in the largest free extent.",
	  e_largest },
	{ "hugekv_unusable_free_index", GAUGE, NULL,
	  "Share of free pages that requests of request_pages contiguous pages cannot use.",
	  e_ufi },
	{ "hugekv_lane_free_pages", GAUGE, NULL, "Free pages per lane.", e_lane_free },
	{ "hugekv_lane_largest_free_extent_pages", GAUGE, NULL,
	  "Pages in each lane's largest free extent.", e_lane_largest },
	{ "hugekv_units", GAUGE, NULL, "Cache units.", e_units },
	{ "hugekv_pinned_units", GAUGE, NULL, "Cache units with a pin held.", e_pinned_units },
	{ "hugekv_oldest_pin_seconds", GAUGE, "seconds",
	  "Age of the oldest pin still held (0: none).", e_oldest_pin },
	{ "hugekv_allocations", COUNTER, NULL, "Successful allocations.", e_allocs },
	{ "hugekv_allocation_failures", COUNTER, NULL,
	  "Failed allocations by reason: no_room (too few free pages), max_extents "
	  "(more extents needed than the caller allowed).", e_alloc_fail },
	{ "hugekv_frees", COUNTER, NULL, "Successful frees.", e_frees },
	{ "hugekv_allocated_pages", COUNTER, NULL, "Pages handed out.", e_pages_alloc },
	{ "hugekv_freed_pages", COUNTER, NULL, "Pages given back (frees and evictions).",
	  e_pages_freed },
	{ "hugekv_allocation_extents", HISTOGRAM, NULL,
	  "Extents (DMA descriptors) per successful allocation.", e_ext_hist },
	{ "hugekv_evictions", COUNTER, NULL, "Cache units evicted.", e_evictions },
	{ "hugekv_evicted_pages", COUNTER, NULL, "Pages of evicted units.", e_evicted_pages },
	{ "hugekv_eviction_runs", COUNTER, NULL, "Planned eviction runs.", e_runs },
	{ "hugekv_eviction_failures", COUNTER, NULL, "Eviction runs short of their target.",
	  e_evict_fail },
	{ "hugekv_evicted_unit_age_seconds", HISTOGRAM, "seconds",
	  "Time from a unit's last add or touch to its eviction.", e_age_hist },
	{ "hugekv_served_calls", COUNTER, NULL,
	  "Calls that found their lane busy and were run by its holder.", e_served },
	{ "hugekv_bias_revocations", COUNTER, NULL,
	  "Times a lane used by one thread alone was taken by another.", e_revoc },
	{ "hugekv_deferred_frees", COUNTER, NULL, "Frees queued for a lane's holder.",
	  e_deferred },
	{ "hugekv_arena_bytes", GAUGE, "bytes", "Bytes mapped, by backing page size.", e_arena },
	{ "hugekv_backing_fallbacks", GAUGE, NULL,
	  "Steps below the wanted page size taken at create.", e_fallbacks },
	{ "hugekv_prefault_seconds", GAUGE, "seconds", "Time spent prefaulting at create.",
	  e_prefault },
	{ "hugekv_misplaced_pages", GAUGE, NULL, "Hugepages found on another node than asked.",
	  e_misplaced },
	{ "hugekv_metadata_bytes", GAUGE, "bytes", "The allocator's own bookkeeping.", e_meta },
	{ "hugekv_transfers", COUNTER, NULL, "Transfers completed (either result).", e_xf_n },
	{ "hugekv_transfer_failures", COUNTER, NULL,
	  "Failed transfers by reason: timeout, refused, error.", e_xf_fail },
	{ "hugekv_transfer_bytes", COUNTER, NULL, "Bytes moved by successful transfers.",
	  e_xf_bytes },
	{ "hugekv_transfer_pages", COUNTER, NULL, "Pages moved by successful transfers.",
	  e_xf_pages },
	{ "hugekv_transfer_operations", COUNTER, NULL, "Transfer operations issued.", e_xf_ops },
	{ "hugekv_transfer_peer_failures", COUNTER, NULL, "Peer connections that failed.",
	  e_xf_peerfail },
	{ "hugekv_transfer_latency_seconds", HISTOGRAM, "seconds",
	  "Latency of successful transfers.", e_xf_lat },
	{ "hugekv_peer_transfers", COUNTER, NULL, "Transfers completed with each peer.",
	  e_peer_n },
	{ "hugekv_peer_transfer_failures", COUNTER, NULL, "Failed transfers with each peer.",
	  e_peer_fail },
	{ "hugekv_peer_transfer_bytes", COUNTER, NULL, "Bytes moved with each peer.",
	  e_peer_bytes },
	{ "hugekv_grants", COUNTER, NULL, "Grants the pool's endpoint gave peers.", e_gr_n },
	{ "hugekv_grants_active", GAUGE, NULL, "Grants peers hold on the pool now.", e_gr_act },
	{ "hugekv_granted_pages", GAUGE, NULL, "Pages the grants held now name.", e_gr_pages },
	{ "hugekv_granted_bytes", GAUGE, "bytes", "Bytes the grants held now name.", e_gr_bytes },
	{ "hugekv_grant_state_bytes", GAUGE, "bytes",
	  "Bytes of grant state (grants and their extents) held now.", e_gr_mem },
	{ "hugekv_grants_refused", COUNTER, NULL,
	  "Grant requests refused by reason: limit (grant state limits, ENOBUFS), busy (the "
	  "peer held max_grants, EBUSY), denied (page checks or the access callback).",
	  e_gr_ref },
	{ "hugekv_grants_expired", COUNTER, NULL,
	  "Grants that passed their deadline (the peer's connection was closed).", e_gr_exp },
	{ "hugekv_transfer_auth_failures", COUNTER, NULL,
	  "Connections that failed to authenticate.", e_auth_fail },
	{ "hugekv_transfer_peers_rejected", COUNTER, NULL,
	  "Connections rejected because max_peers were open.", e_peers_rej },
	{ "hugekv_peer_grants", COUNTER, NULL, "Grants given to each peer.", e_peer_gr_n },
	{ "hugekv_peer_grants_active", GAUGE, NULL, "Grants each peer holds now.",
	  e_peer_gr_act },
	{ "hugekv_peer_granted_pages", GAUGE, NULL, "Pages each peer's grants name now.",
	  e_peer_gr_pages },
	{ "hugekv_peer_granted_bytes", GAUGE, "bytes", "Bytes each peer's grants name now.",
	  e_peer_gr_bytes },
	{ "hugekv_peer_grants_refused", COUNTER, NULL,
	  "Each peer's grant requests refused, by reason (limit, busy, denied).", e_peer_gr_ref },
	{ "hugekv_peer_grants_expired", COUNTER, NULL,
	  "Each peer's grants that passed their deadline.", e_peer_gr_exp },
	{ "hugekv_transfer_cma_out_peers", GAUGE, NULL,
	  "Peers that copy for the pool's transfers (single copy on one host).", CMA(cma_out) },
	{ "hugekv_transfer_cma_in_peers", GAUGE, NULL,
	  "Peers the pool's endpoint copies for (single copy on one host).", CMA(cma_in) },
	{ "hugekv_transfer_cma_offers_refused", COUNTER, NULL,
	  "Single-copy offers refused (those peers stay two-sided).", CMA(cma_refused) },
	{ "hugekv_transfer_cma_calls", COUNTER, NULL,
	  "process_vm_readv/writev calls made as a target.", CMA(cma_calls) },
	{ "hugekv_transfer_cma_runs", COUNTER, NULL, "Runs (operations) copied as a target.",
	  CMA(cma_runs) },
	{ "hugekv_transfer_cma_bytes", COUNTER, NULL, "Bytes copied as a target.",
	  CMA(cma_bytes) },
	{ "hugekv_transfer_cma_faults", COUNTER, NULL,
	  "Single-copy requests that failed (a buffer not mapped, the peer gone, past the "
	  "deadline).", CMA(cma_faults) },
};
#undef CMA

static void exporter(struct om *w)
{
	const char *h1 = "Stats pages read.", *h2 = "Stats pages that could not be read.";

	if (w->om) {
		fprintf(w->f, "# TYPE hugekv_exporter_pages gauge\n# HELP hugekv_exporter_pages %s\n"
			"hugekv_exporter_pages %zu\n", h1, w->set->n);
		fprintf(w->f, "# TYPE hugekv_exporter_page_errors gauge\n"
			"# HELP hugekv_exporter_page_errors %s\nhugekv_exporter_page_errors %u\n",
			h2, w->set->errors);
	} else {
		fprintf(w->f, "# HELP hugekv_exporter_pages %s\n# TYPE hugekv_exporter_pages gauge\n"
			"hugekv_exporter_pages %zu\n", h1, w->set->n);
		fprintf(w->f, "# HELP hugekv_exporter_page_errors %s\n"
			"# TYPE hugekv_exporter_page_errors gauge\nhugekv_exporter_page_errors %u\n",
			h2, w->set->errors);
	}
}

void ctl_metrics_write(FILE *f, const struct ctl_pages *set, bool om)
{
	struct om w = { .f = f, .om = om, .now = ctl_realtime_ns(), .set = set };

	for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
		w.fam = &fams[i];
		w.head = false;
		for (size_t k = 0; k < set->n; k++)
			if (fams[i].stale_too || !(set->v[k].pg.flags & HKV_PAGE_STALE))
				fams[i].emit(&w, &set->v[k]);
	}
	exporter(&w);
	if (om)
		fputs("# EOF\n", f);
}
