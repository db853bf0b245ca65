// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * hkv_test_named.c - the named-pool suites' directory (hkv_test_named.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "hkv_test_named.h"

char tn_dir[64];

int tn_dir_setup(const char *prefix)
{
	snprintf(tn_dir, sizeof(tn_dir), "/dev/shm/%s-XXXXXX", prefix);
	if (!mkdtemp(tn_dir))
		return -1;
	return setenv("HUGEKV_NAMED_DIR", tn_dir, 1);
}

int tn_dir_teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tn_dir);
	return system(cmd);
}
