// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
int bench_scale(int argc, char **argv);
int bench_scale(int argc, char **argv) { (void)argc; (void)argv; return 1; }
