// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * top.c - `hkvctl top`: every pool on the host, redrawn in place like
 * top(1), from the pools' stats pages (no BPF, no root for one's own
 * pools): occupancy by state, allocation, free, eviction and transfer
 * rates, extents per allocation, the oldest pin. Rates are differences of
 * the published counters over the publications' own times. `q` quits.
 */
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "pages.h"

static volatile sig_atomic_t top_stop;
static struct termios saved_tty;
static bool tty_raw;

static void top_usage(FILE *f)
{
	fprintf(f,
"usage: hkvctl top [--dir DIR] [--interval SECONDS] [--once] [--json]\n\n"
"Every hugekv pool on this host, redrawn in place from its stats page:\n"
"pages by state (free, allocated outside units, cached in units, pinned),\n"
"allocations, failures and frees per second, extents per allocation,\n"
"evictions per second and the age of the evicted units, the oldest pin,\n"
"transfers per second and their failures, a transfer target's grants held\n"
"now, the peers on the single copy (same host) each way and its bytes per\n"
"second. q quits.\n\n"
"  --dir DIR         read the pages in DIR (default: the runtime directory)\n"
"  --interval S      seconds between redraws (default 1; 0.1 to 3600)\n"
"  --once            print one frame (rates over one interval) and exit\n"
"  --json            one JSON object of that frame instead\n"
"  -h, --help        this text\n\n"
"Exit status: 0 ok, 1 failure, 2 usage.\n");
}

struct snap {			/* one publication of a page */
	uint64_t published_ns;
	struct hkv_stats st;
	struct hkv_page_xfer xf;
};

/* a pool's last publication seen and the one before it: a frame that finds
 * the last one again (frames faster than publications) takes its rates
 * against the one before, so they never blink out */
struct prev {
	int pid;
	uint64_t pool_id;
	struct snap last, base;
	bool has_base;
};

struct rates {
	double allocs, fails, frees, evictions, xfers, xfails, xbytes, ext, grefused;
	double cbytes;			/* moved by the single copy */
	bool valid;
};

static void tty_restore(void)
{
	if (!tty_raw)
		return;
	fputs("\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	tcsetattr(STDIN_FILENO, TCSANOW, &saved_tty);
	tty_raw = false;
}

static void on_signal(int sig)
{
	(void)sig;
	top_stop = 1;
}

/* keys one at a time, no echo; the alternate screen, cursor hidden */
static void tty_setup(void)
{
	struct termios t;

	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_tty))
		return;
	t = saved_tty;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSANOW, &t))
		return;
	tty_raw = true;
	atexit(tty_restore);
	fputs("\033[?1049h\033[?25l", stdout);
}

static unsigned tty_cols(void)
{
	struct winsize ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) || ws.ws_col < 40)
		return 160;
	return ws.ws_col;
}

static const struct prev *prev_find(const struct prev *v, size_t n, const struct hkv_page *pg)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].pid == pg->pid && v[i].pool_id == pg->pool_id)
			return &v[i];
	return NULL;
}

static double per_s(uint64_t now, uint64_t then, double dt)
{
	return now >= then ? (double)(now - then) / dt : 0;
}

static struct rates rates_of(const struct hkv_page *pg, const struct prev *pv)
{
	const struct hkv_stats *a = &pg->stats;
	const struct snap *p = NULL;
	struct rates r = { 0 };
	double dt;

	if (pv)
		p = pv->last.published_ns != pg->published_ns ? &pv->last :
		    pv->has_base ? &pv->base : NULL;
	if (!p || pg->published_ns <= p->published_ns)
		return r;
	dt = (double)(pg->published_ns - p->published_ns) / 1e9;
	r.allocs = per_s(a->allocs, p->st.allocs, dt);
	r.fails = per_s(a->alloc_failures, p->st.alloc_failures, dt);
	r.frees = per_s(a->frees, p->st.frees, dt);
	r.evictions = per_s(a->evictions, p->st.evictions, dt);
	r.xfers = per_s(pg->xfer.transfers, p->xf.transfers, dt);
	r.xfails = per_s(pg->xfer.failures, p->xf.failures, dt);
	r.xbytes = per_s(pg->xfer.bytes, p->xf.bytes, dt);
	r.grefused = per_s(pg->xfer.grants_refused, p->xf.grants_refused, dt);
	r.cbytes = per_s(pg->xfer.cma_bytes, p->xf.cma_bytes, dt);
	if (a->allocs > p->st.allocs)
		r.ext = (double)(a->extents_returned - p->st.extents_returned) /
			(double)(a->allocs - p->st.allocs);
	r.valid = true;
	return r;
}

/* the mean age of the units evicted, in seconds (0: none) */
static double evict_age(const struct hkv_stats *st)
{
	return st->evictions ? (double)st->evict_age_ns / 1e9 / (double)st->evictions : 0;
}

static const char *fmt_rate(char *b, size_t n, double v, bool valid)
{
	if (!valid)
		ctl_fmt(b, n, "-");
	else if (v >= 1e6)
		ctl_fmt(b, n, "%.1fM", v / 1e6);
	else if (v >= 1e4)
		ctl_fmt(b, n, "%.1fk", v / 1e3);
	else
		ctl_fmt(b, n, "%.0f", v);
	return b;
}

static const char *fmt_secs(char *b, size_t n, double s)
{
	if (s <= 0)
		ctl_fmt(b, n, "-");
	else if (s < 1)
		ctl_fmt(b, n, "%.0fms", s * 1e3);
	else if (s < 120)
		ctl_fmt(b, n, "%.1fs", s);
	else if (s < 7200)
		ctl_fmt(b, n, "%.0fm", s / 60);
	else
		ctl_fmt(b, n, "%.0fh", s / 3600);
	return b;
}

/* one line of at most @cols columns */
static void line(unsigned cols, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(unsigned cols, const char *fmt, ...)
{
	char b[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b, sizeof(b), fmt, ap);
	va_end(ap);
	if (strlen(b) > cols)
		b[cols] = 0;
	fputs(b, stdout);
	fputs("\033[K\n", stdout);
}

/* the occupancy bar: F free, A allocated, C cached, P pinned */
static void bar(char *b, unsigned w, const struct hkv_stats *st)
{
	struct ctl_states s;
	uint64_t parts[4];
	const char ch[4] = { 'P', 'C', 'A', '.' };
	unsigned k = 0;

	ctl_page_figures(st, &s);
	parts[0] = s.pinned;
	parts[1] = s.cached;
	parts[2] = s.allocated;
	parts[3] = s.free;
	for (unsigned i = 0, acc = 0; i < 4; i++) {
		uint64_t sum = 0;

		for (unsigned j = 0; j <= i; j++)
			sum += parts[j];
		acc = st->npages ? (unsigned)((double)sum * w / (double)st->npages + 0.5) : 0;
		while (k < acc && k < w)
			b[k++] = ch[i];
	}
	while (k < w)
		b[k++] = '.';
	b[w] = 0;
}

static double pct(uint64_t v, uint64_t of)
{
	return of ? 100.0 * (double)v / (double)of : 0;
}

static void draw_pool(const struct ctl_page *p, const struct prev *pv, unsigned cols, uint64_t now)
{
	const struct hkv_stats *st = &p->pg.stats;
	struct rates r = rates_of(&p->pg, pv);
	char a[16], f[16], fr[16], ev[16], xf[16], xe[16], age[16], pin[16], cb[16], b[64];
	char g[160] = "";
	struct ctl_states s;
	bool stale = p->pg.flags & HKV_PAGE_STALE;

	ctl_page_figures(st, &s);
	line(cols, "%-14.14s %-16.16s %9" PRIu64 " %5.1f %5.1f %5.1f %5.1f %7s %5s %7s %5.2f "
	     "%6s %6s %6s %6s %5s%s", p->key, p->pg.label[0] ? p->pg.label : "-", st->npages,
	     pct(s.free, st->npages), pct(s.allocated, st->npages), pct(s.cached, st->npages),
	     pct(s.pinned, st->npages), fmt_rate(a, sizeof(a), r.allocs, r.valid && !stale),
	     fmt_rate(f, sizeof(f), r.fails, r.valid && !stale),
	     fmt_rate(fr, sizeof(fr), r.frees, r.valid && !stale),
	     r.valid && r.ext > 0 ? r.ext : st->extents_per_alloc,
	     fmt_rate(ev, sizeof(ev), r.evictions, r.valid && !stale),
	     fmt_secs(age, sizeof(age), evict_age(st)),
	     fmt_secs(pin, sizeof(pin), ctl_page_oldest_pin_s(&p->pg, now)),
	     fmt_rate(xf, sizeof(xf), r.xfers, r.valid && !stale && p->pg.xfer.endpoints),
	     fmt_rate(xe, sizeof(xe), r.xfails, r.valid && !stale && p->pg.xfer.endpoints),
	     stale ? "  STALE (process gone)" : "");
	bar(b, 40, st);
	line(cols, "  [%s] units %" PRIu64 " pinned %" PRIu64 "  largest free %" PRIu64
	     "  ufi(64) %.3f  evicted %" PRIu64 "  fails %" PRIu64 "%s%.0u", b, st->units,
	     st->pinned_units, st->largest_free_extent, st->ufi[2], st->evictions,
	     st->alloc_failures,
	     p->pg.name[0] ? "  named, processes " : "", p->pg.name[0] ? p->npids : 0);
	if (!p->pg.xfer.endpoints)
		return;
	/* a transfer target's grants held now (what its peers pin); the
	 * peers on the single copy each way and its bytes, on a page that
	 * carries them */
	if (p->pg.xfer.sz > HKV_PAGE_XFER_SZ1)
		snprintf(g, sizeof(g), ", single copy out %" PRIu64 " in %" PRIu64 " %s B/s",
			 p->pg.xfer.cma_out, p->pg.xfer.cma_in,
			 fmt_rate(cb, sizeof(cb), r.cbytes, r.valid && !stale));
	line(cols, "  xfer: grants %" PRIu64 " (%" PRIu64 " pages)%s", p->pg.xfer.grants_active,
	     p->pg.xfer.grant_pages, g);
}

static void draw(const struct ctl_pages *set, const struct prev *pv, size_t npv)
{
	unsigned cols = tty_cols(), stale = 0;
	uint64_t now = ctl_realtime_ns();
	time_t t = (time_t)(now / 1000000000ull);
	struct tm tm;
	char hm[16];

	for (size_t i = 0; i < set->n; i++)
		stale += !!(set->v[i].pg.flags & HKV_PAGE_STALE);
	localtime_r(&t, &tm);
	strftime(hm, sizeof(hm), "%H:%M:%S", &tm);
	fputs("\033[H", stdout);
	line(cols, "hkvctl top - %s  pools %zu (%u stale)%s  %s   q quit", hm, set->n, stale,
	     set->errors ? "  unreadable pages" : "", set->dir);
	line(cols, "%-14s %-16s %9s %5s %5s %5s %5s %7s %5s %7s %5s %6s %6s %6s %6s %5s",
	     "POOL", "LABEL", "PAGES", "FREE%", "ALLC%", "CACH%", "PIN%", "ALLOC/s", "FAIL",
	     "FREE/s", "EXT/A", "EVIC/s", "EVAGE", "PINAGE", "XFER/s", "XFAIL");
	for (size_t i = 0; i < set->n; i++)
		draw_pool(&set->v[i], prev_find(pv, npv, &set->v[i].pg), cols, now);
	if (!set->n)
		line(cols, "(no stats pages: no pool runs, or HUGEKV_STATS_INTERVAL_MS=0)");
	fputs("\033[J", stdout);
	fflush(stdout);
}

static void json_frame(const struct ctl_pages *set, const struct prev *pv, size_t npv)
{
	uint64_t now = ctl_realtime_ns();
	struct json j;

	json_begin(&j, stdout);
	json_str(&j, "dir", set->dir);
	json_arr(&j, "pools");
	for (size_t i = 0; i < set->n; i++) {
		const struct ctl_page *p = &set->v[i];
		struct rates r = rates_of(&p->pg, prev_find(pv, npv, &p->pg));
		struct ctl_states s;

		ctl_page_figures(&p->pg.stats, &s);
		json_obj(&j, NULL);
		json_str(&j, "pool", p->key);
		json_str(&j, "label", p->pg.label);
		json_bool(&j, "stale", p->pg.flags & HKV_PAGE_STALE);
		json_ints(&j, "pids", p->pids, p->npids);
		json_u64(&j, "npages", p->pg.stats.npages);
		json_u64(&j, "free", s.free);
		json_u64(&j, "allocated", s.allocated);
		json_u64(&j, "cached", s.cached);
		json_u64(&j, "pinned", s.pinned);
		json_bool(&j, "rates_valid", r.valid);
		json_dbl(&j, "allocs_per_s", r.allocs);
		json_dbl(&j, "alloc_failures_per_s", r.fails);
		json_dbl(&j, "frees_per_s", r.frees);
		json_dbl(&j, "evictions_per_s", r.evictions);
		json_dbl(&j, "extents_per_alloc", r.valid && r.ext > 0 ? r.ext :
			 p->pg.stats.extents_per_alloc);
		json_dbl(&j, "evicted_age_s", evict_age(&p->pg.stats));
		json_dbl(&j, "oldest_pin_s", ctl_page_oldest_pin_s(&p->pg, now));
		json_dbl(&j, "transfers_per_s", r.xfers);
		json_dbl(&j, "transfer_failures_per_s", r.xfails);
		/* the pool as a transfer target: grants held now, refusals */
		json_u64(&j, "grants_active", p->pg.xfer.grants_active);
		json_u64(&j, "granted_pages", p->pg.xfer.grant_pages);
		json_dbl(&j, "grants_refused_per_s", r.grefused);
		if (p->pg.xfer.endpoints && p->pg.xfer.sz > HKV_PAGE_XFER_SZ1) {
			json_obj(&j, "single_copy");	/* same-host peers, both ways */
			json_u64(&j, "out_peers", p->pg.xfer.cma_out);
			json_u64(&j, "in_peers", p->pg.xfer.cma_in);
			json_dbl(&j, "bytes_per_s", r.cbytes);
			json_u64(&j, "offers_refused", p->pg.xfer.cma_refused);
			json_u64(&j, "faults", p->pg.xfer.cma_faults);
			json_close(&j);
		}
		json_close(&j);
	}
	json_close(&j);
	json_end(&j);
}

/* keep this frame's publications for the next frame's rates */
static int remember(const struct ctl_pages *set, struct prev **pv, size_t *npv)
{
	struct prev *v = set->n ? calloc(set->n, sizeof(*v)) : NULL;

	if (set->n && !v)
		return -ENOMEM;
	for (size_t i = 0; i < set->n; i++) {
		const struct hkv_page *pg = &set->v[i].pg;
		const struct prev *old = prev_find(*pv, *npv, pg);

		if (old && old->last.published_ns == pg->published_ns) {
			v[i] = *old;
			continue;
		}
		v[i].pid = pg->pid;
		v[i].pool_id = pg->pool_id;
		if (old) {
			v[i].base = old->last;
			v[i].has_base = true;
		}
		v[i].last.published_ns = pg->published_ns;
		v[i].last.st = pg->stats;
		v[i].last.xf = pg->xfer;
	}
	free(*pv);
	*pv = v;
	*npv = set->n;
	return 0;
}

/* wait @ms for a key; true when it asks to quit */
static bool wait_key(int ms)
{
	struct pollfd pf = { .fd = STDIN_FILENO, .events = POLLIN };
	char c;

	if (!tty_raw) {
		usleep((useconds_t)ms * 1000);
		return false;
	}
	if (poll(&pf, 1, ms) <= 0)
		return false;
	if (read(STDIN_FILENO, &c, 1) != 1)
		return true;	/* the terminal is gone */
	return c == 'q' || c == 'Q' || c == 3;
}

struct topts {
	const char *dir;
	double interval;
	bool once, json;
};

static int top_parse(int argc, char **argv, struct topts *o)
{
	static const struct option lo[] = {
		CTL_PAGES_OPTIONS,
		{ "once", no_argument, NULL, 'o' },
		{ 0 },
	};
	int c;

	*o = (struct topts){ .interval = 1 };
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'd': o->dir = optarg; break;
		case 'o': o->once = true; break;
		case 'j': o->json = o->once = true; break;
		case 'i':
			if (tool_parse_double(optarg, 0.1, 3600, &o->interval)) {
				ctl_err("top", "--interval %s: seconds, 0.1 to 3600", optarg);
				return TOOL_USAGE;
			}
			break;
		case 'h': top_usage(stdout); return -1;
		default: top_usage(stderr); return TOOL_USAGE;
		}
	}
	return ctl_no_operands("top", argc, argv) ? TOOL_USAGE : 0;
}

static int top_read(const struct topts *o, struct ctl_pages *set)
{
	int err = ctl_pages_read(o->dir, set);

	if (err && err != -ENOENT) {
		ctl_err("top", "%s: %s", set->dir, strerror(-err));
		return TOOL_FAIL;
	}
	return TOOL_OK;
}

int cmd_top(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct prev *pv = NULL;
	struct ctl_pages set;
	struct topts o;
	size_t npv = 0;
	int rc = top_parse(argc, argv, &o);

	if (rc)
		return rc < 0 ? TOOL_OK : rc;
	if (o.once) {		/* two reads an interval apart: one frame of rates */
		if ((rc = top_read(&o, &set)) || remember(&set, &pv, &npv))
			return rc ? rc : TOOL_FAIL;
		ctl_pages_free(&set);
		usleep((useconds_t)(o.interval * 1e6));
		if ((rc = top_read(&o, &set)))
			return rc;
		if (o.json)
			json_frame(&set, pv, npv);
		else
			draw(&set, pv, npv);
		ctl_pages_free(&set);
		free(pv);
		return TOOL_OK;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	tty_setup();
	fputs("\033[2J", stdout);
	while (!top_stop) {
		if ((rc = top_read(&o, &set)))
			break;
		draw(&set, pv, npv);
		rc = remember(&set, &pv, &npv) ? TOOL_FAIL : TOOL_OK;
		ctl_pages_free(&set);
		if (rc || wait_key((int)(o.interval * 1000)))
			break;
	}
	tty_restore();
	free(pv);
	return rc;
}
