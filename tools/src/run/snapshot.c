// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: the snapshot of a process at its exit: its memory regions
 * from /proc/TID/maps (split at the labels), its objects (objects.c) from
 * its files' symbols and the tracker's table, their counters from
 * RCB_RANGE_QUERY (extended + hardware) and the lost counts of their sets
 * (lost.c), the references by home and accessing node, and the hottest
 * pages.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "run.h"

/* Entries per range query. */
#define QUERY_CHUNK	4096

void free_snapshot(struct snapshot *s)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < s->nr; i++)
		free(s->r[i].home_pages);
	for (i = 0; i < s->nr_o; i++) {
		free(s->o[i].home_pages);
		if (s->o[i].obj)
			free(s->o[i].obj->stack);
		free(s->o[i].obj);
	}
	free(s->r);
	free(s->o);
	free(s->runs);
	free(s->hot);
	free(s->maps);
	free(s->threads);
	free(s->matrix);
	free(s->lostq);
	pl_free(&s->pl);
	syms_close(s->syms);
	track_free(s->track);
	free(s);
}

static struct region *add_region(struct snapshot *s, int *cap, uint64_t start,
				 uint64_t end, const char *name,
				 const char *mapping, const char *kind,
				 const char *perms, int labelled)
{
	struct region *r;

	if (s->nr == *cap) {
		*cap = *cap ? 2 * *cap : 64;
		s->r = realloc(s->r, *cap * sizeof(*s->r));
		if (!s->r) {
			rt_err("out of memory");
			exit(RT_EXIT_RUN_FAIL);
		}
	}
	r = &s->r[s->nr++];
	memset(r, 0, sizeof(*r));
	r->start = start;
	r->end = end;
	snprintf(r->name, sizeof(r->name), "%s", name);
	snprintf(r->mapping, sizeof(r->mapping), "%s", mapping);
	r->kind = kind;
	snprintf(r->perms, sizeof(r->perms), "%s", perms);
	r->labelled = labelled;
	r->home_pages = xcalloc(ctr.nr_cnodes, sizeof(uint64_t));
	return r;
}

/* Split a VMA at the labels that overlap it. */
static void add_vma(struct snapshot *s, int *cap, uint64_t start, uint64_t end,
		    const char *mapping, const char *kind, const char *perms)
{
	uint64_t at = start;
	int i;

	for (i = 0; i < nr_labels && at < end; i++) {
		uint64_t ls = labels[i].start, le = labels[i].end;

		if (le <= at || ls >= end)
			continue;
		if (ls > at)
			add_region(s, cap, at, ls, mapping, mapping, kind, perms, 0);
		if (ls < at)
			ls = at;
		if (le > end)
			le = end;
		add_region(s, cap, ls, le, labels[i].name, mapping, kind, perms, 1);
		at = le;
	}
	if (at < end)
		add_region(s, cap, at, end, mapping, mapping, kind, perms, 0);
}

static void keep_hot(struct snapshot *s, const struct rcb_page_counters *e,
		     const struct rcb_page_counters *hw, uint64_t vaddr,
		     uint64_t total, int region, int object)
{
	struct hot *h;
	int i, c;

	if (opt.top <= 0 || !total)
		return;
	if (s->nr_hot == opt.top && s->hot[s->nr_hot - 1].total >= total)
		return;
	i = s->nr_hot < opt.top ? s->nr_hot++ : s->nr_hot - 1;
	/* Insertion: the list stays sorted, largest first. */
	while (i > 0 && s->hot[i - 1].total < total) {
		s->hot[i] = s->hot[i - 1];
		i--;
	}
	h = &s->hot[i];
	h->vaddr = vaddr;
	h->paddr = e->paddr;
	h->page_size = e->page_size;
	h->total = total;
	h->region = region;
	h->object = object;
	h->home = e->cnodeid;
	for (c = 0; c < ctr.nr; c++)
		h->refs[c] = e->refcnt[c] + hw->refcnt[c];
}

void add_page(struct region *r, const struct page_counts *pc)
{
	int c;

	r->present++;
	if (pc->denied) {
		r->denied++;
		return;
	}
	if (pc->uncounted) {
		r->uncounted++;
		return;
	}
	r->counted++;
	r->home_pages[pc->cnodeid]++;
	for (c = 0; c < ctr.nr; c++)
		r->refs[c] += pc->refs[c];
	r->total += pc->total;
	r->local += pc->local;
	r->candidates += pc->candidate;
}

/* One page's counts from its two query entries. */
static void page_counts(const struct rcb_page_counters *e,
			const struct rcb_page_counters *hw,
			struct page_counts *pc)
{
	uint64_t maxremote = 0;
	int c, home_ctr;

	memset(pc, 0, sizeof(*pc));
	pc->cnodeid = e->cnodeid;
	if (e->flags & RCB_PAGE_DENIED) {
		pc->denied = 1;
		return;
	}
	if (e->flags & RCB_PAGE_UNCOUNTED || e->cnodeid < 0 ||
	    e->cnodeid >= ctr.nr_cnodes) {
		pc->uncounted = 1;
		return;
	}
	home_ctr = e->cnodeid / ctr.nodes_per_counter;
	for (c = 0; c < ctr.nr; c++) {
		uint64_t v = (uint64_t)e->refcnt[c] + hw->refcnt[c];

		pc->refs[c] = v;
		pc->total += v;
		if (c != home_ctr && v > maxremote)
			maxremote = v;
	}
	pc->local = pc->refs[home_ctr];
	pc->candidate = maxremote > pc->local + info.rcb_diff_threshold;
}

/* Add the entries of one query chunk to region ri and its objects. */
static void policy_init(struct snapshot *s)
{
	int nid[RCB_MAX_COUNTERS], c;

	for (c = 0; c < ctr.nr; c++)
		nid[c] = counter_nid(c);
	s->pl_ok = !pl_init(&s->pl, ctr.nr, nid);
}

/* A counted page into the policies' table (on failure: no sentence). */
static void policy_page(struct snapshot *s, uint64_t vaddr,
			const struct page_counts *pc)
{
	long k;
	int c;

	if (!s->pl_ok || !pc->total)
		return;
	k = pl_add(&s->pl, vaddr / info.rcb_granularity);
	if (k < 0) {
		s->pl_ok = 0;
		return;
	}
	for (c = 0; c < ctr.nr; c++)
		s->pl.refs[(size_t)k * ctr.nr + c] = pc->refs[c];
	/* The counter (column) of the page's node: its group's. */
	s->pl.pages[k].home = pc->cnodeid / ctr.nodes_per_counter;
}

int snapshot_policies(const struct snapshot *s, struct pl_result *r)
{
	int mem[RCB_MAX_COUNTERS], nr_mem = 0, c;
	size_t i;

	if (!s->pl_ok || !s->pl.nr_pages)
		return -1;
	/* The memory nodes: those holding pages of the command. */
	for (c = 0; c < ctr.nr; c++)
		for (i = 0; i < s->pl.nr_pages; i++)
			if (s->pl.pages[i].home == c) {
				mem[nr_mem++] = c;
				break;
			}
	if (!nr_mem)
		return -1;
	pl_compare(&s->pl, mem, nr_mem, NULL, 0, r);
	return r->total ? 0 : -1;
}

/*
 * The kernel's shared zero pages, by physical address: the base page and
 * THP's huge one. An anonymous page read before it is ever written maps
 * one of them, and its counts are those of every reader of the zero
 * page, in every process: they are no object's. Found by mapping both
 * here and asking the range query for their addresses, which it gives to
 * CAP_SYS_ADMIN only (as /proc/pid/pagemap): without it they cannot be
 * told apart.
 */
static struct {
	uint64_t start, end, page_size;
} zero_pa[2];
static int nr_zero_pa;

static void zero_page_at(void *p, int huge)
{
	struct rcb_page_counters e[1];
	uint64_t len;
	size_t n = 0;

	if (madvise(p, 2UL << 20, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) && huge)
		return;
	(void)*(volatile const char *)p;
	if (refcnt_node_range_query(qnode, 0, (uintptr_t)p, 1, 0, e, 1, &n) ||
	    n != 1 || !(e[0].flags & RCB_PAGE_PRESENT) || !e[0].paddr)
		return;
	len = e[0].page_size > info.rcb_granularity ? e[0].page_size :
	      info.rcb_granularity;
	zero_pa[nr_zero_pa].start = e[0].paddr - e[0].paddr % len;
	zero_pa[nr_zero_pa].end = zero_pa[nr_zero_pa].start + len;
	zero_pa[nr_zero_pa].page_size = e[0].page_size;
	nr_zero_pa++;
}

static void find_zero_pages(void)
{
	const uint64_t huge = 2UL << 20;
	char *m = mmap(NULL, 3 * huge, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	char *a;

	if (m == MAP_FAILED)
		return;
	a = m + (huge - (uintptr_t)m % huge) % huge;
	zero_page_at(a, 0);
	zero_page_at(a + huge, 1);
	munmap(m, 3 * huge);
}

/*
 * A page of @e maps a zero page: its frame is in one, mapped as that one
 * is (the huge zero page by a PMD): a 4 KiB page whose frame only lies in
 * the huge zero page's 2 MiB is someone else's, since the huge zero page
 * the rest of the machine sees may have been freed and its memory reused
 * after it was looked up.
 */
static int is_zero_page(const struct rcb_page_counters *e)
{
	int i;

	for (i = 0; e->paddr && i < nr_zero_pa; i++)
		if (e->paddr >= zero_pa[i].start && e->paddr < zero_pa[i].end &&
		    (uint64_t)e->page_size >= zero_pa[i].page_size)
			return 1;
	return 0;
}

uint64_t snapshot_refs(const struct snapshot *s)
{
	uint64_t total = 0;
	int i;

	for (i = 0; i < s->nr; i++)
		total += s->r[i].total;
	return total;
}

static void account(struct snapshot *s, int ri, uint64_t vaddr,
		    const struct rcb_page_counters *ext,
		    const struct rcb_page_counters *hw, size_t n)
{
	struct region *r = &s->r[ri];
	uint64_t gran = info.rcb_granularity;
	struct page_counts pc;
	size_t i;
	int c, o;

	for (i = 0; i < n; i++, vaddr += gran) {
		const struct rcb_page_counters *e = &ext[i];

		if (vaddr + gran <= r->start || vaddr >= r->end)
			continue;
		if (!(e->flags & RCB_PAGE_PRESENT))
			continue;
		o = s->o ? object_of(s, ri, vaddr) : -1;
		if (is_zero_page(e)) {
			r->present++;
			r->zero++;
			if (o >= 0) {
				s->o[o].present++;
				s->o[o].zero++;
			}
			continue;
		}
		page_counts(e, &hw[i], &pc);
		add_page(r, &pc);
		if (o >= 0)
			add_page(&s->o[o], &pc);
		if (pc.denied || pc.uncounted)
			continue;
		for (c = 0; c < ctr.nr; c++)
			s->matrix[(size_t)pc.cnodeid * ctr.nr + c] += pc.refs[c];
		if (e->paddr)
			lost_queue(s, e->paddr, pc.cnodeid, ri, o);
		keep_hot(s, e, &hw[i], vaddr, pc.total, ri, o);
		policy_page(s, vaddr, &pc);
	}
}

static struct rcb_page_counters *qext, *qhw;

/* Query [a, b) of process pid into the regions from ri on. */
static int query_run(struct snapshot *s, int ri, pid_t pid, uint64_t a,
		     uint64_t b)
{
	uint64_t gran = info.rcb_granularity;

	a -= a % gran;
	while (a < b) {
		uint64_t len = b - a;
		size_t n1, n2;

		if (len > (uint64_t)QUERY_CHUNK * gran)
			len = (uint64_t)QUERY_CHUNK * gran;
		if (refcnt_node_range_query(qnode, pid, a, len, RCB_RANGE_EXTENDED,
					    qext, QUERY_CHUNK, &n1) ||
		    refcnt_node_range_query(qnode, pid, a, len, 0, qhw,
					    QUERY_CHUNK, &n2))
			return -1;
		if (n2 < n1)
			n1 = n2;
		account(s, ri, a, qext, qhw, n1);
		a += len;
	}
	return 0;
}

/*
 * Query region ri of process pid, only where its pagemap says pages are
 * present (a reservation of terabytes costs nothing then).
 */
static int query_region(struct snapshot *s, int ri, pid_t pid, int pagemap)
{
	const uint64_t psz = info.rcb_base_page_size ? info.rcb_base_page_size :
			     (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t gran = info.rcb_granularity, step = gran > psz ? gran : psz;
	struct region *r = &s->r[ri];
	uint64_t pm[512], a, run_a = 0, run_b = 0;
	int in_run = 0;

	r->pages = (r->end - r->start + gran - 1) / gran;
	if (pagemap < 0)
		return query_run(s, ri, pid, r->start, r->end);
	for (a = r->start - r->start % psz; a < r->end;) {
		size_t n = (r->end - a + psz - 1) / psz, i;
		ssize_t got;

		if (n > 512)
			n = 512;
		got = pread(pagemap, pm, n * 8, (off_t)(a / psz * 8));
		if (got <= 0)
			return query_run(s, ri, pid, a > r->start ? a : r->start,
					 r->end);
		n = got / 8;
		for (i = 0; i < n; i++, a += psz) {
			int present = (pm[i] >> 63) & 1;

			if (present && !in_run) {
				run_a = a - a % step;
				if (run_a < r->start)
					run_a = r->start;
				in_run = 1;
			}
			if (present)
				run_b = a + psz;
			/* Close a run at a gap of more than 16 base pages. */
			if (!present && in_run && a >= run_b + 16 * psz) {
				if (query_run(s, ri, pid, run_a,
					      run_b < r->end ? run_b : r->end))
					return -1;
				in_run = 0;
			}
		}
	}
	if (in_run && query_run(s, ri, pid, run_a, run_b < r->end ? run_b : r->end))
		return -1;
	return 0;
}

static const char *vma_kind(const char *path, int *skip)
{
	*skip = 0;
	if (!*path)
		return "anon";
	if (!strcmp(path, "[heap]"))
		return "heap";
	if (!strncmp(path, "[stack", 6))
		return "stack";
	if (!strncmp(path, "[anon", 5))
		return "anon";
	if (!strcmp(path, "[vsyscall]") || !strcmp(path, "[vvar]")) {
		*skip = 1;
		return "special";
	}
	if (path[0] == '[')
		return "special";
	return "file";
}

/* One line of /proc/TID/maps into s's regions (most of them). */
static void add_maps_line(struct snapshot *s, int *cap, const char *line)
{
	unsigned long long start, end;
	char perms[8] = "", mapping[4096 + 64] = "";
	const char *kind;
	int skip, pos = 0;

	if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %n", &start, &end,
		   perms, &pos) < 3)
		return;
	if (pos > 0) {
		size_t l;

		snprintf(mapping, sizeof(mapping), "%s", line + pos);
		l = strlen(mapping);
		while (l && (mapping[l - 1] == '\n' || mapping[l - 1] == ' '))
			mapping[--l] = '\0';
	}
	kind = vma_kind(mapping, &skip);
	if (skip)
		return;
	/* Guard pages and PROT_NONE reservations hold nothing. */
	if (!strncmp(perms, "---", 3))
		return;
	add_vma(s, cap, start, end, *mapping ? mapping : "[anon]", kind, perms);
}

/* Keep the maps text: names are resolved from it after the run. */
static void keep_maps_line(struct snapshot *s, size_t *cap, const char *line)
{
	size_t n = strlen(line);

	if (s->maps_len + n + 1 > *cap) {
		*cap = (*cap ? 2 * *cap : 16384) + n;
		s->maps = realloc(s->maps, *cap);
		if (!s->maps) {
			rt_err("out of memory");
			exit(RT_EXIT_RUN_FAIL);
		}
	}
	memcpy(s->maps + s->maps_len, line, n + 1);
	s->maps_len += n;
}

/* The regions of tid's process from /proc/TID/maps: 0, or -1 (printed). */
static int read_maps(struct snapshot *s, pid_t tid)
{
	char path[64], line[4096 + 256];
	size_t mcap = 0;
	int cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)tid);
	f = fopen(path, "r");
	if (!f) {
		rt_err("%s: %s: cannot read the memory map at exit", path,
		       strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		keep_maps_line(s, &mcap, line);
		add_maps_line(s, &cap, line);
	}
	fclose(f);
	if (!s->nr) {
		rt_err("%s: no memory regions at exit", path);
		return -1;
	}
	return 0;
}

/* Say why querying failed for `failed` regions; -1 if it cannot go on. */
static int query_failed(pid_t tid, int failed, int err)
{
	if (err == EPERM)
		rt_err("RCB_RANGE_QUERY of pid %d: operation not permitted: reading another process's counters needs CAP_SYS_PTRACE (run as root)",
		       (int)tid);
	else if (err == ESRCH)
		rt_err("RCB_RANGE_QUERY of pid %d: its memory was already gone (killed by SIGKILL?)",
		       (int)tid);
	else
		rt_err("RCB_RANGE_QUERY of pid %d failed for %d region%s: %s",
		       (int)tid, failed, failed == 1 ? "" : "s",
		       strerror(err));
	return err == EPERM || err == ESRCH || err == ENOTTY ? -1 : 0;
}

/*
 * The counters of every region: 0, or -1 with the cause printed. The
 * pages present are read from tid's pagemap, the counters asked of tgid
 * (RCB_RANGE_QUERY names a process by its thread group id).
 */
static int query_regions(struct snapshot *s, pid_t tid, pid_t tgid)
{
	char path[64];
	int pagemap, i, failed = 0, err = 0;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)tid);
	pagemap = open(path, O_RDONLY | O_CLOEXEC);
	for (i = 0; i < s->nr; i++) {
		if (query_region(s, i, tgid, pagemap)) {
			failed++;
			err = errno;
			if (err == EPERM || err == ESRCH || err == ENOTTY)
				break;
		}
		s->denied_pages += s->r[i].denied;
	}
	if (pagemap >= 0)
		close(pagemap);
	return failed ? query_failed(tgid, failed, err) : 0;
}

/* The executable, and whether it is linked statically. */
static void read_exe(struct snapshot *s, pid_t tid)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)tid);
	n = readlink(path, s->exe, sizeof(s->exe) - 1);
	s->exe[n > 0 ? n : 0] = '\0';
	s->exe_static = n > 0 ? elf_is_static(s->exe) : -1;
}

/*
 * Read the maps, objects and counters of tid's process (tgid), whose
 * threads are threads[]. NULL if it cannot.
 */
struct snapshot *snapshot_objects(pid_t tid, pid_t tgid,
				   struct thread_info *threads, int nr_threads)
{
	struct snapshot *s = xcalloc(1, sizeof(*s));

	s->tid = tid;
	s->threads = threads;
	s->nr_threads = nr_threads;
	s->hot = xcalloc(opt.top > 0 ? opt.top : 1, sizeof(*s->hot));
	s->matrix = xcalloc((size_t)ctr.nr_cnodes * ctr.nr, sizeof(uint64_t));
	policy_init(s);
	read_exe(s, tid);
	if (read_maps(s, tid)) {
		free_snapshot(s);
		return NULL;
	}
	s->syms = syms_open(s->maps, s->maps_len);
	s->track = track_read(tgid);
	objects_build(s, tid);
	return s;
}

struct snapshot *take_snapshot(pid_t tid, pid_t tgid,
				struct thread_info *threads, int nr_threads)
{
	struct snapshot *s;

	if (!qext) {
		qext = xcalloc(QUERY_CHUNK, sizeof(*qext));
		qhw = xcalloc(QUERY_CHUNK, sizeof(*qhw));
		find_zero_pages();
	}
	s = snapshot_objects(tid, tgid, threads, nr_threads);
	if (!s)
		return NULL;
	if (query_regions(s, tid, tgid)) {
		free_snapshot(s);
		return NULL;
	}
	lost_read(s);
	objects_finish(s);
	s->queried_ok = 1;
	return s;
}

uint64_t remote_refs(const struct region *r)
{
	return r->total > r->local ? r->total - r->local : 0;
}

int cmp_region_remote(const void *a, const void *b)
{
	const struct region *x = *(struct region *const *)a;
	const struct region *y = *(struct region *const *)b;
	uint64_t rx = remote_refs(x), ry = remote_refs(y);

	if (rx != ry)
		return (rx < ry) - (rx > ry);
	return (x->total < y->total) - (x->total > y->total);
}

int cmp_region_refs(const void *a, const void *b)
{
	const struct region *x = *(struct region *const *)a;
	const struct region *y = *(struct region *const *)b;

	return (x->total < y->total) - (x->total > y->total);
}

const char *region_of(const struct snapshot *s, int i)
{
	return i >= 0 && i < s->nr ? s->r[i].name : "?";
}

/* name cut to width characters, keeping its end ("~ols/demo-workload"). */
int shown(const struct region *r)
{
	return opt.all || r->total || r->labelled;
}
