/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The hub device's producer inside the refcnt-truth plugin: what
 * refcnt-truth.c calls.  See hub-producer.c and
 * tools/testing/kmod/uapi/linux/refcnt_hub.h.
 */
#ifndef HUB_PRODUCER_H
#define HUB_PRODUCER_H

#include <stdint.h>

/* Set by hub_parse_opt(): the producer is asked for. */
extern int hub_on;
/* Set by hub_parse_opt(): only LLC misses are reported. */
extern int hub_misses;

/* KEY=VALUE of the hub's options: 1 if not ours, 0 done, -1 bad. */
int hub_parse_opt(const char *key, const char *v);
struct insn_info;
struct tb_info;

/*
 * Map the region and write its header: 0, or -1 with the cause printed.
 * llc: the plugin models the LLC (PMU latency mode, data sources).
 */
int hub_install(int nr_vcpus, const int *vcpu_nid, int nr_vcpu_nid,
		uint64_t granularity, int llc);
/*
 * Whether vCPU vi's references go to the hub (its stream or its PMU on),
 * after taking a new setting of the control block: when neither is, its
 * references cost the plugin nothing more (guest: hub-pmu off).
 */
int hub_wants(unsigned int vi);
/*
 * One reference of vCPU vi (hub_wants() said yes) by instruction ii, which missed the LLC or not
 * (-1: no model), a store or a load, to a page of another node or not.
 */
void hub_ref(unsigned int vi, const struct insn_info *ii, uint64_t pa,
	     uint64_t vaddr, int store, int miss, int remote);
/* Does vCPU vi need the LLC model's verdict on its references? */
int hub_wants_llc(unsigned int vi);
/* vCPU vi starts a translation block (the emulated PMU counts ops). */
void hub_block(unsigned int vi, const struct tb_info *tb);
/* The insn at d (size bytes): 1 mute, 2 unmute, 0 neither. */
int hub_mark(const void *d, size_t size);
void hub_mark_cb(unsigned int vi, void *udata);
/* Guest instructions executed while muted (draining); 1 if muted. */
int hub_insns(unsigned int vi, uint64_t n);
/* The producer's totals, for the truth summary (FILE may be NULL). */
void hub_summary(FILE *f);

#endif
