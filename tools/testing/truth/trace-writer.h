/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The refcnt-truth plugin's traces: one per vCPU, in the refcnt trace
 * format (tools/src/trace/trace-format.h), of every reference made inside
 * the truth's windows, with the window marks as marker records. What
 * refcnt-truth.c calls; see trace-writer.c.
 */
#ifndef TRACE_WRITER_H
#define TRACE_WRITER_H

#include <stdint.h>
#include <stdio.h>

#include <qemu-plugin.h>

#include "trace-format.h"

/* Set by trace_parse_opt(): traces are asked for (trace=PREFIX). */
extern int trace_on;

/* trace_ref()'s pa when the reference is not to RAM of a node. */
#define TRACE_PA_IO	(UINT64_MAX - 1)	/* MMIO */
#define TRACE_PA_OTHER	UINT64_MAX		/* RAM of no node (ROM) */

/* The machine's RAM: node id and guest-physical range, as the truth has it. */
struct trace_ram {
	int nid;
	uint64_t base, size;
};

/* KEY=VALUE of the trace options: 1 if not ours, 0 done, -1 bad. */
int trace_parse_opt(const char *key, const char *v);
/*
 * Open one trace per vCPU (vcpu_nid[i]: node id of vCPU i, -1 unknown):
 * 0, or -1 with the cause printed. tracing(vi) says whether vCPU vi's
 * references are traced now (the truth's window), for the code records.
 */
int trace_install(int nr_vcpus, const int *vcpu_nid, const struct trace_ram *ram,
		  int nr_ram, int (*tracing)(unsigned int vi));
/* The mem callback's udata for the instruction at d (its register kind). */
void *trace_insn_udata(const void *d, size_t size);
/* Register the code records' callback on a translated block. */
void trace_tb(struct qemu_plugin_tb *tb);
/* One reference of vCPU vi inside a window (pa guest-physical or TRACE_PA_*). */
void trace_ref(unsigned int vi, qemu_plugin_meminfo_t info, uint64_t vaddr,
	       uint64_t pa, void *udata);
/* Instructions vCPU vi executed (its clock). */
void trace_insns(unsigned int vi, uint64_t n);
/* A marker (TR_MARK_* command, user number) made by vCPU vi. */
void trace_marker(unsigned int vi, unsigned int cmd, uint32_t num);
/* End every trace: 0, or -1 (printed; the traces are removed). */
int trace_close(void);
/* After trace_close(): per vCPU, accesses and bytes, for the truth summary. */
void trace_summary(FILE *f);

#endif
