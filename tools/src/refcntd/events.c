// SPDX-License-Identifier: GPL-2.0
/*
 * refcntd: the event streams. Every node device is opened and polled;
 * each read(2) returns whole struct rcb_event records. The node's
 * differential threshold is what makes the kernel raise migration
 * events, so refcntd sets it (set_thresholds) and restores it on exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "internal.h"

/*
 * Say what the counters make of the thresholds asked for: clipped to
 * their maximum, and whether the kernel can raise a migration event at
 * all (the differential crossed before the set folds).
 */
static void check_thresholds(const struct rcb_thresholds *t, uint32_t max)
{
	uint32_t diff = t->diff_threshold, abs = t->abs_threshold;

	if (diff > max || abs > max)
		rd_log(5, "thresholds clipped to the counters' maximum %u: diff_threshold %u -> %u, fold threshold %u -> %u",
		       max, diff, diff > max ? max : diff, abs,
		       abs > max ? max : abs);
	diff = diff > max ? max : diff;
	abs = abs > max ? max : abs;
	if (diff >= abs)
		rd_log(4, "diff_threshold %u is not below the fold threshold %u: the kernel raises no migration event",
		       diff, abs);
}

static int set_thresholds(struct rd_engine *e, int restore)
{
	int i;

	for (i = 0; i < e->nr_nodes; i++) {
		struct rcb_thresholds t = {
			.abs_threshold = !restore && e->cfg.fold_threshold ?
					 e->cfg.fold_threshold : e->old_abs[i],
			.diff_threshold = restore ? e->old_diff[i] :
					  e->cfg.diff_threshold,
		};

		if (!restore && !e->cfg.set_thresholds)
			continue;
		/*
		 * Nothing references a CPU-less node's pages from home: there
		 * the differential is the remote count, and promotion's
		 * threshold is the one that says when to raise an event.
		 */
		if (!restore && e->info[i].rcb_cnodeid < (unsigned int)e->ctr.nr_cnodes &&
		    !e->has_cpu[e->info[i].rcb_cnodeid])
			t.diff_threshold = e->cfg.promote_threshold;
		if (!restore && !i)
			check_thresholds(&t, e->info[i].rcb_hw_counter_max);
		if (t.diff_threshold > e->info[i].rcb_hw_counter_max)
			t.diff_threshold = e->info[i].rcb_hw_counter_max;
		if (t.abs_threshold > e->info[i].rcb_hw_counter_max)
			t.abs_threshold = e->info[i].rcb_hw_counter_max;
		if (!restore && !t.diff_threshold)
			t.diff_threshold = 1;	/* 0 would switch events off */
		if (ioctl(refcnt_node_fd(e->node[i]), RCB_THRESHOLDS_SET, &t))
			return rt_node_error(errno, "RCB_THRESHOLDS_SET on ",
					     refcnt_node_nid(e->node[i]));
	}
	return 0;
}

static int open_nodes(struct rd_engine *e)
{
	int *nids, i, n, err;

	n = rt_node_ids(&nids);
	if (n < 0)
		return n;
	e->node = calloc(n, sizeof(*e->node));
	e->info = calloc(n, sizeof(*e->info));
	e->old_diff = calloc(n, sizeof(*e->old_diff));
	e->old_abs = calloc(n, sizeof(*e->old_abs));
	e->pfd = calloc(n, sizeof(*e->pfd));
	if (!e->node || !e->info || !e->old_diff || !e->old_abs || !e->pfd) {
		free(nids);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		err = rt_node_open(nids[i], &e->node[i], &e->info[i]);
		if (err) {
			free(nids);
			return err;
		}
		e->nr_nodes++;
		e->old_diff[i] = e->info[i].rcb_diff_threshold;
		e->old_abs[i] = e->info[i].rcb_abs_threshold;
		e->pfd[i].fd = refcnt_node_fd(e->node[i]);
		e->pfd[i].events = POLLIN;
		/* drain() reads until empty; it must not block there. */
		fcntl(e->pfd[i].fd, F_SETFL,
		      fcntl(e->pfd[i].fd, F_GETFL) | O_NONBLOCK);
	}
	free(nids);
	e->granularity = e->info[0].rcb_granularity;
	return 0;
}

static int node_table(struct rd_engine *e)
{
	int c, i;

	if (rt_counters_init(&e->ctr, &e->info[0]))
		return -EIO;
	e->has_mem = calloc(e->ctr.nr_cnodes, sizeof(int));
	e->has_cpu = calloc(e->ctr.nr_cnodes, sizeof(int));
	if (!e->has_mem || !e->has_cpu)
		return -ENOMEM;
	for (c = 0; c < e->ctr.nr_cnodes; c++) {
		struct bitmask *cpus = numa_allocate_cpumask();

		for (i = 0; i < e->nr_nodes; i++)
			if (e->info[i].rcb_nodeid == (unsigned int)e->ctr.cnode_nid[c])
				e->has_mem[c] = 1;
		if (cpus && !numa_node_to_cpus(e->ctr.cnode_nid[c], cpus))
			e->has_cpu[c] = numa_bitmask_weight(cpus) > 0;
		numa_free_cpumask(cpus);
	}
	return 0;
}

int rd_engine_open(struct rd_engine **ep, const struct rd_config *c,
		   const struct rd_hooks *hooks)
{
	struct rd_engine *e = calloc(1, sizeof(*e));
	int err;

	*ep = NULL;
	if (!e)
		return -ENOMEM;
	e->cfg = *c;
	if (hooks)
		e->hooks = *hooks;
	err = rd_policy_init(&e->pol);
	if (!err)
		err = open_nodes(e);
	if (!err)
		err = node_table(e);
	if (!err && !(e->rmap = calloc(RD_RMAP_SLOTS, sizeof(*e->rmap))))
		err = -ENOMEM;
	if (!err && !(e->seen = calloc(RD_SEEN_SLOTS, sizeof(*e->seen))))
		err = -ENOMEM;
	if (!err)
		err = set_thresholds(e, 0);
	if (err) {
		rd_engine_close(e);
		return err;
	}
	e->last_stats_ns = e->last_scan_ns = e->last_count_scan_ns = rd_now_ns();
	*ep = e;
	return 0;
}

void rd_engine_close(struct rd_engine *e)
{
	int i;

	if (!e)
		return;
	if (e->nr_nodes && e->cfg.set_thresholds)
		set_thresholds(e, 1);
	for (i = 0; i < e->nr_nodes; i++)
		refcnt_node_close(e->node[i]);
	if (e->ctr.cnode_nid)
		rt_counters_free(&e->ctr);
	free(e->node);
	free(e->info);
	free(e->old_diff);
	free(e->old_abs);
	free(e->pfd);
	free(e->has_mem);
	free(e->has_cpu);
	free(e->rmap);
	free(e->seen);
	rd_policy_free(&e->pol);
	free(e);
}

int rd_engine_reconfig(struct rd_engine *e, const struct rd_config *c)
{
	int had = e->cfg.set_thresholds;

	e->cfg = *c;
	if (had && !c->set_thresholds)
		return set_thresholds(e, 1);
	return set_thresholds(e, 0);
}

const struct rd_stats *rd_engine_stats(const struct rd_engine *e)
{
	return &e->st;
}

int rd_engine_nr_nodes(const struct rd_engine *e)
{
	return e->nr_nodes;
}

static void handle(struct rd_engine *e, const struct rcb_event *ev)
{
	struct rcb_event named;

	if (ev->type == RCB_EVENT_LOST) {
		e->st.lost += ev->count;
		return;
	}
	if (ev->type != RCB_EVENT_MIGRATE)
		return;
	e->st.events++;
	/*
	 * A feed that knows the physical address only (the hub's emulated
	 * PMU drains in a work item) leaves a context of pid 0, or an
	 * address of 0: as good as none, so the reverse map names the page.
	 */
	if (!(ev->flags & RCB_EVENT_F_CONTEXT) || ev->pid <= 0 || !ev->vaddr) {
		uint64_t va;
		pid_t pid;

		if (!rd_rmap_name(e, ev->paddr, &pid, &va)) {
			named = *ev;
			named.pid = pid;
			named.vaddr = va;
			named.flags |= RCB_EVENT_F_CONTEXT;
			e->st.rmapped++;
			ev = &named;
		}
	}
	rd_decide_act(e, ev);
}

/*
 * A signal the caller waits for (blocked now, not in @sigmask) is pending.
 * ppoll() delivers none while a node has records: it returns them first,
 * and under a flood there always are some, so a drain stops for it.
 */
static int signal_waiting(const sigset_t *sigmask)
{
	sigset_t pend;
	int sig;

	if (!sigmask || sigpending(&pend))
		return 0;
	for (sig = 1; sig < NSIG; sig++)
		if (sigismember(&pend, sig) == 1 && sigismember(sigmask, sig) == 0)
			return 1;
	return 0;
}

/* Have those signals delivered now: their handlers run before it returns. */
static void signal_deliver(const sigset_t *sigmask)
{
	sigset_t cur;

	if (!signal_waiting(sigmask))
		return;
	pthread_sigmask(SIG_SETMASK, sigmask, &cur);
	pthread_sigmask(SIG_SETMASK, &cur, NULL);
}

/*
 * Read and act on node i's records, a batch of RD_BATCH at a time, until
 * its queue is empty, RD_DRAIN_READS batches are done (the other nodes
 * get their turn), the deadline has passed or a signal waits: however
 * long the flood, SIGUSR1 and SIGTERM are answered within a batch's work.
 */
static int drain(struct rd_engine *e, int i, uint64_t deadline,
		 const sigset_t *sigmask)
{
	struct rcb_event ev[RD_BATCH];
	ssize_t n;
	size_t k;

	for (int r = 0; r < RD_DRAIN_READS; r++) {
		if (r && (rd_now_ns() >= deadline || signal_waiting(sigmask)))
			return 0;
		n = read(e->pfd[i].fd, ev, sizeof(ev));
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n < 0)
			return rt_node_error(errno, "read ", refcnt_node_nid(e->node[i]));
		for (k = 0; k < n / sizeof(ev[0]); k++)
			handle(e, &ev[k]);
		rd_move_flush(e);
		if ((size_t)n < sizeof(ev))
			return 0;
	}
	return 0;
}

int rd_engine_run_once(struct rd_engine *e, int timeout_ms,
		       const sigset_t *sigmask)
{
	struct timespec ts = { timeout_ms / 1000, (timeout_ms % 1000) * 1000000L };
	uint64_t now, deadline;
	int i, j, n, err;

	if (e->cfg.scan_ms && (timeout_ms < 0 || timeout_ms > (int)e->cfg.scan_ms))
		timeout_ms = e->cfg.scan_ms;
	if (e->cfg.count_scan_ms &&
	    (timeout_ms < 0 || timeout_ms > (int)e->cfg.count_scan_ms))
		timeout_ms = e->cfg.count_scan_ms;
	ts = (struct timespec){ timeout_ms / 1000, (timeout_ms % 1000) * 1000000L };
	/*
	 * Woken by the first record of any node: the module wakes pollers.
	 * With events = no, the nodes are not polled: only the scans act.
	 */
	n = ppoll(e->pfd, e->cfg.events ? e->nr_nodes : 0,
		  timeout_ms < 0 ? NULL : &ts, sigmask);
	/*
	 * A signal (SIGUSR1 asks for the statistics) ends the wait, not the
	 * turn: the scans below are due by the clock, however often the
	 * waits are cut short.
	 */
	if (n < 0 && errno != EINTR)
		return -errno;
	deadline = rd_now_ns() + RD_DRAIN_NS;
	e->pol.turn++;
	/* From the node after the last one served: each gets its turn. */
	for (j = 0; n > 0 && j < e->nr_nodes; j++) {
		i = (e->next_node + j) % e->nr_nodes;
		if (!(e->pfd[i].revents & (POLLIN | POLLERR | POLLHUP)))
			continue;
		if (rd_now_ns() >= deadline || signal_waiting(sigmask))
			break;
		err = drain(e, i, deadline, sigmask);
		if (err)
			return err;
		e->next_node = (i + 1) % e->nr_nodes;
	}
	signal_deliver(sigmask);
	now = rd_now_ns();
	if (e->cfg.scan_ms && now - e->last_scan_ns >= e->cfg.scan_ms * 1000000ULL) {
		e->last_scan_ns = now;
		rd_scan(e);
	}
	if (e->cfg.count_scan_ms &&
	    now - e->last_count_scan_ns >= e->cfg.count_scan_ms * 1000000ULL) {
		e->last_count_scan_ns = now;
		rd_count_scan(e);
	}
	if (e->cfg.stats_file[0] && e->cfg.stats_interval &&
	    now - e->last_stats_ns >= e->cfg.stats_interval * 1000000000ULL) {
		e->last_stats_ns = now;
		rd_stats_write(e->cfg.stats_file, &e->st);
	}
	return 0;
}
