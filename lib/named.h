/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * named.h - the files of a named pool, in layer order: named_lock.c (its
 * locks), named_pins.c (pins per process), named_recover.c (what a caller
 * does when a process died: the lock's holder or an attached one),
 * named.c (create, attach, detach, unlink, process slots).
 *
 * Two files in a directory (HUGEKV_NAMED_DIR, default /dev/shm): the
 * bookkeeping file "hugekv.NAME.meta" (tmpfs) holds struct named_hdr and
 * a heap (shheap.c) from which every structure of the pool is allocated;
 * the memory file (hugetlbfs for 2 MiB and 1 GiB pages, tmpfs for THP and
 * 4 KiB pages; none for an index-only pool) holds the pages. Both are
 * mapped at the addresses the creator recorded (same-address mapping), so
 * the pointers inside the bookkeeping are valid in every process.
 */
#ifndef HKV_NAMED_H
#define HKV_NAMED_H

#include "internal.h"

#define NAMED_MAGIC	"HUGEKVNP"
#define NAMED_LAYOUT	2	/* struct named_hdr and everything in the heap */
#define NAMED_PATH_MAX	256
#define NAMED_PINS	256	/* units one process may hold pinned at once */

/* the part of the header every layout keeps: enough to refuse a layout
 * with a clear error and to remove its files */
struct named_id {
	char magic[8];
	uint32_t layout;		/* NAMED_LAYOUT of the library that made it */
	uint32_t ready;			/* 1 once the creation finished */
	uint64_t meta_bytes;		/* the bookkeeping file's size */
	char mem_path[NAMED_PATH_MAX];	/* "" for an index-only pool */
};

/* one attached process; a slot with pid 0 is free */
struct named_slot {
	int32_t pid;
	uint32_t pad;
	uint64_t start;			/* its start time (/proc/PID/stat, ticks) */
};

struct named_hdr {
	struct named_id id;
	/* the sizes of what this layout stores: another build whose
	 * structures differ refuses the file (-EPROTO) */
	uint32_t sz_hdr, sz_lane, sz_res, sz_unit, sz_lock, sz_heap;
	uint32_t uid;
	char name[HKV_NAME_MAX + 1];
	/* the pool */
	uint64_t npages, page_bytes, chunk_pages;
	uint32_t nlanes, flags, evict_window;
	int32_t backing, numa_node;
	double free_room_low, free_room_high;
	uint64_t hugepage_bytes;
	uint64_t mem_base, mem_len;	/* the pages: [mem_base, +mem_len) */
	uint64_t meta_base, meta_len;	/* this file, mapped here */
	uint64_t created_ns;
	/* the pool lock (named_lock.c): its holder's id, 0 when free; how
	 * many holds its holder has; 1 while a full rebuild is due (a lane
	 * was repaired alone, its old index left in the heap) */
	uint32_t lock __attribute__((aligned(64)));
	uint32_t lock_depth;
	uint32_t rebuild_due;
	/* every field below changes under the pool lock and every lane lock,
	 * or under the pool lock alone where only it reads them */
	struct shheap heap;
	struct lane *lanes;
	struct hkv_res *res;
	/* per page: the slot + 1 of the process holding it outside units, 0
	 * for none (free, or only in a unit); what recovery trusts */
	uint8_t *owner;
	/* per slot: NAMED_PINS records of the pins its process holds, and
	 * how many of them are in use (named_pins.c) */
	struct named_pin *pins;
	uint32_t pin_hw[HKV_NAMED_SLOTS];
	uint64_t recoveries, reclaimed_pages, dropped_pins, dead_slots, dropped_units;
	struct named_slot slot[HKV_NAMED_SLOTS];
};

struct named_pin {
	uint64_t unit;
	uint32_t count;		/* 0: a free record */
	uint32_t pad;
};

/* ---- named_lock.c ---- */
/* this process's pool id of h (probes), 0 if not attached */
uint64_t named_local_id(const struct named_hdr *h);
/* what the locks run when a holder died: named_recover(), set by named.c
 * (a layer above the lock's callers) before it maps a pool. lane >= 0:
 * that lane alone (its lock held, the pool lock held by nobody dead);
 * else the whole pool (its lock and every lane lock held), after a death
 * (counted) or to sweep what lane repairs left */
enum { NAMED_RECOVER_DEAD = -1, NAMED_RECOVER_SWEEP = -2 };
extern void (*named_recover_fn)(struct named_hdr *h, int lane);
/* the pool lock and every lane lock (attach, detach, check): a dead
 * holder's pool is rebuilt first */
void named_lock_all(struct named_hdr *h);
void named_unlock_all(struct named_hdr *h);
/* is the slot's process alive (pid and start time)? */
bool named_slot_alive(const struct named_slot *s);

/* ---- named_pins.c ---- */
bool named_pins_held(const struct named_hdr *h, uint64_t mask);
/* the pin records of a slot's process */
static inline struct named_pin *named_slot_pins(struct named_hdr *h, unsigned slot)
{
	return &h->pins[(size_t)slot * NAMED_PINS];
}

/* ---- named_recover.c ---- */
/* a process leaves: what it holds outside units given back, slot freed */
void named_release_slot(struct named_hdr *h, unsigned slot);
/* restore a pool whose lock's holder died (named_recover_fn) */
void named_recover(struct named_hdr *h, int lane);
/* free the slots of dead processes and give back what they held (every
 * lock held) */
void named_reap(struct named_hdr *h);

#endif /* HKV_NAMED_H */
