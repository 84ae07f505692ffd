// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: names of the objects a report shows, resolved after the run
 * from the files the process had mapped (symbols.c). An allocation is
 * named after the first frame of its call stack that is not an allocator
 * or a wrapper of one (malloc's callers such as xmalloc or operator new,
 * libc, libnuma): "make_grid (grid.c:42)", the wrappers left out shown as
 * "via". Frames are resolved once each (a cache by address): thousands of
 * objects share most of their frames.
 */
#include <stdlib.h>
#include <string.h>

#include "run.h"

#define CACHE_BITS	14

struct pc_cache {
	uint64_t pc;
	struct sym_loc loc;
	int used;
};

static struct pc_cache *cache;

static const struct sym_loc *resolve(struct syms *sy, uint64_t pc)
{
	uint32_t i = (uint32_t)((pc * 0x9e3779b97f4a7c15ULL) >> (64 - CACHE_BITS));
	struct pc_cache *c;

	if (!cache)
		cache = xcalloc(1U << CACHE_BITS, sizeof(*cache));
	c = &cache[i];
	if (!c->used || c->pc != pc) {
		c->used = 1;
		c->pc = pc;
		syms_pc(sy, pc, 1, &c->loc);
	}
	return &c->loc;
}

static int contains_ci(const char *s, const char *w)
{
	size_t n = strlen(w);

	for (; *s; s++)
		if (!strncasecmp(s, w, n))
			return 1;
	return 0;
}

/* An allocator's name: not what an allocation is named after. */
static int alloc_like(const char *func)
{
	return contains_ci(func, "alloc") || contains_ci(func, "strdup") ||
	       contains_ci(func, "operator new") || !strncmp(func, "_Zn", 3);
}

/* An allocator, or a function that only wraps one. */
static int is_wrapper(const struct sym_loc *l)
{
	static const char *const libs[] = {
		"libc.so", "libstdc++.so", "libnuma.so", "ld-linux", "libjemalloc",
		"libtcmalloc", "libglib-2.0",
	};
	size_t i;

	for (i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
		if (!strncmp(l->module, libs[i], strlen(libs[i])))
			return 1;
	return alloc_like(l->func);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* GCC's clones keep their origin's name: make_buffer.constprop.0. */
static void drop_clone_suffix(char *func)
{
	static const char *const sfx[] = {
		".constprop.", ".isra.", ".part.", ".cold", ".lto_priv.",
	};
	size_t i;
	char *p;

	for (i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		p = strstr(func, sfx[i]);
		if (p && p != func)
			*p = '\0';
	}
}

/* "func (file.c:12)", or "func" without a line. */
static void frame_str(const struct sym_loc *l, char *buf, size_t size)
{
	if (l->file[0])
		snprintf(buf, size, "%.120s (%.60s:%d)", l->func, base_name(l->file), l->line);
	else
		snprintf(buf, size, "%s", l->func);
}

/* An allocation or a site: its stack resolved, its name chosen. */
static void name_from_site(struct snapshot *s, struct region *r)
{
	struct objinfo *oi = r->obj;
	const struct track_site *st;
	int i, k = -1;

	if (!s->track || oi->seq < 0 || (uint32_t)oi->seq >= s->track->nr_sites)
		return;
	st = &s->track->sites[oi->seq];
	oi->nr_stack = (int)(st->nframes < TRACK_MAX_FRAMES ? st->nframes : TRACK_MAX_FRAMES);
	oi->stack = xcalloc(oi->nr_stack + 1, sizeof(*oi->stack));
	for (i = 0; i < oi->nr_stack; i++) {
		oi->stack[i] = *resolve(s->syms, st->frames[i]);
		drop_clone_suffix(oi->stack[i].func);
		if (k < 0 && !is_wrapper(&oi->stack[i]))
			k = i;
	}
	if (!oi->nr_stack)
		return;
	/* All in libraries: the first named function that is no allocator. */
	for (i = 0; i < oi->nr_stack && k < 0; i++)
		if (oi->stack[i].symbol[0] && !alloc_like(oi->stack[i].func))
			k = i;
	if (k < 0)
		k = 0;
	snprintf(oi->func, sizeof(oi->func), "%s", oi->stack[k].func);
	oi->module = oi->stack[k].module;
	snprintf(oi->file, sizeof(oi->file), "%s", oi->stack[k].file);
	oi->line = oi->stack[k].line;
	if (k > 0)
		snprintf(oi->via, sizeof(oi->via), "%s", oi->stack[k - 1].func);
	if (k + 1 < oi->nr_stack)
		frame_str(&oi->stack[k + 1], oi->caller, sizeof(oi->caller));
	if (oi->of > 1)
		snprintf(r->name, sizeof(r->name), "%s #%d", oi->func, oi->nth);
	else
		snprintf(r->name, sizeof(r->name), "%s", oi->func);
}

static void name_variable(struct snapshot *s, struct region *r)
{
	struct objinfo *oi = r->obj;

	if (oi->module && !syms_var_decl(s->syms, oi->module, oi->var_addr,
					 oi->file, sizeof(oi->file), &oi->line))
		return;
	oi->file[0] = '\0';
}

void names_resolve(struct snapshot *s)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < s->nr_o; i++) {
		struct region *r = &s->o[i];

		if (r->obj->resolved || !object_shown(r))
			continue;
		r->obj->resolved = 1;
		if (!s->syms)
			continue;
		if (r->obj->kind == OBJ_ALLOC || r->obj->kind == OBJ_SITE)
			name_from_site(s, r);
		else if (r->obj->kind == OBJ_VARIABLE)
			name_variable(s, r);
	}
}

void threads_on_node(const struct snapshot *s, int nid, char *buf, size_t size)
{
	size_t len = 0;
	int i, n = 0;

	buf[0] = '\0';
	for (i = 0; i < s->nr_threads && len < size; i++) {
		const struct thread_info *th = &s->threads[i];

		if (th->node != nid)
			continue;
		if (++n > 4) {
			len += snprintf(buf + len, size - len, ", ...");
			break;
		}
		len += snprintf(buf + len, size - len, "%s%d %s", len ? ", " : "",
				(int)th->tid, th->comm);
	}
}
