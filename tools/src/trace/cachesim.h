/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A set-associative LRU cache that classifies every access as MACPO does
 * (hit, cold, capacity or conflict miss) and measures its reuse distance
 * in its set; the model of refcnt-conflicts and of refcnt-policy --llc
 * (the refcnt-truth plugin's LLC model: 64-byte lines, LRU, write
 * allocate). cachesim.c.
 *
 * Classes (Hill's three Cs): a miss is cold when the cache never held
 * the line, capacity when a fully associative LRU cache of as many lines
 * would miss too, conflict otherwise. The reuse distance of an access is
 * the number of distinct other lines of its set accessed since the last
 * access to its line: the access hits iff it is below the ways.
 */
#ifndef REFCNT_CACHESIM_H
#define REFCNT_CACHESIM_H

#include <stdint.h>

#include "u64map.h"

enum cs_class { CS_HIT, CS_COLD, CS_CAPACITY, CS_CONFLICT, CS_NR_CLASSES };

struct cs_geometry {
	uint64_t size;		/* bytes */
	unsigned int line;	/* bytes, a power of two */
	unsigned int ways;
	unsigned int sets;	/* size / (line * ways), a power of two */
};

/* "SIZE:LINE:WAYS" (sizes with K/M/G) or a preset, l1 or llc: 0 or -1. */
int cs_parse(const char *s, struct cs_geometry *g);

struct cs_cache {
	struct cs_geometry g;
	unsigned int line_shift;
	unsigned int depth;	/* lines of each set's stack, >= ways */
	uint64_t *stack;	/* sets * depth lines + 1, MRU first; 0 empty */
	int classify;		/* keep the fully associative model and seen set */
	/* the fully associative LRU of sets * ways lines: a list in arrays */
	struct u64map fa_map;	/* line -> entry */
	uint64_t *fa_line;
	uint32_t *fa_prev, *fa_next;
	uint32_t fa_head, fa_tail, fa_n;
	struct u64map seen;	/* lines ever cached */
};

/* depth: lines of reuse distance to tell apart (0: the ways). */
int cs_init(struct cs_cache *c, const struct cs_geometry *g, unsigned int depth,
	    int classify);
void cs_free(struct cs_cache *c);

/*
 * One access to the line of addr: its class (CS_HIT or a miss; without
 * classify, CS_COLD for every miss), its set, its reuse distance in the
 * set (-1 for a line not among the set's depth most recent: cold or
 * further).
 */
enum cs_class cs_access(struct cs_cache *c, uint64_t addr, unsigned int *set,
			int *dist);

#endif /* REFCNT_CACHESIM_H */
