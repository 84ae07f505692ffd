// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-trace: look at, check and make traces in the refcnt trace format
 * (Documentation/trace-format.rst), the format the refcnt-truth plugin
 * writes (refcnt-vm --trace) after SMAIT's appendix A.
 *
 *   refcnt-trace info [--json] TRACE...     check a set, count its records
 *   refcnt-trace print [--json] TRACE...    the events, merged in time order
 *   refcnt-trace make [OPTIONS] OUT [TEXT]  a trace from print's text
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rtools.h"
#include "trace-read.h"
#include "trace-tool.h"
#include "trace-write.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: refcnt-trace info [--json] TRACE...\n"
		"       refcnt-trace print [--json] [--thread T] TRACE...\n"
		"       refcnt-trace make [OPTIONS] OUT [TEXT]\n"
		"\n"
		"Traces are the refcnt-truth plugin's (refcnt-vm --trace PREFIX): one\n"
		"file per vCPU, PREFIX.N.V[.zst|.gz]; a TRACE is a file or such a\n"
		"PREFIX. valgrind lackey's output (--tool=lackey --trace-mem=yes) is\n"
		"read too.\n"
		"\n"
		"  info     check every record of the set; per thread: node, flags,\n"
		"           loads, stores, code blocks, markers, time span, bytes\n"
		"  print    every event in time order, one a line, in make's text\n"
		"  make     write one thread's trace OUT (+ .zst or .gz) from text\n"
		"           lines as print writes them (TEXT, default standard input)\n"
		"\n"
		"  -j, --json             JSON instead of text (info, print)\n"
		"  -t, --thread T         print: that thread only; make: write the\n"
		"                         lines of thread=T (default: lines without\n"
		"                         thread=, or all) as thread T\n"
		"  -P, --progress         a progress line on standard error, also when\n"
		"                         it is not a terminal\n"
		"make:\n"
		"  -n, --threads N        threads of the set (default T + 1)\n"
		"  -N, --node NID         the thread's node (default unknown)\n"
		"      --phys             the trace has physical pages (every access\n"
		"                         needs paddr/io/other)\n"
		"      --time             the trace has time and clock records\n"
		"      --code             the trace has code records\n"
		"  -z, --compress C       none, zstd or gzip (default none)\n"
		"      --no-end           leave the end-of-trace record out (a test's\n"
		"                         truncated trace)\n"
		"  -h, --help             this text\n"
		"\n"
		"Text lines (make's input, print's output; # starts a comment):\n"
		"  [thread=T] [time=NS] [clock=N] load|store SIZE [fixed|float|none] VADDR\n"
		"                        [paddr PADDR node NID | io | other]\n"
		"  [...] code VADDR BYTES INSNS\n"
		"  [...] marker CMD NUM        (CMD 0 none, 1 stop, 2 resume, 3 stop-all,\n"
		"                               4 resume-all)\n"
		"  raw F1 F2                   (a simple record as it is)\n"
		"  repeat N                    (the next line N times)\n"
		"\n"
		"Exit status: 0 ok, 1 a trace is malformed or unreadable, 2 usage.\n");
}

static struct {
	int json, thread, threads, node, progress, end;
	unsigned int flags;
	enum tr_compress compress;
} opt = { .thread = -1, .threads = 0, .node = -1, .end = 1 };

/* ------------------------------------------------------------ info */

struct thread_info {
	uint64_t loads, stores, code, insns, markers, branches, phys, io, other;
	uint64_t first_time, last_time, last_clock;
	int seen;
};

static void info_text(struct tr_set *s, const struct thread_info *ti)
{
	int t;

	for (t = 0; t < tr_set_threads(s); t++) {
		const struct tr_header *h = tr_set_header(s, t);
		const struct thread_info *i = &ti[t];

		printf("thread %d: %s\n", t, tr_set_path(s, t));
		if (h->lackey)
			printf("  format lackey (text)\n");
		else
			printf("  format refcnt v%d, %s, node %d, threads %d, flags%s%s%s%s\n",
			       TR_VERSION, tr_compress_name(h->compress), h->node,
			       h->threads, h->flags & TR_HAS_PHYS ? " phys" : "",
			       h->flags & TR_HAS_TIME ? " time" : "",
			       h->flags & TR_HAS_CODE ? " code" : "",
			       h->flags ? "" : " none");
		printf("  accesses %" PRIu64 ": loads %" PRIu64 ", stores %" PRIu64 "\n",
		       i->loads + i->stores, i->loads, i->stores);
		if (h->flags & TR_HAS_PHYS)
			printf("  to RAM of a node %" PRIu64 ", MMIO %" PRIu64 ", other %" PRIu64 "\n",
			       i->phys, i->io, i->other);
		printf("  code blocks %" PRIu64 " (%" PRIu64 " instructions), markers %" PRIu64,
		       i->code, i->insns, i->markers);
		if (i->branches)
			printf(", branch records %" PRIu64, i->branches);
		printf("\n");
		if (h->flags & TR_HAS_TIME)
			printf("  time %.6f s to %.6f s, clock %" PRIu64 " instructions\n",
			       i->first_time / 1e9, i->last_time / 1e9, i->last_clock);
	}
}

static void info_json(struct tr_set *s, const struct thread_info *ti)
{
	int t;

	printf("{\"threads\": [");
	for (t = 0; t < tr_set_threads(s); t++) {
		const struct tr_header *h = tr_set_header(s, t);
		const struct thread_info *i = &ti[t];

		printf("%s\n  {\"thread\": %d, \"file\": ", t ? "," : "", t);
		rt_json_str(stdout, tr_set_path(s, t));
		printf(", \"format\": \"%s\", \"compress\": \"%s\", \"node\": %d, "
		       "\"phys\": %s, \"time\": %s, \"code\": %s, "
		       "\"loads\": %" PRIu64 ", \"stores\": %" PRIu64 ", "
		       "\"ram\": %" PRIu64 ", \"io\": %" PRIu64 ", \"other\": %" PRIu64 ", "
		       "\"code_blocks\": %" PRIu64 ", \"instructions\": %" PRIu64 ", "
		       "\"markers\": %" PRIu64 ", \"first_time_ns\": %" PRIu64 ", "
		       "\"last_time_ns\": %" PRIu64 ", \"clock\": %" PRIu64 "}",
		       h->lackey ? "lackey" : "refcnt", tr_compress_name(h->compress),
		       h->node, h->flags & TR_HAS_PHYS ? "true" : "false",
		       h->flags & TR_HAS_TIME ? "true" : "false",
		       h->flags & TR_HAS_CODE ? "true" : "false", i->loads, i->stores,
		       i->phys, i->io, i->other, i->code, i->insns, i->markers,
		       i->first_time, i->last_time, i->last_clock);
	}
	printf("\n]}\n");
}

static int cmd_info(char **names, int n)
{
	struct thread_info *ti;
	struct tr_event ev;
	struct tr_set *s;
	int r;

	s = tr_set_open(rt_prog, names, n);
	if (!s)
		return RT_EXIT_FAIL;
	tr_set_progress(s, opt.progress);
	ti = calloc(tr_set_threads(s), sizeof(*ti));
	if (!ti)
		return RT_EXIT_FAIL;
	while ((r = tr_set_next(s, &ev)) > 0) {
		struct thread_info *i = &ti[ev.thread];

		if (!i->seen)
			i->first_time = ev.time;
		i->seen = 1;
		i->last_time = ev.time;
		i->last_clock = ev.clock;
		switch (ev.kind) {
		case TR_EV_MEM:
			if (ev.store)
				i->stores++;
			else
				i->loads++;
			i->phys += ev.page_kind == TR_PAGE_RAM;
			i->io += ev.page_kind == TR_PAGE_IO;
			i->other += ev.page_kind == TR_PAGE_OTHER;
			break;
		case TR_EV_CODE:
			i->code++;
			i->insns += ev.insns;
			break;
		case TR_EV_MARK:
			i->markers++;
			break;
		case TR_EV_BRANCH:
			i->branches++;
			break;
		}
	}
	if (r == 0) {
		if (opt.json)
			info_json(s, ti);
		else
			info_text(s, ti);
	}
	free(ti);
	tr_set_close(s);
	return r ? RT_EXIT_FAIL : RT_EXIT_OK;
}

/* ------------------------------------------------------------ print */

static void print_text(const struct tr_event *e)
{
	printf("thread=%d time=%" PRIu64 " clock=%" PRIu64 " ", e->thread,
	       e->time, e->clock);
	switch (e->kind) {
	case TR_EV_MEM:
		printf("%s %u %s 0x%" PRIx64, e->store ? "store" : "load", e->size,
		       tr_reg_name(e->reg), e->vaddr);
		if (e->page_kind == TR_PAGE_RAM)
			printf(" paddr 0x%" PRIx64 " node %d", e->paddr, e->node);
		else if (e->page_kind == TR_PAGE_IO)
			printf(" io");
		else if (e->page_kind == TR_PAGE_OTHER)
			printf(" other");
		break;
	case TR_EV_CODE:
		printf("code 0x%" PRIx64 " %u %u", e->vaddr, e->size, e->insns);
		break;
	case TR_EV_MARK:
		printf("marker %u %u", e->cmd, e->num);
		break;
	case TR_EV_BRANCH:
		printf("branch 0x%" PRIx64, e->vaddr);
		break;
	}
	putchar('\n');
}

static void print_json(const struct tr_event *e, int first)
{
	static const char *const kinds[] = { "mem", "code", "marker", "branch" };

	printf("%s\n  {\"thread\": %d, \"time_ns\": %" PRIu64 ", \"clock\": %" PRIu64
	       ", \"kind\": \"%s\"", first ? "" : ",", e->thread, e->time, e->clock,
	       kinds[e->kind]);
	if (e->kind == TR_EV_MEM) {
		printf(", \"access\": \"%s\", \"size\": %u, \"reg\": \"%s\", \"vaddr\": %" PRIu64,
		       e->store ? "store" : "load", e->size, tr_reg_name(e->reg),
		       e->vaddr);
		if (e->paddr != TR_NO_PADDR)
			printf(", \"paddr\": %" PRIu64, e->paddr);
		if (e->node >= 0)
			printf(", \"node\": %d", e->node);
	} else if (e->kind == TR_EV_CODE) {
		printf(", \"vaddr\": %" PRIu64 ", \"bytes\": %u, \"insns\": %u",
		       e->vaddr, e->size, e->insns);
	} else if (e->kind == TR_EV_MARK) {
		printf(", \"cmd\": %u, \"num\": %u", e->cmd, e->num);
	}
	printf("}");
}

static int cmd_print(char **names, int n)
{
	struct tr_event ev;
	struct tr_set *s;
	int r, first = 1;

	s = tr_set_open(rt_prog, names, n);
	if (!s)
		return RT_EXIT_FAIL;
	tr_set_progress(s, opt.progress);
	if (opt.json)
		printf("{\"events\": [");
	while ((r = tr_set_next(s, &ev)) > 0) {
		if (opt.thread >= 0 && ev.thread != opt.thread)
			continue;
		if (opt.json)
			print_json(&ev, first);
		else
			print_text(&ev);
		first = 0;
	}
	if (opt.json)
		printf("\n]}\n");
	tr_set_close(s);
	if (fflush(stdout)) {
		rt_err("cannot write the standard output: %s", strerror(errno));
		return RT_EXIT_FAIL;
	}
	return r ? RT_EXIT_FAIL : RT_EXIT_OK;
}

/* ------------------------------------------------------------ make */

struct mk_state {
	const char *path;
	unsigned long line;
	uint64_t time, clock, repeat;
	int timed;
};

static int mk_err(const struct mk_state *m, const char *what, const char *tok)
{
	rt_err("%s: line %lu: %s%s%s%s", m->path, m->line, what,
	       tok ? " '" : "", tok ? tok : "", tok ? "'" : "");
	return -1;
}

static int num(const char *s, uint64_t *v)
{
	return rt_parse_u64(s, v);
}

/* The location words after a memory access: kind, frame, node. */
static int mk_where(struct mk_state *m, char **w, int nw, unsigned int *kind,
		    uint64_t *paddr, uint64_t *nid)
{
	if (!nw) {
		if (opt.flags & TR_HAS_PHYS)
			return mk_err(m, "an access without paddr/io/other in a --phys trace", NULL);
		*kind = TR_PAGE_OTHER;
		return 0;
	}
	if (!(opt.flags & TR_HAS_PHYS))
		return mk_err(m, "a physical location needs --phys:", w[0]);
	if (nw == 1 && !strcmp(w[0], "io")) {
		*kind = TR_PAGE_IO;
		*paddr = 0;
		return 0;
	}
	if (nw == 1 && !strcmp(w[0], "other")) {
		*kind = TR_PAGE_OTHER;
		*paddr = 0;
		return 0;
	}
	if (nw == 4 && !strcmp(w[0], "paddr") && !strcmp(w[2], "node") &&
	    !num(w[1], paddr) && !num(w[3], nid) && *nid < 65536 &&
	    (*paddr >> TR_PAGE_SHIFT) <= UINT32_MAX) {
		*kind = TR_PAGE_RAM;
		return 0;
	}
	return mk_err(m, "want paddr PADDR node NID, io or other, not", w[0]);
}

static int mk_mem(struct tr_writer *w, struct mk_state *m, char **t, int nt)
{
	uint64_t size, va, pa = 0, nid = 0;
	unsigned int reg = TR_REG_FIXED, kind;
	int i = 1;

	if (nt < 3 || num(t[1], &size) || !tr_size_bytes(tr_size_code(size)) ||
	    size == 0 || tr_size_bytes(tr_size_code(size)) != size)
		return mk_err(m, "bad access size", nt > 1 ? t[1] : NULL);
	i = 2;
	if (!strcmp(t[i], "fixed") || !strcmp(t[i], "float") || !strcmp(t[i], "none")) {
		reg = t[i][1] == 'i' ? TR_REG_FIXED : t[i][1] == 'l' ? TR_REG_FLOAT : TR_REG_NONE;
		i++;
	}
	if (i >= nt || num(t[i], &va))
		return mk_err(m, "bad virtual address", i < nt ? t[i] : NULL);
	if (mk_where(m, t + i + 1, nt - i - 1, &kind, &pa, &nid))
		return -1;
	tr_writer_mem(w, !strcmp(t[0], "store"), (unsigned int)size, reg, va, kind,
		      (uint32_t)(pa >> TR_PAGE_SHIFT), (unsigned int)nid);
	return 0;
}

/* One line of text (already split into nt words t[]). */
static int mk_line(struct tr_writer *w, struct mk_state *m, char **t, int nt)
{
	uint64_t a, b, c;
	int i = 0;

	for (; i < nt && strchr(t[i], '='); i++) {
		char *v = strchr(t[i], '=') + 1;

		if (!strncmp(t[i], "thread=", 7)) {
			if (num(v, &a))
				return mk_err(m, "bad", t[i]);
			if (opt.thread >= 0 && (int)a != opt.thread)
				return 0;
		} else if (!strncmp(t[i], "time=", 5)) {
			if (num(v, &a))
				return mk_err(m, "bad", t[i]);
			if (!m->timed || a != m->time)
				tr_writer_time(w, a);
			m->time = a;
			m->timed = 1;
		} else if (!strncmp(t[i], "clock=", 6)) {
			if (num(v, &a))
				return mk_err(m, "bad", t[i]);
			if (a != m->clock)
				tr_writer_clock(w, a);
			m->clock = a;
		} else {
			return mk_err(m, "unknown", t[i]);
		}
	}
	t += i;
	nt -= i;
	if (!nt)
		return 0;
	if (!strcmp(t[0], "load") || !strcmp(t[0], "store"))
		return mk_mem(w, m, t, nt);
	if (!strcmp(t[0], "code") && nt == 4 && !num(t[1], &a) && !num(t[2], &b) &&
	    !num(t[3], &c) && b && b < 4096 && c && c < 256) {
		tr_writer_code(w, a, (unsigned int)b, (unsigned int)c);
		return 0;
	}
	if (!strcmp(t[0], "marker") && nt == 3 && !num(t[1], &a) && !num(t[2], &b) &&
	    a < TR_NR_MARKS && b <= UINT32_MAX) {
		tr_writer_marker(w, (unsigned int)a, (uint32_t)b, (uint32_t)(m->time / 1000));
		return 0;
	}
	if (!strcmp(t[0], "raw") && nt == 3 && !num(t[1], &a) && !num(t[2], &b) &&
	    a <= UINT32_MAX && b <= UINT32_MAX) {
		tr_writer_raw(w, (uint32_t)a, (uint32_t)b);
		return 0;
	}
	if (!strcmp(t[0], "branch"))
		return 0;
	return mk_err(m, "not a trace line:", t[0]);
}

static int cmd_make(const char *out, const char *in)
{
	struct mk_state m = { .path = in ? in : "-" };
	struct tr_writer w;
	char line[1024];
	FILE *f = stdin;
	int rc = 0;

	if (in && strcmp(in, "-")) {
		f = fopen(in, "r");
		if (!f) {
			rt_err("%s: %s", in, strerror(errno));
			return RT_EXIT_FAIL;
		}
	}
	if (tr_writer_open(&w, out, opt.compress, 0, opt.thread < 0 ? 0 : opt.thread,
			   opt.threads ? opt.threads : (opt.thread < 0 ? 1 : opt.thread + 1),
			   opt.node, opt.flags, 0)) {
		rt_err("cannot write %s: %s", out, strerror(errno));
		return RT_EXIT_FAIL;
	}
	while (!rc && fgets(line, sizeof(line), f)) {
		char *t[16], *save, *p = strchr(line, '#');
		uint64_t times = 1, k;
		int nt = 0;

		m.line++;
		if (p)
			*p = 0;
		for (p = strtok_r(line, " \t\r\n", &save); p && nt < 16;
		     p = strtok_r(NULL, " \t\r\n", &save))
			t[nt++] = p;
		/* "repeat N" repeats the next line N times */
		if (nt == 2 && !strcmp(t[0], "repeat")) {
			if (num(t[1], &m.repeat) || !m.repeat) {
				rc = mk_err(&m, "bad repeat count", t[1]);
				break;
			}
			continue;
		}
		if (m.repeat) {
			times = m.repeat;
			m.repeat = 0;
		}
		for (k = 0; k < times && !rc; k++)
			rc = mk_line(&w, &m, t, nt);
	}
	if (f != stdin)
		fclose(f);
	if (rc) {
		tr_writer_abort(&w);
		return RT_EXIT_FAIL;
	}
	if (tr_writer_close(&w, opt.end, (uint32_t)(m.time / 1000))) {
		rt_err("cannot write %s: %s", out, strerror(errno));
		return RT_EXIT_FAIL;
	}
	return RT_EXIT_OK;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "thread", required_argument, NULL, 't' },
		{ "threads", required_argument, NULL, 'n' },
		{ "node", required_argument, NULL, 'N' },
		{ "phys", no_argument, NULL, 'p' },
		{ "time", no_argument, NULL, 'T' },
		{ "code", no_argument, NULL, 'C' },
		{ "compress", required_argument, NULL, 'z' },
		{ "no-end", no_argument, NULL, 'E' },
		{ "progress", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *cmd;
	int o;

	rt_prog = "refcnt-trace";
	opt.progress = 1;
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return RT_EXIT_OK;
	}
	if (argc < 2) {
		usage(stderr);
		return RT_EXIT_USAGE;
	}
	cmd = argv[1];
	argv++;
	argc--;
	while ((o = getopt_long(argc, argv, "jt:n:N:z:Ph", lo, NULL)) != -1) {
		long v;
		char *end;

		switch (o) {
		case 'j': opt.json = 1; break;
		case 't': case 'n': case 'N':
			v = strtol(optarg, &end, 10);
			if (*end || end == optarg || v < 0 || v >= (o == 'N' ? 65536 : TR_MAX_THREADS + (o == 'n'))) {
				rt_err("-%c %s: not a valid number", o, optarg);
				return RT_EXIT_USAGE;
			}
			if (o == 't')
				opt.thread = (int)v;
			else if (o == 'n')
				opt.threads = (int)v;
			else
				opt.node = (int)v;
			break;
		case 'p': opt.flags |= TR_HAS_PHYS; break;
		case 'T': opt.flags |= TR_HAS_TIME; break;
		case 'C': opt.flags |= TR_HAS_CODE; break;
		case 'E': opt.end = 0; break;
		case 'P': opt.progress = 2; break;
		case 'z':
			if (tr_compress_parse(optarg, &opt.compress)) {
				rt_err("--compress %s: want none, zstd or gzip", optarg);
				return RT_EXIT_USAGE;
			}
			break;
		case 'h': usage(stdout); return RT_EXIT_OK;
		default: usage(stderr); return RT_EXIT_USAGE;
		}
	}
	if (!strcmp(cmd, "make")) {
		if (optind >= argc || argc - optind > 2) {
			rt_err("make: want OUT [TEXT]");
			return RT_EXIT_USAGE;
		}
		if (opt.threads && opt.thread >= opt.threads) {
			rt_err("make: --thread %d of --threads %d", opt.thread, opt.threads);
			return RT_EXIT_USAGE;
		}
		return cmd_make(argv[optind], optind + 1 < argc ? argv[optind + 1] : NULL);
	}
	if (optind >= argc) {
		rt_err("%s: no TRACE given", cmd);
		return RT_EXIT_USAGE;
	}
	if (!strcmp(cmd, "info"))
		return cmd_info(argv + optind, argc - optind);
	if (!strcmp(cmd, "print"))
		return cmd_print(argv + optind, argc - optind);
	rt_err("unknown command '%s' (info, print, make; see --help)", cmd);
	return RT_EXIT_USAGE;
}
