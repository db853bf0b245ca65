// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * json.c - hkv-bench's JSON values on the tools' writer (latency
 * summaries) and its CSV files.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

/* ---- JSON --------------------------------------------------------------- */
#define LAT_F(m)	JSON_FIELD(struct lat, m, JSON_DBL)
static const struct json_field lat_fields[] = {
	LAT_F(mean), LAT_F(p50), LAT_F(p90), LAT_F(p99), LAT_F(p999), LAT_F(max),
};

void json_lat(struct json *j, const char *key, const struct lat *l)
{
	json_obj(j, key);
	json_u64(j, "n", l->n);
	json_fields(j, l, lat_fields, JSON_NFIELDS(lat_fields));
	json_obj_end(j);
}

/* ---- CSV ---------------------------------------------------------------- */
FILE *csv_open(const char *dir, const char *name, const char *header)
{
	char path[4096];
	FILE *f;
	int fd;

	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "hkv-bench: mkdir %s: %s\n", dir, strerror(errno));
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	/* not through a symlink: DIR may be a shared scratch directory where
	 * another user planted one pointing at a file of ours */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		fprintf(stderr, "hkv-bench: %s: %s%s\n", path, strerror(errno),
			errno == ELOOP ? " (a symbolic link: refused)" : "");
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (*header)
		fprintf(f, "%s\n", header);
	return f;
}
