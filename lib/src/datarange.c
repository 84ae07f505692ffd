// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * librefcnt: refcnt_data_range(), PAPI_DATA_ADDRESS-style totals of a
 * virtual range, and what they may be missing: the references lost to
 * pegging, and whether any feed was counting at all.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Callers allocate it: new fields come out of reserved[], never the end. */
_Static_assert(sizeof(struct refcnt_data_range) == 696,
	       "struct refcnt_data_range is ABI: its size must not change");

#define REFCNT_PARAMS	"/sys/module/refcnt/parameters"

/* One call's state besides the result. */
struct refcnt_data_ctx {
	struct refcnt_data_range *dr;
	struct refcnt_node **nodes;	/* by cnodeid, opened at first need */
	unsigned int nr_nodes;
	bool nodes_tried;
	bool lost_unknown;	/* a counted page's lost count was not read */
};

/* REFCNT_DATA_FEED_* of the feeds on now, or REFCNT_DATA_FEEDS_UNKNOWN. */
static uint32_t refcnt_data_feeds(void)
{
	static const struct {
		const char *param;
		uint32_t status;
	} feeds[] = {
		{ REFCNT_PARAMS "/fault_period", REFCNT_DATA_FEED_FAULT },
		{ REFCNT_PARAMS "/pebs_period", REFCNT_DATA_FEED_PEBS },
	};
	uint32_t status = 0;
	char buf[32];
	size_t i;

	for (i = 0; i < sizeof(feeds) / sizeof(feeds[0]); i++) {
		if (refcnt__read_file(feeds[i].param, buf, sizeof(buf)) < 0)
			return REFCNT_DATA_FEEDS_UNKNOWN;
		if (strtoul(buf, NULL, 0))
			status |= feeds[i].status;
	}
	return status;
}

/* Open every node device, indexed by cnodeid; failures leave holes. */
static void refcnt_data_open_nodes(struct refcnt_data_ctx *ctx)
{
	int n, m, i, *nids;

	ctx->nodes_tried = true;
	n = refcnt_nodes(NULL, 0);
	if (n <= 0)
		return;
	nids = calloc(n, sizeof(*nids));
	ctx->nodes = calloc(n, sizeof(*ctx->nodes));
	if (!nids || !ctx->nodes) {
		free(nids);
		return;
	}
	m = refcnt_nodes(nids, n);	/* a node may have gone meanwhile */
	if (m < n)
		n = m > 0 ? m : 0;
	ctx->nr_nodes = n;
	for (i = 0; i < n; i++) {
		struct refcnt_node *node = refcnt_node_open(nids[i], 0);
		unsigned int c;

		if (!node)
			continue;
		c = node->info.rcb_cnodeid;
		if (c < ctx->nr_nodes && !ctx->nodes[c])
			ctx->nodes[c] = node;
		else
			refcnt_node_close(node);
	}
	free(nids);
}

static void refcnt_data_close_nodes(struct refcnt_data_ctx *ctx)
{
	unsigned int c;

	for (c = 0; c < ctx->nr_nodes; c++)
		refcnt_node_close(ctx->nodes[c]);
	free(ctx->nodes);
}

/*
 * Add the references lost to pegging in the set counting e's page (needs
 * its paddr: CAP_SYS_ADMIN) to the result. 0, or -1 when unknown.
 */
static int refcnt_data_lost(struct refcnt_data_ctx *ctx,
			    const struct rcb_page_counters *e)
{
	uint32_t lost[RCB_MAX_COUNTERS];
	struct refcnt_node *node;
	int64_t set;
	uint32_t c;

	if (!e->paddr || e->cnodeid < 0)
		return -1;
	if (!ctx->nodes_tried)
		refcnt_data_open_nodes(ctx);
	if ((unsigned int)e->cnodeid >= ctx->nr_nodes)
		return -1;
	node = ctx->nodes[e->cnodeid];
	if (!node || node->info.rcb_sw_counters_per_set > RCB_MAX_COUNTERS)
		return -1;
	set = refcnt_node_locate(node, e->paddr);
	if (set < 0 || refcnt_node_read_sets(node, (uint64_t)set, 1, NULL,
					     NULL, lost))
		return -1;
	for (c = 0; c < ctx->dr->nr_counters; c++)
		ctx->dr->lost += lost[c];
	return 0;
}

static bool refcnt_counted(const struct rcb_page_counters *e)
{
	return (e->flags & RCB_PAGE_PRESENT) &&
	       !(e->flags & (RCB_PAGE_DENIED | RCB_PAGE_UNCOUNTED));
}

static int refcnt_data_chunk(void *arg, size_t first,
			     const struct rcb_page_counters *e,
			     const struct rcb_page_counters *hw, size_t n)
{
	struct refcnt_data_ctx *ctx = arg;
	struct refcnt_data_range *dr = ctx->dr;
	size_t i;
	uint32_t c;

	(void)first;
	for (i = 0; i < n; i++) {
		if (!(e[i].flags & RCB_PAGE_PRESENT)) {
			dr->pages_not_present++;
			continue;
		}
		dr->pages_present++;
		if (e[i].flags & RCB_PAGE_DENIED) {
			dr->pages_denied++;
			continue;
		}
		if (e[i].flags & RCB_PAGE_UNCOUNTED) {
			dr->pages_uncounted++;
			continue;
		}
		dr->pages_counted++;
		for (c = 0; c < dr->nr_counters; c++)
			dr->totals[c] += e[i].refcnt[c];
		/* The hardware half, if the page did not move in between. */
		if (hw && refcnt_counted(&hw[i]) &&
		    hw[i].cnodeid == e[i].cnodeid && hw[i].paddr == e[i].paddr)
			for (c = 0; c < dr->nr_counters; c++)
				dr->totals[c] += hw[i].refcnt[c];
		if (!ctx->lost_unknown && refcnt_data_lost(ctx, &e[i]))
			ctx->lost_unknown = true;
	}
	return 0;
}

/* The walk's flags for refcnt_data_range()'s. 0 or -1/EINVAL. */
static int refcnt_data_walk_flags(unsigned int flags, unsigned int *wflags)
{
	unsigned int mode = flags & (REFCNT_DATA_EXTENDED | REFCNT_DATA_TOTAL |
				     REFCNT_DATA_HARDWARE);

	if (flags != mode || (mode & (mode - 1)))
		return refcnt__err(EINVAL);
	*wflags = mode == REFCNT_DATA_EXTENDED ? RCB_RANGE_EXTENDED :
		  mode == REFCNT_DATA_HARDWARE ? 0 : REFCNT__WALK_BOTH;
	return 0;
}

/* The request's fields of the result, from the node's rcb_info. */
static int refcnt_data_init(struct refcnt_data_range *dr, uint64_t start,
			    uint64_t end, const struct rcb_info *info)
{
	size_t pages;

	if (!info->rcb_granularity ||
	    info->rcb_sw_counters_per_set > RCB_MAX_COUNTERS)
		return refcnt__err(EIO);
	if (refcnt__entries(start, end - start, info->rcb_granularity, &pages))
		return -1;
	memset(dr, 0, sizeof(*dr));
	dr->start = start;
	dr->end = end;
	dr->granularity = info->rcb_granularity;
	dr->covered_start = start - start % dr->granularity;
	dr->covered_end = dr->covered_start + pages * dr->granularity;
	dr->start_off = start - dr->covered_start;
	dr->end_off = dr->covered_end - end;
	dr->pages = pages;
	dr->nr_counters = info->rcb_sw_counters_per_set;
	dr->nodes_per_counter = info->rcb_nodes_per_counter;
	return 0;
}

REFCNT_API int refcnt_data_range(pid_t pid, uint64_t start, uint64_t end,
				 unsigned int flags,
				 struct refcnt_data_range *out)
{
	struct refcnt_data_range dr;
	struct refcnt_data_ctx ctx = { .dr = &dr };
	struct rcb_info info;
	unsigned int wflags;
	uint32_t c;
	int fd, ret, err;

	if (!out)
		return refcnt__err(EFAULT);
	if (refcnt_data_walk_flags(flags, &wflags) || end <= start)
		return refcnt__err(EINVAL);

	fd = refcnt__open_any();
	if (fd < 0)
		return -1;
	ret = refcnt__info(fd, &info);
	if (!ret)
		ret = refcnt_data_init(&dr, start, end, &info);
	if (!ret) {
		/* Before the walk: a feed on then may have counted meanwhile. */
		dr.status = refcnt_data_feeds();
		ret = refcnt__walk(fd, info.rcb_granularity, pid, start,
				   end - start, wflags, refcnt_data_chunk, &ctx);
	}
	err = errno;
	refcnt_data_close_nodes(&ctx);
	close(fd);
	if (ret) {
		errno = err;
		return -1;
	}
	for (c = 0; c < dr.nr_counters; c++)
		dr.total += dr.totals[c];
	if (!ctx.lost_unknown)
		dr.status |= REFCNT_DATA_LOST_COUNTED;
	else
		dr.lost = 0;
	*out = dr;
	return 0;
}

/*
 * refcnt_data_range@LIBREFCNT_1.0, for programs linked before 1.1: there,
 * flags without a counter choice meant the hardware counters only.
 */
REFCNT_API int refcnt__data_range_1_0(pid_t pid, uint64_t start, uint64_t end,
				      unsigned int flags,
				      struct refcnt_data_range *out);
REFCNT_API int refcnt__data_range_1_0(pid_t pid, uint64_t start, uint64_t end,
				      unsigned int flags,
				      struct refcnt_data_range *out)
{
	if (!(flags & (REFCNT_DATA_EXTENDED | REFCNT_DATA_TOTAL)))
		flags |= REFCNT_DATA_HARDWARE;
	return refcnt_data_range(pid, start, end, flags, out);
}
__asm__(".symver refcnt__data_range_1_0, refcnt_data_range@LIBREFCNT_1.0");
__asm__(".symver refcnt_data_range, refcnt_data_range@@LIBREFCNT_1.1, remove");
