// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-sharing: the configuration-independent characteristics of CIAT
 * (Abandah 1996, section 4) from traces: load and store statistics by
 * size and register kind, load and store strings, the four communication
 * patterns (RAW, WAR, WAW, RAR) with sharing and invalidation degree
 * vectors, per phase (between markers) and in all, and the memory usage
 * summary and file (one record per touched page). From the counters
 * alone: the memory usage file at node level and a node x node sharing
 * matrix. Every report line has the seed's tag RrTtLll: phase r (x: all),
 * thread t (x: all threads), data type ll (refcnt-sharing(1) lists them).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counters-in.h"
#include "rtools.h"
#include "trace-read.h"
#include "trace-tool.h"
#include "u64map.h"

#define PAGE		4096u
#define MAX_COMM	64		/* threads the communication masks hold */
#define NR_SIZES	16
#define NR_LEN		48		/* string length buckets */
#define MAX_RANGES	16
#define MAX_NID		64

static struct {
	const char *memory, *report, *map;
	unsigned int word;
	int json, progress, physical;
	int nr_ranges;
	uint64_t range_lo[MAX_RANGES], range_hi[MAX_RANGES];
	struct ci_source src;
} opt = { .word = 8, .src.node = -1, .progress = 1 };

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: refcnt-sharing [OPTIONS] TRACE...\n"
		"       refcnt-sharing [OPTIONS] --counters | --csv TABLE.csv\n"
		"\n"
		"CIAT's configuration-independent characteristics of the traces\n"
		"(refcnt-vm --trace, lackey): load/store statistics by size and register\n"
		"kind, load and store strings, the communication patterns RAW, WAR, WAW\n"
		"and RAR with sharing and invalidation degrees, per phase (between\n"
		"markers) and in all, the memory usage summary, and with --memory the\n"
		"memory usage file. From the counters: the memory usage file at node\n"
		"level and the node x node sharing matrix. Lines are tagged RrTtLll:\n"
		"(phase, thread, data type; x for all), as CIAT's.\n"
		"\n"
		"  -o, --report FILE      the report (default: standard output)\n"
		"  -u, --memory FILE      the memory usage file: one record per touched\n"
		"                         page\n"
		"  -w, --word BYTES       the memory location of the communication\n"
		"                         patterns: 1, 2, 4, 8 (default) or 64 bytes\n"
		"  -p, --physical         pages by physical address (traces with them);\n"
		"                         default: by virtual address, as CIAT\n"
		"  -s, --shared-range A-B addresses reserved for shared data (CIAT's\n"
		"                         range-shared pages; repeatable)\n"
		"  -m, --map T=N,...      the node of threads (default: each trace's)\n"
		"  -c, --counters         the module's counters (every node, or --node)\n"
		"  -n, --node NID         with --counters: node NID's memory only\n"
		"      --csv FILE         a refcnt-dump --csv table (or a truth table)\n"
		"  -g, --granularity B    the table's hardware page size (default 4096)\n"
		"  -j, --json             the report as JSON\n"
		"  -P, --progress         a progress line on standard error, also when\n"
		"                         it is not a terminal\n"
		"  -h, --help             this text\n"
		"\n"
		"Exit status: 0 ok, 1 malformed or unreadable input, 2 usage,\n"
		"3 module not loaded, 4 permission denied.\n");
}

/* ------------------------------------------------------------ state */

struct comm_loc {
	uint64_t r_all;		/* threads that loaded since the last store */
	uint64_t r_phase;	/* the same, in this phase */
	int16_t writer;		/* last thread to store, -1 none */
};

struct page {
	uint64_t key;
	int node;			/* home node, -1 unknown */
	uint8_t touched[PAGE / 8], shared[PAGE / 8];
	uint8_t first[PAGE];		/* first thread + 1 of each data byte */
	uint32_t wacc[PAGE / 8];	/* accesses by first 8-byte word */
	uint8_t *ctouched, *cshared, *cfirst;	/* code bytes, lazily */
	uint32_t *cwacc;		/* instructions by first 8-byte word */
	uint64_t data_acc, code_acc;
	uint64_t data_bytes;		/* bytes accessed (sum of sizes) */
	uint64_t threads[TR_MAX_THREADS / 64];
	uint64_t *thread_acc;		/* accesses by thread */
	struct comm_loc *comm;
};

struct tstats {
	uint64_t acc[2];			/* loads, stores */
	uint64_t by[2][TR_NR_REGS][NR_SIZES];	/* by size code */
	uint64_t strings[2][NR_LEN];
	uint64_t raw, war, waw, rar;
	uint64_t code_blocks, insns;
};

struct phase {
	int num;
	unsigned int cmd;
	uint32_t num_user;
	int mark_thread;
	uint64_t time;
	uint64_t events;
	struct tstats *t;		/* by thread */
	uint64_t S[MAX_COMM + 1], I[MAX_COMM + 1];
};

static int nthreads;
static struct u64map pages;		/* key -> index */
static struct page **pagev;
static size_t nr_pages, cap_pages;
static struct phase *phases;
static int nr_phases;
static struct phase all;
static int run_kind[TR_MAX_THREADS];	/* -1, TR_LOAD or TR_STORE */
static uint64_t run_len[TR_MAX_THREADS];
static int thread_node[TR_MAX_THREADS];
static struct u64map blocks;		/* distinct code blocks -> insns */
static uint64_t fetched_bytes_total;

static int len_bucket(uint64_t l)
{
	int b = 16;

	if (l <= 16)
		return (int)l;
	l = (l - 1) >> 4;
	while (l && b < NR_LEN - 1) {
		b++;
		l >>= 1;
	}
	return b;
}

static void len_name(int b, char *buf, size_t n)
{
	if (b <= 16)
		snprintf(buf, n, "%d", b);
	else
		snprintf(buf, n, "%llu-%llu", (1ull << (b - 13)) + 1, 1ull << (b - 12));
}

static int new_phase(const struct tr_event *mark)
{
	struct phase *p = realloc(phases, (nr_phases + 1) * sizeof(*p));

	if (!p)
		return -1;
	phases = p;
	p = &phases[nr_phases];
	memset(p, 0, sizeof(*p));
	p->num = nr_phases + 1;
	p->mark_thread = -1;
	if (mark) {
		p->cmd = mark->cmd;
		p->num_user = mark->num;
		p->mark_thread = mark->thread;
		p->time = mark->time;
	}
	p->t = calloc(nthreads, sizeof(*p->t));
	if (!p->t)
		return -1;
	nr_phases++;
	return 0;
}

static struct page *page_of(uint64_t key, int node)
{
	uint64_t *v;
	int added;
	struct page *pg;

	v = u64map_put(&pages, key, &added);
	if (!v)
		return NULL;
	if (!added) {
		pg = pagev[*v];
		if (node >= 0)
			pg->node = node;
		return pg;
	}
	if (nr_pages == cap_pages) {
		size_t cap = cap_pages ? 2 * cap_pages : 1024;
		struct page **n = realloc(pagev, cap * sizeof(*n));

		if (!n)
			return NULL;
		pagev = n;
		cap_pages = cap;
	}
	pg = calloc(1, sizeof(*pg));
	if (!pg || !(pg->thread_acc = calloc(nthreads, sizeof(uint64_t))))
		return NULL;
	pg->key = key;
	pg->node = node;
	pagev[nr_pages] = pg;
	*v = nr_pages++;
	return pg;
}

static inline int bit(const uint8_t *m, unsigned int i)
{
	return m[i / 8] >> (i % 8) & 1;
}

static inline void set_bit(uint8_t *m, unsigned int i)
{
	m[i / 8] |= 1u << (i % 8);
}

/* ------------------------------------------------------------ comm */

static struct phase *cur(void)
{
	return &phases[nr_phases - 1];
}

static int popcount(uint64_t v)
{
	return __builtin_popcountll(v);
}

/* A RAW episode closes: it counts when someone else than the writer read. */
static void close_episode(struct comm_loc *c)
{
	if (c->writer >= 0 && c->r_phase && c->r_phase != 1ull << c->writer)
		cur()->S[popcount(c->r_phase)]++;
	c->r_phase = 0;
}

static void comm_access(struct comm_loc *c, int t, int store)
{
	struct tstats *ts = &cur()->t[t];
	uint64_t me = 1ull << t;

	if (!store) {
		if (c->writer >= 0) {
			if (!(c->r_all & me) && c->writer != t)
				ts->raw++;
		} else if (c->r_all && !(c->r_all & me)) {
			ts->rar++;
		}
		c->r_all |= me;
		c->r_phase |= me;
		return;
	}
	close_episode(c);
	if (c->r_all && c->r_all != me) {
		ts->war++;
		cur()->I[popcount(c->r_all)]++;
	}
	if (c->writer >= 0 && c->writer != t)
		ts->waw++;
	c->writer = (int16_t)t;
	c->r_all = 0;
}

/* At a phase's end: close every open episode into its S vector. */
static void sweep_phase(void)
{
	size_t i;
	unsigned int k, n = PAGE / opt.word;

	for (i = 0; i < nr_pages; i++)
		if (pagev[i]->comm)
			for (k = 0; k < n; k++)
				close_episode(&pagev[i]->comm[k]);
}

/* ------------------------------------------------------------ events */

static void end_string(int t)
{
	if (run_kind[t] >= 0 && run_len[t])
		cur()->t[t].strings[run_kind[t]][len_bucket(run_len[t])]++;
	run_kind[t] = -1;
	run_len[t] = 0;
}

static int data_bytes(struct page *pg, unsigned int off, unsigned int n, int t)
{
	unsigned int b;

	for (b = off; b < off + n; b++) {
		if (!bit(pg->touched, b)) {
			set_bit(pg->touched, b);
			pg->first[b] = (uint8_t)(t + 1);
		} else if (pg->first[b] != t + 1) {
			set_bit(pg->shared, b);
		}
	}
	return 0;
}

static int mem_event(const struct tr_event *e, int phys)
{
	uint64_t a = phys ? e->paddr : e->vaddr, end = a + e->size;
	int t = e->thread, first = 1;
	struct tstats *ts = &cur()->t[t];
	unsigned int code = e->size <= 8 ? e->size : e->size == 16 ? 9 : e->size == 32 ? 10 : 11;

	ts->acc[e->store]++;
	ts->by[e->store][e->reg][code]++;
	if (run_kind[t] != (int)e->store)
		end_string(t);
	run_kind[t] = e->store;
	run_len[t]++;
	while (a < end) {
		struct page *pg = page_of(a / PAGE, phys ? e->node : -1);
		unsigned int off = a % PAGE, n = (unsigned int)(end - a);
		unsigned int w;

		if (!pg)
			return -1;
		if (n > PAGE - off)
			n = PAGE - off;
		if (first) {
			pg->data_acc++;
			pg->wacc[off / 8]++;
			pg->thread_acc[t]++;
			first = 0;
		}
		pg->data_bytes += n;
		pg->threads[t / 64] |= 1ull << (t % 64);
		data_bytes(pg, off, n, t);
		if (!pg->comm) {
			unsigned int k;

			pg->comm = calloc(PAGE / opt.word, sizeof(*pg->comm));
			if (!pg->comm)
				return -1;
			for (k = 0; k < PAGE / opt.word; k++)
				pg->comm[k].writer = -1;
		}
		for (w = off / opt.word; w <= (off + n - 1) / opt.word; w++)
			comm_access(&pg->comm[w], t, e->store);
		a += n;
	}
	return 0;
}

static int code_event(const struct tr_event *e)
{
	uint64_t a = e->vaddr, end = a + e->size;
	int t = e->thread, first = 1, added;
	uint64_t *v;

	cur()->t[t].code_blocks++;
	cur()->t[t].insns += e->insns;
	fetched_bytes_total += e->size;
	v = u64map_put(&blocks, e->vaddr, &added);
	if (!v)
		return -1;
	if (*v < e->insns)
		*v = e->insns;
	while (a < end) {
		struct page *pg = page_of(a / PAGE, -1);
		unsigned int off = a % PAGE, n = (unsigned int)(end - a), b;

		if (!pg)
			return -1;
		if (n > PAGE - off)
			n = PAGE - off;
		if (!pg->cfirst) {
			pg->ctouched = calloc(PAGE / 8, 1);
			pg->cshared = calloc(PAGE / 8, 1);
			pg->cfirst = calloc(PAGE, 1);
			pg->cwacc = calloc(PAGE / 8, sizeof(uint32_t));
			if (!pg->ctouched || !pg->cshared || !pg->cfirst || !pg->cwacc)
				return -1;
		}
		if (first) {
			pg->code_acc += e->insns;
			pg->cwacc[off / 8] += e->insns;
			first = 0;
		}
		pg->threads[t / 64] |= 1ull << (t % 64);
		for (b = off; b < off + n; b++) {
			if (!bit(pg->ctouched, b)) {
				set_bit(pg->ctouched, b);
				pg->cfirst[b] = (uint8_t)(t + 1);
			} else if (pg->cfirst[b] != t + 1) {
				set_bit(pg->cshared, b);
			}
		}
		a += n;
	}
	return 0;
}

static int read_traces(char **names, int n)
{
	struct tr_event e;
	struct tr_set *s;
	int r, t, phys;

	s = tr_set_open(rt_prog, names, n);
	if (!s)
		return -1;
	tr_set_progress(s, opt.progress);
	nthreads = tr_set_threads(s);
	if (nthreads > MAX_COMM) {
		rt_err("%d threads: the communication patterns take at most %d", nthreads,
		       MAX_COMM);
		return -1;
	}
	phys = opt.physical;
	if (phys && !tr_set_has(s, TR_HAS_PHYS)) {
		rt_err("--physical: the traces have no physical addresses");
		return -1;
	}
	for (t = 0; t < TR_MAX_THREADS; t++) {
		run_kind[t] = -1;
		thread_node[t] = -2;
	}
	if (opt.map && tt_parse_map(opt.map, thread_node, nthreads))
		return -1;
	for (t = 0; t < nthreads; t++)
		if (thread_node[t] == -2)
			thread_node[t] = tr_set_header(s, t)->node;
	if (u64map_init(&pages, 4096) || u64map_init(&blocks, 4096) || new_phase(NULL))
		return -1;
	while ((r = tr_set_next(s, &e)) > 0) {
		switch (e.kind) {
		case TR_EV_MEM:
			if (phys && e.paddr == TR_NO_PADDR)
				break;
			cur()->events++;
			if (mem_event(&e, phys))
				goto oom;
			break;
		case TR_EV_CODE:
			cur()->events++;
			if (code_event(&e))
				goto oom;
			break;
		case TR_EV_MARK:
			for (t = 0; t < nthreads; t++)
				end_string(t);
			sweep_phase();
			if (new_phase(&e))
				goto oom;
			break;
		default:
			break;
		}
	}
	tr_set_close(s);
	if (r)
		return -1;
	for (t = 0; t < nthreads; t++)
		end_string(t);
	sweep_phase();
	return 0;
oom:
	rt_err("out of memory");
	return -1;
}

/* ------------------------------------------------------------ report */

static void add_tstats(struct tstats *a, const struct tstats *b)
{
	uint64_t *x = (uint64_t *)a;
	const uint64_t *y = (const uint64_t *)b;
	size_t i;

	for (i = 0; i < sizeof(*a) / sizeof(uint64_t); i++)
		x[i] += y[i];
}

static const char *size_name(int store, unsigned int reg, unsigned int code)
{
	static char buf[48];
	static const char *const fixed[] = { "zero-byte", "byte", "halfword", "three-byte",
		"word", "five-byte", "six-byte", "seven-byte", "doubleword" };
	unsigned int bytes = code <= 8 ? code : 16u << (code - 9);

	(void)store;
	if (reg == TR_REG_FLOAT && (bytes == 4 || bytes == 8))
		snprintf(buf, sizeof(buf), "%s", bytes == 4 ? "float" : "double-float");
	else if (reg == TR_REG_FLOAT)
		snprintf(buf, sizeof(buf), "float register, %u bytes", bytes);
	else if (code <= 8)
		snprintf(buf, sizeof(buf), "%s%s", fixed[code], reg == TR_REG_NONE ? " (memory to memory)" : "");
	else
		snprintf(buf, sizeof(buf), "%u bytes%s", bytes, reg == TR_REG_NONE ? " (memory to memory)" : "");
	return buf;
}

struct out {
	FILE *f;
	int json, first;
};

static void tag(FILE *f, int phase, int thread, int ll)
{
	if (phase < 0)
		fprintf(f, "Rx");
	else
		fprintf(f, "R%d", phase);
	if (thread < 0)
		fprintf(f, "Tx");
	else
		fprintf(f, "T%d", thread);
	fprintf(f, "L%02d: ", ll);
}

static void text_tstats(FILE *f, int r, int t, const struct tstats *s)
{
	uint64_t acc = s->acc[0] + s->acc[1];
	int k, reg, code;
	char name[32];

	if (!acc && !s->code_blocks)
		return;
	tag(f, r, t, 1);
	fprintf(f, "memory accesses %" PRIu64 ": loads %" PRIu64 " (%.1f%%), stores %" PRIu64
		" (%.1f%%)\n", acc, s->acc[0], tt_pct(s->acc[0], acc), s->acc[1],
		tt_pct(s->acc[1], acc));
	for (k = 0; k < 2; k++)
		for (reg = 0; reg < TR_NR_REGS; reg++)
			for (code = 0; code < NR_SIZES; code++)
				if (s->by[k][reg][code]) {
					tag(f, r, t, 2 + k);
					fprintf(f, "%s %s: %" PRIu64 " (%.1f%%)\n",
						k ? "store" : "load", size_name(k, reg, code),
						s->by[k][reg][code], tt_pct(s->by[k][reg][code], s->acc[k]));
				}
	for (k = 0; k < 2; k++) {
		uint64_t n = 0;
		int b;

		for (b = 0; b < NR_LEN; b++)
			n += s->strings[k][b];
		if (!n)
			continue;
		tag(f, r, t, 4 + k);
		fprintf(f, "%s strings %" PRIu64 ", by length:", k ? "store" : "load", n);
		for (b = 0; b < NR_LEN; b++)
			if (s->strings[k][b]) {
				len_name(b, name, sizeof(name));
				fprintf(f, " %s:%" PRIu64, name, s->strings[k][b]);
			}
		fprintf(f, "\n");
	}
	tag(f, r, t, 6);
	fprintf(f, "RAW accesses %" PRIu64 "\n", s->raw);
	tag(f, r, t, 8);
	fprintf(f, "WAR accesses %" PRIu64 "\n", s->war);
	tag(f, r, t, 10);
	fprintf(f, "WAW accesses %" PRIu64 "\n", s->waw);
	tag(f, r, t, 11);
	fprintf(f, "RAR accesses %" PRIu64 "\n", s->rar);
	if (s->code_blocks) {
		tag(f, r, t, 12);
		fprintf(f, "instructions fetched %" PRIu64 " in %" PRIu64 " blocks\n",
			s->insns, s->code_blocks);
	}
}

static void text_vector(FILE *f, int r, int ll, const char *what, const uint64_t *v)
{
	int k;

	tag(f, r, -1, ll);
	fprintf(f, "%s degree:", what);
	for (k = 1; k <= MAX_COMM && k <= nthreads; k++)
		fprintf(f, " %d:%" PRIu64, k, v[k]);
	fprintf(f, "\n");
}

static void text_phase(FILE *f, int r, const struct phase *p)
{
	struct tstats x;
	int t;

	memset(&x, 0, sizeof(x));
	tag(f, r, -1, 0);
	if (r < 0)
		fprintf(f, "all phases: %d, events %" PRIu64 ", threads %d\n", nr_phases,
			p->events, nthreads);
	else if (p->mark_thread < 0)
		fprintf(f, "phase %d: from the start, events %" PRIu64 "\n", r, p->events);
	else
		fprintf(f, "phase %d: from marker %u (%s) num %u of thread %d at %" PRIu64
			" ns, events %" PRIu64 "\n", r, p->cmd, tr_mark_name(p->cmd),
			p->num_user, p->mark_thread, p->time, p->events);
	for (t = 0; t < nthreads; t++) {
		text_tstats(f, r, t, &p->t[t]);
		add_tstats(&x, &p->t[t]);
	}
	text_tstats(f, r, -1, &x);
	text_vector(f, r, 7, "RAW sharing", p->S);
	text_vector(f, r, 9, "WAR invalidation", p->I);
}

struct usage_sum {
	uint64_t v[21];		/* CIAT 4.5 items 1..20 (19, 20 as ratios below) */
	double dli, cli;
};

static int in_range(uint64_t key)
{
	int i;

	for (i = 0; i < opt.nr_ranges; i++)
		if (key * PAGE < opt.range_hi[i] && (key + 1) * PAGE > opt.range_lo[i])
			return 1;
	return 0;
}

static int page_threads(const struct page *pg, int *owner)
{
	int i, n = 0;

	*owner = -1;
	for (i = 0; i < nthreads; i++)
		if (pg->threads[i / 64] >> (i % 64) & 1) {
			n++;
			*owner = i;
		}
	if (n != 1)
		*owner = -1;
	return n;
}

static uint64_t count_bits(const uint8_t *m)
{
	uint64_t n = 0;
	unsigned int i;

	if (!m)
		return 0;
	for (i = 0; i < PAGE / 8; i++)
		n += __builtin_popcount(m[i]);
	return n;
}

/*
 * The accesses of a page to shared locations: those whose first 8-byte
 * word holds a byte more than one thread touched (data, or code).
 */
static uint64_t shared_acc(const uint32_t *wacc, const uint8_t *shared)
{
	uint64_t n = 0;
	unsigned int w;

	for (w = 0; wacc && w < PAGE / 8; w++)
		if (wacc[w] && shared[w])
			n += wacc[w];
	return n;
}

static uint64_t shared_data_acc(const struct page *pg)
{
	return shared_acc(pg->wacc, pg->shared);
}

static uint64_t shared_code_acc(const struct page *pg)
{
	return shared_acc(pg->cwacc, pg->cshared);
}

static void usage_summary(struct usage_sum *u)
{
	uint64_t touched_insns = 0, fetched = 0, k, v;
	size_t i, it = 0;
	int owner;

	memset(u, 0, sizeof(*u));
	for (i = 0; i < nr_pages; i++) {
		const struct page *pg = pagev[i];
		uint64_t db = count_bits(pg->touched), cb = count_bits(pg->ctouched);
		uint64_t sb = count_bits(pg->shared) + count_bits(pg->cshared);
		int shared = page_threads(pg, &owner) > 1;
		int range = shared || in_range(pg->key);
		uint64_t sda = shared_data_acc(pg);

		u->v[1]++;
		u->v[2] += shared;
		u->v[3] += range;
		u->v[4] += db + cb;
		u->v[5] += db;
		u->v[6] += cb;
		u->v[7] += sb;
		u->v[8] += shared ? db + cb : 0;
		u->v[9] += range ? db + cb : 0;
		u->v[10] += pg->data_acc + pg->code_acc;
		u->v[11] += pg->data_acc;
		u->v[12] += sda;
		u->v[13] += shared ? pg->data_acc : 0;
		u->v[14] += range ? pg->data_acc : 0;
		u->v[15] += pg->code_acc;
		u->v[16] += shared_code_acc(pg);
		u->v[17] += shared ? pg->code_acc : 0;
		u->v[18] += range ? pg->code_acc : 0;
		fetched += pg->data_bytes;
	}
	u->dli = u->v[5] ? (double)fetched / u->v[5] : 0;
	while (u64map_next(&blocks, &it, &k, &v))
		touched_insns += v;
	u->cli = touched_insns ? (double)u->v[15] / touched_insns : 0;
}

static const char *const usage_names[21] = {
	NULL, "touched pages", "shared pages", "range-shared pages",
	"touched bytes", "touched data bytes", "touched code bytes",
	"shared bytes", "page-shared bytes", "range-shared bytes",
	"memory accesses", "data accesses", "data accesses to shared locations",
	"data accesses to shared pages", "data accesses to range-shared pages",
	"code accesses (instructions)", "code accesses to shared locations",
	"code accesses to shared pages", "code accesses to range-shared pages",
	"data locality index", "code locality index",
};

static void text_usage(FILE *f, const struct usage_sum *u)
{
	int i;

	for (i = 1; i <= 18; i++) {
		tag(f, -1, -1, 20 + i);
		fprintf(f, "%s %" PRIu64 "\n", usage_names[i], u->v[i]);
	}
	tag(f, -1, -1, 39);
	fprintf(f, "%s %.2f\n", usage_names[19], u->dli);
	tag(f, -1, -1, 40);
	fprintf(f, "%s %.2f\n", usage_names[20], u->cli);
}

/* Node x node: pages both reference, and references to such pages. */
struct matrix {
	int n;
	int nid[MAX_NID];
	uint64_t pages[MAX_NID][MAX_NID], refs[MAX_NID][MAX_NID];
};

static void matrix_add(struct matrix *m, const uint64_t *refs)
{
	int i, j;

	for (i = 0; i < m->n; i++) {
		if (!refs[i])
			continue;
		for (j = 0; j < m->n; j++)
			if (refs[j]) {
				m->pages[i][j]++;
				m->refs[i][j] += refs[i];
			}
	}
}

static void text_matrix(FILE *f, const struct matrix *m)
{
	int i, j, k;

	for (k = 0; k < 2; k++) {
		tag(f, -1, -1, 41 + k);
		fprintf(f, "%s (row node, column node):\n",
			k ? "references of the row node to pages the column node also references"
			  : "pages both nodes reference");
		tag(f, -1, -1, 41 + k);
		fprintf(f, "%6s", "");
		for (j = 0; j < m->n; j++)
			fprintf(f, " %12s%d", "n", m->nid[j]);
		fprintf(f, "\n");
		for (i = 0; i < m->n; i++) {
			tag(f, -1, -1, 41 + k);
			fprintf(f, "n%-5d", m->nid[i]);
			for (j = 0; j < m->n; j++)
				fprintf(f, " %13" PRIu64, k ? m->refs[i][j] : m->pages[i][j]);
			fprintf(f, "\n");
		}
	}
}

static void json_matrix(FILE *f, const struct matrix *m)
{
	int i, j, k;

	fprintf(f, "\"node_matrix\": {\"nodes\": [");
	for (i = 0; i < m->n; i++)
		fprintf(f, "%s%d", i ? ", " : "", m->nid[i]);
	for (k = 0; k < 2; k++) {
		fprintf(f, "], \"%s\": [", k ? "refs" : "pages");
		for (i = 0; i < m->n; i++) {
			fprintf(f, "%s[", i ? ", " : "");
			for (j = 0; j < m->n; j++)
				fprintf(f, "%s%" PRIu64, j ? ", " : "", k ? m->refs[i][j] : m->pages[i][j]);
			fprintf(f, "]");
		}
	}
	fprintf(f, "]}");
}

/* The traces' matrix: threads' accesses grouped by their nodes. */
static void trace_matrix(struct matrix *m)
{
	uint64_t refs[MAX_NID];
	size_t i;
	int t, c;

	memset(m, 0, sizeof(*m));
	for (t = 0; t < nthreads; t++) {
		int nd = thread_node[t];

		if (nd < 0 || nd >= MAX_NID)
			continue;
		for (c = 0; c < m->n && m->nid[c] != nd; c++)
			;
		if (c == m->n)
			m->nid[m->n++] = nd;
	}
	for (i = 0; i < nr_pages; i++) {
		memset(refs, 0, sizeof(refs));
		for (t = 0; t < nthreads; t++) {
			if (thread_node[t] < 0 || thread_node[t] >= MAX_NID)
				continue;
			for (c = 0; m->nid[c] != thread_node[t]; c++)
				;
			refs[c] += pagev[i]->thread_acc[t];
		}
		matrix_add(m, refs);
	}
}

static void json_tstats(FILE *f, const struct tstats *s)
{
	int k, reg, code, b, first;
	char name[32];

	fprintf(f, "{\"loads\": %" PRIu64 ", \"stores\": %" PRIu64, s->acc[0], s->acc[1]);
	for (k = 0; k < 2; k++) {
		fprintf(f, ", \"%s_by_size\": {", k ? "stores" : "loads");
		first = 1;
		for (reg = 0; reg < TR_NR_REGS; reg++)
			for (code = 0; code < NR_SIZES; code++)
				if (s->by[k][reg][code]) {
					fprintf(f, "%s\"%s %u\": %" PRIu64, first ? "" : ", ",
						tr_reg_name(reg), code <= 8 ? (unsigned int)code : 16u << (code - 9),
						s->by[k][reg][code]);
					first = 0;
				}
		fprintf(f, "}, \"%s_strings\": {", k ? "store" : "load");
		first = 1;
		for (b = 0; b < NR_LEN; b++)
			if (s->strings[k][b]) {
				len_name(b, name, sizeof(name));
				fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", name, s->strings[k][b]);
				first = 0;
			}
		fprintf(f, "}");
	}
	fprintf(f, ", \"raw\": %" PRIu64 ", \"war\": %" PRIu64 ", \"waw\": %" PRIu64
		", \"rar\": %" PRIu64 ", \"code_blocks\": %" PRIu64 ", \"instructions\": %" PRIu64 "}",
		s->raw, s->war, s->waw, s->rar, s->code_blocks, s->insns);
}

static void json_phase(FILE *f, int r, const struct phase *p)
{
	struct tstats x;
	int t, k;

	memset(&x, 0, sizeof(x));
	if (r < 0)
		fprintf(f, "{\"phase\": \"x\", \"events\": %" PRIu64, p->events);
	else if (p->mark_thread < 0)
		fprintf(f, "{\"phase\": %d, \"events\": %" PRIu64 ", \"marker\": null",
			r, p->events);
	else
		fprintf(f, "{\"phase\": %d, \"events\": %" PRIu64 ", \"marker\": {\"cmd\": %u, \"num\": %u, \"thread\": %d, \"time_ns\": %" PRIu64 "}",
			r, p->events, p->cmd, p->num_user, p->mark_thread, p->time);
	fprintf(f, ", \"threads\": [");
	for (t = 0; t < nthreads; t++) {
		fprintf(f, "%s", t ? ", " : "");
		json_tstats(f, &p->t[t]);
		add_tstats(&x, &p->t[t]);
	}
	fprintf(f, "], \"all\": ");
	json_tstats(f, &x);
	fprintf(f, ", \"raw_sharing_degree\": [");
	for (k = 1; k <= nthreads; k++)
		fprintf(f, "%s%" PRIu64, k > 1 ? ", " : "", p->S[k]);
	fprintf(f, "], \"war_invalidation_degree\": [");
	for (k = 1; k <= nthreads; k++)
		fprintf(f, "%s%" PRIu64, k > 1 ? ", " : "", p->I[k]);
	fprintf(f, "]}");
}

static int write_memory_file(void)
{
	struct tt_out o;
	size_t i;

	if (tt_open(&o, opt.memory))
		return -1;
	fprintf(o.f, "# refcnt-sharing memory usage file (CIAT's): one record per touched page\n"
		"# page_size %u, pages by %s address, threads %d\n"
		"# page touched_bytes code_bytes shared_bytes data_accesses code_accesses shared_data_accesses shared_code_accesses owner node\n",
		PAGE, opt.physical ? "physical" : "virtual", nthreads);
	for (i = 0; i < nr_pages; i++) {
		const struct page *pg = pagev[i];
		int owner;

		page_threads(pg, &owner);
		fprintf(o.f, "0x%" PRIx64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
			" %" PRIu64 " %" PRIu64 " %" PRIu64 " %d %d\n",
			pg->key, count_bits(pg->touched) + count_bits(pg->ctouched),
			count_bits(pg->ctouched),
			count_bits(pg->shared) + count_bits(pg->cshared), pg->data_acc,
			pg->code_acc, shared_data_acc(pg), shared_code_acc(pg), owner,
			pg->node);
	}
	return tt_commit(&o);
}

static int cmp_page(const void *a, const void *b)
{
	const struct page *x = *(struct page *const *)a, *y = *(struct page *const *)b;

	return x->key < y->key ? -1 : x->key > y->key;
}

static int report_traces(void)
{
	struct usage_sum u;
	struct matrix m;
	struct tt_out o;
	FILE *f;
	int r, t;

	qsort(pagev, nr_pages, sizeof(*pagev), cmp_page);
	memset(&all, 0, sizeof(all));
	all.t = calloc(nthreads, sizeof(*all.t));
	if (!all.t)
		return -1;
	for (r = 0; r < nr_phases; r++) {
		for (t = 0; t < nthreads; t++)
			add_tstats(&all.t[t], &phases[r].t[t]);
		for (t = 0; t <= MAX_COMM; t++) {
			all.S[t] += phases[r].S[t];
			all.I[t] += phases[r].I[t];
		}
		all.events += phases[r].events;
	}
	usage_summary(&u);
	trace_matrix(&m);
	if (opt.memory && write_memory_file())
		return -1;
	if (tt_open(&o, opt.report ? opt.report : "-"))
		return -1;
	f = o.f;
	if (opt.json) {
		int i;

		fprintf(f, "{\"threads\": %d, \"word\": %u, \"phases\": [", nthreads, opt.word);
		for (r = 0, t = 0; r < nr_phases; r++) {
			if (!phases[r].events)
				continue;
			fprintf(f, "%s\n  ", t++ ? "," : "");
			json_phase(f, r + 1, &phases[r]);
		}
		fprintf(f, "\n ],\n \"all\": ");
		json_phase(f, -1, &all);
		fprintf(f, ",\n \"memory_usage\": {");
		for (i = 1; i <= 18; i++)
			fprintf(f, "%s\"%s\": %" PRIu64, i > 1 ? ", " : "", usage_names[i], u.v[i]);
		fprintf(f, ", \"%s\": %.4f, \"%s\": %.4f},\n ", usage_names[19], u.dli,
			usage_names[20], u.cli);
		json_matrix(f, &m);
		fprintf(f, "}\n");
	} else {
		for (r = 0; r < nr_phases; r++)
			if (phases[r].events)
				text_phase(f, r + 1, &phases[r]);
		text_phase(f, -1, &all);
		text_usage(f, &u);
		if (m.n)
			text_matrix(f, &m);
	}
	return tt_commit(&o);
}

/* ------------------------------------------------------------ counters */

static int from_counters(void)
{
	struct ci_reader r;
	struct ci_set cs;
	struct matrix m;
	struct tt_out mo = { 0 }, o;
	uint64_t pages_n = 0, shared_n = 0, acc = 0, shared_acc = 0, lost = 0;
	int rc, c;

	rc = ci_open(&r, &opt.src);
	if (rc)
		return rc;
	memset(&m, 0, sizeof(m));
	m.n = r.nr_cols;
	memcpy(m.nid, r.col_nid, sizeof(int) * r.nr_cols);
	if (opt.memory) {
		if (tt_open(&mo, opt.memory))
			return -1;
		fprintf(mo.f, "# refcnt-sharing memory usage file at node level, from %s: one record per referenced hardware page\n"
			"# page_size %" PRIu64 ", pages by physical address; -1: not known from the counters\n"
			"# page touched_bytes code_bytes shared_bytes data_accesses code_accesses shared_data_accesses shared_code_accesses owner node\n",
			r.what, r.granularity);
	}
	while ((rc = ci_next(&r, &cs)) > 0) {
		uint64_t sum = 0, refs[MAX_NID] = { 0 };
		int n = 0, owner = -1;

		for (c = 0; c < r.nr_cols && c < MAX_NID; c++) {
			refs[c] = cs.refs[c];
			sum += cs.refs[c];
			if (cs.refs[c]) {
				n++;
				owner = r.col_nid[c];
			}
		}
		lost += cs.lost;
		if (!sum)
			continue;
		if (n != 1)
			owner = -1;
		pages_n++;
		shared_n += n > 1;
		acc += sum;
		shared_acc += n > 1 ? sum : 0;
		matrix_add(&m, refs);
		if (mo.f)
			fprintf(mo.f, "0x%" PRIx64 " -1 -1 -1 %" PRIu64 " -1 %" PRIu64 " -1 %d %d\n",
				cs.paddr / r.granularity, sum, n > 1 ? sum : 0, owner, cs.home);
	}
	ci_close(&r);
	if (rc) {
		if (mo.f)
			tt_discard(&mo);
		return -1;
	}
	if (mo.f && tt_commit(&mo))
		return -1;
	if (tt_open(&o, opt.report ? opt.report : "-"))
		return -1;
	if (opt.json) {
		fprintf(o.f, "{\"source\": \"counters\", \"memory_usage\": {\"touched pages\": %" PRIu64
			", \"shared pages\": %" PRIu64 ", \"data accesses\": %" PRIu64
			", \"data accesses to shared pages\": %" PRIu64 ", \"lost\": %" PRIu64 "},\n ",
			pages_n, shared_n, acc, shared_acc, lost);
		json_matrix(o.f, &m);
		fprintf(o.f, "}\n");
	} else {
		tag(o.f, -1, -1, 21);
		fprintf(o.f, "touched pages %" PRIu64 "\n", pages_n);
		tag(o.f, -1, -1, 22);
		fprintf(o.f, "shared pages %" PRIu64 " (referenced from more than one node)\n", shared_n);
		tag(o.f, -1, -1, 31);
		fprintf(o.f, "data accesses %" PRIu64 " (and %" PRIu64 " lost to pegging)\n", acc, lost);
		tag(o.f, -1, -1, 33);
		fprintf(o.f, "data accesses to shared pages %" PRIu64 "\n", shared_acc);
		text_matrix(o.f, &m);
	}
	return tt_commit(&o);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "report", required_argument, NULL, 'o' },
		{ "memory", required_argument, NULL, 'u' },
		{ "word", required_argument, NULL, 'w' },
		{ "physical", no_argument, NULL, 'p' },
		{ "shared-range", required_argument, NULL, 's' },
		{ "map", required_argument, NULL, 'm' },
		CI_LONG_OPTIONS,
		{ "json", no_argument, NULL, 'j' },
		{ "progress", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	uint64_t v;
	int o, rc;

	rt_prog = "refcnt-sharing";
	while ((o = getopt_long(argc, argv, "o:u:w:ps:m:cn:g:jPh", lo, NULL)) != -1) {
		switch (o) {
		case 'o': opt.report = optarg; break;
		case 'u': opt.memory = optarg; break;
		case 'w':
			if (rt_parse_u64(optarg, &v) || (v != 1 && v != 2 && v != 4 && v != 8 && v != 64)) {
				rt_err("--word %s: want 1, 2, 4, 8 or 64", optarg);
				return RT_EXIT_USAGE;
			}
			opt.word = (unsigned int)v;
			break;
		case 'p': opt.physical = 1; break;
		case 's':
			if (opt.nr_ranges == MAX_RANGES ||
			    rt_parse_range(optarg, &opt.range_lo[opt.nr_ranges],
					   &opt.range_hi[opt.nr_ranges])) {
				rt_err("--shared-range %s: want START-END or START+LEN (at most %d)",
				       optarg, MAX_RANGES);
				return RT_EXIT_USAGE;
			}
			opt.nr_ranges++;
			break;
		case 'm': opt.map = optarg; break;
		case 'c': case 'n': case 'C': case 'g':
			if (ci_option(&opt.src, o, optarg) < 0)
				return RT_EXIT_USAGE;
			break;
		case 'j': opt.json = 1; break;
		case 'P': opt.progress = 2; break;
		case 'h': usage(stdout); return RT_EXIT_OK;
		default: usage(stderr); return RT_EXIT_USAGE;
		}
	}
	rc = ci_given(&opt.src);
	if (rc < 0)
		return RT_EXIT_USAGE;
	if (rc) {
		if (optind < argc)
			return rt_exit_code(rt_unexpected_arg(argv[optind], usage));
		rc = from_counters();
		return rc == -1 ? RT_EXIT_FAIL : rt_exit_code(rc);
	}
	if (optind >= argc) {
		rt_err("no TRACE, --counters or --csv given");
		usage(stderr);
		return RT_EXIT_USAGE;
	}
	if (read_traces(argv + optind, argc - optind) || report_traces())
		return RT_EXIT_FAIL;
	return RT_EXIT_OK;
}
