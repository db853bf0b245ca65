// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * metrics.c - `hkvctl metrics`: every pool's stats page on this host as
 * metrics (om.c), printed once, written atomically for node_exporter's
 * textfile collector (--textfile), or served over HTTP at /metrics
 * (--listen, loopback unless told otherwise; http.c). One process reads the pages;
 * it never enters a serving process and needs no root for the user's own
 * pools.
 */
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pages.h"

#define TEXTFILE_NAME	"hugekv.prom"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void metrics_usage(FILE *f)
{
	fprintf(f,
"usage: hkvctl metrics [--dir DIR] [--format openmetrics|prometheus] [--json]\n"
"       hkvctl metrics --textfile DIR [--interval SECONDS]\n"
"       hkvctl metrics --listen [ADDR:]PORT\n\n"
"Every hugekv pool on this host publishes a stats page (a file under\n"
"HUGEKV_RUNTIME_DIR, /run/hugekv for root, $XDG_RUNTIME_DIR/hugekv or\n"
"/tmp/hugekv-UID otherwise); this prints them as metrics, hugekv_* with\n"
"labels pool (name, or PID.ID) and label.\n\n"
"  --dir DIR          read the pages in DIR\n"
"  --format F         openmetrics (default) or prometheus (text format 0.0.4)\n"
"  --textfile DIR     write DIR/" TEXTFILE_NAME " atomically (node_exporter's textfile\n"
"                     collector), once, or every --interval seconds\n"
"  --interval S       with --textfile: rewrite every S seconds until killed\n"
"  --listen ADDR:PORT serve /metrics over HTTP; ADDR defaults to 127.0.0.1\n"
"                     (name 0.0.0.0 or [::] to serve others); port 0 picks one.\n"
"                     \"listening on ADDR:PORT\" goes to stderr when ready. Up to 16\n"
"                     scrapers at once (more get 503); a request must arrive\n"
"                     whole within 5 s\n"
"  --json             the pages as one JSON object instead\n"
"  -h, --help         this text\n\n"
"Pages of processes that are gone (killed) are reported stale: hugekv_pool_stale 1,\n"
"their figures left out. Exit status: 0 ok, 1 failure, 2 usage.\n");
}

struct mopts {
	const char *dir, *textfile, *listen;
	bool om, json;
	long interval;
};

/* ---- JSON ---------------------------------------------------------------- */
#define XF_FIELD(m)	JSON_FIELD(struct hkv_page_xfer, m, JSON_U64)

/* the endpoint's figures; the target's grants and the single copy past the
 * layouts that carry them (hkv_page_xfer.sz) */
static const struct json_field xfer_fields[] = {
	XF_FIELD(endpoints), XF_FIELD(transfers), XF_FIELD(failures), XF_FIELD(timeouts),
	XF_FIELD(refused), XF_FIELD(ops), XF_FIELD(bytes), XF_FIELD(pages),
	XF_FIELD(peer_failures),
};
static const struct json_field grant_fields[] = {
	XF_FIELD(grants), XF_FIELD(grants_active), XF_FIELD(grant_pages),
	XF_FIELD(grant_bytes), XF_FIELD(grant_mem), XF_FIELD(grants_refused),
	XF_FIELD(grants_refused_limit), XF_FIELD(grants_refused_busy),
	XF_FIELD(grants_expired), XF_FIELD(auth_failures), XF_FIELD(peers_rejected),
};
static const struct json_field cma_fields[] = {
	XF_FIELD(cma_out), XF_FIELD(cma_in), XF_FIELD(cma_refused), XF_FIELD(cma_calls),
	XF_FIELD(cma_runs), XF_FIELD(cma_bytes), XF_FIELD(cma_faults),
};

static void json_xfer(struct json *j, const struct hkv_page_xfer *x)
{
	if (!x->endpoints)
		return;
	json_obj(j, "transfer");
	json_fields(j, x, xfer_fields, JSON_NFIELDS(xfer_fields));
	if (x->sz > HKV_PAGE_XFER_SZ0) {
		json_obj(j, "grants");
		json_fields(j, x, grant_fields, JSON_NFIELDS(grant_fields));
		json_close(j);
	}
	if (x->sz > HKV_PAGE_XFER_SZ1) {
		json_obj(j, "single_copy");
		json_fields(j, x, cma_fields, JSON_NFIELDS(cma_fields));
		json_close(j);
	}
	json_close(j);
}

static void json_page(struct json *j, const struct ctl_page *p, uint64_t now)
{
	const struct hkv_stats *st = &p->pg.stats;
	struct ctl_states s;

	ctl_page_figures(st, &s);
	json_obj(j, NULL);
	json_str(j, "pool", p->key);
	json_str(j, "label", p->pg.label);
	json_str(j, "name", p->pg.name);
	json_i64(j, "pid", p->pg.pid);
	json_ints(j, "pids", p->pids, p->npids);
	json_u64(j, "pool_id", p->pg.pool_id);
	json_bool(j, "stale", p->pg.flags & HKV_PAGE_STALE);
	json_str(j, "file", p->file);
	json_u64(j, "published_ns", p->pg.published_ns);
	json_u64(j, "publishes", p->pg.publishes);
	json_u64(j, "npages", st->npages);
	json_u64(j, "page_bytes", st->page_bytes);
	json_obj(j, "pages");
	json_u64(j, "free", s.free);
	json_u64(j, "allocated", s.allocated);
	json_u64(j, "cached", s.cached);
	json_u64(j, "pinned", s.pinned);
	json_close(j);
	json_u64(j, "allocs", st->allocs);
	json_u64(j, "alloc_failures", st->alloc_failures);
	json_u64(j, "frees", st->frees);
	json_u64(j, "units", st->units);
	json_u64(j, "evictions", st->evictions);
	json_u64(j, "evicted_pages", st->evicted_pages);
	json_dbl(j, "extents_per_alloc", st->extents_per_alloc);
	json_u64(j, "largest_free_extent", st->largest_free_extent);
	json_dbl(j, "oldest_pin_s", ctl_page_oldest_pin_s(&p->pg, now));
	json_u64(j, "transfers", p->pg.xfer.transfers);
	json_u64(j, "transfer_failures", p->pg.xfer.failures);
	json_xfer(j, &p->pg.xfer);
	json_close(j);
}

static void json_pages(const struct ctl_pages *set)
{
	uint64_t now = ctl_realtime_ns();
	struct json j;

	json_begin(&j, stdout);
	json_str(&j, "dir", set->dir);
	json_u64(&j, "errors", set->errors);
	json_arr(&j, "pools");
	for (size_t i = 0; i < set->n; i++)
		json_page(&j, &set->v[i], now);
	json_close(&j);
	json_end(&j);
}

/* ---- textfile -------------------------------------------------------------- */
static int textfile_write(const struct mopts *o)
{
	char path[PATH_MAX], tmp[PATH_MAX + 32];
	struct ctl_pages set;
	FILE *f;
	int err;

	err = ctl_pages_read(o->dir, &set);
	if (err && err != -ENOENT) {
		ctl_err("metrics", "%s: %s", set.dir, strerror(-err));
		return TOOL_FAIL;
	}
	ctl_fmt(path, sizeof(path), "%s/" TEXTFILE_NAME, o->textfile);
	ctl_fmt(tmp, sizeof(tmp), "%s/.%s.%d", o->textfile, TEXTFILE_NAME, (int)getpid());
	f = fopen(tmp, "w");
	if (!f) {
		ctl_err("metrics", "%s: %s", tmp, strerror(errno));
		ctl_pages_free(&set);
		return TOOL_FAIL;
	}
	ctl_metrics_write(f, &set, false);
	ctl_pages_free(&set);
	/* the collector reads a whole file or the old one: never a part */
	if (fflush(f) || fsync(fileno(f)) || fclose(f) || rename(tmp, path)) {
		ctl_err("metrics", "%s: %s", path, strerror(errno));
		unlink(tmp);
		return TOOL_FAIL;
	}
	return TOOL_OK;
}

static int textfile_loop(const struct mopts *o)
{
	int rc;

	do {
		rc = textfile_write(o);
		for (long s = 0; o->interval && !stop && s < o->interval * 10; s++)
			usleep(100000);
	} while (o->interval && !stop && rc == TOOL_OK);
	return rc;
}

/* ---- the command --------------------------------------------------------------- */
static int parse(int argc, char **argv, struct mopts *o)
{
	static const struct option lo[] = {
		CTL_PAGES_OPTIONS,
		{ "format", required_argument, NULL, 'f' },
		{ "textfile", required_argument, NULL, 't' },
		{ "listen", required_argument, NULL, 'l' },
		{ 0 },
	};
	int c;

	*o = (struct mopts){ .om = true };
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'd': o->dir = optarg; break;
		case 't': o->textfile = optarg; break;
		case 'l': o->listen = optarg; break;
		case 'j': o->json = true; break;
		case 'f':
			if (!strcmp(optarg, "openmetrics") || !strcmp(optarg, "prometheus")) {
				o->om = optarg[0] == 'o';
				break;
			}
			ctl_err("metrics", "--format %s: openmetrics or prometheus", optarg);
			return TOOL_USAGE;
		case 'i':
			if (ctl_arg_int("metrics", "--interval", optarg, 1, 86400, &o->interval))
				return TOOL_USAGE;
			break;
		case 'h': metrics_usage(stdout); return -1;
		default: metrics_usage(stderr); return TOOL_USAGE;
		}
	}
	if (ctl_no_operands("metrics", argc, argv))
		return TOOL_USAGE;
	if (!!o->textfile + !!o->listen + o->json > 1 || (o->interval && !o->textfile)) {
		ctl_err("metrics", "one of --textfile, --listen, --json; --interval with --textfile");
		return TOOL_USAGE;
	}
	return 0;
}

int cmd_metrics(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct ctl_pages set;
	struct mopts o;
	int rc = parse(argc, argv, &o), err;

	if (rc)
		return rc < 0 ? TOOL_OK : rc;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (o.listen)
		return ctl_http_serve(o.listen, o.dir, &stop);
	if (o.textfile)
		return textfile_loop(&o);
	err = ctl_pages_read(o.dir, &set);
	if (err && err != -ENOENT) {
		ctl_err("metrics", "%s: %s", set.dir, strerror(-err));
		return TOOL_FAIL;
	}
	if (o.json)
		json_pages(&set);
	else
		ctl_metrics_write(stdout, &set, o.om);
	ctl_pages_free(&set);
	return fflush(stdout) ? TOOL_FAIL : TOOL_OK;
}
