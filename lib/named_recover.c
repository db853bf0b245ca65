// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * named_recover.c - a named pool whose lock's holder died, and the slots
 * of processes that died attached.
 */
#include "named.h"
#include "res.h"

/**
 * named_reap() - free the slots of dead processes
 * @h: the pool's header (locked)
 */
void named_reap(struct named_hdr *h)
{
	for (unsigned i = 0; i < HKV_NAMED_SLOTS; i++) {
		struct named_slot *s = &h->slot[i];

		if (!s->pid || named_slot_alive(s))
			continue;
		hkv_log(HKV_LOG_WARN, "named pool %s: process %d died attached; slot %u freed",
			h->name, s->pid, i);
		HKV_STORE(&s->pid, 0);
		h->dead_slots++;
	}
}

/**
 * named_recover() - restore a pool whose lock's holder died
 * @h: the pool's header (locked, the mutex inconsistent)
 */
void named_recover(struct named_hdr *h)
{
	h->recoveries++;
	hkv_log(HKV_LOG_WARN, "named pool %s: a process died holding the pool's lock; "
		"recovering", h->name);
	named_reap(h);
}
