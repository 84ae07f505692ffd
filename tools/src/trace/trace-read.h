/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading traces: one place for every analysis (refcnt-trace, -replay,
 * -sharing, -policy, -tdist, -conflicts). A trace set is one file per
 * thread, in the refcnt trace format (trace-format.h; plain, zstd or gzip)
 * or as valgrind lackey's text (--tool=lackey --trace-mem=yes), read as a
 * stream and merged into one sequence of events in time order. Every
 * error names the file and the record (or line) that is wrong.
 */
#ifndef REFCNT_TRACE_READ_H
#define REFCNT_TRACE_READ_H

#include <stddef.h>
#include <stdint.h>

#include "trace-format.h"
#include "trace-io.h"

#define TR_NO_PADDR	UINT64_MAX
#define TR_MAX_THREADS	256

enum tr_kind {
	TR_EV_MEM,	/* a load or a store */
	TR_EV_CODE,	/* a block of instructions executed */
	TR_EV_MARK,	/* a marker (smait_marker()) */
	TR_EV_BRANCH,	/* a SMAIT branch record (read, not interpreted) */
};

/**
 * struct tr_event - one event of a trace set
 * @kind:	enum tr_kind
 * @thread:	the trace it comes from (its thread, or vCPU, index)
 * @store:	TR_EV_MEM: 1 for a store, 0 for a load
 * @size:	TR_EV_MEM: bytes accessed; TR_EV_CODE: bytes of instructions
 * @reg:	TR_EV_MEM: TR_REG_*
 * @vaddr:	virtual address (TR_EV_MEM, TR_EV_CODE)
 * @paddr:	TR_EV_MEM: physical address, or TR_NO_PADDR
 * @page_kind:	TR_EV_MEM with @paddr: TR_PAGE_*
 * @node:	TR_EV_MEM: Linux node id of @paddr's memory, or -1
 * @insns:	TR_EV_CODE: instructions of the block
 * @cmd, @num:	TR_EV_MARK: command (TR_MARK_*) and the user's number
 * @time:	nanoseconds since the trace started (the last time record)
 * @clock:	instructions the thread executed (the last clock record)
 * @record:	index of the (first) record in its file, or line number
 */
struct tr_event {
	enum tr_kind kind;
	int thread;
	unsigned int store, size, reg;
	uint64_t vaddr, paddr;
	int page_kind, node;
	unsigned int insns;
	unsigned int cmd;
	uint32_t num;
	uint64_t time, clock;
	uint64_t record;
};

/* What the start of a trace says. */
struct tr_header {
	int thread;		/* thread (vCPU) index */
	int threads;		/* threads of the set it was written with */
	int node;		/* node id of the thread, -1 unknown */
	unsigned int flags;	/* TR_HAS_* */
	int lackey;		/* a lackey text trace */
	enum tr_compress compress;
};

struct tr_set;

/*
 * Open a trace set. Each of the n names is a file, or a prefix P whose
 * files are P.N.T[.zst|.gz] (N threads, T the thread: the plugin's and
 * SMAIT's naming). Lackey traces are recognised by their text. NULL on
 * error, printed with prog as "prog: FILE: cause".
 */
struct tr_set *tr_set_open(const char *prog, char *const *names, int n);
/* Threads of the set, and the header of thread t (NULL if none). */
int tr_set_threads(const struct tr_set *s);
const struct tr_header *tr_set_header(const struct tr_set *s, int t);
/* The file of thread t. */
const char *tr_set_path(const struct tr_set *s, int t);
/* Whether every trace of the set has TR_HAS_* flag f. */
int tr_set_has(const struct tr_set *s, unsigned int f);

/*
 * Print a progress line on stderr about once a second while reading
 * (mode 1: when stderr is a terminal, after the first second; 2: always,
 * from the first million events; 0: never). Default 1.
 */
void tr_set_progress(struct tr_set *s, int mode);

/*
 * The next event in time order (ties: one event of each thread in turn):
 * 1, 0 at the end of every trace (each complete and consistent), or -1
 * after an error, printed as "prog: FILE: record N: cause".
 */
int tr_set_next(struct tr_set *s, struct tr_event *ev);
/* Events and records read so far. */
uint64_t tr_set_events(const struct tr_set *s);
void tr_set_close(struct tr_set *s);

/* "load"/"store", register kind names ("fixed", "float", "none"). */
const char *tr_reg_name(unsigned int reg);
/* The name of a marker command, "stop-all" etc. */
const char *tr_mark_name(unsigned int cmd);

#endif /* REFCNT_TRACE_READ_H */
