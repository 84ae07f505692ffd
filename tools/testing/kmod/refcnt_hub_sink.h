/* SPDX-License-Identifier: GPL-2.0 */
/*
 * refcnt_hub's PMU sink: where the hub driver hands the emulated PMU's
 * records when another rig module takes them (the test PMU,
 * refcnt_testpmu.c), instead of its own "hubpmu" feed. The hub does not
 * link to that module (it is built only for kernels that export
 * perf_event_overflow()); that module links to the hub.
 */
#ifndef _REFCNT_HUB_SINK_H
#define _REFCNT_HUB_SINK_H

#include <uapi/linux/refcnt_hub.h>

/**
 * struct refcnt_hub_pmu_sink - a taker of the emulated PMU's records
 * @sample:	one PMU-mode record (kind REFCNT_HUB_REC_LOAD, _STORE or
 *		_OP) of Linux CPU @cpu's ring; called from the drain, with
 *		preemption off, in RCU read-side; @r is the device's memory:
 *		read each field once
 * @flush:	the drain's pass over CPU @cpu's ring is done
 */
struct refcnt_hub_pmu_sink {
	void (*sample)(int cpu, const struct refcnt_hub_record *r);
	void (*flush)(int cpu);
};

int refcnt_hub_pmu_sink_set(const struct refcnt_hub_pmu_sink *sink);
void refcnt_hub_pmu_sink_clear(const struct refcnt_hub_pmu_sink *sink);

#endif /* _REFCNT_HUB_SINK_H */
