// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * kvtrace.c - read a request trace: one JSON object per line with
 * "timestamp" (ms), "input_length" and "output_length" (tokens) and
 * "hash_ids" (one id per prompt block; equal ids are equal prefix blocks),
 * the format of the Mooncake FAST'25 traces. The ids are mapped to dense
 * node numbers, so the model keeps its per-block state in flat arrays.
 * Requests must come in timestamp order (they are replayed that way).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/json_reader.h"
#include "kvmodel.h"

#define MAX_IDS		(1u << 20)	/* blocks in one request */

struct idmap {				/* open addressing, id -> node */
	uint64_t *key;
	uint32_t *val;
	uint64_t cap, n;
};

static uint64_t id_hash(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static int idmap_grow(struct idmap *m)
{
	uint64_t cap = m->cap ? 2 * m->cap : 1024;
	uint64_t *key = malloc(cap * sizeof(*key));
	uint32_t *val = malloc(cap * sizeof(*val));

	if (!key || !val) {
		free(key);
		free(val);
		return -ENOMEM;
	}
	memset(val, 0xff, cap * sizeof(*val));
	for (uint64_t i = 0; i < m->cap; i++) {
		uint64_t h;

		if (m->val[i] == KV_NONE)
			continue;
		for (h = id_hash(m->key[i]) & (cap - 1); val[h] != KV_NONE; h = (h + 1) & (cap - 1))
			;
		key[h] = m->key[i];
		val[h] = m->val[i];
	}
	free(m->key);
	free(m->val);
	m->key = key;
	m->val = val;
	m->cap = cap;
	return 0;
}

/* the node of @id, a new one numbered @next when it is new */
static int idmap_get(struct idmap *m, uint64_t id, uint32_t next, uint32_t *node)
{
	uint64_t h;

	if (2 * (m->n + 1) > m->cap && idmap_grow(m))
		return -ENOMEM;
	for (h = id_hash(id) & (m->cap - 1); m->val[h] != KV_NONE; h = (h + 1) & (m->cap - 1))
		if (m->key[h] == id) {
			*node = m->val[h];
			return 0;
		}
	m->key[h] = id;
	m->val[h] = next;
	m->n++;
	*node = next;
	return 1;
}

static int grow(void **p, uint64_t *cap, uint64_t need, size_t size)
{
	uint64_t c = *cap ? *cap : 1024;
	void *x;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	x = realloc(*p, c * size);
	if (!x)
		return -ENOMEM;
	*p = x;
	*cap = c;
	return 0;
}

/* one line into t; -EINVAL with the reason in *why */
static int parse_line(const char *line, struct kvtrace *t, struct idmap *m, uint64_t *ids,
		      uint64_t *cap_req, uint64_t *cap_blk, uint64_t *cap_id, const char **why)
{
	uint64_t ts, in, out;
	size_t n;
	struct kvreq *r;
	int err;

	if (json_get_u64(line, "timestamp", &ts) || json_get_u64(line, "input_length", &in) ||
	    json_get_u64(line, "output_length", &out) || in > UINT32_MAX || out > UINT32_MAX) {
		*why = "timestamp, input_length or output_length missing or not a count";
		return -EINVAL;
	}
	err = json_get_u64_array(line, "hash_ids", ids, MAX_IDS, &n);
	if (err) {
		*why = err == -E2BIG ? "more than 2^20 hash_ids" :
		       "hash_ids missing or not an array of counts";
		return -EINVAL;
	}
	if (t->nreq && ts < t->req[t->nreq - 1].ts) {
		*why = "timestamps go back (requests must be in arrival order)";
		return -EINVAL;
	}
	if (grow((void **)&t->req, cap_req, t->nreq + 1, sizeof(*t->req)) ||
	    grow((void **)&t->blk, cap_blk, t->nblk + n, sizeof(*t->blk)))
		return -ENOMEM;
	r = &t->req[t->nreq++];
	*r = (struct kvreq){ .ts = ts, .in_len = (uint32_t)in, .out_len = (uint32_t)out,
			     .first = (uint32_t)t->nblk, .nblocks = (uint32_t)n };
	for (size_t i = 0; i < n; i++) {
		uint32_t node;

		err = idmap_get(m, ids[i], t->nnodes, &node);
		if (err < 0)
			return err;
		if (err) {
			if (grow((void **)&t->id, cap_id, t->nnodes + 1, sizeof(*t->id)))
				return -ENOMEM;
			t->id[t->nnodes++] = ids[i];
		}
		t->blk[t->nblk++] = node;
	}
	return 0;
}

int kvtrace_load(const char *path, uint32_t max, struct kvtrace *t)
{
	uint64_t cap_req = 0, cap_blk = 0, cap_id = 0, lineno = 0;
	struct idmap m = { 0 };
	const char *why = NULL;
	uint64_t *ids = malloc(MAX_IDS * sizeof(*ids));
	char *line = NULL;
	size_t cap = 0;
	FILE *f = fopen(path, "r");
	int err = 0;

	memset(t, 0, sizeof(*t));
	if (!f || !ids) {
		err = f ? -ENOMEM : -errno;
		fprintf(stderr, "hkv-bench replay: %s: %s\n", path, strerror(-err));
		goto out;
	}
	while ((!max || t->nreq < max) && getline(&line, &cap, f) > 0) {
		const char *p = line;

		lineno++;
		while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
			p++;
		if (!*p)
			continue;
		err = parse_line(p, t, &m, ids, &cap_req, &cap_blk, &cap_id, &why);
		if (err) {
			fprintf(stderr, "hkv-bench replay: %s:%llu: %s\n", path,
				(unsigned long long)lineno, err == -EINVAL ? why : strerror(-err));
			goto out;
		}
	}
	if (ferror(f)) {
		err = -EIO;
		fprintf(stderr, "hkv-bench replay: %s: read error\n", path);
	} else if (!t->nreq) {
		err = -EINVAL;
		fprintf(stderr, "hkv-bench replay: %s: no requests\n", path);
	}
out:
	if (f)
		fclose(f);
	free(line);
	free(ids);
	free(m.key);
	free(m.val);
	if (err)
		kvtrace_free(t);
	return err;
}

void kvtrace_free(struct kvtrace *t)
{
	free(t->req);
	free(t->blk);
	free(t->id);
	memset(t, 0, sizeof(*t));
}
