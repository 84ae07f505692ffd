/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A hash map from 64-bit keys to 64-bit values (open addressing, linear
 * probing, deletion by backward shift), for the analyses' per-page,
 * per-line and per-word state. u64map.c.
 */
#ifndef REFCNT_U64MAP_H
#define REFCNT_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct u64map {
	uint64_t *keys;		/* key + 1; 0: empty */
	uint64_t *vals;
	size_t cap, n;		/* cap a power of two */
};

/* 0, or -1 (no memory). */
int u64map_init(struct u64map *m, size_t hint);
void u64map_free(struct u64map *m);
/* The value's address for key, or NULL. */
uint64_t *u64map_get(const struct u64map *m, uint64_t key);
/*
 * The value's address for key, inserted as 0 if absent (*added = 1);
 * NULL when the map cannot grow. Addresses move when the map grows.
 */
uint64_t *u64map_put(struct u64map *m, uint64_t key, int *added);
/* Remove key: 1 if it was there. */
int u64map_del(struct u64map *m, uint64_t key);
/* Iterate: *i from 0; 1 with *key, *val, or 0 at the end. */
int u64map_next(const struct u64map *m, size_t *i, uint64_t *key, uint64_t *val);

#endif /* REFCNT_U64MAP_H */
