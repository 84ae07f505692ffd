// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: the feeds for the run. By default (--feed=auto) the best
 * the machine has: the hub feed if it is on (the memory-side reference
 * device of refcnt's QEMU rig: every reference, sampled 1 in N); else the
 * command's own PEBS/IBS session (RCB_COUNT_START with pebs_period) where
 * the PMU has one (EOPNOTSUPP otherwise); else the command's own page
 * faults with NUMA balancing's hinting faults (turned on for the run when
 * it may be); else its first touches. The command's session is started by
 * the command itself before exec and handed over (child.c), closed when
 * the run ends; other processes add nothing to its counters. With
 * --machine-wide, the module's fault feed period is set for the run
 * instead and the previous value restored at the end; NUMA balancing
 * likewise. The report names every feed that delivered during the run and
 * what its counts mean.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "run.h"

#define PARAMS		"/sys/module/refcnt/parameters/"
#define FAULT_PERIOD	PARAMS "fault_period"
#define PEBS_PERIOD	PARAMS "pebs_period"
#define HUB_PARAM	"/sys/module/refcnt_hub/parameters/enable"
#define FEED_STATS	"/sys/kernel/refcnt/"
#define NUMA_BALANCING	"/proc/sys/kernel/numa_balancing"

long old_period = -1, new_period = -1;
long new_pebs;
static long old_nb = -1;
/* NUMA balancing for hinting faults without binding the command. */
static int hinting_unbound;
static const char *chosen = "faults";

/* The machine-wide feeds, and their statistics at the start and the end. */
struct machine_feeds {
	long fault_period, pebs_period, hub, hub_period;
	uint64_t fault_delivered, pebs_delivered, hub_references;
	uint64_t hubpmu_delivered, hub_overruns, pebs_throttled;
	long long pebs_throttle_lost;	/* -1: a module without it */
};
static struct machine_feeds mstart, mend;
struct feed_desc feed_used[4];
int nr_feeds_used;
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
	if (!new_period && !strcmp(chosen, "hub"))
		return;
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

static void read_machine(struct machine_feeds *m)
{
	m->fault_period = rt_read_ll(FAULT_PERIOD, -1);
	m->pebs_period = rt_read_ll(PEBS_PERIOD, 0);
	m->hub = rt_read_ll(HUB_PARAM, 0);
	m->hub_period = rt_read_ll(FEED_STATS "hub_period", 0);
	m->fault_delivered = rt_read_ll(FEED_STATS "fault_delivered", 0);
	m->pebs_delivered = rt_read_ll(FEED_STATS "pebs_delivered", 0);
	m->hub_references = rt_read_ll(FEED_STATS "hub_references", 0);
	m->hubpmu_delivered = rt_read_ll(FEED_STATS "hubpmu_delivered", 0);
	m->hub_overruns = rt_read_ll(FEED_STATS "hub_overruns", 0);
	m->pebs_throttled = rt_read_ll(FEED_STATS "pebs_throttled", 0);
	m->pebs_throttle_lost = rt_read_ll(FEED_STATS "pebs_throttle_lost", -1);
}

/*
 * What a PEBS/IBS count means under the module's settings: memory-side
 * (pebs_memside, or a load-latency threshold) or every cache level.
 */
static const char *pebs_meaning(void)
{
	char buf[8] = "";
	int memside = !rt_read_line(PARAMS "pebs_memside", buf, sizeof(buf)) &&
		      buf[0] == 'Y';

	if (memside || rt_read_ll(PARAMS "pebs_ldlat", 0) > 0)
		return "sampled loads beyond the caches (memory-side references), weight = period: a count estimates the references to memory a node made to a page";
	return "sampled loads and stores (IBS: ops), cache hits included, weight = period: a count estimates the loads and stores a node made to a page";
}

/* Can the command count itself with PEBS/IBS? Tried on refcnt-run. */
static int pebs_works(void)
{
	int fd = refcnt_node_count_start(qnode, 0, 0, 0, opt.pebs_period, NULL, 0);

	if (fd < 0)
		return -errno;
	refcnt_count_stop(fd);
	return 0;
}

/* Hinting faults for --feed=auto: NUMA balancing on, nothing bound. */
static int hinting_possible(void)
{
	long nb = rt_read_ll(NUMA_BALANCING, -1);

	if (nb < 0 || opt.preferred >= 0 || opt.interleave || opt.membind)
		return 0;
	return (nb & 1) || access(NUMA_BALANCING, W_OK) == 0;
}

/* --feed=auto, hub or pebs: 1 when chosen, 0 to go on, or -errno. */
static int choose_feed(void)
{
	const char *f = opt.feed ? opt.feed : "auto";
	int auto_ = !strcmp(f, "auto"), err;

	if (auto_ || !strcmp(f, "hub")) {
		if (mstart.hub > 0 && mstart.hub_period > 0) {
			chosen = "hub";
			new_period = 0;
			return 1;
		}
		if (!auto_) {
			rt_err("--feed=hub: the hub feed is off (%s is 0; it needs the hub device: a refcnt QEMU guest with refcnt-vm --hub)", HUB_PARAM);
			return -EOPNOTSUPP;
		}
	}
	if (auto_ || !strcmp(f, "pebs")) {
		err = pebs_works();
		if (!err)
			err = pebs_period_check();
		if (err == -EINVAL)
			return err;
		if (!err) {
			chosen = "pebs";
			new_period = 0;
			new_pebs = opt.pebs_period;
			return 1;
		}
		if (!auto_) {
			rt_err("--feed=pebs: the command cannot count with PEBS/IBS (RCB_COUNT_START, pebs_period=%ld): %s%s",
			       opt.pebs_period, strerror(-err),
			       err == -EOPNOTSUPP ? " (no precise memory-sampling PMU here)" : "");
			return err;
		}
		say("no PEBS/IBS here (%s): counting with page faults", strerror(-err));
	}
	if ((auto_ && hinting_possible()) || !strcmp(f, "hinting")) {
		chosen = "hinting";
		opt.hinting = 1;
		/* NUMA balancing scans unbound tasks: bind only if asked to. */
		hinting_unbound = !opt.membind;
	}
	return 0;
}

int setup_feeds(void)
{
	int rc = 0;

	read_machine(&mstart);
	old_period = mstart.fault_period;
	if (old_period < 0) {
		rt_err("%s: cannot read it (module too old?)", FAULT_PERIOD);
		return -EIO;
	}
	if (opt.machine_wide) {
		chosen = "faults";
		rc = setup_machine_wide();
	} else if (opt.period >= 0 || opt.hinting) {
		chosen = opt.hinting ? "hinting" : "faults";
		setup_own_feed();
	} else {
		rc = choose_feed();
		if (rc > 0)
			rc = 0;
		else if (!rc)
			setup_own_feed();
	}
	if (!rc && opt.hinting)
		rc = setup_hinting();
	return rc;
}

int hinting_binds(void)
{
	return opt.hinting && !hinting_unbound;
}

static void add_feed(const char *name, long weight, uint64_t delivered,
		     const char *what, const char *meaning)
{
	struct feed_desc *d;

	if (nr_feeds_used == (int)(sizeof(feed_used) / sizeof(feed_used[0])))
		return;
	d = &feed_used[nr_feeds_used++];
	d->name = name;
	/* < 0: a weight not known here. */
	d->weight = weight > 0 ? weight : 1;
	d->weight_unknown = weight < 0;
	d->delivered = delivered;
	d->dropped = 0;
	d->throttled = 0;
	d->throttled_share = -1;
	d->throttle_lost = -1;
	snprintf(d->what, sizeof(d->what), "%s", what);
	snprintf(d->meaning, sizeof(d->meaning), "%s", meaning);
}

/*
 * The share of @seconds of sampling that @throttled throttles took at
 * most (each the rest of one tick, 1/HZ s), capped at 1; -1 when HZ (the
 * module's pebs_hz) or the time is not known.
 */
static double throttled_share(uint64_t throttled, double seconds)
{
	long long hz = rt_read_ll(FEED_STATS "pebs_hz", -1);
	double s;

	if (hz <= 0 || seconds <= 0)
		return -1;
	s = (double)throttled / (double)hz / seconds;
	return s < 1 ? s : 1;
}

/* The CPU time of the command and its reaped descendants. */
static double command_cpu_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_CHILDREN, &ru))
		return -1;
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/*
 * The feed just added is the machine-wide PEBS/IBS feed: the times perf
 * throttled its events in the run (sessions' too, one statistic), as a
 * share of every online CPU's time in the run.
 */
static void pebs_throttled_in_run(void)
{
	struct feed_desc *d = &feed_used[nr_feeds_used - 1];
	double wall = (t_end.tv_sec - t_start.tv_sec) +
		      (t_end.tv_nsec - t_start.tv_nsec) / 1e9;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (!nr_feeds_used || mend.pebs_throttled <= mstart.pebs_throttled)
		return;
	d->throttled = mend.pebs_throttled - mstart.pebs_throttled;
	d->throttled_share = throttled_share(d->throttled,
					     wall * (cpus > 0 ? cpus : 1));
	if (mstart.pebs_throttle_lost >= 0 &&
	    mend.pebs_throttle_lost >= mstart.pebs_throttle_lost)
		d->throttle_lost = mend.pebs_throttle_lost -
				   mstart.pebs_throttle_lost;
}

/* The command's own PEBS/IBS session: its own throttles, of its CPU time. */
static void own_pebs_throttled(void)
{
	struct feed_desc *d = &feed_used[nr_feeds_used - 1];

	if (!count_done || !count_stats.throttled)
		return;
	d->throttled = count_stats.throttled;
	d->throttled_share = throttled_share(d->throttled,
					     command_cpu_seconds());
}

static const char *nth(long n)
{
	return n == 1 ? "st" : n == 2 ? "nd" : n == 3 ? "rd" : "th";
}

/* The command's own session: what it sampled, and what that means. */
static void own_feed(void)
{
	char what[512];
	uint64_t got = count_done ? count_stats.delivered : 0;

	if (new_pebs) {
		snprintf(what, sizeof(what),
			 "the command's own PEBS/IBS session: one sample every %ld loads and stores (IBS: ops) of its threads, weighted %ld",
			 new_pebs, new_pebs);
		add_feed("pebs", new_pebs, got, what, pebs_meaning());
		own_pebs_throttled();
	}
	if (new_period > 0 && !opt.machine_wide) {
		snprintf(what, sizeof(what),
			 "the command's own page-fault feed: every %ld%s fault of its threads%s, weighted %ld",
			 new_period, nth(new_period),
			 opt.hinting ? ", with NUMA balancing's hinting faults" : "",
			 new_period);
		add_feed(opt.hinting ? "hinting" : "faults", new_period, got, what,
			 opt.hinting ?
			 "page faults, first touches and NUMA-balancing hinting faults: a count says a node touched a page in a scan period, not how often it referenced it" :
			 "page faults (first touches): a count says which node touched a page first, not how often it was referenced");
	}
}

void feeds_end(void)
{
	char what[512];

	read_machine(&mend);
	nr_feeds_used = 0;
	/*
	 * The emulated PMU's samples are each weighted by the period the rig
	 * programmed on the device (its records say it), not hub_period:
	 * nothing here can read it.
	 */
	if (mend.hubpmu_delivered > mstart.hubpmu_delivered)
		add_feed("hubpmu", -1,
			 mend.hubpmu_delivered - mstart.hubpmu_delivered,
			 "the hub device's emulated PMU: PEBS- or IBS-like samples of every CPU, each weighted by the period programmed on the device, which refcnt-run cannot read (machine-wide)",
			 "sampled loads and stores (or ops) of user space, weight = period: a count estimates the references a node made to a page");
	if ((!strcmp(chosen, "hub") && mend.hubpmu_delivered == mstart.hubpmu_delivered) ||
	    mend.hub_references > mstart.hub_references) {
		snprintf(what, sizeof(what),
			 "the hub feed: the memory-side reference device, every %ld%s reference of each CPU, weighted %ld (machine-wide)",
			 mend.hub_period, nth(mend.hub_period), mend.hub_period);
		/* Its statistic is references: samples times the period. */
		add_feed("hub", mend.hub_period,
			 (mend.hub_references - mstart.hub_references) /
			 (mend.hub_period > 0 ? mend.hub_period : 1), what,
			 "memory references, sampled 1 in the period: a count estimates the references a node made to a page");
		/* The device's rings were full: those records reach no page. */
		if (nr_feeds_used && mend.hub_overruns > mstart.hub_overruns)
			feed_used[nr_feeds_used - 1].dropped =
				mend.hub_overruns - mstart.hub_overruns;
	}
	own_feed();
	/* The sessions' samples count in the feeds' statistics too. */
	if (mend.pebs_period > 0) {
		snprintf(what, sizeof(what),
			 "the machine-wide PEBS/IBS feed: one sample every %ld loads and stores (IBS: ops), weighted %ld (every process)",
			 mend.pebs_period, mend.pebs_period);
		add_feed("pebs", mend.pebs_period,
			 mend.pebs_delivered - mstart.pebs_delivered, what,
			 pebs_meaning());
		pebs_throttled_in_run();
	}
	if ((opt.machine_wide && new_period > 0) || mend.fault_period > 0) {
		long p = opt.machine_wide ? new_period : mend.fault_period;

		snprintf(what, sizeof(what),
			 "the machine-wide page-fault feed: every %ld%s user page fault%s, weighted %ld (every process)",
			 p, nth(p), opt.hinting ? ", with NUMA balancing's hinting faults" : "", p);
		add_feed(opt.hinting ? "hinting" : "faults", p,
			 mend.fault_delivered - mstart.fault_delivered, what,
			 "page faults: a count says a node touched a page, not how often it referenced it");
	}
	if (!nr_feeds_used)
		add_feed("none", 1, 0, "no feed: none was on, and nothing was delivered by one during the run",
			 "references delivered by other means (RCB_INJECT) or before the run; nothing counted this run");
}

long feed_weight(void)
{
	int i, best = 0;

	for (i = 1; i < nr_feeds_used; i++)
		if (feed_used[i].delivered > feed_used[best].delivered)
			best = i;
	return nr_feeds_used ? feed_used[best].weight : 1;
}

int feed_weight_known(void)
{
	int i, best = 0;

	for (i = 1; i < nr_feeds_used; i++)
		if (feed_used[i].delivered > feed_used[best].delivered)
			best = i;
	return !nr_feeds_used || !feed_used[best].weight_unknown;
}

/*
 * In the command, before exec: it counts itself (no privilege beyond the
 * open device), with its children when they are followed.
 */
int count_self(void)
{
	if (opt.machine_wide || (new_period <= 0 && !new_pebs))
		return -1;
	return refcnt_node_count_start(qnode, 0,
				       opt.follow ? RCB_COUNT_CHILDREN : 0,
				       new_period > 0 ? new_period : 0, new_pebs,
				       NULL, 0);
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
