// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/**
 * @file    refcnt.c
 *
 * @ingroup papi_components
 *
 * @brief
 *	The refcnt component: memory references counted by refcnt.ko (the
 *	SGI Origin 2000 reference counters emulated on Linux NUMA machines),
 *	restricted to a data structure with PAPI_set_opt(PAPI_DATA_ADDRESS)
 *	or to a range of code with PAPI_set_opt(PAPI_INSTR_ADDRESS).
 *
 *	An event set is a counting session of refcnt.ko (RCB_COUNT_START)
 *	from PAPI_start() to PAPI_stop(): it counts the calling thread
 *	(PAPI_GRN_THR, the default) or its whole process (PAPI_GRN_PROC),
 *	or the thread PAPI_attach() names, through one of the module's
 *	feeds. The session keeps totals the events read: references,
 *	loads, stores, local, remote, lost, and references by accessing
 *	node.
 *
 *	Data ranges are rounded out to refcnt's hardware pages (the
 *	granularity the counters count), and PAPI_set_opt() says so in
 *	start_off and end_off, as the Itanium 2 did for its power-of-two
 *	ranges; instruction ranges are exact (offsets 0).
 *
 *	Environment: PAPI_REFCNT_FEED (a feed's name: by default a device
 *	feed, such as the hub of refcnt's QEMU guests, else pebs, else
 *	fault) and PAPI_REFCNT_PERIOD (the sampling period of pebs and
 *	fault; a device feed's is the device's).
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <refcnt/refcnt.h>

#include "papi.h"
#include "papi_internal.h"
#include "papi_vector.h"
#include "papi_memory.h"

/* The events every session has; the per-node ones follow them. */
enum {
	RC_REFERENCES,
	RC_LOADS,
	RC_STORES,
	RC_LOCAL,
	RC_REMOTE,
	RC_LOST,
	RC_FIXED_EVENTS
};

#define RC_MAX_EVENTS	(RC_FIXED_EVENTS + RCB_MAX_COUNTERS)

/* Sampling periods when PAPI_REFCNT_PERIOD does not say. */
#define RC_FAULT_PERIOD	1
#define RC_PEBS_PERIOD	10007

struct rc_event {
	char name[PAPI_MIN_STR_LEN];
	char descr[PAPI_MAX_STR_LEN];
};

/**
 * struct rc_control - an event set: its events, options and session
 * @nr:		events in the set
 * @which:	native event of each position
 * @values:	the values read, by position
 * @grn:	PAPI_GRN_THR or PAPI_GRN_PROC
 * @inherit:	count the children it creates too (PAPI_INHERIT)
 * @tid:	thread (PAPI_GRN_THR) or process (PAPI_GRN_PROC) attached
 *		to, 0 for the caller
 * @data, @nr_data: the data range, rounded out to hardware pages
 * @instr, @nr_instr: the instruction range
 * @fd:		the session while running, else -1
 * @base:	the session's totals at PAPI_reset(), subtracted from reads
 */
typedef struct {
	int nr;
	int which[RC_MAX_EVENTS];
	long long values[RC_MAX_EVENTS];
	int grn;
	int inherit;
	pid_t tid;
	struct rcb_count_range data, instr;
	int nr_data, nr_instr;
	int fd;
	struct rcb_count_totals base;
} rc_control_t;

typedef struct {
	int unused;
} rc_context_t;

papi_vector_t _refcnt_vector;

static struct {
	struct rc_event *events;
	int nr_events;
	uint64_t granularity;
	struct rcb_feed_info feed;	/* the feed sessions run */
	char feed_name[64];		/* its name: device feeds all of theirs */
	unsigned int flags;		/* RCB_COUNT_DEVICES, device feeds */
	unsigned int fault_period, pebs_period;
} rc;

/* The disabled reason, and the code PAPI reports it with. */
static int rc_disable(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int rc_disable(int code, const char *fmt, ...)
{
	char *r = _refcnt_vector.cmp_info.disabled_reason;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r, PAPI_MAX_STR_LEN, fmt, ap);
	va_end(ap);
	_refcnt_vector.cmp_info.disabled = code;
	return code;
}

/* A refcnt errno as the PAPI error users expect for it. */
static int rc_papi_err(int err)
{
	switch (err) {
	case EPERM:
	case EACCES:
		return PAPI_EPERM;
	case EINVAL:
		return PAPI_EINVAL;
	case ENOMEM:
		return PAPI_ENOMEM;
	case EOPNOTSUPP:
	case ENOTTY:
		return PAPI_ENOSUPP;
	case ESRCH:
		return PAPI_EINVAL;
	default:
		return PAPI_ESYS;
	}
}

/* Whether a session can run the feed here. */
static int rc_usable(const struct rcb_feed_info *f)
{
	return (f->state & RCB_FEED_PRESENT) && (f->caps & RCB_FEED_SESSION);
}

/*
 * The feed named by PAPI_REFCNT_FEED, or the most exact the machine has:
 * a device feed (every reference, at period 1), then pebs, then fault.
 */
static int rc_pick_feed(const struct rcb_feed_info *feeds, int n)
{
	static const char *const pref[] = { "pebs", "fault" };
	const char *want = getenv("PAPI_REFCNT_FEED");
	unsigned int p;
	int i;

	for (i = 0; i < n; i++)
		if (want && *want ? !strcmp(feeds[i].name, want) :
		    (feeds[i].caps & RCB_FEED_DEVICE) != 0)
			if (rc_usable(&feeds[i]))
				return i;
	if (want && *want)
		return -1;
	for (p = 0; p < sizeof(pref) / sizeof(pref[0]); p++)
		for (i = 0; i < n; i++)
			if (!strcmp(feeds[i].name, pref[p]) &&
			    rc_usable(&feeds[i]))
				return i;
	return -1;
}

/*
 * A session with RCB_COUNT_DEVICES runs every device feed present: what
 * it can filter is what they all carry, and its name all of theirs.
 */
static void rc_device_feeds(const struct rcb_feed_info *feeds, int n)
{
	size_t len = 0;
	int i;

	snprintf(rc.feed_name, sizeof(rc.feed_name), "%s", rc.feed.name);
	if (!(rc.feed.caps & RCB_FEED_DEVICE))
		return;
	for (i = 0; i < n; i++) {
		if (!(feeds[i].caps & RCB_FEED_DEVICE) || !rc_usable(&feeds[i]))
			continue;
		rc.feed.caps &= feeds[i].caps;
		len += snprintf(rc.feed_name + len, sizeof(rc.feed_name) - len,
				"%s%.*s", len ? "+" : "",
				(int)sizeof(feeds[i].name), feeds[i].name);
		if (len >= sizeof(rc.feed_name))
			break;
	}
}

/* Periods and flags of the sessions for the feed picked. */
static int rc_feed_setup(void)
{
	const char *env = getenv("PAPI_REFCNT_PERIOD");
	unsigned long period = 0;
	char *end;

	if (env && *env) {
		errno = 0;
		period = strtoul(env, &end, 0);
		if (errno || *end || !period || period > UINT32_MAX)
			return rc_disable(PAPI_EINVAL,
					  "PAPI_REFCNT_PERIOD=%s is not a period",
					  env);
	}
	if (rc.feed.caps & RCB_FEED_DEVICE)
		rc.flags = RCB_COUNT_DEVICES;
	else if (!strcmp(rc.feed.name, "pebs"))
		rc.pebs_period = period ? period : RC_PEBS_PERIOD;
	else if (!strcmp(rc.feed.name, "fault"))
		rc.fault_period = period ? period : RC_FAULT_PERIOD;
	else
		return rc_disable(PAPI_ENOSUPP, "feed %s: no session form",
				  rc.feed.name);
	return PAPI_OK;
}

/* What the feed can filter and tell, for the description. */
static void rc_caps_str(char *buf, size_t len, unsigned int caps)
{
	snprintf(buf, len, "%s%s%s%s",
		 caps & RCB_FEED_DATA_ADDR ? " data" : "",
		 caps & RCB_FEED_INSTR_ADDR ? " instr" : "",
		 caps & RCB_FEED_LOADS ? " loads" : "",
		 caps & RCB_FEED_STORES ? " stores" : "");
}

static void rc_event(int i, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void rc_event(int i, const char *name, const char *fmt, ...)
{
	va_list ap;

	snprintf(rc.events[i].name, sizeof(rc.events[i].name), "%s", name);
	va_start(ap, fmt);
	vsnprintf(rc.events[i].descr, sizeof(rc.events[i].descr), fmt, ap);
	va_end(ap);
}

/* The fixed events, then one per counter of a set (accessing node). */
static int rc_events(const struct rcb_info *info)
{
	unsigned int c, npc = info->rcb_nodes_per_counter;
	const char *nl = rc.feed.caps & RCB_FEED_LOADS ? "" :
			 " (not told by this feed)";
	const char *ns = rc.feed.caps & RCB_FEED_STORES ? "" :
			 " (not told by this feed)";
	char name[PAPI_MIN_STR_LEN];

	rc.nr_events = RC_FIXED_EVENTS + info->rcb_sw_counters_per_set;
	rc.events = papi_calloc(rc.nr_events, sizeof(*rc.events));
	if (!rc.events)
		return rc_disable(PAPI_ENOMEM, "no memory for the events");
	rc_event(RC_REFERENCES, "references",
		 "Memory references to the range, by the counted code");
	rc_event(RC_LOADS, "loads", "Of the references, loads%s", nl);
	rc_event(RC_STORES, "stores", "Of the references, stores%s", ns);
	rc_event(RC_LOCAL, "local",
		 "Of the references, from the node the page is on");
	rc_event(RC_REMOTE, "remote",
		 "Of the references, from another node than the page's");
	rc_event(RC_LOST, "lost",
		 "Of the references, counted in no counter (page not found or counter pegged)");
	for (c = 0; c < info->rcb_sw_counters_per_set; c++) {
		if (npc == 1)
			snprintf(name, sizeof(name), "node%d",
				 refcnt_cnode_to_nid(c));
		else
			snprintf(name, sizeof(name), "cnodes%u_%u", c * npc,
				 c * npc + npc - 1);
		if (npc == 1)
			rc_event(RC_FIXED_EVENTS + c, name,
				 "Of the references, from node %d (cnodeid %u)",
				 refcnt_cnode_to_nid(c), c);
		else
			rc_event(RC_FIXED_EVENTS + c, name,
				 "Of the references, from cnodeids %u to %u",
				 c * npc, c * npc + npc - 1);
	}
	return PAPI_OK;
}

/*
 * A session on the calling thread, opened and closed: whether the caller
 * may count, and the feed runs, before any event set needs it.
 */
static int rc_probe(struct refcnt_node *node)
{
	struct refcnt_count_attr a = {
		.flags = rc.flags | RCB_COUNT_THREAD,
		.fault_period = rc.fault_period,
		.pebs_period = rc.pebs_period,
	};
	int fd = refcnt_node_count_open(node, &a);

	if (fd >= 0) {
		refcnt_count_stop(fd);
		return PAPI_OK;
	}
	if (errno == EPERM || errno == EACCES)
		return rc_disable(PAPI_EPERM,
				  "may not count: %s (refcnt.ko session)",
				  strerror(errno));
	return rc_disable(rc_papi_err(errno), "feed %s cannot run: %s",
			  rc.feed_name, strerror(errno));
}

/* The module's node, feeds and permission: what init decides on. */
static int rc_detect(void)
{
	struct rcb_feed_info feeds[16];
	struct refcnt_node *node;
	struct rcb_info info;
	int nid, n, i, ret;

	if (refcnt_nodes(&nid, 1) <= 0)
		return rc_disable(PAPI_ECMP,
				  "refcnt.ko is not loaded (no " REFCNT_DEV_DIR
				  "/node*)");
	node = refcnt_node_open(nid, 0);
	if (!node)
		return rc_disable(errno == EACCES || errno == EPERM ?
				  PAPI_EPERM : PAPI_ESYS,
				  "cannot open " REFCNT_DEV_DIR "/node%d: %s%s",
				  nid, strerror(errno),
				  errno == EACCES ? " (root or group refcnt)" : "");
	ret = refcnt_node_info(node, &info);
	n = ret ? -1 : refcnt_feeds(feeds, sizeof(feeds) / sizeof(feeds[0]));
	if (n < 0) {
		ret = rc_disable(PAPI_ECMP, "refcnt.ko too old: %s",
				 strerror(errno));
		goto out;
	}
	if (n > (int)(sizeof(feeds) / sizeof(feeds[0])))
		n = sizeof(feeds) / sizeof(feeds[0]);
	i = rc_pick_feed(feeds, n);
	if (i < 0) {
		const char *want = getenv("PAPI_REFCNT_FEED");

		ret = rc_disable(PAPI_ECMP, want && *want ?
				 "PAPI_REFCNT_FEED=%s: no such feed here" :
				 "%sno feed a session can run here",
				 want ? want : "");
		goto out;
	}
	rc.feed = feeds[i];
	rc.feed.name[sizeof(rc.feed.name) - 1] = '\0';
	rc_device_feeds(feeds, n);
	rc.granularity = info.rcb_granularity;
	ret = rc_feed_setup();
	if (ret == PAPI_OK)
		ret = rc_probe(node);
	if (ret == PAPI_OK)
		ret = rc_events(&info);
out:
	refcnt_node_close(node);
	return ret;
}

static int _refcnt_init_component(int cidx)
{
	char caps[64];
	int ret;

	_refcnt_vector.cmp_info.CmpIdx = cidx;
	ret = rc_detect();
	if (ret != PAPI_OK)
		return ret;
	rc_caps_str(caps, sizeof(caps), rc.feed.caps);
	snprintf(_refcnt_vector.cmp_info.description, PAPI_MAX_STR_LEN,
		 "refcnt.ko memory references: feed %.40s/%u, filters:%.30s",
		 rc.feed_name, rc.fault_period ? rc.fault_period :
		 rc.pebs_period ? rc.pebs_period : rc.feed.period, caps);
	_refcnt_vector.cmp_info.num_native_events = rc.nr_events;
	_refcnt_vector.cmp_info.num_cntrs = rc.nr_events;
	_refcnt_vector.cmp_info.num_mpx_cntrs = rc.nr_events;
	_refcnt_vector.cmp_info.disabled = PAPI_OK;
	return PAPI_OK;
}

static int _refcnt_shutdown_component(void)
{
	papi_free(rc.events);
	rc.events = NULL;
	rc.nr_events = 0;
	return PAPI_OK;
}

static int _refcnt_init_thread(hwd_context_t *ctx)
{
	(void)ctx;
	return PAPI_OK;
}

static int _refcnt_shutdown_thread(hwd_context_t *ctx)
{
	(void)ctx;
	return PAPI_OK;
}

static int _refcnt_init_control_state(hwd_control_state_t *ctl)
{
	rc_control_t *c = (rc_control_t *)ctl;

	memset(c, 0, sizeof(*c));
	c->grn = PAPI_GRN_THR;
	c->fd = -1;
	return PAPI_OK;
}

/* The event's value in a session's totals. */
static long long rc_value(const struct rcb_count_totals *t, int ev)
{
	switch (ev) {
	case RC_REFERENCES:
		return t->references;
	case RC_LOADS:
		return t->loads;
	case RC_STORES:
		return t->stores;
	case RC_LOCAL:
		return t->local;
	case RC_REMOTE:
		return t->remote;
	case RC_LOST:
		return t->lost;
	default:
		return t->nodes[ev - RC_FIXED_EVENTS];
	}
}

/* Whether the feed can count event ev at all. */
static int rc_event_ok(int ev)
{
	if (ev == RC_LOADS && !(rc.feed.caps & RCB_FEED_LOADS))
		return 0;
	if (ev == RC_STORES && !(rc.feed.caps & RCB_FEED_STORES))
		return 0;
	return 1;
}

static int _refcnt_update_control_state(hwd_control_state_t *ctl,
					NativeInfo_t *native, int count,
					hwd_context_t *ctx)
{
	rc_control_t *c = (rc_control_t *)ctl;
	int i;

	(void)ctx;
	if (count > RC_MAX_EVENTS)
		return PAPI_ECOUNT;
	for (i = 0; i < count; i++) {
		int ev = native[i].ni_event;

		if (ev < 0 || ev >= rc.nr_events)
			return PAPI_ENOEVNT;
		if (!rc_event_ok(ev)) {
			SUBDBG("refcnt: feed %s does not tell %s\n",
			       rc.feed_name, rc.events[ev].name);
			return PAPI_ENOSUPP;
		}
		c->which[i] = ev;
		native[i].ni_position = i;
	}
	c->nr = count;
	return PAPI_OK;
}

static int _refcnt_start(hwd_context_t *ctx, hwd_control_state_t *ctl)
{
	rc_control_t *c = (rc_control_t *)ctl;
	struct refcnt_count_attr a = {
		.flags = rc.flags | (c->inherit ? RCB_COUNT_CHILDREN : 0),
		.fault_period = rc.fault_period,
		.pebs_period = rc.pebs_period,
		.data_ranges = c->nr_data ? &c->data : NULL,
		.nr_data_ranges = c->nr_data,
		.instr_ranges = c->nr_instr ? &c->instr : NULL,
		.nr_instr_ranges = c->nr_instr,
	};

	(void)ctx;
	if (c->fd >= 0)
		return PAPI_EISRUN;
	if (c->grn == PAPI_GRN_THR) {
		a.flags |= RCB_COUNT_THREAD;
		a.pid = c->tid ? c->tid : (pid_t)syscall(SYS_gettid);
	} else {
		a.pid = c->tid;
	}
	c->fd = refcnt_count_open(&a);
	if (c->fd < 0) {
		SUBDBG("refcnt: RCB_COUNT_START: %s\n", strerror(errno));
		return rc_papi_err(errno);
	}
	memset(&c->base, 0, sizeof(c->base));
	memset(c->values, 0, sizeof(c->values));
	return PAPI_OK;
}

/* The session's totals since the start or the last reset. */
static int rc_read(rc_control_t *c)
{
	struct rcb_count_totals t;
	int i;

	if (c->fd < 0)
		return PAPI_ENOTRUN;
	if (refcnt_count_read(c->fd, &t, 1) < 0)
		return rc_papi_err(errno);
	for (i = 0; i < c->nr; i++)
		c->values[i] = rc_value(&t, c->which[i]) -
			       rc_value(&c->base, c->which[i]);
	return PAPI_OK;
}

static int _refcnt_read(hwd_context_t *ctx, hwd_control_state_t *ctl,
			long long **events, int flags)
{
	rc_control_t *c = (rc_control_t *)ctl;
	int ret;

	(void)ctx;
	(void)flags;
	ret = rc_read(c);
	*events = c->values;
	return ret;
}

static int _refcnt_stop(hwd_context_t *ctx, hwd_control_state_t *ctl)
{
	rc_control_t *c = (rc_control_t *)ctl;
	int ret;

	(void)ctx;
	ret = rc_read(c);
	if (c->fd >= 0)
		refcnt_count_stop(c->fd);
	c->fd = -1;
	return ret;
}

static int _refcnt_reset(hwd_context_t *ctx, hwd_control_state_t *ctl)
{
	rc_control_t *c = (rc_control_t *)ctl;

	(void)ctx;
	if (c->fd < 0)
		return PAPI_OK;
	if (refcnt_count_read(c->fd, &c->base, 1) < 0)
		return rc_papi_err(errno);
	memset(c->values, 0, sizeof(c->values));
	return PAPI_OK;
}

static int _refcnt_write(hwd_context_t *ctx, hwd_control_state_t *ctl,
			 long long *values)
{
	(void)ctx;
	(void)ctl;
	(void)values;
	return PAPI_ENOSUPP;
}

/*
 * PAPI_DATA_ADDRESS: [start, end) rounded out to hardware pages, which is
 * what refcnt's counters can tell apart; the offsets say by how much.
 * Start and end both 0 lift the restriction.
 */
static int rc_data_range(rc_control_t *c, _papi_int_addr_range_t *r)
{
	uint64_t s = (uintptr_t)r->start, e = (uintptr_t)r->end;
	uint64_t g = rc.granularity, rs, re;

	r->start_off = 0;
	r->end_off = 0;
	if (!(rc.feed.caps & RCB_FEED_DATA_ADDR)) {
		SUBDBG("refcnt: feed %s has no data addresses\n", rc.feed_name);
		return PAPI_ENOSUPP;
	}
	if (!s && !e) {
		c->nr_data = 0;
		return PAPI_OK;
	}
	if (e <= s)
		return PAPI_EINVAL;
	rs = s - s % g;
	re = e + (g - e % g) % g;
	if (re < e)
		return PAPI_EINVAL;
	c->data.start = rs;
	c->data.len = re - rs;
	c->nr_data = 1;
	r->start_off = (int)(s - rs);
	r->end_off = (int)(re - e);
	return PAPI_OK;
}

/* PAPI_INSTR_ADDRESS: exact, the feeds carry each sample's instruction. */
static int rc_instr_range(rc_control_t *c, _papi_int_addr_range_t *r)
{
	uint64_t s = (uintptr_t)r->start, e = (uintptr_t)r->end;

	r->start_off = 0;
	r->end_off = 0;
	if (!(rc.feed.caps & RCB_FEED_INSTR_ADDR)) {
		SUBDBG("refcnt: feed %s has no instruction addresses\n",
		       rc.feed_name);
		return PAPI_ENOSUPP;
	}
	if (!s && !e) {
		c->nr_instr = 0;
		return PAPI_OK;
	}
	if (e <= s)
		return PAPI_EINVAL;
	c->instr.start = s;
	c->instr.len = e - s;
	c->nr_instr = 1;
	return PAPI_OK;
}

static int _refcnt_ctl(hwd_context_t *ctx, int code, _papi_int_option_t *option)
{
	rc_control_t *c;

	(void)ctx;
	switch (code) {
	case PAPI_DATA_ADDRESS:
	case PAPI_INSTR_ADDRESS:
		c = (rc_control_t *)option->address_range.ESI->ctl_state;
		if (c->fd >= 0)
			return PAPI_EISRUN;
		return code == PAPI_DATA_ADDRESS ?
		       rc_data_range(c, &option->address_range) :
		       rc_instr_range(c, &option->address_range);
	case PAPI_ATTACH:
		c = (rc_control_t *)option->attach.ESI->ctl_state;
		c->tid = (pid_t)option->attach.tid;
		return PAPI_OK;
	case PAPI_DETACH:
		c = (rc_control_t *)option->attach.ESI->ctl_state;
		c->tid = 0;
		return PAPI_OK;
	case PAPI_GRANUL:
		c = (rc_control_t *)option->granularity.ESI->ctl_state;
		if (option->granularity.granularity != PAPI_GRN_THR &&
		    option->granularity.granularity != PAPI_GRN_PROC)
			return PAPI_ECMP;
		c->grn = option->granularity.granularity;
		return PAPI_OK;
	case PAPI_INHERIT:
		c = (rc_control_t *)option->inherit.ESI->ctl_state;
		c->inherit = option->inherit.inherit != 0;
		return PAPI_OK;
	case PAPI_DOMAIN:
		return option->domain.domain == PAPI_DOM_USER ? PAPI_OK :
		       PAPI_ECMP;
	default:
		return PAPI_ENOSUPP;
	}
}

static int _refcnt_set_domain(hwd_control_state_t *ctl, int domain)
{
	(void)ctl;
	return domain == PAPI_DOM_USER ? PAPI_OK : PAPI_EINVAL;
}

static int _refcnt_ntv_enum_events(unsigned int *code, int modifier)
{
	switch (modifier) {
	case PAPI_ENUM_FIRST:
		if (!rc.nr_events)
			return PAPI_ENOEVNT;
		*code = 0;
		return PAPI_OK;
	case PAPI_ENUM_EVENTS:
		if ((int)*code + 1 >= rc.nr_events)
			return PAPI_ENOEVNT;
		(*code)++;
		return PAPI_OK;
	default:
		return PAPI_EINVAL;
	}
}

static int _refcnt_ntv_code_to_name(unsigned int code, char *name, int len)
{
	if ((int)code >= rc.nr_events || len <= 0)
		return PAPI_ENOEVNT;
	snprintf(name, len, "%s", rc.events[code].name);
	return PAPI_OK;
}

static int _refcnt_ntv_code_to_descr(unsigned int code, char *descr, int len)
{
	if ((int)code >= rc.nr_events || len <= 0)
		return PAPI_ENOEVNT;
	snprintf(descr, len, "%s", rc.events[code].descr);
	return PAPI_OK;
}

papi_vector_t _refcnt_vector = {
	.cmp_info = {
		.name = "refcnt",
		.short_name = "refcnt",
		.description = "refcnt.ko memory reference counts by data and instruction range",
		.version = "1.0",
		.support_version = "librefcnt 1.3",
		.kernel_version = "refcnt.ko",
		.default_domain = PAPI_DOM_USER,
		.available_domains = PAPI_DOM_USER,
		.default_granularity = PAPI_GRN_THR,
		.available_granularities = PAPI_GRN_THR | PAPI_GRN_PROC,
		.hardware_intr_sig = PAPI_INT_SIGNAL,
		.attach = 1,
		.attach_must_ptrace = 0,
		.inherit = 1,
	},
	.size = {
		.context = sizeof(rc_context_t),
		.control_state = sizeof(rc_control_t),
		.reg_value = sizeof(int),
		.reg_alloc = sizeof(int),
	},
	.init_component = _refcnt_init_component,
	.shutdown_component = _refcnt_shutdown_component,
	.init_thread = _refcnt_init_thread,
	.shutdown_thread = _refcnt_shutdown_thread,
	.init_control_state = _refcnt_init_control_state,
	.update_control_state = _refcnt_update_control_state,
	.start = _refcnt_start,
	.stop = _refcnt_stop,
	.read = _refcnt_read,
	.reset = _refcnt_reset,
	.write = _refcnt_write,
	.ctl = _refcnt_ctl,
	.set_domain = _refcnt_set_domain,
	.ntv_enum_events = _refcnt_ntv_enum_events,
	.ntv_code_to_name = _refcnt_ntv_code_to_name,
	.ntv_code_to_descr = _refcnt_ntv_code_to_descr,
};
