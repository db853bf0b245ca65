// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tool.c - --version and error messages, the same in every tool (tool.h).
 */
#include <stdarg.h>

#include "tool.h"

#ifndef HKV_VERSION
#error "HKV_VERSION is set by mk/toolslib.mk from the Makefile's VERSION"
#endif

const char tool_version_string[] = HKV_VERSION;

int tool_version(const char *name)
{
	printf("%s (hugekv) %s\n", name, tool_version_string);
	return TOOL_OK;
}

void tool_err(const char *who, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", who);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
