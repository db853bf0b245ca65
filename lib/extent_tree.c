// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * extent_tree.c - treaps of the free extents longer than the exact bins,
 * keyed by (len, start). Lengths up to nlong (four times nexact) have a
 * long bin each: a treap of that length's extents (ordered by start), its
 * lowest node kept, so a best fit among them is two mask words and that
 * node, and taking it reads no other. Longer extents (the wilderness, long
 * free runs) share one treap: best fit is its lower bound; parent links
 * give O(1) amortized predecessor walks for largest-first answers.
 *
 * Node fields: prev = left child, next = right child, parent, prio (heap
 * order, max at the root; never 0, which marks a node in an exact bin).
 */
#include "extent.h"

#define L(x, id)	((x)->node[id].prev)
#define R(x, id)	((x)->node[id].next)
#define P(x, id)	((x)->node[id].parent)

static inline bool key_less(const struct xindex *x, uint32_t a, uint32_t b)
{
	const struct fext *ea = &x->node[a], *eb = &x->node[b];

	return ea->len < eb->len || (ea->len == eb->len && ea->start < eb->start);
}

static uint32_t next_prio(struct xindex *x)
{
	uint32_t s = x->seed;

	s ^= s << 13;
	s ^= s >> 17;
	s ^= s << 5;
	x->seed = s;
	return s | 1;
}

static void replace_child(struct xindex *x, uint32_t *root, uint32_t parent, uint32_t old,
			  uint32_t new)
{
	if (parent == XI_NIL)
		*root = new;
	else if (L(x, parent) == old)
		L(x, parent) = new;
	else
		R(x, parent) = new;
	if (new != XI_NIL)
		P(x, new) = parent;
}

/* rotate id above its parent */
static void rotate_up(struct xindex *x, uint32_t *root, uint32_t id)
{
	uint32_t p = P(x, id), g = P(x, p), c;

	if (L(x, p) == id) {
		c = R(x, id);
		L(x, p) = c;
		R(x, id) = p;
	} else {
		c = L(x, id);
		R(x, p) = c;
		L(x, id) = p;
	}
	if (c != XI_NIL)
		P(x, c) = p;
	replace_child(x, root, g, p, id);
	P(x, p) = id;
}

/* add node id (start and len set) to the treap at *root */
static void treap_insert(struct xindex *x, uint32_t *root, uint32_t id)
{
	uint32_t cur = *root, parent = XI_NIL;

	L(x, id) = R(x, id) = XI_NIL;
	x->node[id].prio = next_prio(x);
	while (cur != XI_NIL) {
		parent = cur;
		cur = key_less(x, id, cur) ? L(x, cur) : R(x, cur);
	}
	P(x, id) = parent;
	if (parent == XI_NIL)
		*root = id;
	else if (key_less(x, id, parent))
		L(x, parent) = id;
	else
		R(x, parent) = id;
	while (P(x, id) != XI_NIL && x->node[P(x, id)].prio < x->node[id].prio)
		rotate_up(x, root, id);
}

/* take node id out of the treap at *root */
static void treap_remove(struct xindex *x, uint32_t *root, uint32_t id)
{
	uint32_t c;

	while (L(x, id) != XI_NIL && R(x, id) != XI_NIL) {
		uint32_t l = L(x, id), r = R(x, id);

		rotate_up(x, root, x->node[l].prio > x->node[r].prio ? l : r);
	}
	c = L(x, id) != XI_NIL ? L(x, id) : R(x, id);
	replace_child(x, root, P(x, id), id, c);
}

/**
 * tree_insert() - add a free extent to the treap of the longest
 * @x: the index
 * @id: node with start and len set, len > nlong
 */
void tree_insert(struct xindex *x, uint32_t id)
{
	treap_insert(x, &x->root, id);
	if (x->tree_max == XI_NIL || key_less(x, x->tree_max, id))
		x->tree_max = id;
	x->tree_count++;
}

/**
 * tree_remove() - take a free extent out of the treap of the longest
 * @x: the index
 * @id: a node in that treap
 */
void tree_remove(struct xindex *x, uint32_t id)
{
	if (id == x->tree_max)
		x->tree_max = tree_prev(x, id);
	treap_remove(x, &x->root, id);
	x->tree_count--;
}

/* in-order successor within id's treap, or XI_NIL */
static uint32_t tree_next(const struct xindex *x, uint32_t id)
{
	uint32_t p;

	if (R(x, id) != XI_NIL) {
		id = R(x, id);
		while (L(x, id) != XI_NIL)
			id = L(x, id);
		return id;
	}
	for (p = P(x, id); p != XI_NIL && R(x, p) == id; p = P(x, p))
		id = p;
	return p;
}

/**
 * long_insert() - file a free extent in its long bin
 * @x: the index
 * @id: node with start and len set, nexact < len <= nlong
 *
 * The bin's lowest changes only if the new extent starts lower.
 */
void long_insert(struct xindex *x, uint32_t id)
{
	uint32_t len = x->node[id].len, *b = &x->long_bin[2 * (len - x->nexact - 1)];

	treap_insert(x, &b[0], id);
	if (b[1] == XI_NIL || x->node[id].start < x->node[b[1]].start)
		b[1] = id;
	x->bin_mask[len >> 6] |= 1ull << (len & 63);
	x->bin_words |= 1ull << (len >> 6);
	x->bin_count[len]++;
}

/**
 * long_remove() - take a free extent out of its long bin
 * @x: the index
 * @id: a node in a long bin
 *
 * Taking the lowest (a best fit) makes its successor the lowest: it has no
 * left child, so that is its right subtree's leftmost or its parent.
 */
void long_remove(struct xindex *x, uint32_t id)
{
	uint32_t len = x->node[id].len, *b = &x->long_bin[2 * (len - x->nexact - 1)];

	if (b[1] == id)
		b[1] = tree_next(x, id);
	treap_remove(x, &b[0], id);
	if (!--x->bin_count[len] && !(x->bin_mask[len >> 6] &= ~(1ull << (len & 63))))
		x->bin_words &= ~(1ull << (len >> 6));
}

/**
 * tree_lower_bound() - best fit among the long extents
 * @x: the index
 * @n: pages wanted
 *
 * Return: the node with the smallest (len, start) such that len >= n, or
 * XI_NIL.
 */
uint32_t tree_lower_bound(const struct xindex *x, uint64_t n)
{
	uint32_t cur = x->root, best = XI_NIL;

	while (cur != XI_NIL) {
		if (x->node[cur].len >= n) {
			best = cur;
			cur = L(x, cur);
		} else {
			cur = R(x, cur);
		}
	}
	return best;
}

/**
 * tree_prev() - in-order predecessor
 * @x: the index
 * @id: a node in the treap
 *
 * Return: the next smaller node, or XI_NIL.
 */
uint32_t tree_prev(const struct xindex *x, uint32_t id)
{
	uint32_t p;

	if (L(x, id) != XI_NIL) {
		id = L(x, id);
		while (R(x, id) != XI_NIL)
			id = R(x, id);
		return id;
	}
	for (p = P(x, id); p != XI_NIL && L(x, p) == id; p = P(x, p))
		id = p;
	return p;
}
