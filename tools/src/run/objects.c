// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: the objects of a process at its exit, and which object owns
 * each page.
 *
 * Objects, from the most specific: the --labels ranges; the large
 * allocations and mappings the tracker recorded (the later of two that
 * overlap: the earlier was freed where the tracker could not see it);
 * the variables of .data and .bss (symbol tables); other threads' stacks;
 * the call sites of small allocations (the tracker's page map: the site
 * that allocated last on each base page, of the allocations the tracker
 * looked at in full, TRACK_SAMPLE_BYTES); and, for what is left of each
 * memory region, the region itself (a mapping).
 *
 * The counters are per hardware page (the granularity), objects are not:
 * a page goes to the object with the most bytes on it (ties to the more
 * specific), and an object that owns pages holding others' bytes says so
 * (pages_shared). The owners are kept as sorted runs of pages.
 */
#include <stdlib.h>
#include <string.h>

#include "run.h"

struct cand {
	uint64_t start, end;
	int obj;
	int prio;		/* 0 most specific */
	int seq;		/* higher wins a tie of prio */
};

struct cands {
	struct cand *c;
	size_t n, cap;
};

static void add_cand(struct cands *cs, uint64_t start, uint64_t end, int obj,
		     int prio, int seq)
{
	if (start >= end)
		return;
	if (cs->n == cs->cap) {
		cs->cap = cs->cap ? 2 * cs->cap : 1024;
		cs->c = realloc(cs->c, cs->cap * sizeof(*cs->c));
		if (!cs->c) {
			rt_err("out of memory");
			exit(RT_EXIT_RUN_FAIL);
		}
	}
	cs->c[cs->n++] = (struct cand){ start, end, obj, prio, seq };
}

static int cap_o;

/* A new object of s: its index. */
static int new_object(struct snapshot *s, enum obj_kind kind, const char *name,
		      uint64_t start, uint64_t end)
{
	struct region *r;

	if (s->nr_o == cap_o || !s->o) {
		cap_o = s->nr_o ? 2 * s->nr_o : 256;
		s->o = realloc(s->o, cap_o * sizeof(*s->o));
		if (!s->o) {
			rt_err("out of memory");
			exit(RT_EXIT_RUN_FAIL);
		}
	}
	r = &s->o[s->nr_o];
	memset(r, 0, sizeof(*r));
	r->start = start;
	r->end = end;
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->home_pages = xcalloc(ctr.nr_cnodes, sizeof(uint64_t));
	r->obj = xcalloc(1, sizeof(*r->obj));
	r->obj->kind = kind;
	r->obj->alloc_node = -1;
	r->obj->arg_node = -1;
	r->obj->region = -1;
	r->obj->seq = -1;
	r->adv.action = "none";
	r->adv.node = -1;
	r->mapobj = -1;
	return s->nr_o++;
}

const char *obj_kind_name(enum obj_kind k)
{
	static const char *const names[] = {
		[OBJ_LABEL] = "label", [OBJ_ALLOC] = "allocation",
		[OBJ_VARIABLE] = "variable", [OBJ_SITE] = "allocation site",
		[OBJ_STACK] = "stack", [OBJ_MAPPING] = "mapping",
		[OBJ_TRACKER] = "tracker",
	};

	return names[k];
}

/* The region holding addr (regions are sorted, as in maps), or -1. */
static int region_at(const struct snapshot *s, uint64_t addr)
{
	int lo = 0, hi = s->nr - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (addr < s->r[mid].start)
			hi = mid - 1;
		else if (addr >= s->r[mid].end)
			lo = mid + 1;
		else
			return mid;
	}
	return -1;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

/* A file mapping's name: the file's, and which part of it. */
static void mapping_name(const struct region *r, char *buf, size_t size)
{
	if (r->labelled || strcmp(r->kind, "file")) {
		snprintf(buf, size, "%s", r->name);
		return;
	}
	snprintf(buf, size, "%.200s %s", base_name(r->mapping),
		 r->perms[2] == 'x' ? "code" : r->perms[1] == 'w' ? "data" :
		 "read-only");
}

/* One mapping object per region: the owner of what nothing else owns. */
static void mapping_objects(struct snapshot *s)
{
	char name[256];
	int i;

	for (i = 0; i < s->nr; i++) {
		struct region *r = &s->r[i];
		int o;
		struct region *ob;

		mapping_name(r, name, sizeof(name));
		o = new_object(s, track_is_table(r->mapping) ? OBJ_TRACKER :
			       OBJ_MAPPING, name, r->start, r->end);
		ob = &s->o[o];
		if (ob->obj->kind == OBJ_TRACKER)
			snprintf(ob->name, sizeof(ob->name),
				 "[refcnt-track table]");
		snprintf(ob->mapping, sizeof(ob->mapping), "%s", r->mapping);
		snprintf(ob->perms, sizeof(ob->perms), "%s", r->perms);
		ob->kind = r->kind;
		ob->labelled = r->labelled;
		ob->obj->region = i;
		r->mapobj = o;
	}
}

static void label_objects(struct snapshot *s, struct cands *cs)
{
	int i, o;

	for (i = 0; i < nr_labels; i++) {
		int ri = region_at(s, labels[i].start);

		if (ri < 0)
			continue;
		o = new_object(s, OBJ_LABEL, labels[i].name, labels[i].start,
			       labels[i].end);
		s->o[o].labelled = 1;
		s->o[o].obj->size = labels[i].end - labels[i].start;
		snprintf(s->o[o].mapping, sizeof(s->o[o].mapping), "%s",
			 s->r[ri].mapping);
		s->o[o].kind = s->r[ri].kind;
		add_cand(cs, labels[i].start, labels[i].end, o, 0, 0);
	}
}

/*
 * The tracker's own anonymous mappings (its header says where): an object
 * of the tracker's each, before any of the program's, so that they are
 * left out of its objects (objects_shown()).
 */
static void tracker_objects(struct snapshot *s, struct cands *cs)
{
	const struct track_header *h = &s->track->h;
	int i, o;

	for (i = 0; i < TRACK_OWN_MAX; i++) {
		if (!h->own[i].len)
			continue;
		o = new_object(s, OBJ_TRACKER, "[refcnt-track memory]",
			       h->own[i].start, h->own[i].start + h->own[i].len);
		s->o[o].obj->size = h->own[i].len;
		s->o[o].obj->own_memory = 1;
		snprintf(s->o[o].mapping, sizeof(s->o[o].mapping), "[anon]");
		s->o[o].kind = "anon";
		add_cand(cs, h->own[i].start, h->own[i].start + h->own[i].len,
			 o, -1, 0);
	}
}

/* The tracker's large allocations and mappings; site -> count of them. */
static void alloc_objects(struct snapshot *s, struct cands *cs, int *per_site)
{
	const struct track_data *t = s->track;
	uint32_t i;

	for (i = 0; i < t->nr_objs; i++) {
		const struct track_obj *to = &t->objs[i];
		struct objinfo *oi;
		int o, ri;

		if (!to->ready || !to->len)
			continue;
		o = new_object(s, OBJ_ALLOC, track_kind_name(to->kind),
			       to->start, to->start + to->len);
		oi = s->o[o].obj;
		oi->alloc = track_kind_name(to->kind);
		oi->size = to->size;
		oi->seq = to->site < t->nr_sites ? (int)to->site : -1;
		oi->tid = to->tid;
		oi->alloc_node = to->node;
		oi->arg_node = to->arg_node;
		/* Placed on purpose: mbind() on it, or libnuma's allocators. */
		oi->placed = (to->flags & TRACK_O_PLACED) ||
			     to->kind == TRACK_NUMA_ONNODE ||
			     to->kind == TRACK_NUMA_INTERLEAVED;
		oi->freed = !!(to->flags & TRACK_O_FREED);
		oi->realloced = !!(to->flags & TRACK_O_REALLOCED);
		oi->partial = !!(to->flags & TRACK_O_PARTIAL);
		oi->inherited = !!(to->flags & TRACK_O_INHERITED);
		oi->t_alloc = to->t_alloc_ns / 1e9;
		oi->t_free = to->t_free_ns / 1e9;
		oi->base = track_reading_of(t, to->base_read);
		oi->end = track_reading_of(t, to->end_read);
		if (oi->seq >= 0)
			oi->nth = ++per_site[oi->seq];
		ri = region_at(s, to->start);
		if (ri >= 0) {
			snprintf(s->o[o].mapping, sizeof(s->o[o].mapping), "%s",
				 s->r[ri].mapping);
			s->o[o].kind = s->r[ri].kind;
		}
		if (!oi->freed)
			add_cand(cs, to->start, to->start + to->len, o, 1, (int)i);
	}
}

struct var_ctx {
	struct snapshot *s;
	struct cands *cs;
};

static void on_variable(void *arg, const struct sym_var *v)
{
	struct var_ctx *vc = arg;
	struct snapshot *s = vc->s;
	int ri = region_at(s, v->addr), o;

	/* Mapped and writable: .data and .bss of a loaded module. */
	if (ri < 0 || s->r[ri].perms[1] != 'w')
		return;
	/* The tracker's own variables are not the program's. */
	o = new_object(s, strcmp(base_name(v->module), "librefcnt-track.so") ?
		       OBJ_VARIABLE : OBJ_TRACKER, v->name, v->addr,
		       v->addr + v->size);
	s->o[o].obj->size = v->size;
	s->o[o].obj->var_addr = v->addr;
	s->o[o].obj->module = v->module;
	snprintf(s->o[o].obj->section, sizeof(s->o[o].obj->section), "%s",
		 v->section);
	snprintf(s->o[o].mapping, sizeof(s->o[o].mapping), "%s", s->r[ri].mapping);
	s->o[o].kind = s->r[ri].kind;
	add_cand(vc->cs, v->addr, v->addr + v->size, o, 2, 0);
}

/* Other threads' stacks: the anonymous region each one's stack pointer is in. */
static void stack_objects(struct snapshot *s, struct cands *cs)
{
	char name[64];
	int i, ri, o;

	for (i = 0; i < s->nr_threads; i++) {
		const struct thread_info *th = &s->threads[i];

		if (!th->sp || th->tid == s->tid)
			continue;
		ri = region_at(s, th->sp);
		if (ri < 0 || strcmp(s->r[ri].kind, "anon"))
			continue;
		snprintf(name, sizeof(name), "stack %d (%s)", (int)th->tid,
			 th->comm);
		o = new_object(s, OBJ_STACK, name, s->r[ri].start, s->r[ri].end);
		s->o[o].obj->tid = th->tid;
		s->o[o].obj->size = s->r[ri].end - s->r[ri].start;
		snprintf(s->o[o].mapping, sizeof(s->o[o].mapping), "%s",
			 s->r[ri].mapping);
		s->o[o].kind = "stack";
		add_cand(cs, s->r[ri].start, s->r[ri].end, o, 3, 0);
	}
}

/* Small allocations: a site object each, its pages from the page map. */
static void site_objects(struct snapshot *s, struct cands *cs)
{
	const struct track_data *t = s->track;
	int *obj_of = xcalloc(t->nr_sites + 1, sizeof(int));
	uint32_t i, j;

	for (i = 0; i < t->nr_sites; i++) {
		const struct track_site *st = &t->sites[i];
		int o;

		obj_of[i] = -1;
		if (!st->key || st->large || !st->calls)
			continue;
		o = new_object(s, OBJ_SITE, track_kind_name(st->kind), 0, 0);
		s->o[o].obj->alloc = track_kind_name(st->kind);
		s->o[o].obj->seq = (int)i;
		s->o[o].obj->calls = st->calls;
		s->o[o].obj->size = st->bytes;
		s->o[o].kind = "heap";
		obj_of[i] = o;
	}
	for (i = 0; i < t->nr_leaves; i++) {
		uint64_t base = (t->leaf_keys[i] - 1) << TRACK_LEAF_SHIFT;
		const uint32_t *leaf = t->leaves + (size_t)i * TRACK_LEAF_PAGES;

		for (j = 0; j < TRACK_LEAF_PAGES; j++) {
			uint32_t v = leaf[j], k = j;
			int o;

			if (!v || v > t->nr_sites || obj_of[v - 1] < 0)
				continue;
			o = obj_of[v - 1];
			while (k + 1 < TRACK_LEAF_PAGES && leaf[k + 1] == v)
				k++;
			add_cand(cs, base + ((uint64_t)j << TRACK_PAGE_SHIFT),
				 base + ((uint64_t)(k + 1) << TRACK_PAGE_SHIFT), o, 4, 0);
			if (!s->o[o].start || s->o[o].start > base + ((uint64_t)j << TRACK_PAGE_SHIFT))
				s->o[o].start = base + ((uint64_t)j << TRACK_PAGE_SHIFT);
			if (s->o[o].end < base + ((uint64_t)(k + 1) << TRACK_PAGE_SHIFT))
				s->o[o].end = base + ((uint64_t)(k + 1) << TRACK_PAGE_SHIFT);
			j = k;
		}
	}
	free(obj_of);
}

/* ------------------------------------------------------------ owner runs */

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

static int cmp_u64(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return (*x > *y) - (*x < *y);
}

/* Does candidate a win over b? */
static int beats(const struct cand *a, const struct cand *b)
{
	return a->prio < b->prio || (a->prio == b->prio && a->seq > b->seq);
}

static size_t cap_runs;

static void emit(struct snapshot *s, uint64_t start, uint64_t end, int obj)
{
	struct owner_run *last = s->nr_runs ? &s->runs[s->nr_runs - 1] : NULL;

	if (obj < 0 || start >= end)
		return;
	s->o[obj].pages += (end - start) / info.rcb_granularity;
	if (last && last->obj == obj && last->end == start) {
		last->end = end;
		return;
	}
	if (s->nr_runs == cap_runs) {
		cap_runs = cap_runs ? 2 * cap_runs : 1024;
		s->runs = realloc(s->runs, cap_runs * sizeof(*s->runs));
		if (!s->runs) {
			rt_err("out of memory");
			exit(RT_EXIT_RUN_FAIL);
		}
	}
	s->runs[s->nr_runs++] = (struct owner_run){ start, end, obj };
}

/* Bytes of owners in one partly covered page. */
#define MAX_SHARERS	8
struct page_acc {
	uint64_t g;		/* the page, or UINT64_MAX */
	int n;
	struct cand who[MAX_SHARERS];	/* end - start: bytes */
	uint64_t bytes;
};

static void acc_add(struct page_acc *pa, const struct cand *w, uint64_t bytes)
{
	int i;

	pa->bytes += bytes;
	for (i = 0; i < pa->n; i++)
		if (pa->who[i].obj == w->obj) {
			pa->who[i].end += bytes;
			return;
		}
	if (pa->n < MAX_SHARERS) {
		pa->who[pa->n] = *w;
		pa->who[pa->n].start = 0;
		pa->who[pa->n].end = bytes;
		pa->n++;
	}
}

/* The partly covered page goes to the owner with most bytes on it. */
static void acc_flush(struct snapshot *s, struct page_acc *pa, uint64_t gran)
{
	int i, best = -1;

	if (pa->g == UINT64_MAX)
		return;
	for (i = 0; i < pa->n; i++)
		if (best < 0 || pa->who[i].end > pa->who[best].end ||
		    (pa->who[i].end == pa->who[best].end &&
		     beats(&pa->who[i], &pa->who[best])))
			best = i;
	if (best >= 0) {
		emit(s, pa->g, pa->g + gran, pa->who[best].obj);
		if (pa->n > 1 || pa->bytes < gran)
			s->o[pa->who[best].obj].obj->pages_shared++;
	}
	pa->g = UINT64_MAX;
	pa->n = 0;
	pa->bytes = 0;
}

/* Segment [a, b) won by w: whole pages as runs, partial ones accumulated. */
static void segment(struct snapshot *s, struct page_acc *pa, uint64_t a,
		    uint64_t b, const struct cand *w, uint64_t gran)
{
	while (a < b) {
		uint64_t g = a - a % gran;

		if (g != pa->g && a == g && b - a >= gran) {
			uint64_t ge = b - b % gran;

			acc_flush(s, pa, gran);
			emit(s, a, ge, w->obj);
			a = ge;
			continue;
		}
		if (g != pa->g) {
			acc_flush(s, pa, gran);
			pa->g = g;
		}
		acc_add(pa, w, (b < g + gran ? b : g + gran) - a);
		a = b < g + gran ? b : g + gran;
		if (a == g + gran)
			acc_flush(s, pa, gran);
	}
}

/* Sweep the candidates into disjoint owner runs of whole pages. */
static void build_runs(struct snapshot *s, struct cands *cs)
{
	uint64_t gran = info.rcb_granularity, *pts;
	struct page_acc pa = { .g = UINT64_MAX };
	size_t i, np = 0, next = 0, na = 0, k;
	const struct cand **active;

	if (!cs->n)
		return;
	qsort(cs->c, cs->n, sizeof(*cs->c), cmp_cand);
	pts = xcalloc(2 * cs->n, sizeof(*pts));
	active = xcalloc(cs->n, sizeof(*active));
	for (i = 0; i < cs->n; i++) {
		pts[np++] = cs->c[i].start;
		pts[np++] = cs->c[i].end;
	}
	qsort(pts, np, sizeof(*pts), cmp_u64);
	for (i = 0; i + 1 < np; i++) {
		const struct cand *w = NULL;

		if (pts[i] == pts[i + 1])
			continue;
		/* Drop what ended, add what starts here. */
		for (k = 0; k < na;)
			if (active[k]->end <= pts[i])
				active[k] = active[--na];
			else
				k++;
		while (next < cs->n && cs->c[next].start <= pts[i]) {
			if (cs->c[next].end > pts[i])
				active[na++] = &cs->c[next];
			next++;
		}
		for (k = 0; k < na; k++)
			if (!w || beats(active[k], w))
				w = active[k];
		if (w)
			segment(s, &pa, pts[i], pts[i + 1], w, gran);
	}
	acc_flush(s, &pa, gran);
	free(pts);
	free(active);
}

void objects_build(struct snapshot *s, pid_t tid)
{
	struct cands cs = { 0 };
	int *per_site = NULL;
	struct var_ctx vc = { s, &cs };

	(void)tid;
	cap_o = 0;
	cap_runs = 0;
	mapping_objects(s);
	label_objects(s, &cs);
	if (s->track) {
		per_site = xcalloc(s->track->nr_sites + 1, sizeof(int));
		tracker_objects(s, &cs);
		alloc_objects(s, &cs, per_site);
	}
	if (s->syms)
		syms_each_variable(s->syms, on_variable, &vc);
	stack_objects(s, &cs);
	if (s->track)
		site_objects(s, &cs);
	build_runs(s, &cs);
	/* Each allocation knows how many its site made ("#2 of 5"). */
	if (per_site) {
		int i;

		for (i = 0; i < s->nr_o; i++)
			if (s->o[i].obj->kind == OBJ_ALLOC && s->o[i].obj->seq >= 0)
				s->o[i].obj->of = per_site[s->o[i].obj->seq];
	}
	free(per_site);
	free(cs.c);
}

int object_of(struct snapshot *s, int ri, uint64_t vaddr)
{
	static size_t last;
	size_t lo = 0, hi;

	if (last < s->nr_runs && vaddr >= s->runs[last].start &&
	    vaddr < s->runs[last].end)
		return s->runs[last].obj;
	hi = s->nr_runs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (vaddr < s->runs[mid].start) {
			hi = mid;
		} else if (vaddr >= s->runs[mid].end) {
			lo = mid + 1;
		} else {
			last = mid;
			return s->runs[mid].obj;
		}
	}
	return s->r[ri].mapobj;
}

static uint64_t minus(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* A freed object: what its pages counted up to its free. */
static void from_readings(struct region *r, const struct track_reading *end,
			  const struct track_reading *base)
{
	int c, h;

	r->present = end->pages_present;
	r->counted = end->pages_counted;
	for (c = 0; c < ctr.nr && c < TRACK_COUNTERS; c++) {
		r->refs[c] = minus(end->refs[c], base ? base->refs[c] : 0);
		r->total += r->refs[c];
		if (end->flags & TRACK_R_LOST) {
			r->lost[c] = minus(end->lost[c], base && base->flags & TRACK_R_LOST ?
					   base->lost[c] : 0);
			r->lost_total += r->lost[c];
		}
		/* Home pages by counter: the counter's first node. */
		h = c * ctr.nodes_per_counter;
		if (h < ctr.nr_cnodes)
			r->home_pages[h] += end->home[c];
	}
	r->local = minus(end->local, base ? base->local : 0);
	if (end->flags & TRACK_R_LOST)
		r->lost_pages = r->counted;
}

/* A live object reusing memory: what its pages counted before, taken off. */
static void subtract(struct region *r, const struct track_reading *base)
{
	uint64_t total = 0;
	int c;

	for (c = 0; c < ctr.nr && c < TRACK_COUNTERS; c++) {
		r->refs[c] = minus(r->refs[c], base->refs[c]);
		total += r->refs[c];
		if (base->flags & TRACK_R_LOST) {
			r->lost_total -= r->lost[c] - minus(r->lost[c], base->lost[c]);
			r->lost[c] = minus(r->lost[c], base->lost[c]);
		}
	}
	r->total = total;
	r->local = minus(r->local, base->local);
}

void objects_finish(struct snapshot *s)
{
	int i;

	for (i = 0; i < s->nr_o; i++) {
		struct region *r = &s->o[i];
		struct objinfo *oi = r->obj;

		if (oi->kind != OBJ_ALLOC)
			continue;
		if (oi->freed) {
			memset(r->refs, 0, sizeof(r->refs));
			memset(r->lost, 0, sizeof(r->lost));
			memset(r->home_pages, 0, ctr.nr_cnodes * sizeof(uint64_t));
			r->total = r->local = r->lost_total = r->present = 0;
			r->counted = r->lost_pages = 0;
			r->pages = (r->end - r->start + info.rcb_granularity - 1) /
				   info.rcb_granularity;
			if (oi->end)
				from_readings(r, oi->end, oi->base);
		} else if (oi->base) {
			subtract(r, oi->base);
		}
	}
}
