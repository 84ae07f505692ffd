// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: the feeds for the run. By default the command has a
 * page-fault feed of its own: a counting session (RCB_COUNT_START) the
 * command starts for itself before exec and hands over (child.c), closed
 * when the run ends; other processes add nothing to its counters. With
 * --machine-wide, the module's feed period is set for the run instead
 * and the previous value restored at the end. NUMA balancing likewise.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "run.h"

#define FAULT_PERIOD	"/sys/module/refcnt/parameters/fault_period"
#define NUMA_BALANCING	"/proc/sys/kernel/numa_balancing"

long old_period = -1, new_period = -1;
static long old_nb = -1;
int count_fd = -1;
struct rcb_count_stats count_stats;
int count_done;

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), err;
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, val, strlen(val));
	err = errno;
	close(fd);
	errno = err;
	return n == (ssize_t)strlen(val) ? 0 : -1;
}

void restore_feeds(void)
{
	char buf[32];

	if (opt.machine_wide && old_period >= 0 && new_period != old_period) {
		snprintf(buf, sizeof(buf), "%ld", old_period);
		if (write_file(FAULT_PERIOD, buf))
			rt_err("could not restore %s to %ld: %s", FAULT_PERIOD,
			       old_period, strerror(errno));
	}
	if (old_nb >= 0) {
		snprintf(buf, sizeof(buf), "%ld", old_nb);
		if (write_file(NUMA_BALANCING, buf))
			rt_err("could not restore %s to %ld: %s", NUMA_BALANCING,
			       old_nb, strerror(errno));
	}
}

/* The module's feed for the run (--machine-wide): 0 or a negative errno. */
static int setup_machine_wide(void)
{
	char buf[32];

	new_period = opt.period < 0 ? (old_period ? old_period : 1) :
		     opt.period ? opt.period : old_period;
	if (new_period != old_period) {
		snprintf(buf, sizeof(buf), "%ld", new_period);
		if (write_file(FAULT_PERIOD, buf)) {
			int err = errno;

			rt_err("cannot turn the page-fault feed on (%s=%ld): %s%s",
			       FAULT_PERIOD, new_period, strerror(err),
			       err == EACCES || err == EPERM ? ": run as root, or have root set it" : "");
			new_period = old_period;
			return err == EACCES || err == EPERM ? -EACCES : -EIO;
		}
		say("page-fault feed: sampling every %ld%s fault for the run (was %s)",
		    new_period, new_period == 1 ? "st" : "th",
		    old_period ? "on" : "off");
	} else if (!old_period) {
		say("warning: the page-fault feed is off (--period 0): only other feeds count");
	}
	return 0;
}

/* The command's own feed: period 1 unless told. */
static void setup_own_feed(void)
{
	new_period = opt.period < 0 ? 1 : opt.period;
	if (!new_period)
		say("warning: --period 0: the command has no feed of its own, only the machine's feeds count (fault_period=%ld)",
		    old_period);
	else if (old_period)
		say("note: the machine-wide page-fault feed is on too (fault_period=%ld): the command's faults count in both",
		    old_period);
}

static int setup_hinting(void)
{
	char buf[32];
	long nb = rt_read_ll(NUMA_BALANCING, -1);

	if (nb < 0) {
		rt_err("--hinting: %s: this kernel has no NUMA balancing", NUMA_BALANCING);
		return -EOPNOTSUPP;
	}
	if (!(nb & 1)) {
		snprintf(buf, sizeof(buf), "%ld", nb | 1);
		if (write_file(NUMA_BALANCING, buf)) {
			int err = errno;

			rt_err("--hinting: cannot write %s: %s", NUMA_BALANCING,
			       strerror(err));
			return err == EACCES || err == EPERM ? -EACCES : -EIO;
		}
		old_nb = nb;
	}
	return 0;
}

int setup_feeds(void)
{
	int rc = 0;

	old_period = rt_read_ll(FAULT_PERIOD, -1);
	if (old_period < 0) {
		rt_err("%s: cannot read it (module too old?)", FAULT_PERIOD);
		return -EIO;
	}
	if (opt.machine_wide)
		rc = setup_machine_wide();
	else
		setup_own_feed();
	if (!rc && opt.hinting)
		rc = setup_hinting();
	return rc;
}

/*
 * In the command, before exec: it counts itself (no privilege beyond the
 * open device), with its children when they are followed.
 */
int count_self(void)
{
	if (opt.machine_wide || !new_period)
		return -1;
	return refcnt_node_count_start(qnode, 0,
				       opt.follow ? RCB_COUNT_CHILDREN : 0,
				       new_period, 0, NULL, 0);
}

void stop_counting(void)
{
	if (count_fd < 0)
		return;
	if (!refcnt_count_stats(count_fd, &count_stats))
		count_done = 1;
	refcnt_count_stop(count_fd);
	count_fd = -1;
}
