// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: the feeds for the run: the page-fault feed period and NUMA
 * balancing, set at the start, the previous values restored at the end.
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

	if (old_period >= 0 && new_period != old_period) {
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

int setup_feeds(void)
{
	char buf[32];

	old_period = rt_read_ll(FAULT_PERIOD, -1);
	if (old_period < 0) {
		rt_err("%s: cannot read it (module too old?)", FAULT_PERIOD);
		return -EIO;
	}
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
	if (opt.hinting) {
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
	}
	return 0;
}
