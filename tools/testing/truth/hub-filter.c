// SPDX-License-Identifier: GPL-2.0
/*
 * hub_filter_session(): before a counting session opens, narrow the hub
 * device's reference stream to the records the session can take, so
 * that a drain under TCG handles thousands of records, not the million
 * a PAPI program's window makes at period 1 (tools/testing/papi-check
 * --filter). Only with REFCNT_HUB_FILTER=1 in the environment, as root,
 * in a guest with the hub (refcnt-vm --hub); otherwise it does nothing.
 *
 * The filter is the hull of the session's data ranges, a page wider on
 * each side, so that the session itself still has to leave out the
 * references of the pages beside its range; with no data range, the
 * hull of its instruction ranges (exactly: a wider one would take in
 * the code beside, whose references can outnumber the range's). Only
 * user-mode references are reported, as sessions take no others. The
 * filter stays until the next session's, or hub-pmu's, setting:
 * between sessions the device reports little. A session without ranges
 * takes every user-mode reference of its thread: the stream is then
 * opened whole, and hub_filter_off() should close it when the session
 * ends (hub-filter-wrap.c does), or the next session's start drains a
 * ring of what ran in between.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/refcnt_hub.h>
#include <refcnt/refcnt.h>

#include "hub-filter.h"
#include "hub-map.h"

#define HUB_FILTER_MARGIN	4096

/* The hull of n ranges: [*start, *end), or 0 0 if there are none. */
static void hull(const struct rcb_count_range *r, size_t n,
		 uint64_t *start, uint64_t *end)
{
	size_t k;

	*start = n ? UINT64_MAX : 0;
	*end = 0;
	for (k = 0; k < n; k++) {
		if (r[k].start < *start)
			*start = r[k].start;
		if (r[k].start + r[k].len > *end)
			*end = r[k].start + r[k].len;
	}
}

/* The control block, when REFCNT_HUB_FILTER=1 and there is a device. */
static struct refcnt_hub_control *control(void)
{
	static unsigned char *base;
	const char *on = getenv("REFCNT_HUB_FILTER");
	size_t size;

	if (!on || strcmp(on, "1"))
		return NULL;
	if (!base)
		base = hub_map(1, &size);
	if (!base) {
		fprintf(stderr, "hub-filter: no hub device: the stream stays as it is\n");
		return NULL;
	}
	return (void *)(base + REFCNT_HUB_CONTROL);
}

/* Write the stream's setting, and wait until this vCPU took it. */
static void program(struct refcnt_hub_control *c, uint32_t refs, uint64_t ds,
		    uint64_t de, uint64_t is, uint64_t ie)
{
	uint32_t seq = c->seq + 1;
	int k;

	c->refs = refs;
	c->data_start = ds;
	c->data_end = de;
	c->ip_start = is;
	c->ip_end = ie;
	__atomic_store_n(&c->seq, seq, __ATOMIC_RELEASE);
	/* This vCPU takes it at its next reference: the load below. */
	for (k = 0; k < 1000; k++) {
		if (__atomic_load_n(&c->seq_applied, __ATOMIC_ACQUIRE) == seq)
			return;
		usleep(1000);
	}
	fprintf(stderr, "hub-filter: no vCPU took the filter\n");
}

/**
 * hub_filter_session() - narrow the stream to a session about to open
 * @attr: the session's attributes
 *
 * Return: 1 if the stream is now open to every user-mode reference (a
 * session without ranges), else 0.
 */
int hub_filter_session(const struct refcnt_count_attr *attr)
{
	struct refcnt_hub_control *c = control();
	uint64_t ds, de, is = 0, ie = 0;

	if (!c)
		return 0;
	hull(attr->data_ranges, attr->nr_data_ranges, &ds, &de);
	if (de) {
		ds = ds > HUB_FILTER_MARGIN ? ds - HUB_FILTER_MARGIN : 0;
		de += HUB_FILTER_MARGIN;
	} else {
		hull(attr->instr_ranges, attr->nr_instr_ranges, &is, &ie);
	}
	program(c, REFCNT_HUB_REFS_USER, ds, de, is, ie);
	return !de && !ie;
}

/* hub_filter_off() - no references at all until the next session's filter */
void hub_filter_off(void)
{
	struct refcnt_hub_control *c = control();

	if (c)
		program(c, REFCNT_HUB_REFS_OFF, 0, 0, 0, 0);
}
