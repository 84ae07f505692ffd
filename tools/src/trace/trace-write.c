// SPDX-License-Identifier: GPL-2.0
/*
 * The refcnt trace encoder (trace-write.h): records into a buffer,
 * written through a trace-io sink when it fills.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace-write.h"

#define BUF_BYTES	(64 * 1024)

static void flush(struct tr_writer *w)
{
	if (w->n && !w->err && tr_sink_write(w->sink, w->buf, w->n))
		w->err = errno ? errno : EIO;
	w->n = 0;
}

static inline void put(struct tr_writer *w, uint32_t f1, uint32_t f2)
{
	if (w->n + TR_RECORD_SIZE > w->cap)
		flush(w);
	tr_put(w->buf + w->n, f1, f2);
	w->n += TR_RECORD_SIZE;
	w->records++;
}

static void call(struct tr_writer *w, unsigned int type, const uint32_t v[6])
{
	int i;

	for (i = 0; i < TR_CALL_RECORDS; i++)
		put(w, tr_call_f1(type, i), v[i]);
}

int tr_writer_open(struct tr_writer *w, const char *path, enum tr_compress c,
		   int level, int thread, int threads, int node,
		   unsigned int flags, uint32_t now_us)
{
	uint32_t v[6] = { now_us, now_us, TR_MAGIC,
			  TR_VERSION | (uint32_t)thread << 8,
			  node < 0 ? TR_NO_NODE : (uint32_t)node,
			  (flags & TR_HAS_MASK) | (uint32_t)threads << 16 };

	memset(w, 0, sizeof(*w));
	w->flags = flags;
	w->cap = BUF_BYTES;
	if (asprintf(&w->path, "%s%s", path, tr_compress_suffix(c)) < 0 ||
	    asprintf(&w->tmp, "%s.tmp", w->path) < 0 ||
	    !(w->buf = malloc(w->cap))) {
		errno = ENOMEM;
		return -1;
	}
	w->sink = tr_sink_open(w->tmp, c, level);
	if (!w->sink)
		return -1;
	call(w, TR_CALL_START, v);
	return 0;
}

void tr_writer_mem(struct tr_writer *w, unsigned int store, unsigned int bytes,
		   unsigned int reg, uint64_t vaddr, unsigned int kind,
		   uint32_t frame, unsigned int nid)
{
	if (w->flags & TR_HAS_PHYS) {
		uint64_t vpn = vaddr >> TR_PAGE_SHIFT;
		struct tr_pt_entry *e = &w->pt[vpn % TR_PT_SIZE];
		uint32_t f1 = tr_page_f1(kind, kind == TR_PAGE_RAM ? nid : 0);

		if (kind == TR_PAGE_IO)
			frame = 0;
		/*
		 * An entry that holds the page gives the reader the high
		 * address bits too: no 0x21 record then.
		 */
		if (e->vpn != vpn + 1 || e->frame != frame || e->kind_node != f1) {
			if (vaddr >> 32 != w->vahi) {
				w->vahi = vaddr >> 32;
				put(w, tr_ext_f1(TR_EXT_VAHI, 0), (uint32_t)w->vahi);
			}
			e->vpn = vpn + 1;
			e->frame = frame;
			e->kind_node = f1;
			put(w, f1, frame);
		}
	} else if (vaddr >> 32 != w->vahi) {
		w->vahi = vaddr >> 32;
		put(w, tr_ext_f1(TR_EXT_VAHI, 0), (uint32_t)w->vahi);
	}
	put(w, tr_mem_f1(store, tr_size_code(bytes), reg), (uint32_t)vaddr);
	w->mems++;
}

void tr_writer_time(struct tr_writer *w, uint64_t ns)
{
	if (ns > TR_MAX52)
		ns = TR_MAX52;
	put(w, tr_ext_f1(TR_EXT_TIME, ns >> 32), (uint32_t)ns);
}

void tr_writer_clock(struct tr_writer *w, uint64_t insns)
{
	if (insns > TR_MAX52)
		insns = TR_MAX52;
	put(w, tr_ext_f1(TR_EXT_CLOCK, insns >> 32), (uint32_t)insns);
}

void tr_writer_code(struct tr_writer *w, uint64_t vaddr, unsigned int bytes,
		    unsigned int insns)
{
	if (!bytes || !insns)
		return;
	if (bytes > 0xfff)
		bytes = 0xfff;
	if (insns > 0xff)
		insns = 0xff;
	if (vaddr >> 32 != w->vahi) {
		w->vahi = vaddr >> 32;
		put(w, tr_ext_f1(TR_EXT_VAHI, 0), (uint32_t)w->vahi);
	}
	put(w, tr_code_f1(insns, bytes), (uint32_t)vaddr);
}

void tr_writer_marker(struct tr_writer *w, unsigned int cmd, uint32_t num,
		      uint32_t now_us)
{
	uint32_t v[6] = { now_us, now_us, cmd, num, 0, 0 };

	call(w, TR_CALL_MARKER, v);
}

void tr_writer_raw(struct tr_writer *w, uint32_t f1, uint32_t f2)
{
	put(w, f1, f2);
	if (f1 >> 12 == 0)
		w->mems++;
}

static void release(struct tr_writer *w)
{
	free(w->buf);
	free(w->path);
	free(w->tmp);
	w->buf = NULL;
	w->path = w->tmp = NULL;
	w->sink = NULL;
}

int tr_writer_close(struct tr_writer *w, int end, uint32_t now_us)
{
	int err;

	if (end) {
		uint32_t v[6] = { now_us, now_us, (uint32_t)w->mems,
				  (uint32_t)(w->mems >> 32), w->lost, 0 };

		call(w, TR_CALL_END, v);
	}
	flush(w);
	if (tr_sink_close(w->sink) && !w->err)
		w->err = errno;
	if (!w->err && rename(w->tmp, w->path))
		w->err = errno;
	err = w->err;
	if (err)
		unlink(w->tmp);
	release(w);
	errno = err;
	return err ? -1 : 0;
}

void tr_writer_abort(struct tr_writer *w)
{
	if (w->sink)
		tr_sink_close(w->sink);
	if (w->tmp)
		unlink(w->tmp);
	release(w);
}

uint64_t tr_writer_file_bytes(const struct tr_writer *w)
{
	return w->sink ? tr_sink_bytes(w->sink) : 0;
}
