// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz: a libFuzzer target running operations through the real core and
 * through the model (model.c), comparing them after every sync.
 *
 * The input's first bytes describe a machine (online nodes, up to 70 for
 * grouped counters; RAM ranges with holes and interleaved nodes; counter
 * width, granularity, thresholds, event queue length, prealloc); the rest
 * is a sequence of operations: references (any node, set, source cnodeid
 * and count, valid or not, with or without a context, some as if from
 * NMI), counts near the peg and migration crossings made on purpose,
 * extended counters set near saturation, syncs, resets and threshold
 * changes. After every sync, every hardware, extended and lost count,
 * every statistic and every event record must be the model's. A
 * divergence prints what differs and aborts; libFuzzer saves the input
 * (the reproducer): `make -C tools/testing/core replay F=<file>`.
 */
#include <stdarg.h>
#include <uapi/linux/refcnt.h>

#include "machine.h"
#include "model.h"

#define MAX_OPS		2000

struct input {
	const uint8_t *p;
	size_t n;
};

static uint64_t take(struct input *in, unsigned int bytes)
{
	uint64_t v = 0;

	while (bytes--) {
		v = v << 8 | (in->n ? *in->p : 0);
		if (in->n) {
			in->p++;
			in->n--;
		}
	}
	return v;
}

static struct model model;
static struct core_spec spec;
static unsigned long long total_ops, total_inputs;
static unsigned int op_no;
static const uint8_t *cur_data;
static size_t cur_size;

static void __attribute__((format(printf, 1, 2))) diverge(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz: DIVERGENCE after operation %u: ", op_no);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nfuzz: the input is saved by libFuzzer (crash-*); replay it with make -C tools/testing/core replay F=<file>\n");
	abort();
}

/* Decode the machine; false if it is not one the module would load on. */
static bool decode_machine(struct input *in)
{
	uint8_t b0 = take(in, 1), b1 = take(in, 1);
	unsigned int nr_mem, i, nr;
	uint64_t addr;
	uint32_t max, gran;

	memset(&spec, 0, sizeof(spec));
	spec.nr_online = b0 & 0x80 ? 65 + b0 % 6 : 1 + b0 % 6;
	nr_mem = spec.nr_online < 6 ? spec.nr_online : 6;
	spec.premium = b1 & 1;
	spec.prealloc = b1 & 2;
	gran = spec.granularity = 4096u << ((b1 >> 2) % 3);
	spec.event_queue_len = b1 & 0x20 ? 16 : 1024;
	nr = 1 + take(in, 1) % 8;
	addr = (take(in, 1) % 4) * gran;
	for (i = 0; i < nr; i++) {
		uint8_t a = take(in, 1), b = take(in, 1);
		int nid = a % nr_mem;

		/* The last memory node's high: grouped counters see it too. */
		if (b0 & 0x80 && nid == nr_mem - 1)
			nid = spec.nr_online - 1;
		spec.ram[i].nid = nid;
		spec.ram[i].start = addr;
		spec.ram[i].end = addr + (1 + b % 40) * (uint64_t)gran;
		addr = spec.ram[i].end + ((a >> 4) % 3) * (uint64_t)gran;
	}
	spec.nr_ranges = nr;
	max = spec.nr_online > 16 || spec.premium ? 0x7ffff : 0x7ff;
	if (b1 & 0x40) {
		spec.abs_threshold = 1 + take(in, 3) % max;
		spec.diff_threshold = take(in, 3) % (max + 1);
	}
	model.nr_ranges = nr;
	for (i = 0; i < nr; i++) {
		model.r[i].start = spec.ram[i].start;
		model.r[i].end = spec.ram[i].end;
		model.r[i].nid = spec.ram[i].nid;
	}
	return true;
}

static int pick_node(struct input *in)
{
	unsigned int k = take(in, 1), n = 0;
	int nid, memn[M_MAX_NODES];

	for (nid = 0; nid < (int)spec.nr_online; nid++)
		if (model.n[nid].present)
			memn[n++] = nid;
	return memn[k % n];
}

/* A count: small, the exact crossing of a threshold, or huge. */
static uint32_t pick_count(struct input *in, int nid, uint64_t set,
			   unsigned int src)
{
	struct m_node *n = &model.n[nid];
	unsigned int mode = take(in, 1);
	uint64_t idx = set * model.cps + (src >> model.shift);
	uint32_t hw = set < n->nr_sets && src < model.nr_cnodes ? n->hw[idx] : 0;
	uint32_t home = set < n->nr_sets ? n->hw[set * model.cps + n->home] : 0;

	switch (mode % 8) {
	case 0: case 1: case 2: return mode >> 3;
	case 3: return take(in, 2);
	case 4: return take(in, 4);
	case 5: /* up to the absolute threshold, give or take */
		return n->abs > hw ? n->abs - hw + (int)(mode >> 5) - 2 : 1;
	case 6: /* up to the peg, give or take */
		return model.hw_max - hw + (mode >> 5);
	default: /* just past the differential threshold */
		return home + n->diff - hw + 1 + (mode >> 6);
	}
}

static void do_reference(struct input *in, bool nmi)
{
	int nid = pick_node(in);
	struct m_node *n = &model.n[nid];
	unsigned int flags = take(in, 1);
	uint64_t set = take(in, 2) % (n->nr_sets + 1), paddr;
	unsigned int src = take(in, 1) % (model.nr_cnodes + 1);
	struct refcnt_ctx ctx = { .pid = flags >> 4, .vaddr = take(in, 1) << 12 };
	uint32_t count = pick_count(in, nid, set, src);
	struct m_ctx mctx;
	bool real, mod;

	paddr = m_set_paddr(&model, nid, set);
	if (paddr == UINT64_MAX || flags & 4)	/* anywhere: holes too */
		paddr = take(in, 3) * 4096 % (spec.ram[spec.nr_ranges - 1].end + 65536);
	paddr += (flags >> 4) * 64 % model.gran;
	shim_in_nmi = nmi;
	real = refcnt_reference(paddr, src, count, flags & 1 ? &ctx : NULL);
	shim_in_nmi = false;
	mctx.pid = ctx.pid;
	mctx.vaddr = ctx.vaddr;
	mod = m_reference(&model, paddr, src, count, flags & 1 ? &mctx : NULL,
			  nmi);
	if (real != mod)
		diverge("refcnt_reference(%#llx, %u, %u) returned %d, model %d",
			(unsigned long long)paddr, src, count, real, mod);
}

static void compare_stats(int nid)
{
	struct m_stats *m = &model.n[nid].st;
	struct refcnt_stats r;

	refcnt_node_stats(core_nodes[nid], &r);
#define CMP(f) if (r.f != m->f) diverge("node %d: " #f " %llu, model %llu", nid, \
	(unsigned long long)r.f, (unsigned long long)m->f)
	CMP(references); CMP(pegged); CMP(saturated); CMP(folds);
	CMP(migrations); CMP(events_dropped); CMP(refs_dropped);
	CMP(refs_deferred); CMP(defer_full);
	CMP(discarded); CMP(overflowed);
#undef CMP
}

static void compare_counts(int nid)
{
	struct m_node *n = &model.n[nid];
	uint64_t words = n->nr_sets * model.cps, i;
	uint32_t *hw = calloc(words, 4), *ext = calloc(words, 4),
		 *lost = calloc(words, 4);

	refcnt_node_read_sets(core_nodes[nid], 0, n->nr_sets, hw, ext, lost);
	for (i = 0; i < words; i++) {
		if (hw[i] != n->hw[i] || ext[i] != n->ext[i] ||
		    lost[i] != n->lost[i])
			diverge("node %d set %llu counter %llu: hw/ext/lost %u/%u/%u, model %u/%u/%u",
				nid, (unsigned long long)(i / model.cps),
				(unsigned long long)(i % model.cps), hw[i],
				ext[i], lost[i], n->hw[i], n->ext[i], n->lost[i]);
	}
	free(hw);
	free(ext);
	free(lost);
}

static void compare_event(int nid, unsigned int k, const struct rcb_event *r,
			  const struct rcb_event *m)
{
	if (r->type != m->type || r->flags != m->flags || r->set != m->set ||
	    r->paddr != m->paddr || r->home_cnodeid != m->home_cnodeid ||
	    r->src_cnodeid != m->src_cnodeid || r->counter != m->counter ||
	    r->count != m->count || r->home_count != m->home_count ||
	    r->pid != m->pid || r->vaddr != m->vaddr || r->seq != m->seq)
		diverge("node %d event %u: type %u flags %u set %llu paddr %#llx home %u src %u counter %u count %u home_count %u pid %d vaddr %#llx seq %llu; model type %u flags %u set %llu paddr %#llx home %u src %u counter %u count %u home_count %u pid %d vaddr %#llx seq %llu",
			nid, k, r->type, r->flags, (unsigned long long)r->set,
			(unsigned long long)r->paddr, r->home_cnodeid,
			r->src_cnodeid, r->counter, r->count, r->home_count,
			r->pid, (unsigned long long)r->vaddr,
			(unsigned long long)r->seq, m->type, m->flags,
			(unsigned long long)m->set, (unsigned long long)m->paddr,
			m->home_cnodeid, m->src_cnodeid, m->counter, m->count,
			m->home_count, m->pid, (unsigned long long)m->vaddr,
			(unsigned long long)m->seq);
}

/*
 * The records read(2) gives after a sync: a LOST record first when some
 * were dropped (at most 2^32-1 a record), the queued ones, then the LOST
 * records for the rest of the drops (core_events_read() takes until the
 * queue is empty).
 */
static void compare_events(int nid)
{
	static struct rcb_event got[M_MAX_EVENTS + 8];
	struct m_node *n = &model.n[nid];
	struct rcb_event lost = { .type = RCB_EVENT_LOST };
	uint64_t left = n->dropped, nr_lost = (left + UINT32_MAX - 1) / UINT32_MAX;
	unsigned int nr, k, e = 0, want = n->nr_ev + nr_lost;

	nr = core_events_read(core_nodes[nid], got, M_MAX_EVENTS + 8);
	if (nr != want)
		diverge("node %d: %u event records, model %u", nid, nr, want);
	lost.seq = n->first_dropped;
	for (k = 0; k < nr; k++) {
		if (left && (k == 0 || e == n->nr_ev)) {
			lost.count = left > UINT32_MAX ? UINT32_MAX : (uint32_t)left;
			compare_event(nid, k, &got[k], &lost);
			left -= lost.count;
			lost.seq += lost.count;
			continue;
		}
		compare_event(nid, k, &got[k], &n->ev[e++]);
	}
}

static void do_sync(void)
{
	unsigned int nid;

	shim_run_pending();
	for (nid = 0; nid < spec.nr_online; nid++)
		if (core_nodes[nid])
			refcnt_node_sync(core_nodes[nid]);
	m_sync(&model);
	for (nid = 0; nid < spec.nr_online; nid++) {
		if (!model.n[nid].present != !core_nodes[nid])
			diverge("node %u: present %d, model %d", nid,
				!!core_nodes[nid], model.n[nid].present);
		if (!core_nodes[nid])
			continue;
		compare_counts(nid);
		compare_stats(nid);
		compare_events(nid);
	}
	m_events_read(&model);
}

/* RCB_SETS_FOLD of a few sets: folded below the threshold, re-armed. */
static void do_fold_sets(struct input *in)
{
	int nid = pick_node(in);
	uint64_t sets = model.n[nid].nr_sets;
	uint64_t first = take(in, 2) % sets;
	uint64_t nr = take(in, 1) % 5;

	if (nr > sets - first)
		nr = sets - first;
	/* Nothing pending runs first: other nodes' services wait for a sync. */
	refcnt_node_fold_sets(core_nodes[nid], first, nr);
	m_fold_sets(&model, nid, first, nr);
}

/* Set an extended counter near 2^32-1, as years of folds would. */
static void do_saturate(struct input *in)
{
	int nid = pick_node(in);
	struct m_node *n = &model.n[nid];
	uint64_t idx = take(in, 2) % (n->nr_sets * model.cps);
	uint32_t v = UINT32_MAX - take(in, 2);
	struct refcnt_node *node = core_nodes[nid];
	u32 *ext;

	mutex_lock(&node->fold_lock);
	ext = refcnt_table_counter(&node->table, idx);
	if (ext)
		WRITE_ONCE(*ext, v);
	mutex_unlock(&node->fold_lock);
	if (ext) {
		n->ext[idx] = v;
		n->ext_page[idx / 1024] = true;
	}
}

static void run_ops(struct input *in)
{
	while (in->n && op_no < MAX_OPS) {
		unsigned int op = take(in, 1);
		int nid;

		op_no++;
		switch (op % 16) {
		case 0 ... 7:
			do_reference(in, false);
			break;
		case 8: case 9:
			do_reference(in, true);
			break;
		case 10: case 11:
			do_sync();
			break;
		case 12:
			nid = pick_node(in);
			if (refcnt_node_reset(core_nodes[nid]))
				diverge("reset failed");
			m_reset(&model, nid);
			break;
		case 13: {
			uint32_t abs = take(in, 3) % (model.hw_max + 2);
			uint32_t diff = op & 0x80 ? 0 : take(in, 3) % (model.hw_max + 2);
			int r, m;

			nid = pick_node(in);
			r = refcnt_node_set_thresholds(core_nodes[nid], abs, diff);
			m = m_thresholds(&model, nid, abs, diff);
			if (r != m)
				diverge("thresholds %u %u: %d, model %d", abs, diff, r, m);
			break;
		}
		case 14:
			if (op & 0x80)
				do_fold_sets(in);
			else
				do_saturate(in);
			break;
		default:	/* a burst to one set from every cnodeid */
			nid = pick_node(in);
			{
				uint64_t set = take(in, 2) % model.n[nid].nr_sets;
				uint32_t c = take(in, 2);
				unsigned int s;

				for (s = 0; s < model.nr_cnodes; s++) {
					u64 pa = m_set_paddr(&model, nid, set);

					refcnt_reference(pa, s, c, NULL);
					m_reference(&model, pa, s, c, NULL, false);
				}
			}
			break;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };

	cur_data = data;
	cur_size = size;
	op_no = 0;
	memset(&model, 0, sizeof(model));
	decode_machine(&in);
	if (core_boot(&spec))
		diverge("the core did not boot a valid machine");
	m_boot(&model, spec.nr_online, spec.premium, spec.granularity,
	       spec.abs_threshold, spec.diff_threshold, spec.event_queue_len,
	       spec.prealloc);
	run_ops(&in);
	do_sync();
	core_halt();
	m_halt(&model);
	total_ops += op_no + 1;
	total_inputs++;
	return 0;
}

static void __attribute__((destructor)) fuzz_report(void)
{
	if (total_inputs)
		fprintf(stderr, "fuzz: %llu operations in %llu inputs, no divergence from the model\n",
			total_ops, total_inputs);
}
