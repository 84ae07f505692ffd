/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Writing one thread's trace in the refcnt trace format (trace-format.h):
 * the encoder (high address bits, the page table of physical-page
 * records, the call records) and a buffer in front of a trace-io sink.
 * Used by the refcnt-truth plugin (one writer per vCPU, each used by its
 * vCPU's thread only) and by refcnt-trace make. The file is written as
 * PATH.tmp and renamed to PATH when it is closed whole.
 */
#ifndef REFCNT_TRACE_WRITE_H
#define REFCNT_TRACE_WRITE_H

#include <stdint.h>

#include "trace-format.h"
#include "trace-io.h"

struct tr_pt_entry {
	uint64_t vpn;		/* + 1; 0: empty */
	uint32_t frame;
	uint32_t kind_node;	/* the 0x22 record's f1 */
};

struct tr_writer {
	struct tr_sink *sink;
	char *path, *tmp;
	unsigned char *buf;
	size_t n, cap;		/* bytes in buf, its size */
	uint64_t vahi;
	struct tr_pt_entry pt[TR_PT_SIZE];
	uint64_t mems;		/* memory records written */
	uint64_t records;	/* all records */
	uint32_t lost;		/* memory records not written (a write failed) */
	unsigned int flags;	/* TR_HAS_* */
	int err;		/* errno of the first failure, 0 */
};

/*
 * Start a trace of thread (of threads) on node (-1: unknown) into
 * path + the compression's suffix: 0, or -1 with errno set. now_us is the
 * start record's time stamp.
 */
int tr_writer_open(struct tr_writer *w, const char *path, enum tr_compress c,
		   int level, int thread, int threads, int node,
		   unsigned int flags, uint32_t now_us);
/*
 * One memory access. kind TR_PAGE_* with frame and nid for a trace with
 * TR_HAS_PHYS (ignored otherwise).
 */
void tr_writer_mem(struct tr_writer *w, unsigned int store, unsigned int bytes,
		   unsigned int reg, uint64_t vaddr, unsigned int kind,
		   uint32_t frame, unsigned int nid);
void tr_writer_time(struct tr_writer *w, uint64_t ns);
void tr_writer_clock(struct tr_writer *w, uint64_t insns);
void tr_writer_code(struct tr_writer *w, uint64_t vaddr, unsigned int bytes,
		    unsigned int insns);
void tr_writer_marker(struct tr_writer *w, unsigned int cmd, uint32_t num,
		      uint32_t now_us);
/* A simple record as it is (refcnt-trace make's raw lines, for tests). */
void tr_writer_raw(struct tr_writer *w, uint32_t f1, uint32_t f2);
/*
 * The end-of-trace record (unless !end), flush, close, rename: 0, or -1
 * with errno set (the first failure); the file is removed then.
 */
int tr_writer_close(struct tr_writer *w, int end, uint32_t now_us);
/* Drop the trace: close and remove what was written. */
void tr_writer_abort(struct tr_writer *w);
/* Compressed bytes written so far. */
uint64_t tr_writer_file_bytes(const struct tr_writer *w);

#endif /* REFCNT_TRACE_WRITE_H */
