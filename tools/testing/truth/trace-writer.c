// SPDX-License-Identifier: GPL-2.0
/*
 * trace-writer: the refcnt-truth plugin's per-vCPU traces (trace=PREFIX):
 * PREFIX.N.V for vCPU V of N, in the refcnt trace format
 * (tools/src/trace/trace-format.h, Documentation/trace-format.rst),
 * optionally compressed (trace_compress=zstd|gzip). Each vCPU's thread
 * writes its own trace, so no lock is taken; the encoder and the
 * compressed output are tools/src/trace/trace-write.c and trace-io.c, the
 * same code refcnt-trace make uses.
 *
 * The register kind of an access comes from the instruction's opcode at
 * translation (x87, SSE and AVX opcodes: float; movs, cmps: none; the rest
 * fixed), the node from the truth's RAM layout, the time from
 * CLOCK_MONOTONIC every trace_clock accesses and at every marker.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "trace-writer.h"
#include "trace-write.h"

#define PFX	"refcnt-truth: "

int trace_on;

static struct {
	const char *prefix;
	enum tr_compress compress;
	int level;
	int code;
	uint64_t clock_every;
} topt = { .clock_every = 256 };

struct tw_vcpu {
	struct tr_writer w;
	uint64_t insns;		/* the clock */
	uint64_t since;		/* accesses since the last time record */
	uint64_t mems, bytes;	/* at the close: accesses, file size */
	int open;
} __attribute__((aligned(64)));

struct tw_block {
	uint64_t vaddr;
	unsigned int bytes, insns;
};

static struct tw_vcpu *tw;
static int nr_tw;
static const struct trace_ram *tw_ram;
static int nr_tw_ram;
static struct timespec t0;
static int (*tw_tracing)(unsigned int vi);

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000ull +
	       t.tv_nsec - t0.tv_nsec;
}

int trace_parse_opt(const char *key, const char *v)
{
	char *end;

	if (!strcmp(key, "trace")) {
		topt.prefix = v;
		trace_on = 1;
	} else if (!strcmp(key, "trace_compress")) {
		if (tr_compress_parse(v, &topt.compress)) {
			fprintf(stderr, PFX "trace_compress=%s: want none, zstd or gzip\n", v);
			return -1;
		}
	} else if (!strcmp(key, "trace_level")) {
		topt.level = (int)strtol(v, &end, 10);
		if (*end || topt.level < 0 || topt.level > 19) {
			fprintf(stderr, PFX "trace_level=%s: want 0 to 19\n", v);
			return -1;
		}
	} else if (!strcmp(key, "trace_code")) {
		bool on;

		if (!qemu_plugin_bool_parse(key, v, &on)) {
			fprintf(stderr, PFX "trace_code=%s: want on or off\n", v);
			return -1;
		}
		topt.code = on;
	} else if (!strcmp(key, "trace_clock")) {
		topt.clock_every = strtoull(v, &end, 0);
		if (*end || !topt.clock_every) {
			fprintf(stderr, PFX "trace_clock=%s: want a number of accesses, at least 1\n", v);
			return -1;
		}
	} else {
		return 1;
	}
	return 0;
}

int trace_install(int nr_vcpus, const int *vcpu_nid, const struct trace_ram *ram,
		  int nr_ram, int (*tracing)(unsigned int vi))
{
	unsigned int flags = TR_HAS_PHYS | TR_HAS_TIME | (topt.code ? TR_HAS_CODE : 0);
	int i;

	if (nr_vcpus > 256) {
		fprintf(stderr, PFX "trace=: at most 256 vCPUs\n");
		return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	tw = aligned_alloc(64, sizeof(*tw) * nr_vcpus);
	if (!tw)
		return -1;
	memset(tw, 0, sizeof(*tw) * nr_vcpus);
	nr_tw = nr_vcpus;
	tw_ram = ram;
	nr_tw_ram = nr_ram;
	tw_tracing = tracing;
	for (i = 0; i < nr_vcpus; i++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s.%d.%d", topt.prefix, nr_vcpus, i);
		if (tr_writer_open(&tw[i].w, path, topt.compress, topt.level, i,
				   nr_vcpus, vcpu_nid[i], flags, 0)) {
			fprintf(stderr, PFX "cannot write %s%s.tmp: %s\n", path,
				tr_compress_suffix(topt.compress), strerror(errno));
			while (i--)
				tr_writer_abort(&tw[i].w);
			return -1;
		}
		tw[i].open = 1;
	}
	return 0;
}

/*
 * The register kind of an x86 instruction's memory operand, by opcode:
 * legacy and REX prefixes skipped; VEX/EVEX, x87 (d8-df) and the SSE/MMX
 * rows of the 0f map are float; movs and cmps (a4-a7) move memory to
 * memory; the rest use general-purpose registers.
 */
void *trace_insn_udata(const void *data, size_t n)
{
	const uint8_t *d = data;
	size_t i = 0;
	uint8_t b;

	while (i < n && (d[i] == 0x66 || d[i] == 0x67 || d[i] == 0xf0 ||
			 d[i] == 0xf2 || d[i] == 0xf3 || d[i] == 0x2e ||
			 d[i] == 0x36 || d[i] == 0x3e || d[i] == 0x26 ||
			 d[i] == 0x64 || d[i] == 0x65 || (d[i] & 0xf0) == 0x40))
		i++;
	if (i >= n)
		return (void *)(uintptr_t)TR_REG_FIXED;
	b = d[i];
	if (b == 0xc4 || b == 0xc5 || b == 0x62 || (b >= 0xd8 && b <= 0xdf))
		return (void *)(uintptr_t)TR_REG_FLOAT;
	if (b >= 0xa4 && b <= 0xa7)
		return (void *)(uintptr_t)TR_REG_NONE;
	if (b == 0x0f && i + 1 < n) {
		b = d[i + 1];
		if ((b >= 0x10 && b <= 0x17) || (b >= 0x28 && b <= 0x2f) ||
		    (b >= 0x50 && b <= 0x7f) || b == 0xae || b == 0xc2 ||
		    (b >= 0xc4 && b <= 0xc6) || b >= 0xd0 || b == 0x38 ||
		    b == 0x3a || b == 0xe7 || b == 0x2b)
			return (void *)(uintptr_t)TR_REG_FLOAT;
	}
	return (void *)(uintptr_t)TR_REG_FIXED;
}

static void stamp(struct tw_vcpu *t)
{
	tr_writer_time(&t->w, now_ns());
	tr_writer_clock(&t->w, t->insns);
	t->since = 0;
}

static void code_cb(unsigned int vi, void *udata)
{
	const struct tw_block *b = udata;
	struct tw_vcpu *t;

	if (vi >= (unsigned int)nr_tw || !tw_tracing(vi))
		return;
	t = &tw[vi];
	if (!t->since)
		stamp(t);
	tr_writer_code(&t->w, b->vaddr, b->bytes, b->insns);
}

void trace_tb(struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);
	struct tw_block *b;

	if (!trace_on || !topt.code || !n)
		return;
	/* Kept for the block's life: QEMU gives no hook when it goes. */
	b = malloc(sizeof(*b));
	if (!b)
		return;
	b->vaddr = qemu_plugin_tb_vaddr(tb);
	b->insns = (unsigned int)n;
	b->bytes = 0;
	for (i = 0; i < n; i++)
		b->bytes += qemu_plugin_insn_size(qemu_plugin_tb_get_insn(tb, i));
	qemu_plugin_register_vcpu_tb_exec_cb(tb, code_cb, QEMU_PLUGIN_CB_NO_REGS, b);
}

void trace_ref(unsigned int vi, qemu_plugin_meminfo_t info, uint64_t vaddr,
	       uint64_t pa, void *udata)
{
	struct tw_vcpu *t;
	unsigned int kind = TR_PAGE_RAM, nid = 0;
	int i;

	if (vi >= (unsigned int)nr_tw)
		return;
	t = &tw[vi];
	if (!t->since || t->since >= topt.clock_every)
		stamp(t);
	t->since++;
	if (pa == TRACE_PA_IO) {
		kind = TR_PAGE_IO;
	} else if (pa == TRACE_PA_OTHER) {
		kind = TR_PAGE_OTHER;
	} else {
		for (i = 0; i < nr_tw_ram; i++)
			if (pa >= tw_ram[i].base && pa < tw_ram[i].base + tw_ram[i].size)
				break;
		if (i < nr_tw_ram)
			nid = tw_ram[i].nid;
		else
			kind = TR_PAGE_OTHER;
	}
	tr_writer_mem(&t->w, qemu_plugin_mem_is_store(info),
		      1u << qemu_plugin_mem_size_shift(info),
		      (unsigned int)(uintptr_t)udata, vaddr, kind,
		      kind == TR_PAGE_IO ? 0 : (uint32_t)(pa >> TR_PAGE_SHIFT), nid);
}

void trace_insns(unsigned int vi, uint64_t n)
{
	if (vi < (unsigned int)nr_tw)
		tw[vi].insns += n;
}

void trace_marker(unsigned int vi, unsigned int cmd, uint32_t num)
{
	struct tw_vcpu *t;

	if (!trace_on || vi >= (unsigned int)nr_tw)
		return;
	t = &tw[vi];
	stamp(t);
	tr_writer_marker(&t->w, cmd, num, (uint32_t)(now_ns() / 1000));
	/* The next access starts with the time again. */
	t->since = 0;
}

static void trace_path(char *buf, size_t size, int i)
{
	snprintf(buf, size, "%s.%d.%d%s", topt.prefix, nr_tw, i,
		 tr_compress_suffix(topt.compress));
}

int trace_close(void)
{
	int i, bad = 0;

	if (!trace_on)
		return 0;
	for (i = 0; i < nr_tw; i++) {
		struct tw_vcpu *t = &tw[i];
		char path[4096];
		struct stat st;

		if (!t->open)
			continue;
		t->open = 0;
		t->mems = t->w.mems;
		if (bad) {
			tr_writer_abort(&t->w);
			continue;
		}
		if (tr_writer_close(&t->w, 1, (uint32_t)(now_ns() / 1000))) {
			fprintf(stderr, PFX "cannot write the trace of vCPU %d: %s\n",
				i, strerror(errno));
			bad = 1;
			continue;
		}
		trace_path(path, sizeof(path), i);
		if (!stat(path, &st))
			t->bytes = st.st_size;
	}
	if (bad) {
		/* A set with a thread missing is no trace: remove it whole. */
		for (i = 0; i < nr_tw; i++) {
			char path[4096];

			trace_path(path, sizeof(path), i);
			unlink(path);
		}
		return -1;
	}
	return 0;
}

void trace_summary(FILE *f)
{
	int i;

	if (!trace_on || !f)
		return;
	fprintf(f, "trace %s compress %s code %s\n", topt.prefix,
		tr_compress_name(topt.compress), topt.code ? "on" : "off");
	for (i = 0; i < nr_tw; i++)
		if (tw[i].mems)
			fprintf(f, "trace vcpu %d accesses %" PRIu64 " bytes %" PRIu64 "\n",
				i, tw[i].mems, tw[i].bytes);
}
