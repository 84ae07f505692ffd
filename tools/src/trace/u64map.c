// SPDX-License-Identifier: GPL-2.0
/* A hash map of 64-bit keys and values (u64map.h). */
#include <stdlib.h>
#include <string.h>

#include "u64map.h"

static inline size_t slot(const struct u64map *m, uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	key *= 0xc4ceb9fe1a85ec53ull;
	key ^= key >> 33;
	return (size_t)key & (m->cap - 1);
}

int u64map_init(struct u64map *m, size_t hint)
{
	size_t cap = 64;

	while (cap < hint * 2)
		cap *= 2;
	m->keys = calloc(cap, sizeof(*m->keys));
	m->vals = calloc(cap, sizeof(*m->vals));
	m->cap = cap;
	m->n = 0;
	if (!m->keys || !m->vals) {
		u64map_free(m);
		return -1;
	}
	return 0;
}

void u64map_free(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = m->vals = NULL;
	m->cap = m->n = 0;
}

uint64_t *u64map_get(const struct u64map *m, uint64_t key)
{
	size_t i;

	if (!m->cap)
		return NULL;
	for (i = slot(m, key); m->keys[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key + 1)
			return &m->vals[i];
	return NULL;
}

static int grow(struct u64map *m)
{
	struct u64map g;
	size_t i;

	if (u64map_init(&g, m->cap))
		return -1;
	for (i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->keys[i])
			continue;
		for (j = slot(&g, m->keys[i] - 1); g.keys[j]; j = (j + 1) & (g.cap - 1))
			;
		g.keys[j] = m->keys[i];
		g.vals[j] = m->vals[i];
	}
	g.n = m->n;
	u64map_free(m);
	*m = g;
	return 0;
}

uint64_t *u64map_put(struct u64map *m, uint64_t key, int *added)
{
	size_t i;

	if (added)
		*added = 0;
	if ((m->n + 1) * 4 > m->cap * 3 && grow(m))
		return NULL;
	for (i = slot(m, key); m->keys[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key + 1)
			return &m->vals[i];
	m->keys[i] = key + 1;
	m->vals[i] = 0;
	m->n++;
	if (added)
		*added = 1;
	return &m->vals[i];
}

int u64map_del(struct u64map *m, uint64_t key)
{
	size_t i, j, k;

	if (!m->cap)
		return 0;
	for (i = slot(m, key); m->keys[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key + 1)
			break;
	if (!m->keys[i])
		return 0;
	/* Shift back the entries that probed past the hole. */
	for (j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
		k = slot(m, m->keys[j] - 1);
		if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			i = j;
		}
	}
	m->keys[i] = 0;
	m->n--;
	return 1;
}

int u64map_next(const struct u64map *m, size_t *i, uint64_t *key, uint64_t *val)
{
	for (; *i < m->cap; (*i)++)
		if (m->keys[*i]) {
			*key = m->keys[*i] - 1;
			*val = m->vals[*i];
			(*i)++;
			return 1;
		}
	return 0;
}
