// SPDX-License-Identifier: GPL-2.0
/*
 * The emulated PMU of the refcnt-truth plugin (pmu-emu.h): what a
 * precise memory-sampling PMU would give the guest, from the references
 * the plugin sees, per vCPU and without locks (each vCPU thread owns its
 * state).
 *
 * PEBS-like: every Nth load retired (with PMU_LDLAT only the loads that
 * miss the plugin's LLC model, as a load-latency threshold selects the
 * loads that went beyond the caches), and with PMU_STORES every Nth store
 * on a countdown of its own. With PMU_EXCLUDE_KERNEL kernel-mode events
 * are not counted at all, as exclude_kernel programs the counter.
 *
 * IBS-like: every Nth instruction retired (one op each here), whatever
 * it did: a sample of an op that loads or stores has the data address,
 * the physical address (IbsDcPhysAd) and the data source; one of an op
 * without a memory access has only its IP. N is a multiple of 16
 * (IbsOpMaxCnt counts in sixteens). All modes count; PMU_EXCLUDE_KERNEL
 * drops the kernel-mode samples after they are taken, as the kernel's
 * software filter does.
 *
 * Which instruction is the Nth is known when its block starts (the block
 * callback): the block's sampled instructions are armed, their first
 * memory access (the mem callback) takes the sample, and those that made
 * none by the next armed one, or by the end of the block, are ops
 * without an address.
 */
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmu-emu.h"

struct pmu_vcpu {
	uint32_t mode, period, flags;
	uint64_t left_loads, left_stores, left_ops;	/* events to the next */
	const struct tb_info *tb;	/* IBS: the block whose ops are armed */
	uint32_t next;			/* its next armed op, >= n when none */
	uint64_t samples[4];		/* by kind */
	uint64_t noaddr, filtered;	/* IBS: ops without address; dropped */
} __attribute__((aligned(64)));

static struct pmu_vcpu *pv;
static int pmu_nr, pmu_llc;
static pmu_emit_fn pmu_emit;

int pmu_init(int nr_vcpus, int llc, pmu_emit_fn emit)
{
	pv = aligned_alloc(64, sizeof(*pv) * nr_vcpus);
	if (!pv)
		return -1;
	memset(pv, 0, sizeof(*pv) * nr_vcpus);
	pmu_nr = nr_vcpus;
	pmu_llc = llc;
	pmu_emit = emit;
	return 0;
}

uint32_t pmu_program(unsigned int vi, uint32_t mode, uint32_t period,
		     uint32_t flags)
{
	struct pmu_vcpu *v;

	if (vi >= (unsigned int)pmu_nr)
		return 0;
	v = &pv[vi];
	if (mode == PMU_IBS)
		period -= period % PMU_IBS_PERIOD_UNIT;
	if ((mode != PMU_PEBS && mode != PMU_IBS) || !period ||
	    flags & ~(PMU_LDLAT | PMU_STORES | PMU_EXCLUDE_KERNEL) ||
	    (mode == PMU_IBS && flags & (PMU_LDLAT | PMU_STORES)) ||
	    (flags & PMU_LDLAT && !pmu_llc)) {
		v->mode = PMU_OFF;
		return 0;
	}
	v->mode = mode;
	v->period = period;
	v->flags = flags;
	v->left_loads = v->left_stores = v->left_ops = period;
	v->tb = NULL;
	return period;
}

/* union perf_mem_data_src of an access, from the node map and the LLC. */
static uint64_t data_src(int addr, int store, int miss, int remote)
{
	union perf_mem_data_src d = { .val = 0 };

	d.mem_op = !addr ? PERF_MEM_OP_NA :
		   store ? PERF_MEM_OP_STORE : PERF_MEM_OP_LOAD;
	d.mem_snoop = PERF_MEM_SNOOP_NA;
	d.mem_lock = PERF_MEM_LOCK_NA;
	d.mem_dtlb = PERF_MEM_TLB_NA;
	if (!addr || miss < 0) {
		d.mem_lvl = PERF_MEM_LVL_NA;
	} else if (!miss) {
		d.mem_lvl = PERF_MEM_LVL_L3 | PERF_MEM_LVL_HIT;
		d.mem_lvl_num = PERF_MEM_LVLNUM_L3;
	} else {
		d.mem_lvl = (remote ? PERF_MEM_LVL_REM_RAM1 :
				      PERF_MEM_LVL_LOC_RAM) | PERF_MEM_LVL_HIT;
		d.mem_lvl_num = PERF_MEM_LVLNUM_RAM;
		d.mem_remote = remote ? PERF_MEM_REMOTE_REMOTE : 0;
	}
	return d.val;
}

static void emit(unsigned int vi, struct pmu_vcpu *v, uint16_t kind,
		 const struct insn_info *ii, uint64_t vaddr, uint64_t pa,
		 int store, int miss, int remote, int addr)
{
	struct pmu_sample s = {
		.ip = ii->ip,
		.weight = v->period,
		.kind = kind,
	};

	if (ii->ip < PMU_KERNEL_START)
		s.flags |= PMU_S_USER;
	else if (v->flags & PMU_EXCLUDE_KERNEL) {
		/* IBS: taken, then dropped by the software filter. */
		v->filtered++;
		return;
	}
	if (addr) {
		s.vaddr = vaddr;
		s.paddr = pa == UINT64_MAX ? 0 : pa;
		s.flags |= PMU_S_ADDR | (store ? PMU_S_STORE : 0) |
			   (miss > 0 ? PMU_S_MISS : 0) |
			   (kind == PMU_SAMPLE_OP && s.paddr ? PMU_S_PHYS : 0);
	} else {
		v->noaddr++;
	}
	s.data_src = data_src(addr, store, miss, remote);
	v->samples[kind]++;
	pmu_emit(vi, &s);
}

/* IBS: the armed ops of the block up to @upto made no access. */
static void flush(unsigned int vi, struct pmu_vcpu *v, uint32_t upto)
{
	const struct tb_info *tb = v->tb;

	for (; v->next < upto && v->next < tb->n; v->next += v->period)
		emit(vi, v, PMU_SAMPLE_OP, &tb->insn[v->next], 0, 0, 0, -1, 0,
		     0);
}

void pmu_access(unsigned int vi, const struct insn_info *ii, uint64_t vaddr,
		uint64_t pa, int store, int miss, int remote)
{
	struct pmu_vcpu *v;

	if (vi >= (unsigned int)pmu_nr || !pv[vi].mode)
		return;
	v = &pv[vi];
	if (v->mode == PMU_IBS) {
		if (ii->tb != v->tb)
			return;
		flush(vi, v, ii->idx);
		if (v->next == ii->idx) {
			emit(vi, v, PMU_SAMPLE_OP, ii, vaddr, pa, store, miss,
			     remote, 1);
			v->next += v->period;
		}
		return;
	}
	if (ii->ip >= PMU_KERNEL_START && v->flags & PMU_EXCLUDE_KERNEL)
		return;
	if (store) {
		if (!(v->flags & PMU_STORES) || --v->left_stores)
			return;
		v->left_stores = v->period;
		emit(vi, v, PMU_SAMPLE_STORE, ii, vaddr, pa, 1, miss, remote, 1);
		return;
	}
	if ((v->flags & PMU_LDLAT && miss <= 0) || --v->left_loads)
		return;
	v->left_loads = v->period;
	emit(vi, v, PMU_SAMPLE_LOAD, ii, vaddr, pa, 0, miss, remote, 1);
}

void pmu_block(unsigned int vi, const struct tb_info *tb)
{
	struct pmu_vcpu *v;
	uint64_t last;

	if (vi >= (unsigned int)pmu_nr || pv[vi].mode != PMU_IBS)
		return;
	v = &pv[vi];
	if (v->tb)
		flush(vi, v, v->tb->n);
	v->tb = NULL;
	if (v->left_ops > tb->n) {
		v->left_ops -= tb->n;
		return;
	}
	/* Arm the block's sampled ops: left_ops - 1, then every period. */
	v->tb = tb;
	v->next = v->left_ops - 1;
	last = v->next + (tb->n - 1 - v->next) / v->period * v->period;
	v->left_ops = v->period - (tb->n - 1 - last);
}

void pmu_summary(void *f)
{
	int i;

	if (!pv || !f)
		return;
	for (i = 0; i < pmu_nr; i++) {
		const struct pmu_vcpu *v = &pv[i];

		if (!v->samples[1] && !v->samples[2] && !v->samples[3] &&
		    !v->filtered)
			continue;
		fprintf(f, "pmu vcpu %d mode %s period %" PRIu32
			" loads %" PRIu64 " stores %" PRIu64 " ops %" PRIu64
			" noaddr %" PRIu64 " filtered %" PRIu64 "\n", i,
			v->mode == PMU_IBS ? "ibs" : v->mode == PMU_PEBS ?
			"pebs" : "off", v->period, v->samples[PMU_SAMPLE_LOAD],
			v->samples[PMU_SAMPLE_STORE], v->samples[PMU_SAMPLE_OP],
			v->noaddr, v->filtered);
	}
}
