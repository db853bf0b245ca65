// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pool-holder - a process that holds one hugekv pool until its stdin
 * closes, for the `hkvctl verify` test: it prints the pool's regions (base,
 * bytes, page size, node) as "region BASE BYTES PAGE NODE" lines and then
 * "ready".
 *
 * usage: pool-holder MIB [BACKING] [NODE]   (BACKING: 2m default, 4k, thp)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hugekv.h"

int main(int argc, char **argv)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .page_bytes = 64 << 10,
				   .backing = HKV_BACKING_HUGE_2M, .numa_node = 0,
				   .flags = HKV_POOL_STRICT };
	struct hkv_region r[16];
	struct hkv_pool *pool;
	int n, err, c;

	if (argc < 2 || !strcmp(argv[1], "--help")) {
		fprintf(argc < 2 ? stderr : stdout, "usage: pool-holder MIB [2m|4k|thp] [NODE]\n");
		return argc < 2 ? 2 : 0;
	}
	o.npages = strtoull(argv[1], NULL, 10) * (1 << 20) / o.page_bytes;
	if (argc > 2)
		o.backing = !strcmp(argv[2], "4k") ? HKV_BACKING_SMALL :
			    !strcmp(argv[2], "thp") ? HKV_BACKING_THP : HKV_BACKING_HUGE_2M;
	if (argc > 3)
		o.numa_node = atoi(argv[3]);
	err = hkv_pool_create(&o, &pool);
	if (err) {
		fprintf(stderr, "pool-holder: hkv_pool_create: %s\n", hkv_strerror(err));
		return 1;
	}
	n = hkv_regions(pool, r, 16);
	for (int i = 0; i < n && i < 16; i++)
		printf("region %" PRIxPTR " %" PRIu64 " %" PRIu64 " %d\n",
		       (uintptr_t)r[i].base, r[i].bytes, r[i].hugepage_bytes, r[i].node);
	printf("ready\n");
	fflush(stdout);
	while ((c = getchar()) != EOF)
		;
	hkv_pool_destroy(pool);
	return 0;
}
