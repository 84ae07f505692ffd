// SPDX-License-Identifier: GPL-2.0
/*
 * Trace sets: decoding the refcnt trace format (trace-format.h) and
 * lackey's text, checking every record, and merging the threads' traces
 * in time order. Streaming: each file holds one buffer.
 */
#include <ctype.h>
#include <errno.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "trace-read.h"

#define BUF_RECORDS	8192

struct pt_entry {
	uint64_t vpn;
	uint32_t frame;
	int kind, node, valid;
};

struct tr_file {
	char *path;
	struct tr_source *src;
	struct tr_header h;
	unsigned char buf[BUF_RECORDS * TR_RECORD_SIZE];
	size_t len, off;		/* bytes in buf, consumed */
	int eof;
	uint64_t record;		/* index of the next record */
	uint64_t vahi, time, clock;
	struct pt_entry pt[TR_PT_SIZE];
	int page_pending;		/* a 0x22 record waits for its access */
	struct pt_entry page;
	uint64_t page_record;
	uint64_t mems, lost;
	int started, ended;
	/* lackey */
	char line[512];
	uint64_t lineno;
	int modify_store;		/* an M line's store is next */
	struct tr_event held;
	/* the merge */
	struct tr_event cur;
	int has_cur, done;
};

struct tr_set {
	const char *prog;
	int n;
	struct tr_file **f;		/* by thread */
	int last;			/* thread of the last event */
	uint64_t events;
	int progress;
	time_t t0, shown;
	int progress_shown;
	uint64_t total_bytes;
	int failed;
};

const char *tr_reg_name(unsigned int reg)
{
	static const char *const n[] = { "fixed", "float", "none" };

	return reg < TR_NR_REGS ? n[reg] : "?";
}

const char *tr_mark_name(unsigned int cmd)
{
	static const char *const n[] = { "none", "stop", "resume", "stop-all",
					 "resume-all" };

	return cmd < TR_NR_MARKS ? n[cmd] : "?";
}

static int file_err(struct tr_set *s, struct tr_file *f, uint64_t rec,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int file_err(struct tr_set *s, struct tr_file *f, uint64_t rec,
		    const char *fmt, ...)
{
	va_list ap;

	if (s->progress_shown)
		fputc('\n', stderr);
	s->progress_shown = 0;
	if (f->h.lackey)
		fprintf(stderr, "%s: %s: line %llu: ", s->prog, f->path,
			(unsigned long long)rec);
	else if (rec != UINT64_MAX)
		fprintf(stderr, "%s: %s: record %llu: ", s->prog, f->path,
			(unsigned long long)rec);
	else
		fprintf(stderr, "%s: %s: ", s->prog, f->path);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	s->failed = 1;
	return -1;
}

/* ------------------------------------------------------------ binary */

/*
 * The next record into f1, f2: 1, 0 at the end of the file, -1 on error
 * (a partial record, a read or decompression error).
 */
static int next_record(struct tr_set *s, struct tr_file *f, uint32_t *f1,
		       uint32_t *f2)
{
	if (f->len - f->off < TR_RECORD_SIZE) {
		const char *why;
		long r;

		memmove(f->buf, f->buf + f->off, f->len - f->off);
		f->len -= f->off;
		f->off = 0;
		while (!f->eof && f->len < sizeof(f->buf)) {
			r = tr_source_read(f->src, f->buf + f->len,
					   sizeof(f->buf) - f->len, &why);
			if (r < 0)
				return file_err(s, f, f->record, "%s", why);
			if (!r)
				f->eof = 1;
			f->len += r;
		}
		if (f->len == 0)
			return 0;
		if (f->len < TR_RECORD_SIZE)
			return file_err(s, f, f->record,
					"truncated: the file ends %zu bytes into the record",
					f->len);
	}
	*f1 = tr_get32(f->buf + f->off);
	*f2 = tr_get32(f->buf + f->off + 4);
	f->off += TR_RECORD_SIZE;
	f->record++;
	return 1;
}

/* The 6 simple records of a call record whose first is f1, f2. */
static int read_call(struct tr_set *s, struct tr_file *f, uint32_t f1,
		     uint32_t f2, uint32_t v[TR_CALL_RECORDS])
{
	unsigned int type = (f1 >> 4) & 0xff, i;
	uint64_t first = f->record - 1;

	if ((f1 & 0xf) != 0)
		return file_err(s, f, first,
				"simple record %u of a call record (type 0x%02x) where a call record should start",
				f1 & 0xf, type);
	v[0] = f2;
	for (i = 1; i < TR_CALL_RECORDS; i++) {
		uint32_t g1, g2;
		int r = next_record(s, f, &g1, &g2);

		if (r < 0)
			return -1;
		if (!r)
			return file_err(s, f, first,
					"truncated: the file ends inside this call record (type 0x%02x)",
					type);
		if (g1 != tr_call_f1(type, i))
			return file_err(s, f, f->record - 1,
					"type field 0x%08x where simple record %u of the call record of type 0x%02x at record %llu belongs",
					g1, i, type, (unsigned long long)first);
		v[i] = g2;
	}
	return 0;
}

static int read_header(struct tr_set *s, struct tr_file *f)
{
	uint32_t f1, f2, v[TR_CALL_RECORDS];
	int r = next_record(s, f, &f1, &f2);

	if (r < 0)
		return -1;
	if (!r)
		return file_err(s, f, UINT64_MAX, "empty: not a trace");
	if (f1 != tr_call_f1(TR_CALL_START, 0))
		return file_err(s, f, 0,
				"not a refcnt trace: type field 0x%08x, not a start-of-trace record",
				f1);
	if (read_call(s, f, f1, f2, v))
		return -1;
	if (v[2] != TR_MAGIC)
		return file_err(s, f, 0, "not a refcnt trace: magic 0x%08x", v[2]);
	if ((v[3] & 0xff) != TR_VERSION)
		return file_err(s, f, 0, "trace format version %u; this reader knows %u",
				v[3] & 0xff, TR_VERSION);
	f->h.thread = (int)(v[3] >> 8);
	f->h.node = v[4] == TR_NO_NODE ? -1 : (int)v[4];
	f->h.flags = v[5] & TR_HAS_MASK;
	f->h.threads = (int)(v[5] >> 16);
	if (f->h.thread >= TR_MAX_THREADS || f->h.threads > TR_MAX_THREADS ||
	    (f->h.threads && f->h.thread >= f->h.threads))
		return file_err(s, f, 0, "thread %d of %d: at most %d threads",
				f->h.thread, f->h.threads, TR_MAX_THREADS);
	f->started = 1;
	return 0;
}

static int read_end(struct tr_set *s, struct tr_file *f, const uint32_t *v)
{
	uint64_t said = (uint64_t)v[3] << 32 | v[2];
	uint64_t at = f->record - TR_CALL_RECORDS;
	uint32_t f1, f2;
	int r;

	if (said != f->mems)
		return file_err(s, f, at,
				"the end-of-trace record counts %llu memory records, the trace has %llu",
				(unsigned long long)said, (unsigned long long)f->mems);
	f->lost = v[4];
	r = next_record(s, f, &f1, &f2);
	if (r < 0)
		return -1;
	if (r)
		return file_err(s, f, f->record - 1,
				"a record after the end-of-trace record");
	f->ended = 1;
	return 0;
}

static int mem_event(struct tr_set *s, struct tr_file *f, uint32_t f1,
		     uint32_t f2, struct tr_event *ev)
{
	unsigned int acc = f1 & 0xf, code = (f1 >> 4) & 0xf, reg = (f1 >> 8) & 0xf;
	struct pt_entry *e;

	if (acc > TR_STORE || !tr_size_bytes(code) || reg >= TR_NR_REGS)
		return file_err(s, f, f->record - 1,
				"memory access type field 0x%08x: access %u, size code %u, register kind %u (known: access 0-1, size 1-8 or 9-11, kind 0-2)",
				f1, acc, code, reg);
	ev->kind = TR_EV_MEM;
	ev->store = acc;
	ev->size = tr_size_bytes(code);
	ev->reg = reg;
	ev->paddr = TR_NO_PADDR;
	ev->node = -1;
	ev->page_kind = -1;
	/* bits 12..17 of the address, in f2, index the page table */
	e = &f->pt[(f2 >> TR_PAGE_SHIFT) % TR_PT_SIZE];
	if (f->page_pending) {
		ev->vaddr = f->vahi << 32 | f2;
		*e = f->page;
		e->vpn = ev->vaddr >> TR_PAGE_SHIFT;
		e->valid = 1;
		f->page_pending = 0;
	} else if (f->h.flags & TR_HAS_PHYS) {
		/* the entry that holds the page gives the high bits */
		if (!e->valid || (uint32_t)(e->vpn << TR_PAGE_SHIFT) != (f2 & ~0xfffu))
			return file_err(s, f, f->record - 1,
					"no physical-page record for the page of address 0x...%08x",
					f2);
		ev->vaddr = (e->vpn << TR_PAGE_SHIFT & ~0xffffffffull) | f2;
	} else {
		ev->vaddr = f->vahi << 32 | f2;
	}
	if (f->h.flags & TR_HAS_PHYS) {
		ev->page_kind = e->kind;
		if (e->kind != TR_PAGE_IO)
			ev->paddr = (uint64_t)e->frame << TR_PAGE_SHIFT |
				    (ev->vaddr & ((1u << TR_PAGE_SHIFT) - 1));
		if (e->kind == TR_PAGE_RAM)
			ev->node = e->node;
	}
	f->mems++;
	return 1;
}

static int ext_record(struct tr_set *s, struct tr_file *f, uint32_t f1,
		      uint32_t f2, struct tr_event *ev)
{
	uint64_t v52 = (uint64_t)(f1 & 0xfffff) << 32 | f2;

	switch (f1 >> 24) {
	case TR_EXT_VAHI:
		if (f1 & 0xffffff)
			break;
		f->vahi = f2;
		return 0;
	case TR_EXT_PAGE:
		if (((f1 >> 16) & 0xf) > TR_PAGE_OTHER || (f1 & 0x00f00000))
			break;
		if (f->page_pending)
			return file_err(s, f, f->page_record,
					"a physical-page record not followed by a memory access");
		f->page.kind = (f1 >> 16) & 0xf;
		f->page.node = f1 & 0xffff;
		f->page.frame = f2;
		f->page_pending = 1;
		f->page_record = f->record - 1;
		return 0;
	case TR_EXT_TIME:
		if (f1 & 0x00f00000)
			break;
		if (v52 < f->time)
			return file_err(s, f, f->record - 1,
					"time %llu ns goes back from %llu ns",
					(unsigned long long)v52,
					(unsigned long long)f->time);
		f->time = v52;
		return 0;
	case TR_EXT_CLOCK:
		if (f1 & 0x00f00000)
			break;
		f->clock = v52;
		return 0;
	case TR_EXT_CODE:
		if (!(f1 & 0xfff) || !((f1 >> 12) & 0xff))
			break;
		ev->kind = TR_EV_CODE;
		ev->size = f1 & 0xfff;
		ev->insns = (f1 >> 12) & 0xff;
		ev->vaddr = f->vahi << 32 | f2;
		return 1;
	}
	return file_err(s, f, f->record - 1, "unknown type field 0x%08x", f1);
}

/* The next event of a binary trace: 1, 0 at its (checked) end, -1. */
static int binary_next(struct tr_set *s, struct tr_file *f, struct tr_event *ev)
{
	uint32_t f1, f2, v[TR_CALL_RECORDS];

	for (;;) {
		int r = next_record(s, f, &f1, &f2);

		if (r < 0)
			return -1;
		if (!r) {
			if (f->page_pending)
				return file_err(s, f, f->page_record,
						"a physical-page record not followed by a memory access");
			return file_err(s, f, UINT64_MAX,
					"truncated: no end-of-trace record after record %llu",
					(unsigned long long)(f->record - 1));
		}
		memset(ev, 0, sizeof(*ev));
		ev->record = f->record - 1;
		ev->paddr = TR_NO_PADDR;
		ev->node = -1;
		ev->page_kind = -1;
		if (f->page_pending && f1 >> 12 != 0)
			return file_err(s, f, f->page_record,
					"a physical-page record not followed by a memory access");
		if (f1 >> 12 == 0)
			return mem_event(s, f, f1, f2, ev);
		if (f1 >> 12 == (TR_CALL_BASE >> 12)) {
			unsigned int type = (f1 >> 4) & 0xff;

			if (read_call(s, f, f1, f2, v))
				return -1;
			if (type == TR_CALL_END)
				return read_end(s, f, v) ? -1 : 0;
			if (type == TR_CALL_START)
				return file_err(s, f, ev->record,
						"a second start-of-trace record");
			if (type != TR_CALL_MARKER)
				continue;	/* other SMAIT calls: not used */
			if (v[2] >= TR_NR_MARKS)
				return file_err(s, f, ev->record,
						"marker command %u (known: 0-4)", v[2]);
			ev->kind = TR_EV_MARK;
			ev->cmd = v[2];
			ev->num = v[3];
			return 1;
		}
		switch (f1 >> 28) {
		case 0x4: case 0x8: case 0xc:
			ev->kind = TR_EV_BRANCH;
			ev->vaddr = f2;
			return 1;
		case 0x2:
			r = ext_record(s, f, f1, f2, ev);
			if (r)
				return r;
			continue;
		}
		return file_err(s, f, ev->record, "unknown type field 0x%08x", f1);
	}
}

/* ------------------------------------------------------------ lackey */

/* A line into f->line: 1, 0 at the end, -1 (read error, line too long). */
static int lackey_line(struct tr_set *s, struct tr_file *f)
{
	size_t n = 0;

	for (;;) {
		if (f->off == f->len) {
			const char *why;
			long r;

			if (f->eof)
				break;
			r = tr_source_read(f->src, f->buf, sizeof(f->buf), &why);
			if (r < 0)
				return file_err(s, f, f->lineno + 1, "%s", why);
			f->off = 0;
			f->len = r;
			f->eof = !r;
			continue;
		}
		if (f->buf[f->off] == '\n') {
			f->off++;
			break;
		}
		if (n + 1 >= sizeof(f->line))
			return file_err(s, f, f->lineno + 1, "line too long");
		f->line[n++] = f->buf[f->off++];
	}
	f->line[n] = 0;
	if (!n && f->eof && f->off == f->len)
		return 0;
	f->lineno++;
	return 1;
}

static int lackey_next(struct tr_set *s, struct tr_file *f, struct tr_event *ev)
{
	for (;;) {
		unsigned long long a;
		unsigned int size;
		char op, *p, *end;
		int r;

		if (f->modify_store) {
			*ev = f->held;
			ev->store = 1;
			f->modify_store = 0;
			return 1;
		}
		r = lackey_line(s, f);
		if (r <= 0)
			return r;
		p = f->line;
		if (!*p || !strncmp(p, "==", 2) || !strncmp(p, "--", 2))
			continue;
		if (p[0] == 'I' && p[1] == ' ')
			op = 'I';
		else if (p[0] == ' ' && strchr("LSM", p[1]) && p[1] && p[2] == ' ')
			op = p[1];
		else
			return file_err(s, f, f->lineno,
					"not a lackey record: \"%.40s\"", f->line);
		p += 2;
		while (*p == ' ')
			p++;
		errno = 0;
		a = strtoull(p, &end, 16);
		if (end == p || *end != ',' || errno)
			return file_err(s, f, f->lineno, "bad address in \"%.40s\"", f->line);
		size = (unsigned int)strtoul(end + 1, &p, 10);
		if (p == end + 1 || *p || !size || size > 4095)
			return file_err(s, f, f->lineno, "bad size in \"%.40s\"", f->line);
		memset(ev, 0, sizeof(*ev));
		ev->record = f->lineno;
		ev->vaddr = a;
		ev->paddr = TR_NO_PADDR;
		ev->node = -1;
		ev->page_kind = -1;
		if (op == 'I') {
			ev->kind = TR_EV_CODE;
			ev->size = size;
			ev->insns = 1;
			return 1;
		}
		if (size > 64 || (size & (size - 1)))
			return file_err(s, f, f->lineno,
					"size %u: not 1, 2, 4, 8, 16, 32 or 64", size);
		ev->kind = TR_EV_MEM;
		ev->size = size;
		ev->reg = TR_REG_FIXED;
		ev->store = op == 'S';
		f->mems += 1 + (op == 'M');
		if (op == 'M') {
			f->held = *ev;
			f->modify_store = 1;
		}
		return 1;
	}
}

/* ------------------------------------------------------------ files */

static int looks_lackey(const unsigned char *p, size_t n)
{
	size_t i;

	if (!n)
		return 0;
	for (i = 0; i < n && i < 16; i++)
		if (p[i] != '\n' && (p[i] < 0x20 || p[i] > 0x7e))
			return 0;
	return p[0] == '=' || p[0] == 'I' || p[0] == ' ' || p[0] == '-';
}

static struct tr_file *file_open(struct tr_set *s, const char *path, int index)
{
	struct tr_file *f = calloc(1, sizeof(*f));
	const char *why;
	long r;

	if (!f || !(f->path = strdup(path))) {
		fprintf(stderr, "%s: out of memory\n", s->prog);
		free(f);
		return NULL;
	}
	f->src = tr_source_open(path);
	if (!f->src) {
		fprintf(stderr, "%s: %s: %s\n", s->prog, path, strerror(errno));
		goto fail;
	}
	f->h.compress = tr_source_compress(f->src);
	s->total_bytes += tr_source_file_size(f->src);
	r = tr_source_read(f->src, f->buf, 16, &why);
	if (r < 0) {
		file_err(s, f, UINT64_MAX, "%s", why);
		goto fail;
	}
	f->len = r;
	if (looks_lackey(f->buf, f->len)) {
		f->h.lackey = 1;
		f->h.thread = index;
		f->h.node = -1;
		return f;
	}
	if (read_header(s, f))
		goto fail;
	return f;
fail:
	tr_source_close(f->src);
	free(f->path);
	free(f);
	return NULL;
}

static void file_close(struct tr_file *f)
{
	if (!f)
		return;
	tr_source_close(f->src);
	free(f->path);
	free(f);
}

/* The files of prefix p: p.N.T[.zst|.gz] for the largest N found. */
static int expand_prefix(const char *p, glob_t *g)
{
	char *pat;
	int rc;

	if (asprintf(&pat, "%s.[0-9]*.[0-9]*", p) < 0)
		return -1;
	rc = glob(pat, 0, NULL, g);
	free(pat);
	return rc ? -1 : 0;
}

static int add_file(struct tr_set *s, const char *path)
{
	struct tr_file *f, **nf;
	int t;

	f = file_open(s, path, s->n);
	if (!f)
		return -1;
	t = f->h.thread;
	if (t < s->n && s->f[t]) {
		fprintf(stderr, "%s: %s: thread %d again (also %s)\n", s->prog,
			path, t, s->f[t]->path);
		file_close(f);
		return -1;
	}
	if (t >= s->n) {
		nf = realloc(s->f, (t + 1) * sizeof(*nf));
		if (!nf) {
			file_close(f);
			return -1;
		}
		memset(nf + s->n, 0, (t + 1 - s->n) * sizeof(*nf));
		s->f = nf;
		s->n = t + 1;
	}
	s->f[t] = f;
	return 0;
}

struct tr_set *tr_set_open(const char *prog, char *const *names, int n)
{
	struct tr_set *s = calloc(1, sizeof(*s));
	struct stat st;
	int i, t;

	if (!s)
		return NULL;
	s->prog = prog;
	s->progress = 1;
	s->last = -1;
	s->t0 = time(NULL);
	for (i = 0; i < n; i++) {
		glob_t g;
		size_t k;

		if (!strcmp(names[i], "-") || !stat(names[i], &st)) {
			if (add_file(s, names[i]))
				goto fail;
			continue;
		}
		if (expand_prefix(names[i], &g)) {
			fprintf(stderr, "%s: %s: no such trace file, nor files %s.N.T\n",
				prog, names[i], names[i]);
			goto fail;
		}
		for (k = 0; k < g.gl_pathc; k++)
			if (add_file(s, g.gl_pathv[k])) {
				globfree(&g);
				goto fail;
			}
		globfree(&g);
	}
	for (t = 0; t < s->n; t++)
		if (!s->f[t]) {
			fprintf(stderr, "%s: no trace of thread %d (threads 0 to %d are needed)\n",
				prog, t, s->n - 1);
			goto fail;
		}
	if (!s->n) {
		fprintf(stderr, "%s: no trace given\n", prog);
		goto fail;
	}
	return s;
fail:
	tr_set_close(s);
	return NULL;
}

int tr_set_threads(const struct tr_set *s)
{
	return s->n;
}

const struct tr_header *tr_set_header(const struct tr_set *s, int t)
{
	return t >= 0 && t < s->n ? &s->f[t]->h : NULL;
}

const char *tr_set_path(const struct tr_set *s, int t)
{
	return t >= 0 && t < s->n ? s->f[t]->path : NULL;
}

int tr_set_has(const struct tr_set *s, unsigned int flag)
{
	int t;

	for (t = 0; t < s->n; t++)
		if (s->f[t]->h.lackey || !(s->f[t]->h.flags & flag))
			return 0;
	return 1;
}

void tr_set_progress(struct tr_set *s, int mode)
{
	s->progress = mode;
}

static void show_progress(struct tr_set *s)
{
	time_t now = time(NULL);
	uint64_t pos = 0;
	int t;

	/*
	 * On a terminal, nothing for a trace read within a second; asked
	 * for, a line from the first million events on, however fast.
	 */
	if (now == s->shown || (s->progress == 1 && now - s->t0 < 1))
		return;
	if (s->progress == 0 || (s->progress == 1 && !isatty(2)))
		return;
	s->shown = now;
	for (t = 0; t < s->n; t++)
		pos += tr_source_file_pos(s->f[t]->src);
	fprintf(stderr, "\r%s: %.1fM events", s->prog, s->events / 1e6);
	if (s->total_bytes)
		fprintf(stderr, " (%.0f%% of %.1f MB)", 100.0 * pos / s->total_bytes,
			s->total_bytes / 1e6);
	fprintf(stderr, ", %lds ", (long)(now - s->t0));
	s->progress_shown = 1;
}

static int file_next(struct tr_set *s, struct tr_file *f)
{
	int r;

	r = f->h.lackey ? lackey_next(s, f, &f->cur) : binary_next(s, f, &f->cur);
	if (r < 0)
		return -1;
	f->has_cur = r;
	f->done = !r;
	if (r) {
		f->cur.thread = f->h.thread;
		f->cur.time = f->time;
		f->cur.clock = f->clock;
	}
	return 0;
}

int tr_set_next(struct tr_set *s, struct tr_event *ev)
{
	int t, k, best = -1;

	if (s->failed)
		return -1;
	for (t = 0; t < s->n; t++)
		if (!s->f[t]->has_cur && !s->f[t]->done && file_next(s, s->f[t]))
			return -1;
	/* Smallest time; among equals the first after the last one taken. */
	for (k = 1; k <= s->n; k++) {
		struct tr_file *f;

		t = (s->last + k) % s->n;
		f = s->f[t];
		if (f->has_cur && (best < 0 || f->cur.time < s->f[best]->cur.time))
			best = t;
	}
	if (best < 0) {
		if (s->progress_shown)
			fprintf(stderr, "\r%*s\r", 60, "");
		s->progress_shown = 0;
		return 0;
	}
	*ev = s->f[best]->cur;
	s->f[best]->has_cur = 0;
	s->last = best;
	if (!(++s->events & 0xfffff))
		show_progress(s);
	return 1;
}

uint64_t tr_set_events(const struct tr_set *s)
{
	return s->events;
}

void tr_set_close(struct tr_set *s)
{
	int t;

	if (!s)
		return;
	for (t = 0; t < s->n; t++)
		file_close(s->f[t]);
	free(s->f);
	free(s);
}
