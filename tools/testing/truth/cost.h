/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The cost of a feed, counted exactly by the refcnt-truth plugin: the
 * guest instructions each vCPU runs from the entry of one of a set of
 * kernel functions (a feed's overflow handler, the threshold interrupt)
 * until that call returns, callees and any interrupt taken meanwhile
 * included (cost.c). The guest names the functions at run time
 * (truth-mark cost ADDR..., from /proc/kallsyms), so that nothing in
 * refcnt.ko marks its own code for the rig.
 */
#ifndef TRUTH_COST_H
#define TRUTH_COST_H

#include <stdint.h>
#include <stdio.h>

struct insn_info;
struct tb_info;

/* The markers' SIB bytes (truth-mark.h): a kernel function, a user one. */
#define COST_MARK_SIB		0xe8
#define COST_MARK_USER_SIB	0xe9

/* What an instruction is to the cost counter (struct insn_info's cost). */
#define COST_CALL		0x1	/* pushes a return address */
#define COST_RET		0x2	/* pops one */

/* The COST_* flags of the instruction at d (size bytes). */
unsigned int cost_insn_flags(const uint8_t *d, size_t size);
/* Per-vCPU state for nr vCPUs: 0, or -1 out of memory. */
int cost_init(int nr);
/*
 * A cost mark: a kernel function at 0xffffffff00000000 | low, or with
 * user a function at low (below 4 GiB); 0 forgets all.
 */
void cost_mark(uint32_t low, int user);
/* vCPU vi starts block tb; window: its instructions count; muted: hub drain. */
void cost_block(unsigned int vi, const struct tb_info *tb, int window,
		int muted);
/* A memory access of vCPU vi by instruction ii (before any filtering). */
void cost_mem(unsigned int vi, const struct insn_info *ii, uint64_t vaddr,
	      int store);
/* " cost_window N cost_muted N cost_calls N cost_open N" of vCPU vi. */
void cost_print(FILE *f, unsigned int vi);
/* Zero the window's counts (a dump). */
void cost_reset_window(void);

#endif
