/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pages.h - the pools' stats pages as hkvctl metrics and top read them
 * (pages.c), the OpenMetrics writer (metrics.c).
 */
#ifndef HKVCTL_PAGES_H
#define HKVCTL_PAGES_H

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <time.h>

#include <hugekv.h>

#include "hkvctl.h"

#define HKV_MIN_U64(a, b)	((a) < (b) ? (a) : (b))

struct ctl_page {
	struct hkv_page pg;
	char file[NAME_MAX + 1];	/* in the directory */
	char key[HKV_PAGE_NAME_MAX];	/* the pool label of metrics: name or PID.ID */
	/* the live processes that publish the pool's pages: a named pool's
	 * attached processes each publish one, merged into one entry here */
	int pids[HKV_NAMED_SLOTS];
	unsigned npids;
};

struct ctl_pages {
	char dir[PATH_MAX];
	struct ctl_page *v;
	size_t n, cap;
	unsigned errors;		/* pages that could not be read */
};

/* pages by state; they add up to npages */
struct ctl_states {
	uint64_t free, allocated, cached, pinned;
};

/* the getopt_long() entries of the options the page readers (hkvctl
 * metrics and top) share: --dir DIR, --interval, --json, --help */
#define CTL_PAGES_OPTIONS \
	{ "dir", required_argument, NULL, 'd' }, \
	{ "interval", required_argument, NULL, 'i' }, \
	{ "json", no_argument, NULL, 'j' }, \
	{ "help", no_argument, NULL, 'h' }

int ctl_pages_read(const char *dir, struct ctl_pages *set);
void ctl_pages_free(struct ctl_pages *set);
void ctl_page_figures(const struct hkv_stats *st, struct ctl_states *f);
double ctl_page_oldest_pin_s(const struct hkv_page *pg, uint64_t now_real_ns);

static inline uint64_t ctl_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* metrics.c: every page's metrics on @f; @om: OpenMetrics 1.0 (else the
 * Prometheus text format 0.0.4, which node_exporter's textfile reads) */
void ctl_metrics_write(FILE *f, const struct ctl_pages *set, bool om);

/* http.c: serve /metrics on [ADDR:]PORT until *stop (hkvctl metrics --listen) */
int ctl_http_serve(const char *spec, const char *dir, volatile sig_atomic_t *stop);

#endif /* HKVCTL_PAGES_H */
