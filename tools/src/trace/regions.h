/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Named address ranges (variables, arrays, allocation sites) for the
 * analyses' per-variable figures: a file of lines "NAME START END",
 * "NAME START+LEN" or "NAME START-END" (numbers decimal or 0x hex), the
 * output of nm -S ("ADDR SIZE TYPE NAME", hex), or refcnt-run --labels'
 * "array NAME START-END ..." lines; # starts a comment.
 * regions.c.
 */
#ifndef REFCNT_REGIONS_H
#define REFCNT_REGIONS_H

#include <stdint.h>

struct region {
	char name[64];
	uint64_t start, end;	/* [start, end) */
};

struct regions {
	struct region *r;	/* sorted by start */
	uint64_t *maxend;	/* the largest end of r[0..i] */
	int n;
};

/* Read path: 0, or -1 with the line that is wrong printed. */
int regions_read(struct regions *rs, const char *path);
/* The index of the region holding addr, or -1. */
int regions_find(const struct regions *rs, uint64_t addr);
void regions_free(struct regions *rs);

#endif /* REFCNT_REGIONS_H */
