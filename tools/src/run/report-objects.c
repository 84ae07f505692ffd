// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: what the text, JSON and HTML reports say the same way about
 * objects: which are shown and in what order (most remote references
 * first), how many samples stand behind a count, an object's kind, where
 * it comes from, who uses it, its advice in a few words, and what the
 * tracker and the symbol tables could and could not tell.
 */
#include <stdlib.h>
#include <string.h>

#include "run.h"

/*
 * Objects without references are left out, but for those the program
 * itself named: its --labels ranges and the large allocations and
 * mappings the tracker kept as objects (few, by the threshold). That
 * nothing counted one of those (a mapping made present before the run's
 * feed could see it, memory never touched) is a finding of its own.
 */
int object_shown(const struct region *r)
{
	return opt.all || r->total || r->labelled || r->obj->kind == OBJ_ALLOC;
}

struct region **objects_shown(const struct snapshot *s, int *n)
{
	struct region **order = xcalloc(s->nr_o + 1, sizeof(*order));
	int i;

	*n = 0;
	for (i = 0; i < s->nr_o; i++) {
		const struct region *r = &s->o[i];

		/* The tracker's own memory is not the program's. */
		if (r->obj->kind == OBJ_TRACKER && !opt.all)
			continue;
		if (object_shown(r))
			order[(*n)++] = (struct region *)r;
	}
	qsort(order, *n, sizeof(*order), cmp_region_remote);
	return order;
}

uint64_t samples_of(const struct region *r)
{
	return r->total / (uint64_t)feed_weight();
}

int few_samples(const struct region *r)
{
	return r->total && samples_of(r) < (uint64_t)opt.min_samples;
}

int counts_exact(void)
{
	return feed_weight_known() && feed_weight() <= 1;
}

int counts_sampled(void)
{
	return feed_weight_known() && feed_weight() > 1;
}

/*
 * A count of n samples of weight P: Poisson on n, times P. The sampling
 * alone: references the feed never saw (throttled, dropped, lost to
 * pegging) widen nothing here.
 */
void refs_interval(uint64_t refs, uint64_t *lo, uint64_t *hi)
{
	rt_count95(refs, (uint64_t)feed_weight(), lo, hi);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

const char *object_kind_str(const struct region *r, char *buf, size_t size)
{
	const struct objinfo *oi = r->obj;

	switch (oi->kind) {
	case OBJ_ALLOC:
		snprintf(buf, size, "%s%s", oi->alloc, oi->freed ? " freed" : "");
		break;
	case OBJ_SITE:
		snprintf(buf, size, "%s site", oi->alloc);
		break;
	case OBJ_MAPPING:
		snprintf(buf, size, "%s", r->kind);
		break;
	default:
		snprintf(buf, size, "%s", obj_kind_name(oi->kind));
	}
	return buf;
}

const char *object_where(const struct region *r, char *buf, size_t size)
{
	const struct objinfo *oi = r->obj;

	if (oi->file[0])
		snprintf(buf, size, "%s:%d", base_name(oi->file), oi->line);
	else if (oi->kind == OBJ_VARIABLE)
		snprintf(buf, size, "%s %s", base_name(oi->module), oi->section);
	else if (oi->kind == OBJ_ALLOC || oi->kind == OBJ_SITE)
		snprintf(buf, size, "%s", oi->nr_stack ? oi->stack[0].module : "?");
	else
		snprintf(buf, size, "%s", base_name(r->mapping));
	return buf;
}

const char *advice_short(const struct region *r, char *buf, size_t size)
{
	char nodes[128];

	if (!strcmp(r->adv.action, "move"))
		snprintf(buf, size, "move to %d", r->adv.node);
	else if (!strcmp(r->adv.action, "first-touch"))
		snprintf(buf, size, "first touch %d", r->adv.node);
	else if (!strcmp(r->adv.action, "interleave")) {
		nodes_str(r->adv.nodes, r->adv.nr_nodes, nodes, sizeof(nodes));
		snprintf(buf, size, "interleave %s", nodes);
	} else {
		snprintf(buf, size, "-%s%s", r->adv.why_not ? " " : "",
			 r->adv.why_not ? r->adv.why_not : "");
	}
	return buf;
}

/*
 * The nodes that make 15% or more of r's references, and the threads
 * last seen on them.
 */
void users_str(const struct snapshot *s, const struct region *r, char *nodes,
	       size_t nsize, char *threads, size_t tsize)
{
	size_t nl = 0, tl = 0;
	char th[256];
	int c;

	nodes[0] = threads[0] = '\0';
	for (c = 0; c < ctr.nr && r->total; c++) {
		if ((double)r->refs[c] < 0.15 * (double)r->total)
			continue;
		nl += snprintf(nodes + nl, nsize > nl ? nsize - nl : 0, "%s%s",
			       nl ? "," : "", ctr.label[c]);
		threads_on_node(s, counter_nid(c), th, sizeof(th));
		if (th[0] && tl < tsize)
			tl += snprintf(threads + tl, tsize - tl, "%snode %s: %s",
				       tl ? "; " : "", ctr.label[c], th);
	}
}

/* The tracker's own mappings in s (its header's): how many, pages present. */
int tracker_memory(const struct snapshot *s, uint64_t *present)
{
	int i, n = 0;

	*present = 0;
	for (i = 0; i < s->nr_o; i++)
		if (s->o[i].obj->own_memory) {
			n++;
			*present += s->o[i].present;
		}
	return n;
}

/* What the tracker recorded in s's process, or why nothing. */
const char *track_status(const struct snapshot *s, char *buf, size_t size)
{
	const struct track_data *t = s->track;
	uint64_t calls = 0, large = 0, freed = 0, sites = 0, own_pages;
	char own_buf[128] = "";
	uint32_t i;
	int own;

	if (!t) {
		if (s->exe_static == 1)
			snprintf(buf, size, "not tracked: %s is statically linked, so nothing can be preloaded into it (LD_PRELOAD needs the dynamic loader); heap objects are its mappings, variables come from its symbols",
				 s->exe);
		else if (track_off_why)
			snprintf(buf, size, "not tracked: %s", track_off_why);
		else
			snprintf(buf, size, "not tracked: librefcnt-track.so wrote no table for it (set-user-ID, LD_PRELOAD cleared, or the library could not load)");
		return buf;
	}
	for (i = 0; i < t->nr_sites; i++)
		if (t->sites[i].key && !t->sites[i].large && t->sites[i].calls) {
			calls += t->sites[i].calls;
			sites++;
		}
	for (i = 0; i < t->nr_objs; i++) {
		large++;
		freed += !!(t->objs[i].flags & TRACK_O_FREED);
	}
	own = tracker_memory(s, &own_pages);
	if (own)
		snprintf(own_buf, sizeof(own_buf),
			 "; its own memory (%llu pages present in %d mappings) is left out of the objects",
			 (unsigned long long)own_pages, own);
	snprintf(buf, size, "tracked by librefcnt-track.so: %llu large allocations or mappings of %lluK or more (%llu freed), %llu smaller allocations folded into %llu call sites%s%s%s",
		 (unsigned long long)large,
		 (unsigned long long)(t->h.threshold / 1024),
		 (unsigned long long)freed, (unsigned long long)calls,
		 (unsigned long long)sites,
		 t->h.dropped_sites || t->h.dropped_objs || t->h.dropped_pages ?
		 "; its table was full, some were not recorded" : "",
		 t->nr_objs && !(t->h.flags & TRACK_F_COUNTERS) ?
		 "; it could not read the counters, freed allocations have no counts" : "",
		 own_buf);
	return buf;
}

struct sym_gaps {
	char *buf;
	size_t size, len;
	int n;
};

static void note_gap(void *arg, const struct sym_module_info *mi)
{
	struct sym_gaps *g = arg;

	if (!mi->elf || mi->has_symtab || mi->has_dwarf ||
	    !strncmp(mi->path, "[", 1) || track_is_table(mi->path))
		return;
	/* The system's own libraries are stripped: not worth a line each. */
	if (!strncmp(mi->path, "/lib", 4) || !strncmp(mi->path, "/usr/lib", 8))
		return;
	if (g->len < g->size)
		g->len += snprintf(g->buf + g->len, g->size - g->len, "%s%s%s",
				   g->n++ ? ", " : "", mi->path,
				   mi->nsyms > 0 ? " (dynamic symbols only)" : "");
}

/* The program's own files without symbols (stripped), or "". */
const char *symbol_gaps(const struct snapshot *s, char *buf, size_t size)
{
	struct sym_gaps g = { buf, size, 0, 0 };

	buf[0] = '\0';
	if (s->syms)
		syms_each_module(s->syms, note_gap, &g);
	return buf;
}
