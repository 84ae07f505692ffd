// SPDX-License-Identifier: GPL-2.0
/*
 * hub-pmu: program the hub device's emulated PMU from a shell (the guest
 * half of make accuracy's PMU feeds).
 *
 *   hub-pmu refs|refs-user|off
 *   hub-pmu pebs|pebs-ldlat|ibs PERIOD
 *
 * refs: the plain reference stream on (the hub feed), the PMU off;
 * refs-user: only its user-mode references (what counting sessions
 * take: tools/testing/papi-check).
 * off: both off. pebs: every PERIOD-th user-mode load and store;
 * pebs-ldlat: only the loads that miss the LLC model (needs
 * refcnt-vm --truth-llc), and every PERIOD-th store; ibs: every
 * PERIOD-th op, kernel-mode samples dropped as the kernel's software
 * filter does. The plain references are off in the PMU modes.
 *
 * Writes the control block (struct refcnt_hub_control), its filters
 * cleared (tools/testing/truth/hub-filter.c sets them), waits until a
 * vCPU took it and prints the period in force ("period N"; IBS rounds
 * down to a multiple of 16). Exit 0, 1 refused (period 0), 2 usage, 3 no
 * device or no vCPU took it within a second.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/refcnt_hub.h>

#include "hub-map.h"

int main(int argc, char **argv)
{
	uint32_t refs = 0, mode = REFCNT_HUB_PMU_OFF, period = 0, flags = 0;
	struct refcnt_hub_control *c;
	unsigned char *base;
	size_t size;
	uint32_t seq;
	int k;

	if (argc == 2 && !strcmp(argv[1], "refs")) {
		refs = REFCNT_HUB_REFS_ALL;
	} else if (argc == 2 && !strcmp(argv[1], "refs-user")) {
		refs = REFCNT_HUB_REFS_USER;
	} else if (argc == 2 && !strcmp(argv[1], "off")) {
		;
	} else if (argc == 3 && (!strcmp(argv[1], "pebs") ||
				 !strcmp(argv[1], "pebs-ldlat"))) {
		mode = REFCNT_HUB_PMU_PEBS;
		flags = REFCNT_HUB_PMU_STORES | REFCNT_HUB_PMU_EXCLUDE_KERNEL;
		if (!strcmp(argv[1], "pebs-ldlat"))
			flags |= REFCNT_HUB_PMU_LDLAT;
	} else if (argc == 3 && !strcmp(argv[1], "ibs")) {
		mode = REFCNT_HUB_PMU_IBS;
		flags = REFCNT_HUB_PMU_EXCLUDE_KERNEL;
	} else {
		fprintf(stderr, "usage: hub-pmu refs|refs-user|off|pebs PERIOD|pebs-ldlat PERIOD|ibs PERIOD\n");
		return 2;
	}
	if (mode != REFCNT_HUB_PMU_OFF)
		period = strtoul(argv[2], NULL, 0);
	base = hub_map(1, &size);
	if (!base) {
		fprintf(stderr, "hub-pmu: no hub device (refcnt-vm --hub)\n");
		return 3;
	}
	c = (void *)(base + REFCNT_HUB_CONTROL);
	seq = c->seq + 1;
	c->refs = refs;
	c->pmu_mode = mode;
	c->pmu_period = period;
	c->pmu_flags = flags;
	c->data_start = 0;
	c->data_end = 0;
	c->ip_start = 0;
	c->ip_end = 0;
	__atomic_store_n(&c->seq, seq, __ATOMIC_RELEASE);
	for (k = 0; k < 1000; k++) {
		if (__atomic_load_n(&c->seq_applied, __ATOMIC_ACQUIRE) == seq) {
			printf("period %u\n", c->pmu_applied);
			return mode != REFCNT_HUB_PMU_OFF && !c->pmu_applied;
		}
		usleep(1000);
	}
	fprintf(stderr, "hub-pmu: no vCPU took the setting\n");
	return 3;
}
