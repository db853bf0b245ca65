// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * named_pins.c - who holds a named pool's pins. A pin taken by a process
 * that dies must not keep its unit from eviction forever, so each pin of a
 * named pool is also recorded against the pinning process's slot: per slot
 * a small table of (unit, count). The records are what recovery trusts: it
 * sets every unit's pin count to the sum of the live processes' records
 * and drops the dead ones' (counted in dropped_pins).
 *
 * A record changes by one store of its count (its unit is written first,
 * while the count is 0), so a kill leaves each record whole. Tables are
 * scanned up to their high-water mark: a process holds few pins at once
 * (transfers in flight), NAMED_PINS at most (-EOVERFLOW beyond).
 */
#include "named.h"
#include "res.h"

/* the slot's record of unit, or a free one (NULL: none left) */
static struct named_pin *pin_find(struct named_hdr *h, unsigned slot, uint64_t unit,
				  bool make)
{
	struct named_pin *t = named_slot_pins(h, slot), *empty = NULL;

	for (uint32_t i = 0; i < h->pin_hw[slot]; i++) {
		if (t[i].count && t[i].unit == unit)
			return &t[i];
		if (!t[i].count && !empty)
			empty = &t[i];
	}
	if (!make)
		return NULL;
	if (!empty && h->pin_hw[slot] < NAMED_PINS)
		empty = &t[h->pin_hw[slot]++];
	if (empty)
		empty->unit = unit;	/* count 0: not a record yet */
	return empty;
}

/**
 * named_pin_note() - record a pin or an unpin of this process
 * @pool: a named pool (residency locked)
 * @unit: the unit's id
 * @pin: true for a pin, false for an unpin
 *
 * An unpin of a unit this process holds no pin of (another process
 * pinned it: a transfer finished elsewhere) takes one of another slot's.
 *
 * Return: 0, or -EOVERFLOW (this process holds NAMED_PINS pinned units).
 */
int named_pin_note(struct hkv_pool *pool, uint64_t unit, bool pin)
{
	struct named_hdr *h = pool->named->hdr;
	unsigned me = pool->named->slot;
	struct named_pin *rec;

	if (pin) {
		rec = pin_find(h, me, unit, true);
		if (!rec)
			return -EOVERFLOW;
		HKV_STORE(&rec->count, rec->count + 1);
		return 0;
	}
	rec = pin_find(h, me, unit, false);
	for (unsigned s = 0; !rec && s < HKV_NAMED_SLOTS; s++)
		rec = pin_find(h, s, unit, false);
	if (rec)
		HKV_STORE(&rec->count, rec->count - 1);
	return 0;
}

/**
 * named_pins_split() - a split unit's pins: the new half is held by the
 * same processes as the old
 * @pool: a named pool (residency locked)
 * @unit: the unit split
 * @new_unit: its new half
 *
 * Return: 0, or -EOVERFLOW (a holder's table is full; nothing recorded).
 */
int named_pins_split(struct hkv_pool *pool, uint64_t unit, uint64_t new_unit)
{
	struct named_hdr *h = pool->named->hdr;
	struct named_pin *old[HKV_NAMED_SLOTS] = { NULL }, *rec[HKV_NAMED_SLOTS] = { NULL };

	for (unsigned s = 0; s < HKV_NAMED_SLOTS; s++) {
		old[s] = pin_find(h, s, unit, false);
		if (old[s] && !(rec[s] = pin_find(h, s, new_unit, true)))
			return -EOVERFLOW;
	}
	for (unsigned s = 0; s < HKV_NAMED_SLOTS; s++)
		if (old[s])
			HKV_STORE(&rec[s]->count, rec[s]->count + old[s]->count);
	return 0;
}

/**
 * named_pins_held() - do the slots of mask hold pins?
 * @h: the header (locked)
 * @mask: slots
 *
 * Return: true if any of them records a pin.
 */
bool named_pins_held(const struct named_hdr *h, uint64_t mask)
{
	for (unsigned s = 0; s < HKV_NAMED_SLOTS; s++)
		for (uint32_t i = 0; (mask >> s & 1) && i < h->pin_hw[s]; i++)
			if (h->pins[(size_t)s * NAMED_PINS + i].count)
				return true;
	return false;
}
