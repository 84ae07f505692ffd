// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-truth: a QEMU TCG plugin that counts every guest data reference
 * (loads and stores, user and kernel) by guest-physical hardware page and
 * by accessing node, and writes the counts in the layout of
 * `refcnt-dump --csv`, so a feed's counts can be compared row by row with
 * what the guest really did.  Loaded by `tools/testing/refcnt-vm --truth`;
 * see Documentation/testing.rst, "The truth from the emulator".  With
 * trace=PREFIX it also writes every reference it counts as per-vCPU
 * traces (trace-writer.c, Documentation/trace-format.rst).
 *
 * Counting takes no lock: each vCPU has its own table, merged at exit.
 * Only the optional last-level cache model takes a per-node lock, since a
 * node's vCPUs share its cache.
 *
 * QEMU 7.2's qemu_plugin_hwaddr_phys_addr() returns, for RAM, the RAM
 * block's ram_addr offset plus the offset in it plus the block's memory
 * region address in its container.  With one memory backend per node
 * (refcnt-vm's -numa memdev=) and nothing allocated before them, backend
 * i has ram_addr base(i) and sits at base(i) in the RAM container, so the
 * value is 2 * base(i) + offset: we map it back per backend.  refcnt-vm
 * adds an unused pad backend after the nodes' ones, so every other RAM
 * block (ROMs) has a value above 2 * total RAM and cannot alias a node's
 * page.  All RAM must sit below the PCI hole (3.5 GiB on QEMU's pc
 * machine): above it the container offset is not the physical address.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <qemu-plugin.h>

#include "cost.h"
#include "hub-producer.h"
#include "pmu-emu.h"
#include "rep-string.h"
#include "series.h"
#include "trace-writer.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define PFX		"refcnt-truth: "
#define MAX_NODES	128		/* QEMU 7.2: at most 128 NUMA nodes */
#define MAX_RAM_MB	3584		/* pc machine: RAM below 4 GiB */
#define MB		((uint64_t)1 << 20)
#define NONE		UINT64_MAX

/*
 * The window marks: multi-byte NOPs (nopl disp32(%rax,%rax,1)) with a
 * displacement spelling "RCTS" (start) or "RCTE" (end).  They do nothing
 * on any x86 CPU; this plugin recognises them at translation.
 */
static const uint8_t mark_start[8] = { 0x0f, 0x1f, 0x84, 0x00, 'R', 'C', 'T', 'S' };
static const uint8_t mark_stop[8] = { 0x0f, 0x1f, 0x84, 0x00, 'R', 'C', 'T', 'E' };
/* "RCTD": stop, write the counts so far to OUT.N (N = 1, 2, ...), zero them. */
static const uint8_t mark_dump[8] = { 0x0f, 0x1f, 0x84, 0x00, 'R', 'C', 'T', 'D' };
/*
 * The seed's markers (smait_marker(cmd, num)): the same NOP with SIB byte
 * 0xe0 + cmd (cmd 0-4, a form no assembler pads with) and num as the
 * displacement. See truth-mark.h and trace-writer.c.
 */
#define MARK_CMD_SIB	0xe0
/* mark_cb's udata: what the mark is, in bits 32-39; num below. */
enum { MK_START = 1, MK_STOP, MK_DUMP, MK_COST, MK_COST_USER, MK_CMD0 = 16 };

struct ram {
	int nid, cnode;
	uint64_t base, size;		/* guest-physical */
};

struct llc {
	pthread_mutex_t lock;
	uint64_t *tag;			/* sets * ways line numbers + 1, 0 empty */
	uint64_t *stamp;		/* last use, for LRU */
	uint64_t clock;
};

struct vcpu {
	uint64_t *refs;			/* per page */
	uint64_t *miss;			/* per page, LLC misses (or NULL) */
	uint64_t insns, insns_window;
	uint64_t muted_window;		/* of insns_window, between hub mutes */
	uint64_t io, unmapped;		/* references to MMIO, to non-RAM */
	int node;			/* -1: not given */
	int stopped;			/* a marker stopped this vCPU's window */
	struct rep_string_last str;	/* rep-string.h */
} __attribute__((aligned(64)));

static struct {
	const char *out, *llc_out;
	struct ram ram[MAX_NODES];
	int nr_ram;
	int online[MAX_NODES];		/* cnodeid -> nid */
	int nr_online;
	int vcpu_node[256];
	int nr_vcpu_node;
	uint64_t gran, llc_size, llc_ways, line;
	int windowed;
} opt = { .gran = 4096, .llc_ways = 16, .line = 64 };

static FILE *out_f, *llc_f, *sum_f;
static char *out_tmp, *llc_tmp, *sum_tmp, *sum_path;
static uint64_t nr_pages, total_ram;
static struct vcpu *vcpus;
static int nr_vcpus;
static struct llc llcs[MAX_NODES];	/* by cnodeid */
static uint64_t llc_sets;
static volatile int window_open = 1;
static volatile uint64_t marks;

static int cnode_of(int nid)
{
	int i;

	for (i = 0; i < opt.nr_online; i++)
		if (opt.online[i] == nid)
			return i;
	return -1;
}

/*
 * qemu_plugin_hwaddr_phys_addr()'s value -> guest-physical, or NONE;
 * *cnode: the cnodeid of the node it is on.
 */
static uint64_t map_phys(uint64_t v, int *cnode)
{
	int i;

	for (i = 0; i < opt.nr_ram; i++) {
		const struct ram *r = &opt.ram[i];

		if (v >= 2 * r->base && v < 2 * r->base + r->size) {
			*cnode = r->cnode;
			return v - r->base;
		}
	}
	return NONE;
}

/* The cnodeid of the node whose RAM holds guest-physical pa. */
static int home_of(uint64_t pa)
{
	int i;

	for (i = 0; i < opt.nr_ram; i++)
		if (pa >= opt.ram[i].base && pa < opt.ram[i].base + opt.ram[i].size)
			return cnode_of(opt.ram[i].nid);
	return -1;
}

/* One access to the node's modelled last-level cache: true on a miss. */
static int llc_miss(int cnode, uint64_t pa)
{
	struct llc *c = &llcs[cnode];
	uint64_t line = pa / opt.line, *tag, *st, old = UINT64_MAX;
	uint64_t set = line % llc_sets, w, victim = 0;
	int miss = 1;

	pthread_mutex_lock(&c->lock);
	tag = c->tag + set * opt.llc_ways;
	st = c->stamp + set * opt.llc_ways;
	c->clock++;
	for (w = 0; w < opt.llc_ways; w++) {
		if (tag[w] == line + 1) {
			st[w] = c->clock;
			miss = 0;
			break;
		}
		if (st[w] < old) {
			old = st[w];
			victim = w;
		}
	}
	if (miss) {
		tag[victim] = line + 1;
		st[victim] = c->clock;
	}
	pthread_mutex_unlock(&c->lock);
	return miss;
}

static void mem_cb(unsigned int vi, qemu_plugin_meminfo_t info,
		   uint64_t vaddr, void *udata)
{
	struct vcpu *v;
	struct qemu_plugin_hwaddr *hw;
	uint64_t pa;
	int miss = -1, count, trace, hub, cnode = -1;
	const struct insn_info *ii = udata;

	if (vi >= (unsigned int)nr_vcpus)
		return;
	cost_mem(vi, ii, vaddr, qemu_plugin_mem_is_store(info));
	v = &vcpus[vi];
	if (ii->string && rep_string_same_line(&v->str, ii->ip, vaddr,
					       qemu_plugin_mem_is_store(info)))
		return;
	/* The hub reports while the guest has it on; the truth counts in its window. */
	trace = trace_on && window_open && !v->stopped;
	count = window_open && !v->stopped && out_f;
	hub = hub_on && hub_wants(vi);
	if (!count && !hub && !trace)
		return;
	hw = qemu_plugin_get_hwaddr(info, vaddr);
	if (!hw || qemu_plugin_hwaddr_is_io(hw)) {
		v->io += count;
		if (trace)
			trace_ref(vi, info, vaddr, TRACE_PA_IO, ii->trace);
		return;
	}
	pa = map_phys(qemu_plugin_hwaddr_phys_addr(hw), &cnode);
	if (pa == NONE) {
		v->unmapped += count;
		if (trace)
			trace_ref(vi, info, vaddr, TRACE_PA_OTHER, ii->trace);
		return;
	}
	if (trace)
		trace_ref(vi, info, vaddr, pa, ii->trace);
	if (opt.llc_size && v->node >= 0 &&
	    (count || (hub && hub_wants_llc(vi))))
		miss = llc_miss(v->node, pa);
	if (count) {
		v->refs[pa / opt.gran]++;
		if (v->miss && miss > 0)
			v->miss[pa / opt.gran]++;
		if (series_on && v->node >= 0)
			series_ref(series_row(vi), home_of(pa), miss);
	}
	if (hub)
		hub_ref(vi, udata, pa, vaddr, qemu_plugin_mem_is_store(info),
			miss, cnode != v->node);
}

static void tb_exec_cb(unsigned int vi, void *udata)
{
	const struct tb_info *tb = udata;
	int muted = 0;

	if (vi >= (unsigned int)nr_vcpus)
		return;

	vcpus[vi].insns += tb->n;
	if (hub_on) {
		muted = hub_insns(vi, tb->n);
		hub_block(vi, tb);
	}
	if (trace_on)
		trace_insns(vi, tb->n);
	cost_block(vi, tb, window_open, muted);
	if (window_open) {
		vcpus[vi].insns_window += tb->n;
		if (muted)
			vcpus[vi].muted_window += tb->n;
	}
}

static int dump_tables(const char *path);
static uint64_t dumps;

/* Whether vCPU vi's references count (and are traced) now. */
static int truth_tracing(unsigned int vi)
{
	return window_open && vi < (unsigned int)nr_vcpus && !vcpus[vi].stopped;
}

/*
 * A window mark or a marker. Stop and resume take effect with window=on;
 * every one is a marker record in the vCPU's trace: start is resume-all,
 * stop is stop-all, dump is stop-all with the dump's number.
 */
static void mark_cb(unsigned int vi, void *udata)
{
	uint64_t u = (uintptr_t)udata;
	unsigned int what = u >> 32, cmd = what - MK_CMD0, i;
	uint32_t num = (uint32_t)u;

	if (what == MK_COST || what == MK_COST_USER) {
		cost_mark(num, what == MK_COST_USER);
		return;
	}
	if (what == MK_START)
		cmd = TR_MARK_RESUME_ALL;
	else if (what == MK_STOP || what == MK_DUMP)
		cmd = TR_MARK_STOP_ALL;
	if (what == MK_DUMP)
		num = (uint32_t)dumps + 1;
	if (opt.windowed && (cmd == TR_MARK_STOP || cmd == TR_MARK_RESUME) &&
	    vi < (unsigned int)nr_vcpus)
		__atomic_store_n(&vcpus[vi].stopped, cmd == TR_MARK_STOP,
				 __ATOMIC_RELEASE);
	/* Recorded before a stop takes effect, after a resume has. */
	if (cmd != TR_MARK_RESUME_ALL)
		trace_marker(vi, cmd, num);
	if (what == MK_DUMP && opt.windowed) {
		char path[4096];

		__atomic_store_n(&window_open, 0, __ATOMIC_RELEASE);
		snprintf(path, sizeof(path), "%s.%" PRIu64, opt.out, ++dumps);
		if (opt.out)
			dump_tables(path);
	} else if (cmd == TR_MARK_RESUME_ALL && opt.windowed) {
		for (i = 0; i < (unsigned int)nr_vcpus; i++)
			__atomic_store_n(&vcpus[i].stopped, 0, __ATOMIC_RELAXED);
		__atomic_add_fetch(&marks, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&window_open, 1, __ATOMIC_RELEASE);
	} else if (cmd == TR_MARK_STOP_ALL && opt.windowed) {
		__atomic_store_n(&window_open, 0, __ATOMIC_RELEASE);
	}
	if (cmd == TR_MARK_RESUME_ALL)
		trace_marker(vi, cmd, num);
}

/* What the instruction at d is as a mark: mark_cb's udata, or 0. */
static uint64_t mark_of(const uint8_t *d, size_t n)
{
	if (n != 8 || d[0] != 0x0f || d[1] != 0x1f || d[2] != 0x84)
		return 0;
	if (d[3] == COST_MARK_SIB || d[3] == COST_MARK_USER_SIB)
		return (uint64_t)(d[3] == COST_MARK_SIB ? MK_COST : MK_COST_USER) << 32 |
		       ((uint32_t)d[4] | (uint32_t)d[5] << 8 |
			(uint32_t)d[6] << 16 | (uint32_t)d[7] << 24);
	if (d[3] >= MARK_CMD_SIB && d[3] < MARK_CMD_SIB + TR_NR_MARKS)
		return (uint64_t)(MK_CMD0 + d[3] - MARK_CMD_SIB) << 32 |
		       ((uint32_t)d[4] | (uint32_t)d[5] << 8 |
			(uint32_t)d[6] << 16 | (uint32_t)d[7] << 24);
	if (!memcmp(d, mark_start, 8))
		return (uint64_t)MK_START << 32;
	if (!memcmp(d, mark_stop, 8))
		return (uint64_t)MK_STOP << 32;
	if (!memcmp(d, mark_dump, 8))
		return (uint64_t)MK_DUMP << 32;
	return 0;
}

/*
 * The block's instructions and their addresses, the callbacks' udata:
 * records and PMU samples say which instruction made them. Kept for as
 * long as QEMU may run the block (the plugin's life).
 */
static struct tb_info *tb_info_new(struct qemu_plugin_tb *tb, size_t n)
{
	struct tb_info *t = malloc(sizeof(*t) + n * sizeof(t->insn[0]));
	size_t i;

	if (!t) {
		fprintf(stderr, PFX "out of memory for a translation block\n");
		abort();
	}
	t->n = n;
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);

		t->insn[i] = (struct insn_info){
			.ip = qemu_plugin_insn_vaddr(insn), .tb = t, .idx = i,
			.cost = cost_insn_flags(qemu_plugin_insn_data(insn),
						qemu_plugin_insn_size(insn)),
			.string = rep_string(qemu_plugin_insn_data(insn),
					     qemu_plugin_insn_size(insn)),
			.trace = trace_on ? trace_insn_udata(qemu_plugin_insn_data(insn),
							     qemu_plugin_insn_size(insn)) : NULL,
		};
	}
	return t;
}

static void tb_trans_cb(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);
	struct tb_info *t = tb_info_new(tb, n);

	(void)id;
	qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec_cb,
					     QEMU_PLUGIN_CB_NO_REGS, t);
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		const uint8_t *d = qemu_plugin_insn_data(insn);
		int hm = hub_mark(d, qemu_plugin_insn_size(insn));

		uint64_t mk;

		qemu_plugin_register_vcpu_mem_cb(insn, mem_cb,
						 QEMU_PLUGIN_CB_NO_REGS,
						 QEMU_PLUGIN_MEM_RW, &t->insn[i]);
		if (hm)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, hub_mark_cb,
				QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)hm);
		mk = mark_of(d, qemu_plugin_insn_size(insn));
		if (!opt.windowed && !trace_on && mk >> 32 != MK_COST &&
		    mk >> 32 != MK_COST_USER)
			continue;
		if (mk)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, mark_cb,
				QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)mk);
	}
	trace_tb(tb);
}

/* ------------------------------------------------------------ output */

static void csv_header(FILE *f)
{
	int c;

	fprintf(f, "set,paddr,node,cnodeid,refs");
	for (c = 0; c < opt.nr_online; c++)
		fprintf(f, ",n%d", opt.online[c]);
	fprintf(f, ",lost\n");
}

/*
 * One table (all references, or LLC misses) as refcnt-dump --csv: a row
 * per page with references, set numbered within its home node's memory.
 * Adds each node's local and remote references into loc[]/rem[].
 */
static int write_table(FILE *f, int misses, uint64_t *loc, uint64_t *rem)
{
	uint64_t by[MAX_NODES], p;
	int r, c, i;

	csv_header(f);
	for (r = 0; r < opt.nr_ram; r++) {
		const struct ram *ram = &opt.ram[r];
		int home = cnode_of(ram->nid);

		for (p = ram->base / opt.gran;
		     p < (ram->base + ram->size) / opt.gran; p++) {
			uint64_t sum = 0;

			memset(by, 0, sizeof(by));
			for (i = 0; i < nr_vcpus; i++) {
				const uint64_t *t = misses ? vcpus[i].miss : vcpus[i].refs;

				if (vcpus[i].node < 0 || !t[p])
					continue;
				by[vcpus[i].node] += t[p];
			}
			for (c = 0; c < opt.nr_online; c++) {
				sum += by[c];
				if (c == home)
					loc[c] += by[c];
				else
					rem[c] += by[c];
			}
			if (!sum)
				continue;
			fprintf(f, "%" PRIu64 ",0x%" PRIx64 ",%d,%d,%" PRIu64,
				p - ram->base / opt.gran, p * opt.gran,
				ram->nid, home, sum);
			for (c = 0; c < opt.nr_online; c++)
				fprintf(f, ",%" PRIu64, by[c]);
			fprintf(f, ",0\n");
		}
	}
	return ferror(f) ? -1 : 0;
}

static void write_summary(FILE *f, const char *view, const uint64_t *loc,
			  const uint64_t *rem)
{
	int c;

	for (c = 0; c < opt.nr_online; c++)
		fprintf(f, "%s node %d local %" PRIu64 " remote %" PRIu64 "\n",
			view, opt.online[c], loc[c], rem[c]);
}

static int close_rename(FILE *f, const char *tmp, const char *path)
{
	if (fflush(f) || ferror(f) || fsync(fileno(f)) || fclose(f)) {
		fprintf(stderr, PFX "cannot write %s: %s\n", tmp, strerror(errno));
		return -1;
	}
	if (rename(tmp, path)) {
		fprintf(stderr, PFX "cannot rename %s to %s: %s\n", tmp, path,
			strerror(errno));
		return -1;
	}
	return 0;
}

static void write_summary_head(FILE *f)
{
	int i;

	fprintf(f, "# refcnt-truth summary\ngranularity %" PRIu64 "\n", opt.gran);
	fprintf(f, "window %s\nmarks %" PRIu64 "\n",
		opt.windowed ? "marked" : "whole-run", marks);
	if (opt.llc_size)
		fprintf(f, "llc %" PRIu64 " ways %" PRIu64 " line %" PRIu64 "\n",
			opt.llc_size, opt.llc_ways, opt.line);
	for (i = 0; i < nr_vcpus; i++) {
		const struct vcpu *v = &vcpus[i];

		if (!v->insns)
			continue;
		fprintf(f, "vcpu %d node %d insns %" PRIu64 " insns_window %"
			PRIu64 " io %" PRIu64 " unmapped %" PRIu64
			" muted_window %" PRIu64, i,
			v->node >= 0 ? opt.online[v->node] : -1, v->insns,
			v->insns_window, v->io, v->unmapped, v->muted_window);
		cost_print(f, i);
		fputc('\n', f);
	}
}

/*
 * The dump mark: the window's tables so far into PATH (+ .summary, + .llc),
 * then zero them and the window's instruction counts.  Runs in the vCPU
 * that made the mark, with the window closed; a reference another vCPU
 * is counting right then may land on either side.
 */
static int dump_tables(const char *path)
{
	uint64_t loc[MAX_NODES] = { 0 }, rem[MAX_NODES] = { 0 };
	char p2[4200];
	FILE *f, *s, *l = NULL;
	int i, bad = 0;

	f = fopen(path, "w");
	snprintf(p2, sizeof(p2), "%s.summary", path);
	s = fopen(p2, "w");
	if (opt.llc_size) {
		snprintf(p2, sizeof(p2), "%s.llc", path);
		l = fopen(p2, "w");
	}
	if (!f || !s || (opt.llc_size && !l)) {
		fprintf(stderr, PFX "cannot write %s: %s\n", path, strerror(errno));
		bad = -1;
	} else {
		bad |= write_table(f, 0, loc, rem);
		write_summary_head(s);
		write_summary(s, "refs", loc, rem);
		if (l) {
			memset(loc, 0, sizeof(loc));
			memset(rem, 0, sizeof(rem));
			bad |= write_table(l, 1, loc, rem);
			write_summary(s, "llc_misses", loc, rem);
		}
	}
	if (l)
		fclose(l);
	if (s)
		fclose(s);
	if (f && fclose(f))
		bad = -1;
	for (i = 0; i < nr_vcpus; i++) {
		memset(vcpus[i].refs, 0, nr_pages * sizeof(uint64_t));
		if (vcpus[i].miss)
			memset(vcpus[i].miss, 0, nr_pages * sizeof(uint64_t));
		vcpus[i].insns_window = 0;
		vcpus[i].muted_window = 0;
	}
	cost_reset_window();
	return bad;
}

static void atexit_cb(qemu_plugin_id_t id, void *udata)
{
	uint64_t loc[MAX_NODES] = { 0 }, rem[MAX_NODES] = { 0 };
	uint64_t mloc[MAX_NODES] = { 0 }, mrem[MAX_NODES] = { 0 };
	int bad = 0;

	(void)id;
	(void)udata;
	if (trace_close() || series_close())
		bad = -1;
	if (!out_f) {
		hub_summary(NULL);
		if (bad)
			_exit(1);
		return;
	}
	bad |= write_table(out_f, 0, loc, rem);
	if (llc_f)
		bad |= write_table(llc_f, 1, mloc, mrem);
	write_summary_head(sum_f);
	write_summary(sum_f, "refs", loc, rem);
	if (llc_f)
		write_summary(sum_f, "llc_misses", mloc, mrem);
	hub_summary(sum_f);
	trace_summary(sum_f);
	/* The tables last: their presence says the run's counts are whole. */
	bad |= close_rename(sum_f, sum_tmp, sum_path);
	if (llc_f)
		bad |= close_rename(llc_f, llc_tmp, opt.llc_out);
	bad |= close_rename(out_f, out_tmp, opt.out);
	if (bad) {
		unlink(out_tmp);
		unlink(opt.out);
		if (llc_f) {
			unlink(llc_tmp);
			unlink(opt.llc_out);
		}
		_exit(1);
	}
}

/* ------------------------------------------------------------ options */

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'K': *v <<= 10; end++; break;
	case 'M': *v <<= 20; end++; break;
	case 'G': *v <<= 30; end++; break;
	}
	return *end ? -1 : 0;
}

/* "A:B:C" of node ids into a[], at most max. */
static int parse_list(const char *s, int *a, int max)
{
	int n = 0;

	while (*s) {
		char *end;
		long v = strtol(s, &end, 10);

		if (end == s || v < 0 || v > 1023 || n >= max ||
		    (*end && *end != ':'))
			return -1;
		a[n++] = (int)v;
		s = *end ? end + 1 : end;
	}
	return n;
}

/* ram=NID:MiB, in the order of the -object memory backends. */
static int parse_ram(const char *v)
{
	char *end;
	long nid = strtol(v, &end, 10);
	uint64_t mb;

	if (end == v || *end != ':' || nid < 0 || parse_u64(end + 1, &mb) ||
	    !mb || opt.nr_ram >= MAX_NODES)
		return -1;
	opt.ram[opt.nr_ram].nid = (int)nid;
	opt.ram[opt.nr_ram].base = total_ram;
	opt.ram[opt.nr_ram].size = mb * MB;
	total_ram += mb * MB;
	opt.nr_ram++;
	return 0;
}

static int bad_value(const char *k, const char *v, const char *want)
{
	fprintf(stderr, PFX "option %s=%s: %s\n", k, v, want);
	return -1;
}

static int parse_opt(const char *arg)
{
	const char *eq = strchr(arg, '=');
	char key[32];
	const char *v;

	if (!eq || eq - arg >= (long)sizeof(key)) {
		fprintf(stderr, PFX "option '%s' is not KEY=VALUE\n", arg);
		return -1;
	}
	memcpy(key, arg, eq - arg);
	key[eq - arg] = 0;
	v = eq + 1;
	if (!strcmp(key, "out")) {
		opt.out = v;
	} else if (!strcmp(key, "llc_out")) {
		opt.llc_out = v;
	} else if (!strcmp(key, "ram")) {
		if (parse_ram(v))
			return bad_value(key, v, "want NID:MiB");
	} else if (!strcmp(key, "online")) {
		opt.nr_online = parse_list(v, opt.online, MAX_NODES);
		if (opt.nr_online <= 0)
			return bad_value(key, v, "want the online node ids, N:N:... (at most 128)");
	} else if (!strcmp(key, "vcpus")) {
		/* Slots of offline nodes (placeholders) never hold a vCPU. */
		opt.nr_vcpu_node = parse_list(v, opt.vcpu_node, 256);
		if (opt.nr_vcpu_node <= 0)
			return bad_value(key, v, "want the node of each vCPU, N:N:...");
	} else if (!strcmp(key, "granularity")) {
		if (parse_u64(v, &opt.gran) || opt.gran < 256 ||
		    opt.gran > (2 << 20) || (opt.gran & (opt.gran - 1)))
			return bad_value(key, v, "want a power of two from 256 to 2M");
	} else if (!strcmp(key, "window")) {
		bool on;

		if (!qemu_plugin_bool_parse(key, v, &on))
			return bad_value(key, v, "want on or off");
		opt.windowed = on;
	} else if (!strcmp(key, "llc_size")) {
		if (parse_u64(v, &opt.llc_size) || opt.llc_size < 4096)
			return bad_value(key, v, "want a size of at least 4K");
	} else if (!strcmp(key, "llc_ways")) {
		if (parse_u64(v, &opt.llc_ways) || !opt.llc_ways || opt.llc_ways > 64)
			return bad_value(key, v, "want 1 to 64 ways");
	} else {
		int r = hub_parse_opt(key, v);

		if (r <= 0)
			return r;
		r = trace_parse_opt(key, v);
		if (r <= 0)
			return r;
		r = series_parse_opt(key, v);
		if (r <= 0)
			return r;
		fprintf(stderr, PFX "unknown option '%s' (options: out, llc_out, ram, online, vcpus, granularity, window, llc_size, llc_ways, hub, hub_period, hub_start, hub_misses, hub_out, hub_garble, trace, trace_compress, trace_level, trace_code, trace_clock, series, series_ms)\n",
			key);
		return -1;
	}
	return 0;
}

static FILE *open_tmp(const char *path, char **tmp)
{
	FILE *f;

	if (asprintf(tmp, "%s.tmp", path) < 0)
		return NULL;
	f = fopen(*tmp, "w");
	if (!f)
		fprintf(stderr, PFX "cannot write %s: %s\n", *tmp, strerror(errno));
	return f;
}

static int check_opts(void)
{
	int i;

	if (!opt.out && !hub_on && !trace_on) {
		fprintf(stderr, PFX "no out=FILE, hub=FILE or trace=PREFIX given\n");
		return -1;
	}
	if (!opt.nr_ram || !opt.nr_online) {
		fprintf(stderr, PFX "ram= and online= are required (refcnt-vm passes them)\n");
		return -1;
	}
	if (total_ram / MB >= MAX_RAM_MB) {
		fprintf(stderr, PFX "cannot map a guest with %" PRIu64 " MiB of RAM: QEMU 7.2 plugins get wrong physical addresses for RAM above 4 GiB; use less than %d MiB\n",
			total_ram / MB, MAX_RAM_MB);
		return -1;
	}
	for (i = 0; i < opt.nr_ram; i++) {
		opt.ram[i].cnode = cnode_of(opt.ram[i].nid);
		if (opt.ram[i].cnode < 0) {
			fprintf(stderr, PFX "ram of node %d, which is not online=\n",
				opt.ram[i].nid);
			return -1;
		}
		if (opt.ram[i].size % opt.gran) {
			fprintf(stderr, PFX "node %d's RAM is not a multiple of the granularity\n",
				opt.ram[i].nid);
			return -1;
		}
	}
	if (hub_misses && !opt.llc_size) {
		fprintf(stderr, PFX "hub_misses=on needs the LLC model (llc_size=)\n");
		return -1;
	}
	if (opt.llc_out && !opt.llc_size) {
		fprintf(stderr, PFX "llc_out= and llc_size= go together\n");
		return -1;
	}
	if (opt.llc_size && opt.llc_size % (opt.line * opt.llc_ways)) {
		fprintf(stderr, PFX "llc_size=%" PRIu64 " is not a multiple of %" PRIu64 " ways of %" PRIu64 "-byte lines\n",
			opt.llc_size, opt.llc_ways, opt.line);
		return -1;
	}
	return 0;
}

static int alloc_tables(void)
{
	int i;

	nr_pages = total_ram / opt.gran;
	vcpus = aligned_alloc(64, sizeof(*vcpus) * nr_vcpus);
	if (!vcpus)
		return -1;
	memset(vcpus, 0, sizeof(*vcpus) * nr_vcpus);
	for (i = 0; i < nr_vcpus; i++) {
		struct vcpu *v = &vcpus[i];

		v->node = i < opt.nr_vcpu_node ? cnode_of(opt.vcpu_node[i]) : -1;
		/* calloc: untouched pages of the table cost no memory. */
		v->refs = calloc(nr_pages, sizeof(uint64_t));
		if (!v->refs)
			return -1;
		if (opt.llc_size) {
			v->miss = calloc(nr_pages, sizeof(uint64_t));
			if (!v->miss)
				return -1;
		}
	}
	if (!opt.llc_size)
		return 0;
	llc_sets = opt.llc_size / (opt.line * opt.llc_ways);
	for (i = 0; i < opt.nr_online; i++) {
		pthread_mutex_init(&llcs[i].lock, NULL);
		llcs[i].tag = calloc(llc_sets * opt.llc_ways, sizeof(uint64_t));
		llcs[i].stamp = calloc(llc_sets * opt.llc_ways, sizeof(uint64_t));
		if (!llcs[i].tag || !llcs[i].stamp)
			return -1;
	}
	return 0;
}

/* The traces (trace=PREFIX): one per vCPU, told the nodes and the RAM. */
static int install_trace(void)
{
	static struct trace_ram ram[MAX_NODES];
	int nid[256], i;

	for (i = 0; i < nr_vcpus && i < 256; i++)
		nid[i] = vcpus[i].node >= 0 ? opt.online[vcpus[i].node] : -1;
	for (i = 0; i < opt.nr_ram; i++) {
		ram[i].nid = opt.ram[i].nid;
		ram[i].base = opt.ram[i].base;
		ram[i].size = opt.ram[i].size;
	}
	return trace_install(nr_vcpus, nid, ram, opt.nr_ram, truth_tracing);
}

/* The truth over time (series=FILE): the vCPUs' nodes and the window. */
static int install_series(void)
{
	int vn[256], i;

	if (!opt.out) {
		fprintf(stderr, PFX "series= needs out=FILE (the truth's window)\n");
		return -1;
	}
	for (i = 0; i < nr_vcpus && i < 256; i++)
		vn[i] = vcpus[i].node;
	return series_install(nr_vcpus < 256 ? nr_vcpus : 256, vn, opt.online,
			      opt.nr_online, &window_open, &marks);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	int i;

	if (!info->system_emulation) {
		fprintf(stderr, PFX "needs system emulation (qemu-system-*)\n");
		return -1;
	}
	for (i = 0; i < argc; i++)
		if (parse_opt(argv[i]))
			return -1;
	if (check_opts())
		return -1;
	nr_vcpus = info->system.max_vcpus;
	if (nr_vcpus <= 0 || alloc_tables() || cost_init(nr_vcpus)) {
		fprintf(stderr, PFX "out of memory for the tables\n");
		return -1;
	}
	if (hub_on && hub_install(nr_vcpus, opt.vcpu_node, opt.nr_vcpu_node,
				  opt.gran, !!opt.llc_size))
		return -1;
	if (trace_on && install_trace())
		return -1;
	if (series_on && install_series())
		return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans_cb);
	qemu_plugin_register_atexit_cb(id, atexit_cb, NULL);
	window_open = !opt.windowed;
	if (!opt.out)
		return 0;
	if (asprintf(&sum_path, "%s.summary", opt.out) < 0)
		return -1;
	/* Open now: an unwritable file stops QEMU before the guest runs. */
	out_f = open_tmp(opt.out, &out_tmp);
	if (!out_f)
		return -1;
	sum_f = open_tmp(sum_path, &sum_tmp);
	if (!sum_f) {
		unlink(out_tmp);
		return -1;
	}
	if (opt.llc_out) {
		llc_f = open_tmp(opt.llc_out, &llc_tmp);
		if (!llc_f) {
			unlink(out_tmp);
			unlink(sum_tmp);
			return -1;
		}
	}
	return 0;
}
