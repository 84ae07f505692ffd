// SPDX-License-Identifier: GPL-2.0
/*
 * refcntd: the migration policy, after IRIX's migration controls and the
 * kernel's NUMA balancing knobs. A migration event becomes a move when
 * the process is one we act on, the counts pass our thresholds, a node
 * near the users has free memory, the page is not frozen by a recent
 * move, and the rate limit has room. Freeze stops a page shared by
 * several nodes from ping-ponging; melt lets a frozen page follow a real
 * change of owner: melt_events events in a row from one node.
 */
#include <errno.h>
#include <limits.h>
#include <numa.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define THP_SIZE	(2ULL << 20)

int rd_policy_init(struct rd_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->frozen = calloc(RD_FROZEN_SLOTS, sizeof(*p->frozen));
	return p->frozen ? 0 : -ENOMEM;
}

void rd_policy_free(struct rd_policy *p)
{
	free(p->frozen);
	p->frozen = NULL;
}

int rd_nid_cnode(const struct rd_engine *e, int nid)
{
	int i;

	for (i = 0; i < e->ctr.nr_cnodes; i++)
		if (e->ctr.cnode_nid[i] == nid)
			return i;
	return -1;
}

static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	int ppid;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (rt_read_line(path, buf, sizeof(buf)))
		return 0;
	/* After the command name's closing parenthesis: state, ppid. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return 0;
	return ppid;
}

static int in_cgroups(const struct rd_config *c, pid_t pid)
{
	char path[64], line[512];
	FILE *f;
	int i, hit = 0;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	/* cgroup v2: "0::/path"; v1 hierarchies are matched the same way. */
	while (!hit && fgets(line, sizeof(line), f)) {
		char *cg = strchr(line, ':');

		cg = cg ? strchr(cg + 1, ':') : NULL;
		if (!cg)
			continue;
		cg++;
		cg[strcspn(cg, "\n")] = '\0';
		for (i = 0; i < c->nr_cgroups && !hit; i++) {
			size_t n = strlen(c->cgroups[i]);

			hit = !strncmp(cg, c->cgroups[i], n) &&
			      (cg[n] == '\0' || cg[n] == '/' || n == 1);
		}
	}
	fclose(f);
	return hit;
}

int rd_policy_opted_in(const struct rd_config *c, pid_t pid)
{
	char path[64], comm[32];
	pid_t p;
	int i, depth;

	if (pid <= 0 || pid == getpid())
		return 0;
	if (c->all)
		return 1;
	for (i = 0; i < c->nr_pids; i++)
		if (c->pids[i] == pid)
			return 1;
	/* A tree's root and whatever it forked, at any time. */
	if (c->root_pid > 0 || c->nr_trees)
		for (p = pid, depth = 0; p > 1 && depth < 64; depth++) {
			if (p == c->root_pid)
				return 1;
			for (i = 0; i < c->nr_trees; i++)
				if (c->trees[i] == p)
					return 1;
			p = parent_of(p);
		}
	if (c->nr_comms) {
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
		if (!rt_read_line(path, comm, sizeof(comm)))
			for (i = 0; i < c->nr_comms; i++)
				if (!strcmp(comm, c->comms[i]))
					return 1;
	}
	return c->nr_cgroups && in_cgroups(c, pid);
}

/* Enough free memory on nid for a move there? */
static int has_room(struct rd_engine *e, int nid)
{
	long long free_b;
	int v = rd_cached(e->pol.room, nid);

	if (v >= 0)
		return v;
	if (numa_node_size64(nid, &free_b) < 0)
		return rd_cache(e->pol.room, nid, 0);
	return rd_cache(e->pol.room, nid,
		     (uint64_t)free_b >= (e->cfg.min_free_mb << 20) + (2ULL << 20));
}

/* "0-1,3" (a Mems_allowed_list) into mask; -1 if it is not one. */
static int parse_nodes(const char *s, uint64_t *mask)
{
	unsigned long a, b;
	char *end;

	memset(mask, 0, RD_MEMS_WORDS * sizeof(*mask));
	while (*s && *s != '\n') {
		a = b = strtoul(s, &end, 10);
		if (end == s)
			return -1;
		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		if (b < a || b >= RD_MEMS_WORDS * 64)
			return -1;
		for (; a <= b; a++)
			mask[a / 64] |= 1ULL << (a % 64);
		s = *end == ',' ? end + 1 : end;
		if (*end != ',' && *end && *end != '\n')
			return -1;
	}
	return 0;
}

/*
 * The nodes pid's memory may be on: its cpuset's mems, which
 * move_pages(2) refuses to leave (EACCES). Unknown (NULL): any node.
 */
static const uint64_t *mems_allowed(struct rd_engine *e, pid_t pid)
{
	struct rd_mems *m = &e->pol.mems[(unsigned int)pid % RD_CACHE_SLOTS];
	char path[64], line[4096];
	uint64_t now = rd_now_ns();
	FILE *f;

	if (m->pid == pid && m->time_ns && now - m->time_ns < RD_CACHE_NS)
		return m->known ? m->mask : NULL;
	m->pid = pid;
	m->time_ns = now;
	m->turn = e->pol.turn;
	m->known = 0;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Mems_allowed_list:", 18)) {
			m->known = !parse_nodes(line + 18 + strspn(line + 18, " \t"),
						m->mask);
			break;
		}
	if (f)
		fclose(f);
	return m->known ? m->mask : NULL;
}

static int allowed(const uint64_t *mems, int nid)
{
	return !mems || (nid < RD_MEMS_WORDS * 64 &&
			 (mems[nid / 64] >> (nid % 64)) & 1);
}

/*
 * A cached cpuset that keeps a page from its first choice is read again,
 * once per turn of the engine: a cpuset widened (by its administrator, a
 * job scheduler) lets pages move at the next turn, not a second later.
 * True when it was stale and is now read again.
 */
static int mems_reread(struct rd_engine *e, pid_t pid)
{
	struct rd_mems *m = &e->pol.mems[(unsigned int)pid % RD_CACHE_SLOTS];

	if (m->pid != pid || m->turn == e->pol.turn)
		return 0;
	m->time_ns = 0;
	return 1;
}

/* The node nearest from with memory (*first); the nearest allowed with room. */
static int nearest(struct rd_engine *e, int from, const uint64_t *mems,
		   int *first)
{
	int best = -1, bestd = INT_MAX, firstd = INT_MAX, i;

	*first = -1;
	for (i = 0; i < e->ctr.nr_cnodes; i++) {
		int nid = e->ctr.cnode_nid[i], d;

		if (!e->has_mem[i])
			continue;
		d = nid == from ? 0 : rt_distance(from, nid);
		if (d < 0)
			d = INT_MAX - 1;
		if (d < firstd) {
			firstd = d;
			*first = nid;
		}
		if (d < bestd && allowed(mems, nid) && has_room(e, nid)) {
			bestd = d;
			best = nid;
		}
	}
	return best;
}

/*
 * The node to move to for references from counter src (a cnodeid, or
 * the first of a group), from a node of the group that has CPUs: the
 * nearest node with memory (the first choice); when that one has no room
 * or is outside the process's cpuset, the nearest one that has room and
 * is inside (fallback = nearest), or none (fallback = none). -1 with
 * *why: none to go to.
 */
static int target_nid(struct rd_engine *e, unsigned int src, pid_t pid,
		      enum rd_refusal *why)
{
	const uint64_t *mems = mems_allowed(e, pid);
	int from = -1, best, first;
	unsigned int c;

	for (c = src; c < src + e->ctr.nodes_per_counter &&
	     c < (unsigned int)e->ctr.nr_cnodes; c++)
		if (from < 0 || (e->has_cpu[c] && !e->has_cpu[rd_nid_cnode(e, from)]))
			from = e->ctr.cnode_nid[c];
	*why = RD_REF_NO_MEMORY;
	if (from < 0)
		return -1;
	*why = RD_REF_NR;	/* the first choice, unless said below */
	best = nearest(e, from, mems, &first);
	if (best != first && first >= 0 && !allowed(mems, first) &&
	    mems_reread(e, pid)) {
		mems = mems_allowed(e, pid);
		best = nearest(e, from, mems, &first);
	}
	if (best != first) {
		*why = first >= 0 && !allowed(mems, first) ? RD_REF_NOT_ALLOWED :
		       RD_REF_NO_MEMORY;
		if (e->cfg.fallback == RD_FALLBACK_NONE)
			return -1;
	}
	return best;
}

static struct rd_frozen *frozen_slot(struct rd_policy *p, pid_t pid,
				     uint64_t vaddr, int make)
{
	uint64_t h = (vaddr >> 12) * 0x9E3779B97F4A7C15ULL ^ (uint64_t)pid;
	struct rd_frozen *oldest = NULL;
	unsigned int i;

	for (i = 0; i < RD_FROZEN_PROBE; i++) {
		struct rd_frozen *f = &p->frozen[(h + i) % RD_FROZEN_SLOTS];

		if (f->time_ns && f->pid == pid && f->vaddr == vaddr)
			return f;
		if (!oldest || f->time_ns < oldest->time_ns)
			oldest = f;
	}
	return make ? oldest : NULL;
}

/*
 * Does the asking node own the page: its references at least 4x the home
 * node's? Counted over the page's whole life in this set (the extended
 * counters, mapped read-only, plus the event's hardware counts): the
 * hardware counters alone restart at every fold, and just after one a
 * differential of a few references looks like ownership.
 */
static void life_counts(struct rd_engine *e, const struct rcb_event *ev,
			uint64_t *remote, uint64_t *home)
{
	int i;

	*remote = ev->count;
	*home = ev->home_count;
	for (i = 0; i < e->nr_nodes; i++) {
		const uint32_t *c;

		if (e->info[i].rcb_cnodeid != ev->home_cnodeid)
			continue;
		c = refcnt_node_set_counters(e->node[i], ev->set);
		if (c) {
			*remote += c[ev->counter];
			*home += c[ev->home_cnodeid / e->ctr.nodes_per_counter];
		}
		break;
	}
}

static int owns(struct rd_engine *e, const struct rcb_event *ev)
{
	uint64_t remote, home;

	life_counts(e, ev, &remote, &home);
	return home * 4 <= remote;
}

/*
 * Frozen (and not melted)? A page moved before moves again only when the
 * node asking for it clearly owns it now: its count at least 4x the home
 * count. Within the freeze that must also hold for melt_events events in
 * a row from that node (melt). A page two nodes share alike never
 * qualifies, however long ago it moved.
 */
static int frozen(struct rd_engine *e, const struct rcb_event *ev, int to)
{
	uint64_t now = rd_now_ns(), freeze = e->cfg.freeze_ms * 1000000ULL;
	uint64_t vaddr = ev->vaddr;
	struct rd_frozen *f = frozen_slot(&e->pol, ev->pid, vaddr & ~(THP_SIZE - 1), 0);

	/* The huge page's entry, or else the base page's. */
	if (f && !f->huge)
		f = NULL;
	if (!f)
		f = frozen_slot(&e->pol, ev->pid, vaddr & ~4095ULL, 0);
	if (!f)
		return 0;
	if (!owns(e, ev))
		return 1;
	if (now - f->time_ns >= freeze)
		return 0;
	if (f->melt_nid == to) {
		f->melt_count++;
	} else {
		f->melt_nid = to;
		f->melt_count = 1;
	}
	if (e->cfg.melt_events && f->melt_count >= e->cfg.melt_events) {
		e->st.melted++;
		f->time_ns = 0;
		return 0;
	}
	return 1;
}

void rd_policy_moved(struct rd_engine *e, pid_t pid, uint64_t vaddr,
		     uint64_t size)
{
	struct rd_frozen *f;

	if (!e->cfg.freeze_ms)
		return;
	f = frozen_slot(&e->pol, pid, vaddr, 1);
	f->pid = pid;
	f->vaddr = vaddr;
	f->time_ns = rd_now_ns();
	f->melt_nid = -1;
	f->melt_count = 0;
	f->huge = size >= THP_SIZE;
}

int rd_policy_rate_take(struct rd_engine *e, uint64_t size)
{
	struct rd_policy *p = &e->pol;
	double cap_p = e->cfg.rate_pages, cap_b = e->cfg.rate_mb * 1048576.0;
	uint64_t now = rd_now_ns();
	double dt = p->tok_ns ? (now - p->tok_ns) / 1e9 : 1.0;

	/* Buckets of one second's worth (at least one page) fill at the rate. */
	p->tok_ns = now;
	if (cap_p > 0) {
		p->tok_pages += dt * cap_p;
		if (p->tok_pages > (cap_p < 1 ? 1 : cap_p))
			p->tok_pages = cap_p < 1 ? 1 : cap_p;
	}
	if (cap_b > 0) {
		double cap = cap_b < size ? size : cap_b;

		p->tok_bytes += dt * cap_b;
		if (p->tok_bytes > cap)
			p->tok_bytes = cap;
	}
	if ((cap_p > 0 && p->tok_pages < 1) || (cap_b > 0 && p->tok_bytes < size))
		return 0;
	if (cap_p > 0)
		p->tok_pages -= 1;
	if (cap_b > 0)
		p->tok_bytes -= size;
	return 1;
}

/*
 * Do the counts pass our thresholds? For a page on a CPU-less node (a
 * memory tier), promotion: the remote count alone. Otherwise the
 * differential over home and the absolute threshold.
 */
static int past_thresholds(const struct rd_engine *e,
			   const struct rcb_event *ev, uint64_t remote,
			   uint64_t local)
{
	const struct rd_config *c = &e->cfg;
	unsigned int home = ev->home_cnodeid;

	if (home < (unsigned int)e->ctr.nr_cnodes && !e->has_cpu[home])
		return remote >= c->promote_threshold;
	return remote >= local && remote - local >= c->diff_threshold &&
	       remote >= c->abs_threshold;
}

void rd_policy_decide(struct rd_engine *e, const struct rcb_event *ev,
		      struct rd_decision *d)
{
	unsigned int home = ev->home_cnodeid;
	const struct rd_config *c = &e->cfg;
	enum rd_refusal why;
	uint64_t remote, local;

	memset(d, 0, sizeof(*d));
	d->from_nid = home < (unsigned int)e->ctr.nr_cnodes ? e->ctr.cnode_nid[home] : -1;
	d->to_nid = -1;
	d->verdict = RD_REFUSE;
	if (!(ev->flags & RCB_EVENT_F_CONTEXT) || ev->pid <= 0 || !ev->vaddr) {
		d->why = RD_REF_NO_CONTEXT;
		return;
	}
	if (rd_cached(e->pol.opted, ev->pid) < 0)
		rd_cache(e->pol.opted, ev->pid, rd_policy_opted_in(c, ev->pid));
	if (!rd_cached(e->pol.opted, ev->pid)) {
		d->why = RD_REF_NOT_OPTED_IN;
		return;
	}
	d->verdict = RD_BELOW;
	if (!past_thresholds(e, ev, ev->count, ev->home_count)) {
		/*
		 * The event's counts are those of when the record was made:
		 * the crossing that raised it may have folded the set (a
		 * PMU sample weighs its period, and an 11-bit counter holds
		 * two of 1,000), or a full queue made it late. Judge the set
		 * on its counts over time instead.
		 */
		life_counts(e, ev, &remote, &local);
		if (!past_thresholds(e, ev, remote, local))
			return;
		e->st.over_time++;
	}
	d->to_nid = target_nid(e, ev->src_cnodeid, ev->pid, &why);
	/*
	 * No node to go to, or only the one it is on because the nearer
	 * ones are full or out of its cpuset: refused, and why.
	 */
	if (d->to_nid < 0 || (d->to_nid == d->from_nid && why != RD_REF_NR)) {
		d->verdict = RD_REFUSE;
		d->why = why;
		return;
	}
	if (d->to_nid == d->from_nid)
		return;
	if (frozen(e, ev, d->to_nid)) {
		d->verdict = RD_FROZEN;
		return;
	}
	d->verdict = RD_MOVE;
}
