/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The emulated PMU of the refcnt-truth plugin: PEBS- and IBS-shaped
 * sampling per vCPU, from the references the plugin sees (pmu-emu.c).
 * The hub producer (hub-producer.c) reads what the guest programmed from
 * the device, hands every access and every translation block here, and
 * writes the samples into the vCPU's ring.
 */
#ifndef PMU_EMU_H
#define PMU_EMU_H

#include <stdint.h>

struct tb_info;

/* One guest instruction, as translated: the mem and insn callbacks' udata. */
struct insn_info {
	uint64_t ip;
	const struct tb_info *tb;
	uint32_t idx;		/* in its block */
	uint32_t cost;		/* COST_* (cost.h): a call, a ret */
	uint32_t string;	/* a rep-prefixed string instruction */
	void *trace;		/* the trace writer's: trace_insn_udata() */
};

/* A translation block's instructions: the block callback's udata. */
struct tb_info {
	uint32_t n;
	struct insn_info insn[];
};

/* Guest-virtual addresses from here up run in kernel mode (x86-64). */
#define PMU_KERNEL_START	(1ULL << 47)

/* Modes of the emulated PMU (what the guest programs). */
enum pmu_mode {
	PMU_OFF,
	PMU_PEBS,	/* every Nth load (and, with PMU_STORES, store) */
	PMU_IBS,	/* every Nth op: loads, stores, ops without an address */
};

/* Flags of the emulated PMU. */
#define PMU_LDLAT		0x1	/* PEBS: count only loads missing the LLC */
#define PMU_STORES		0x2	/* PEBS: sample every Nth store too */
#define PMU_EXCLUDE_KERNEL	0x4	/* PEBS: count user mode only; IBS:
					 * count all, drop kernel samples */

/* IBS counts ops in units of 16: its period is a multiple of 16. */
#define PMU_IBS_PERIOD_UNIT	16

/* Kinds of samples. */
enum pmu_kind {
	PMU_SAMPLE_LOAD = 1,	/* PEBS load */
	PMU_SAMPLE_STORE,	/* PEBS store */
	PMU_SAMPLE_OP,		/* IBS op (load, store or neither) */
};

/* Sample flags. */
#define PMU_S_USER	0x1	/* taken in user mode */
#define PMU_S_STORE	0x2	/* the access was a store */
#define PMU_S_ADDR	0x4	/* has a data address */
#define PMU_S_PHYS	0x8	/* the hardware gives the physical address (IBS) */
#define PMU_S_MISS	0x10	/* missed the LLC model */

/**
 * struct pmu_sample - one sample, as the hardware would give it
 * @paddr:	guest-physical data address (0 without an address); given
 *		even where the hardware gives none (PEBS), for the guest's
 *		drain, which does not run in the sampled task
 * @vaddr:	data address, 0 without one
 * @ip:		instruction pointer
 * @data_src:	union perf_mem_data_src: op, level, local or remote
 * @weight:	events the sample stands for: the period in force
 * @kind:	enum pmu_kind
 * @flags:	PMU_S_*
 */
struct pmu_sample {
	uint64_t paddr;
	uint64_t vaddr;
	uint64_t ip;
	uint64_t data_src;
	uint32_t weight;
	uint16_t kind;
	uint16_t flags;
};

/* Where samples go: the vCPU's ring. */
typedef void (*pmu_emit_fn)(unsigned int vi, const struct pmu_sample *s);

/* 0, or -1 without memory. @llc: the plugin models the LLC. */
int pmu_init(int nr_vcpus, int llc, pmu_emit_fn emit);
/*
 * What the guest programmed for vCPU @vi, checked: the period actually
 * used (IBS: rounded down to a multiple of 16), 0 when the PMU is off or
 * the setting is refused (ldlat without the LLC model, a bad mode).
 */
uint32_t pmu_program(unsigned int vi, uint32_t mode, uint32_t period,
		     uint32_t flags);
/*
 * One data access of vCPU @vi by instruction @ii. @pa: guest-physical, or
 * UINT64_MAX if not RAM; @miss: 1 missed the LLC, 0 hit, -1 no model;
 * @remote: the page is on another node than the vCPU's.
 */
void pmu_access(unsigned int vi, const struct insn_info *ii, uint64_t vaddr,
		uint64_t pa, int store, int miss, int remote);
/* vCPU @vi starts translation block @tb. */
void pmu_block(unsigned int vi, const struct tb_info *tb);
/* Totals for the truth summary (FILE *). */
void pmu_summary(void *f);

#endif
