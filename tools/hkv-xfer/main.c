// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * hkv-xfer - move KV pages between two hugekv pools over UCX.
 *
 *   hkv-xfer serve --listen HOST:PORT [pool options]
 *   hkv-xfer send --connect HOST:PORT [pool options] [--xfer-pages N] ...
 *   hkv-xfer bench [--mode tcp|shm|netns] ...
 *
 * Each side creates its own pool and churns it to --occupancy, so its
 * extents look like a live cache's. The sender replays the receiver's
 * churn (same seed) on an index-only copy to know which of the
 * receiver's pages are allocated, writes a pattern into its own pages,
 * puts them there, and reads them back at the end; the receiver checks
 * the pattern of every page of every transfer it granted.
 *
 * Both sides authenticate with a key from the keyring file --key-file, or
 * $HUGEKV_XFER_KEY_FILE, or $HUGEKV_XFER_KEY (never a secret on the
 * command line); serve gives each sender only the pages it wrote itself.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hkv-xfer.h"
#include "../lib/parse.h"
#include "../lib/tool.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: hkv-xfer serve --listen HOST:PORT [options]\n"
"       hkv-xfer send --connect HOST:PORT [options]\n"
"       hkv-xfer bench [bench options]     (hkv-xfer bench --help)\n"
"       hkv-xfer --help | --version\n"
"\n"
"Move KV pages between two hugekv pools over UCX (UCX_TLS etc. apply).\n"
"\n"
"pool options (both sides):\n"
"  --pages N          KV pages in the pool (default 16384)\n"
"  --page-bytes B     bytes per page, K/M/G suffixes (default 64K)\n"
"  --backing B        auto|1g|2m|thp|4k (default 2m)\n"
"  --occupancy F      occupancy after churn and requests (default 0.95;\n"
"                     0 = no churn)\n"
"  --xfer-pages N     pages per request, one transfer each (default 1024)\n"
"  --total-pages N    pages of requests per round (default pages/4)\n"
"                     (both sides must agree on these two)\n"
"  --seed S           churn seed (serve default 2, send default 1)\n"
"  --reg-chunk B      split regions into ranges of B (default: one per region)\n"
"  --inflight N       UCX operations in flight at most (default 64)\n"
"  --timeout MS       transfer/connect limit (default 10000)\n"
"  --key-file PATH    keyring: lines \"NAME SECRET\" or one \"SECRET\", mode 0600\n"
"                     (default $HUGEKV_XFER_KEY_FILE, then $HUGEKV_XFER_KEY)\n"
"  --name NAME        this side's name, proved to the peer (default\n"
"                     $HUGEKV_XFER_NAME, or \"hugekv\")\n"
"  --json             one JSON object on stdout\n"
"  --same-host        the peers are on this host: large messages over shared\n"
"                     memory, not tcp loopback (HKV_XFER_SAME_HOST)\n"
"  --no-cma           no single copy between processes of this host: the\n"
"                     two-sided path only (HKV_XFER_NO_CMA)\n"
"serve:\n"
"  --listen HOST:PORT listen (port 0: any; the port is printed)\n"
"  --count N          peers to serve, one after another (default 1); each\n"
"                     may read only the pages it wrote itself (per name)\n"
"  --verify all|full  check every byte of every transfer (all, default), or\n"
"                     only of transfers the sender marks (full) and the\n"
"                     headers of the others\n"
"send:\n"
"  --connect HOST:PORT\n"
"  --rounds R         timed rounds (default 1), then one that the receiver\n"
"                     checks in full (stats are of the timed rounds)\n"
"  --depth D          transfers in flight (default 1)\n"
"  --per-page         one UCX operation per page (the comparison)\n"
"  --remote-seed S    receiver's churn seed (default: serve's default)\n"
"  --remote-pages N   receiver's pages (default --pages)\n"
"  --no-readback      do not read the pages back and verify them\n"
"  --read-only        only read the receiver's pages (no puts): exit 0 if\n"
"                     every get was granted\n"
"\n"
"exit: 0 done and verified, 1 failure, 2 bad usage\n");
}

/* bytes: K M G are powers of 1024 (tools/lib/parse.h) */
int parse_size(const char *s, uint64_t *out)
{
	return tool_parse_size(s, out);
}

/* the core's spelling of backings (HUGEKV_BACKING's) */
int parse_backing(const char *s)
{
	int b;

	return hkv_backing_parse(s, &b) || b == HKV_BACKING_NONE ? -1 : b;
}

enum { O_PAGES = 256, O_PB, O_BACKING, O_OCC, O_SEED, O_CHUNK, O_INFL, O_TIMEOUT, O_JSON,
       O_LISTEN, O_COUNT, O_VERIFY, O_CONNECT, O_XP, O_TOTAL, O_ROUNDS, O_DEPTH,
       O_PERPAGE, O_RSEED, O_RPAGES, O_NORB, O_HELP, O_QUIET, O_KEYFILE, O_NAME, O_RDONLY,
       O_SAMEHOST, O_NOCMA };

static const struct option lopts[] = {
	{ "pages", 1, 0, O_PAGES }, { "page-bytes", 1, 0, O_PB }, { "backing", 1, 0, O_BACKING },
	{ "occupancy", 1, 0, O_OCC }, { "seed", 1, 0, O_SEED }, { "reg-chunk", 1, 0, O_CHUNK },
	{ "inflight", 1, 0, O_INFL }, { "timeout", 1, 0, O_TIMEOUT }, { "json", 0, 0, O_JSON },
	{ "listen", 1, 0, O_LISTEN }, { "count", 1, 0, O_COUNT }, { "verify", 1, 0, O_VERIFY },
	{ "connect", 1, 0, O_CONNECT }, { "xfer-pages", 1, 0, O_XP },
	{ "total-pages", 1, 0, O_TOTAL }, { "rounds", 1, 0, O_ROUNDS }, { "depth", 1, 0, O_DEPTH },
	{ "per-page", 0, 0, O_PERPAGE }, { "remote-seed", 1, 0, O_RSEED },
	{ "remote-pages", 1, 0, O_RPAGES }, { "no-readback", 0, 0, O_NORB },
	{ "quiet", 0, 0, O_QUIET }, { "key-file", 1, 0, O_KEYFILE }, { "name", 1, 0, O_NAME },
	{ "read-only", 0, 0, O_RDONLY }, { "same-host", 0, 0, O_SAMEHOST },
	{ "no-cma", 0, 0, O_NOCMA },
	{ "help", 0, 0, O_HELP }, { 0, 0, 0, 0 },
};

static int parse_u(const char *s, unsigned *out, unsigned min)
{
	uint64_t v;

	if (tool_parse_count(s, &v) || v < min || v > (1u << 30))
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* a page count: at least 1, and its bytes within 64 bits */
static bool bad_pages(const char *s, uint64_t *out)
{
	return tool_parse_count(s, out) || !*out || *out > (1ull << 40);
}

static int parse_args(int argc, char **argv, bool serve, struct args *a)
{
	uint64_t v;
	int c;

	memset(a, 0, sizeof(*a));
	a->pool = (struct pool_args){ 16384, 65536, HKV_BACKING_HUGE_2M, 0.95, serve ? 2 : 1, 0, 0 };
	a->xfer_pages = 1024;
	a->rounds = a->depth = a->count = 1;
	a->verify_all = a->readback = true;
	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		bool bad = false;

		switch (c) {
		case O_PAGES:
			bad = bad_pages(optarg, &a->pool.pages);
			break;
		case O_PB:
			bad = parse_size(optarg, &a->pool.page_bytes) || a->pool.page_bytes < 64 ||
			      a->pool.page_bytes % 8 || a->pool.page_bytes > (1ull << 30);
			break;
		case O_BACKING:
			bad = (a->pool.backing = parse_backing(optarg)) < 0;
			break;
		case O_OCC:
			bad = tool_parse_double(optarg, 0, 0.999, &a->pool.occupancy) != 0;
			break;
		case O_SEED:
			bad = tool_parse_count(optarg, &a->pool.seed);
			break;
		case O_CHUNK:
			bad = parse_size(optarg, &a->reg_chunk);
			break;
		case O_INFL:
			bad = parse_u(optarg, &a->inflight, 1);
			break;
		case O_TIMEOUT:
			bad = tool_parse_count(optarg, &v) || !v || v > 3600000;
			a->timeout_ms = (int)v;
			break;
		case O_KEYFILE:
			a->key_file = optarg;
			break;
		case O_NAME:
			a->name = optarg;
			break;
		case O_RDONLY:
			bad = serve;
			a->read_only = true;
			break;
		case O_JSON:
			a->json = true;
			break;
		case O_QUIET:
			a->quiet = true;
			break;
		case O_LISTEN:
		case O_CONNECT:
			bad = serve != (c == O_LISTEN);
			a->addr = optarg;
			break;
		case O_COUNT:
			bad = !serve || parse_u(optarg, &a->count, 1);
			break;
		case O_VERIFY:
			a->verify_all = !strcmp(optarg, "all");
			bad = !serve || (!a->verify_all && strcmp(optarg, "full"));
			break;
		case O_XP:
			bad = bad_pages(optarg, &a->xfer_pages);
			break;
		case O_TOTAL:
			bad = bad_pages(optarg, &a->total_pages);
			break;
		case O_ROUNDS:
			bad = serve || parse_u(optarg, &a->rounds, 1);
			break;
		case O_DEPTH:
			bad = serve || parse_u(optarg, &a->depth, 1);
			break;
		case O_SAMEHOST:
			a->same_host = true;
			break;
		case O_NOCMA:
			a->no_cma = true;
			break;
		case O_PERPAGE:
			bad = serve;
			a->per_page = true;
			break;
		case O_RSEED:
			bad = serve || tool_parse_count(optarg, &a->remote.seed);
			a->remote_seed_set = true;
			break;
		case O_RPAGES:
			bad = serve || bad_pages(optarg, &a->remote.pages);
			break;
		case O_NORB:
			bad = serve;
			a->readback = false;
			break;
		case O_HELP:
			usage(stdout);
			exit(0);
		default:
			bad = true;
		}
		if (bad)
			return -1;
	}
	if (optind != argc || !a->addr)
		return -1;
	if (!a->total_pages)
		a->total_pages = a->pool.pages / 4;
	if (a->total_pages < a->xfer_pages || a->total_pages > a->pool.pages ||
	    (a->remote.pages && a->total_pages > a->remote.pages))
		return -1;
	a->pool.req_pages = a->xfer_pages;
	a->pool.nreq = a->total_pages / a->xfer_pages;
	if (!a->remote.pages)
		a->remote.pages = a->pool.pages;
	a->remote.req_pages = a->pool.req_pages;
	a->remote.nreq = a->pool.nreq;
	if (!a->remote_seed_set)
		a->remote.seed = 2;
	a->remote.page_bytes = a->pool.page_bytes;
	a->remote.occupancy = a->pool.occupancy;
	return 0;
}

int make_pool(const struct pool_args *pa, bool index_only, struct hkv_pool **pool,
		     struct page_set *set)
{
	struct hkv_pool_opts o = {
		.sz = sizeof(o), .npages = pa->pages,
		.page_bytes = index_only ? 0 : pa->page_bytes,
		.backing = index_only ? HKV_BACKING_NONE : pa->backing, .numa_node = -1,
	};
	int err = hkv_pool_create(&o, pool);

	if (err) {
		fprintf(stderr, "hkv-xfer: pool of %" PRIu64 " pages of %" PRIu64 " bytes: %s\n",
			pa->pages, pa->page_bytes, hkv_strerror(err));
		return err;
	}
	err = churn_pool(*pool, pa, set);
	if (err) {
		fprintf(stderr, "hkv-xfer: churn: %s\n", hkv_strerror(err));
		hkv_pool_destroy(*pool);
	}
	return err;
}

int make_xfer(struct hkv_pool *pool, const struct args *a, struct hkv_xfer **x)
{
	struct hkv_xfer_opts o = { .sz = sizeof(o), .max_inflight = a->inflight,
				   .timeout_ms = a->timeout_ms, .reg_chunk_bytes = a->reg_chunk,
				   .name = a->name, .key_file = a->key_file,
				   .flags = (a->same_host ? HKV_XFER_SAME_HOST : 0) |
					    (a->no_cma ? HKV_XFER_NO_CMA : 0) };
	int err = hkv_xfer_create(pool, &o, x);

	if (err)
		fprintf(stderr, "hkv-xfer: endpoint: %s\n", strerror(-err));
	return err;
}

int main(int argc, char **argv)
{
	struct args a;
	const char *cmd = argc > 1 ? argv[1] : "";

	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version")) {
		return tool_version("hkv-xfer");
	}
	if (!strcmp(cmd, "bench"))
		return bench_main(argc - 1, argv + 1, argv[0]);
	if (strcmp(cmd, "serve") && strcmp(cmd, "send")) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (parse_args(argc - 1, argv + 1, !strcmp(cmd, "serve"), &a)) {
		fprintf(stderr, "hkv-xfer %s: bad usage (hkv-xfer --help)\n", cmd);
		return EXIT_USAGE;
	}
	return !strcmp(cmd, "serve") ? do_serve(&a) : do_send(&a);
}
