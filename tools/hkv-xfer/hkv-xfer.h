/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hkv-xfer.h - the parts of hkv-xfer: a pool churned like a live cache
 * (churn.c), the byte pattern a sender writes and a receiver verifies
 * (pattern.c), options and main (main.c), serve (serve.c), send (send.c),
 * bench (bench.c).
 */
#ifndef HKV_XFER_TOOL_H
#define HKV_XFER_TOOL_H

#include <stdbool.h>
#include <stdint.h>

#include "hugekv.h"
#include "hugekv-xfer.h"


#define XMIN(a, b)	((a) < (b) ? (a) : (b))

#include "../lib/tool.h"

/* exit codes: tools/lib's (0 ok, 1 failure: transfer, verification; 2 bad usage) */
enum { EXIT_FAIL = TOOL_FAIL, EXIT_USAGE = TOOL_USAGE };

struct pool_args {
	uint64_t pages, page_bytes;
	int backing;
	double occupancy;		/* after churn and requests; 0 = no churn */
	uint64_t seed;
	uint64_t req_pages, nreq;	/* the requests that are transferred */
};

/* the requests a side transfers: request i is ext[first[i] .. first[i+1]) */
struct page_set {
	struct hkv_extent *ext;
	unsigned n, nreq, *first;
	uint64_t pages;
};

int churn_pool(struct hkv_pool *pool, const struct pool_args *a, struct page_set *set);
void page_set_free(struct page_set *set);

void pattern_fill(void *page, uint64_t bytes, uint64_t salt, uint64_t k);
/* 0 if the page holds the pattern; else the first bad byte offset + 1 */
uint64_t pattern_check(const void *page, uint64_t bytes, uint64_t *salt, uint64_t *k);

#define SALT_FULL	(1ull << 63)	/* the receiver checks every byte */

struct args {
	struct pool_args pool, remote;
	const char *addr;
	uint64_t xfer_pages, total_pages;	/* request size, pages per round */
	unsigned rounds, depth, inflight, count;
	int timeout_ms;
	uint64_t reg_chunk;
	bool json, per_page, verify_all, quiet, readback, read_only;
	bool remote_seed_set, same_host, no_cma;
	const char *key_file, *name;
};

int make_pool(const struct pool_args *pa, bool index_only, struct hkv_pool **pool,
	      struct page_set *set);
int make_xfer(struct hkv_pool *pool, const struct args *a, struct hkv_xfer **x);
static inline double now_s(void)
{
	return tool_now_s();
}
int do_serve(const struct args *a);
int do_send(const struct args *a);
int parse_backing(const char *s);
int parse_size(const char *s, uint64_t *out);
int bench_main(int argc, char **argv, const char *self);

#endif
