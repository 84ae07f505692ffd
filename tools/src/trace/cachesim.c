// SPDX-License-Identifier: GPL-2.0
/*
 * The set-associative LRU cache with three-C classification and reuse
 * distances (cachesim.h).
 */
#include <stdlib.h>
#include <string.h>

#include "cachesim.h"
#include "rtools.h"

#define NIL	UINT32_MAX

static int pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

int cs_parse(const char *s, struct cs_geometry *g)
{
	char buf[128], *a, *b;
	uint64_t line, ways;

	if (!strcmp(s, "l1"))
		s = "32K:64:8";		/* MACPO's: 512 lines, 64 sets */
	else if (!strcmp(s, "llc"))
		s = "4M:64:16";		/* the rig's --truth-llc 4M:16 */
	snprintf(buf, sizeof(buf), "%s", s);
	a = strchr(buf, ':');
	b = a ? strchr(a + 1, ':') : NULL;
	if (!a || !b)
		return -1;
	*a++ = 0;
	*b++ = 0;
	if (rt_parse_u64(buf, &g->size) || rt_parse_u64(a, &line) ||
	    rt_parse_u64(b, &ways) || !pow2(line) || line < 4 || line > 4096 ||
	    !ways || ways > 1024 || g->size % (line * ways))
		return -1;
	g->line = (unsigned int)line;
	g->ways = (unsigned int)ways;
	if (!pow2(g->size / (line * ways)) || g->size / (line * ways) > (1u << 24))
		return -1;
	g->sets = (unsigned int)(g->size / (line * ways));
	return 0;
}

int cs_init(struct cs_cache *c, const struct cs_geometry *g, unsigned int depth,
	    int classify)
{
	uint64_t lines = (uint64_t)g->sets * g->ways;
	uint32_t i;

	memset(c, 0, sizeof(*c));
	c->g = *g;
	while ((1u << c->line_shift) < g->line)
		c->line_shift++;
	c->depth = depth > g->ways ? depth : g->ways;
	c->stack = calloc((size_t)g->sets * c->depth, sizeof(uint64_t));
	c->classify = classify;
	if (!c->stack)
		return -1;
	if (!classify)
		return 0;
	c->fa_line = calloc(lines, sizeof(*c->fa_line));
	c->fa_prev = calloc(lines, sizeof(*c->fa_prev));
	c->fa_next = calloc(lines, sizeof(*c->fa_next));
	if (!c->fa_line || !c->fa_prev || !c->fa_next ||
	    u64map_init(&c->fa_map, lines) || u64map_init(&c->seen, lines)) {
		cs_free(c);
		return -1;
	}
	for (i = 0; i < lines; i++)
		c->fa_prev[i] = c->fa_next[i] = NIL;
	c->fa_head = c->fa_tail = NIL;
	return 0;
}

void cs_free(struct cs_cache *c)
{
	free(c->stack);
	free(c->fa_line);
	free(c->fa_prev);
	free(c->fa_next);
	u64map_free(&c->fa_map);
	u64map_free(&c->seen);
	memset(c, 0, sizeof(*c));
}

static void fa_unlink(struct cs_cache *c, uint32_t e)
{
	if (c->fa_prev[e] != NIL)
		c->fa_next[c->fa_prev[e]] = c->fa_next[e];
	else
		c->fa_head = c->fa_next[e];
	if (c->fa_next[e] != NIL)
		c->fa_prev[c->fa_next[e]] = c->fa_prev[e];
	else
		c->fa_tail = c->fa_prev[e];
}

static void fa_push(struct cs_cache *c, uint32_t e)
{
	c->fa_prev[e] = NIL;
	c->fa_next[e] = c->fa_head;
	if (c->fa_head != NIL)
		c->fa_prev[c->fa_head] = e;
	c->fa_head = e;
	if (c->fa_tail == NIL)
		c->fa_tail = e;
}

/* The fully associative LRU cache of as many lines: 1 on a hit. */
static int fa_access(struct cs_cache *c, uint64_t line)
{
	uint64_t *v = u64map_get(&c->fa_map, line);
	uint32_t e;

	if (v) {
		e = (uint32_t)*v;
		fa_unlink(c, e);
		fa_push(c, e);
		return 1;
	}
	if (c->fa_n < (uint64_t)c->g.sets * c->g.ways) {
		e = c->fa_n++;
	} else {
		e = c->fa_tail;
		fa_unlink(c, e);
		u64map_del(&c->fa_map, c->fa_line[e]);
	}
	c->fa_line[e] = line;
	v = u64map_put(&c->fa_map, line, NULL);
	if (v)
		*v = e;
	fa_push(c, e);
	return 0;
}

enum cs_class cs_access(struct cs_cache *c, uint64_t addr, unsigned int *set,
			int *dist)
{
	uint64_t line = addr >> c->line_shift;
	unsigned int s = (unsigned int)(line & (c->g.sets - 1)), d;
	uint64_t *st = c->stack + (size_t)s * c->depth;
	int fa_hit = 0, added = 0;

	*set = s;
	for (d = 0; d < c->depth && st[d] && st[d] != line + 1; d++)
		;
	*dist = d < c->depth && st[d] == line + 1 ? (int)d : -1;
	/* Move to the front (the line falls off the end if it was not there). */
	if (*dist < 0)
		d = c->depth - 1;
	memmove(st + 1, st, d * sizeof(*st));
	st[0] = line + 1;
	if (c->classify) {
		fa_hit = fa_access(c, line);
		u64map_put(&c->seen, line, &added);
	}
	if (*dist >= 0 && (unsigned int)*dist < c->g.ways)
		return CS_HIT;
	if (!c->classify || added)
		return CS_COLD;
	return fa_hit ? CS_CONFLICT : CS_CAPACITY;
}
