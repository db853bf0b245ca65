// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * workload.c - the churn workload as a state machine over live allocations:
 * fill to the target occupancy, churn a burn-in, then the measured ops. An
 * allocation is made whenever the next request fits under the target;
 * otherwise a victim is released (whole, or only its tail: a radix split).
 * With random victims the trace does not depend on the allocator, so it is
 * generated once here and replayed on each one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "churn.h"
#include "workload.h"

int trace_push(struct trace *t, uint32_t kind, uint32_t pages, uint32_t id)
{
	if (t->n == t->cap) {
		uint64_t nc = t->cap ? 2 * t->cap : 1 << 16;
		struct op *o = realloc(t->op, nc * sizeof(*o));

		if (!o)
			return -ENOMEM;
		t->op = o;
		t->cap = nc;
	}
	t->op[t->n++] = (struct op){ .kind = kind, .pages = pages, .id = id };
	return 0;
}

void trace_free(struct trace *t)
{
	free(t->op);
	memset(t, 0, sizeof(*t));
}

int gen_init(struct gen *g, const struct workload *w)
{
	memset(g, 0, sizeof(*g));
	g->w = w;
	rng_seed(&g->rng, w->seed);
	g->target = (uint64_t)(w->occupancy * (double)w->npages);
	g->burnin_pages = (uint64_t)(w->burnin * (double)w->npages);
	g->pending = sizes_draw(&w->sizes, &g->rng);
	return 0;
}

void gen_fini(struct gen *g)
{
	free(g->live);
	free(g->pos);
	free(g->size);
	memset(g, 0, sizeof(*g));
}

static int gen_grow(struct gen *g)
{
	uint32_t nc = g->cap ? 2 * g->cap : 1 << 16;
	uint32_t *pos = realloc(g->pos, (size_t)nc * sizeof(*pos));
	uint32_t *size, *live;

	if (!pos)
		return -ENOMEM;
	g->pos = pos;
	size = realloc(g->size, (size_t)nc * sizeof(*size));
	if (!size)
		return -ENOMEM;
	g->size = size;
	live = realloc(g->live, (size_t)nc * sizeof(*live));
	if (!live)
		return -ENOMEM;
	g->live = live;
	g->cap = nc;
	return 0;
}

/**
 * gen_phase() - where the workload stands
 * @g: the generator
 *
 * Return: PH_BURNIN (fill and burn-in churn), PH_MEASURE, or PH_DONE.
 */
int gen_phase(const struct gen *g)
{
	if (!g->filled || g->churn_pages < g->burnin_pages)
		return PH_BURNIN;
	return g->measured < g->w->ops ? PH_MEASURE : PH_DONE;
}

/* count an op; the phase is decided before the op */
void gen_count(struct gen *g, int phase)
{
	if (phase == PH_MEASURE)
		g->measured++;
}

bool gen_fits(struct gen *g)
{
	bool fits = g->live_pages + g->pending <= g->target;

	if (!fits)
		g->filled = true;
	return fits;
}

/* the pending request becomes a live allocation; returns its id or -errno */
int64_t gen_alloc(struct gen *g, uint32_t *pages)
{
	uint32_t id = g->next_id;

	if (id == g->cap && gen_grow(g))
		return -ENOMEM;
	*pages = g->pending;
	g->size[id] = g->pending;
	g->pos[id] = g->nlive;
	g->live[g->nlive++] = id;
	g->live_pages += g->pending;
	if (g->filled)
		g->churn_pages += g->pending;
	g->next_id++;
	g->pending = sizes_draw(&g->w->sizes, &g->rng);
	return id;
}

uint32_t gen_pick(struct gen *g)
{
	return g->live[rng_below(&g->rng, g->nlive)];
}

void gen_remove(struct gen *g, uint32_t id)
{
	uint32_t p = g->pos[id], last = g->live[--g->nlive];

	g->live[p] = last;
	g->pos[last] = p;
	g->live_pages -= g->size[id];
	g->size[id] = 0;
}

void gen_shrink(struct gen *g, uint32_t id, uint32_t keep)
{
	g->live_pages -= g->size[id] - keep;
	g->size[id] = keep;
}

/* pages to keep when this free is a radix split, or 0 for a whole free */
uint32_t gen_split(struct gen *g, uint32_t id)
{
	uint32_t sz = g->size[id];

	if (sz < 2 || rng_unit(&g->rng) >= g->w->split_share)
		return 0;
	return 1 + (uint32_t)rng_below(&g->rng, sz - 1);
}

/**
 * trace_generate() - the op trace of a random-victim workload
 * @w: the workload
 * @t: receives the trace (t->measure_from: first measured op)
 *
 * Return: 0, or -ENOMEM, or -EINVAL when a request can never fit.
 */
int trace_generate(const struct workload *w, struct trace *t)
{
	struct gen g;
	int phase, err = 0;

	memset(t, 0, sizeof(*t));
	gen_init(&g, w);
	while (!err && (phase = gen_phase(&g)) != PH_DONE) {
		if (phase == PH_MEASURE && !t->measure_from)
			t->measure_from = t->n;
		if (gen_fits(&g)) {
			uint32_t pages = 0;
			int64_t id = gen_alloc(&g, &pages);

			err = id < 0 ? (int)id : trace_push(t, OP_ALLOC, pages, (uint32_t)id);
			if (pages > t->max_size)
				t->max_size = pages;
		} else if (!g.nlive) {
			err = -EINVAL;	/* a request larger than the target */
		} else {
			uint32_t id = gen_pick(&g), keep = gen_split(&g, id);

			if (keep) {
				gen_shrink(&g, id, keep);
				err = trace_push(t, OP_PARTIAL, keep, id);
			} else {
				gen_remove(&g, id);
				err = trace_push(t, OP_FREE, 0, id);
			}
		}
		gen_count(&g, phase);
	}
	t->nallocs = g.next_id;
	gen_fini(&g);
	if (err)
		trace_free(t);
	return err;
}
