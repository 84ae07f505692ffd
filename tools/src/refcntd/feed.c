// SPDX-License-Identifier: GPL-2.0
/*
 * refcntd: the feed the counters count with while the daemon runs
 * (refcntd.conf(5) "feed"). By default (auto) the best the machine has:
 * a machine-wide feed the administrator turned on is kept; else the
 * PEBS/IBS feed (pebs_period, which the module refuses with EOPNOTSUPP
 * where the PMU has no precise memory sampling); else NUMA balancing's
 * hinting faults (fault_period 1, numa_balancing on); else first
 * touches. What refcntd turned on it turns off again when it stops.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define PARAMS		"/sys/module/refcnt/parameters/"
#define FAULT_PERIOD	PARAMS "fault_period"
#define PEBS_PERIOD	PARAMS "pebs_period"
#define PEBS_MEMSIDE	PARAMS "pebs_memside"
#define PEBS_LDLAT	PARAMS "pebs_ldlat"
#define HUB_ENABLE	"/sys/module/refcnt_hub/parameters/enable"
#define NUMA_BALANCING	"/proc/sys/kernel/numa_balancing"

const char *rd_feed_name = "";
static long set_fault = -1, set_pebs = -1, set_nb = -1;

static long read_long(const char *path)
{
	char buf[32] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (buf[0] == 'Y' || buf[0] == 'N')
		return buf[0] == 'Y';
	return strtol(buf, NULL, 10);
}

static int write_long(const char *path, long v)
{
	char buf[32];
	int fd = open(path, O_WRONLY | O_CLOEXEC), err;
	ssize_t n;

	if (fd < 0)
		return -errno;
	snprintf(buf, sizeof(buf), "%ld", v);
	n = write(fd, buf, strlen(buf));
	err = n == (ssize_t)strlen(buf) ? 0 : -errno;
	close(fd);
	return err;
}

/* What a count of the PEBS/IBS feed means, as its settings make it. */
static const char *pebs_meaning(void)
{
	return read_long(PEBS_MEMSIDE) == 1 || read_long(PEBS_LDLAT) > 0 ?
	       "sampled loads beyond the caches (memory-side references), weight = period" :
	       "sampled loads and stores (IBS: ops) at every cache level, weight = period";
}

static int start_pebs(long period, int asked)
{
	int err = write_long(PEBS_PERIOD, period);

	if (!err) {
		set_pebs = 0;
		rd_feed_name = "pebs";
		rd_log(6, "feed: PEBS/IBS, one sample every %ld events: %s",
		       period, pebs_meaning());
		return 0;
	}
	if (asked)
		rd_log(3, "feed = pebs: cannot start the PEBS/IBS feed (%s=%ld): %s%s",
		       PEBS_PERIOD, period, strerror(-err),
		       err == -EOPNOTSUPP ? " (no precise memory-sampling PMU here)" : "");
	else
		rd_log(6, "feed: no PEBS/IBS here (%s): hinting faults instead",
		       strerror(-err));
	return err;
}

/* Hinting faults (1: asked for, 2: auto's choice) or first touches (0). */
static int start_faults(long period, int hinting)
{
	long nb = read_long(NUMA_BALANCING);
	int err;

	if (hinting && nb >= 0 && !(nb & 1)) {
		err = write_long(NUMA_BALANCING, nb | 1);
		if (err && hinting == 1) {
			rd_log(3, "feed = hinting: cannot write %s: %s", NUMA_BALANCING, strerror(-err));
			return err;
		}
		if (err)
			nb = -1;
		else
			set_nb = nb;
	}
	hinting = hinting && nb >= 0;
	err = write_long(FAULT_PERIOD, period);
	if (err) {
		rd_log(3, "cannot start the page-fault feed (%s=%ld): %s", FAULT_PERIOD,
		       period, strerror(-err));
		return err;
	}
	set_fault = 0;
	rd_feed_name = hinting ? "hinting" : "faults";
	rd_log(6, "feed: %s, every %ld%s fault: %s", hinting ? "hinting faults" : "page faults",
	       period, period == 1 ? "st" : "th",
	       hinting ? "a count says a node touched a page in a NUMA-balancing scan period" :
	       "a count says which node touched a page first");
	return 0;
}

/* The machine-wide feed someone else turned on, if any: kept. */
static const char *feed_on(void)
{
	if (read_long(HUB_ENABLE) == 1)
		return "hub";
	if (read_long(PEBS_PERIOD) > 0)
		return "pebs";
	if (read_long(FAULT_PERIOD) > 0)
		return read_long(NUMA_BALANCING) > 0 ? "hinting" : "faults";
	return NULL;
}

int rd_feed_start(const struct rd_config *c)
{
	const char *on = feed_on();
	long p = c->feed_period;
	int err;

	if (!strcmp(c->feed, "none")) {
		rd_feed_name = "none";
		return 0;
	}
	if (!strcmp(c->feed, "hub")) {
		if (read_long(HUB_ENABLE) != 1) {
			rd_log(3, "feed = hub: the hub feed is off (%s; it needs the hub device of refcnt's QEMU rig)",
			       HUB_ENABLE);
			return -EOPNOTSUPP;
		}
		rd_feed_name = "hub";
		rd_log(6, "feed: the hub device: memory references sampled 1 in its period");
		return 0;
	}
	if (!strcmp(c->feed, "auto") && on) {
		rd_feed_name = on;
		rd_log(6, "feed: %s, already on: kept as it is", on);
		return 0;
	}
	if (!strcmp(c->feed, "auto") || !strcmp(c->feed, "pebs")) {
		err = start_pebs(p ? p : RD_PEBS_PERIOD, !strcmp(c->feed, "pebs"));
		if (!err || !strcmp(c->feed, "pebs"))
			return err;
	}
	return start_faults(p && strcmp(c->feed, "auto") ? p : 1,
			    !strcmp(c->feed, "hinting") ? 1 :
			    !strcmp(c->feed, "auto") ? 2 : 0);
}

void rd_feed_stop(void)
{
	if (set_pebs >= 0)
		write_long(PEBS_PERIOD, set_pebs);
	if (set_fault >= 0)
		write_long(FAULT_PERIOD, set_fault);
	if (set_nb >= 0)
		write_long(NUMA_BALANCING, set_nb);
	set_pebs = set_fault = set_nb = -1;
}
