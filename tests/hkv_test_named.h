/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hkv_test_named.h - the named-pool suites' directory: a fresh one under
 * /dev/shm made HUGEKV_NAMED_DIR for the group, removed with what is left
 * in it after the group.
 */
#ifndef HKV_TEST_NAMED_H
#define HKV_TEST_NAMED_H

extern char tn_dir[64];

/* make /dev/shm/PREFIX-XXXXXX, set HUGEKV_NAMED_DIR to it; 0 or -1 */
int tn_dir_setup(const char *prefix);
/* remove it and everything in it; 0 or the failure of rm */
int tn_dir_teardown(void);

#endif
