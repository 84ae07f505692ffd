// SPDX-License-Identifier: GPL-2.0
/*
 * refcntd: moving a page. Before move_pages(2), what must not move is
 * refused: an mlock()ed mapping (move_pages would move it; the user
 * locked it in place), a page no longer at the event's physical address
 * (it moved meanwhile: the event is stale). The page is moved whole:
 * move_pages(2) of a transparent or hugetlb huge page's first address
 * moves the huge page, so the size the range query reports is what is
 * counted. Then move_pages' status tells the refusal's reason. Counters
 * belong to physical memory: the frames a moved page left and took are
 * folded, so that each page there is judged on its own references.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <numaif.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "internal.h"

/* VmLck of /proc/pid/status in kB, or -errno. */
static long long locked_kb(pid_t pid)
{
	char path[64], line[256];
	long long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %lld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

int rd_mlocked(pid_t pid, uint64_t vaddr)
{
	char path[64], line[512];
	int in = 0, locked = 0;
	long long kb = locked_kb(pid);
	FILE *f;

	/* smaps walks every page table: only when something is locked. */
	if (kb <= 0)
		return kb;
	snprintf(path, sizeof(path), "/proc/%d/smaps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e;

		/* A mapping's first line; field lines ("Anon...:") fail. */
		if (sscanf(line, "%llx-%llx ", &s, &e) == 2) {
			in = vaddr >= s && vaddr < e;
			continue;
		}
		if (in && !strncmp(line, "VmFlags:", 8)) {
			locked = strstr(line, " lo") != NULL;
			break;
		}
	}
	fclose(f);
	return locked;
}

/* The refusal move_pages(2)'s errno (ret) or page status stands for. */
static enum rd_refusal refusal_of(int err)
{
	switch (err) {
	case ESRCH:
		return RD_REF_GONE;
	case EPERM:
		return RD_REF_NOT_PERMITTED;
	case EACCES:
		return RD_REF_SHARED;
	case EBUSY:
	case EAGAIN:
		return RD_REF_PINNED;
	case ENOENT:
	case EFAULT:
		return RD_REF_NOT_PRESENT;
	case ENOMEM:
		return RD_REF_NO_MEMORY;
	default:
		return RD_REF_ERROR;
	}
}

static void refuse(struct rd_engine *e, const struct rcb_event *ev,
		   struct rd_decision *d, enum rd_refusal why)
{
	d->verdict = RD_REFUSE;
	d->why = why;
	e->st.refused[why]++;
	rd_log(7, "refused (%s): pid %d 0x%llx node %d -> node %d",
	       rd_refusal_names[why], ev->pid, (unsigned long long)ev->vaddr,
	       d->from_nid, d->to_nid);
}

/* Where the page is now and how big: 0, or a refusal. */
static int page_now(struct rd_engine *e, const struct rcb_event *ev,
		    uint64_t *size, enum rd_refusal *why)
{
	struct rcb_page_counters pc;
	size_t nr = 0;

	if (refcnt_node_range_query(e->node[0], ev->pid, ev->vaddr, 1, 0, &pc,
				    1, &nr) || nr != 1) {
		rd_log(7, "range query pid %d 0x%llx: %s", ev->pid,
		       (unsigned long long)ev->vaddr, strerror(errno));
		*why = errno == ESRCH ? RD_REF_GONE :
		       errno == EPERM || errno == EACCES ? RD_REF_NOT_PERMITTED :
		       RD_REF_ERROR;
		return -1;
	}
	if (!(pc.flags & RCB_PAGE_PRESENT)) {
		rd_log(7, "pid %d 0x%llx not present (flags 0x%llx)", ev->pid,
		       (unsigned long long)ev->vaddr, (unsigned long long)pc.flags);
		*why = RD_REF_NOT_PRESENT;
		return -1;
	}
	if ((pc.paddr & ~(e->granularity - 1)) != (ev->paddr & ~(e->granularity - 1))) {
		*why = RD_REF_STALE;
		return -1;
	}
	*size = pc.page_size ? pc.page_size : 4096;
	return 0;
}

static void log_move(const struct rd_engine *e, const struct rd_move *m)
{
	char comm[32] = "?", path[64], sz[16];

	if (!e->cfg.log_moves)
		return;
	snprintf(path, sizeof(path), "/proc/%d/comm", m->pid);
	rt_read_line(path, comm, sizeof(comm));
	rd_log(6, "%s pid %d (%s) page 0x%" PRIx64 " %s node %d -> node %d (remote %u, home %u)",
	       m->dry_run ? "dry-run: would move" : "moved", m->pid, comm,
	       m->vaddr, rt_human(m->size, sz, sizeof(sz)), m->from_nid,
	       m->to_nid, m->remote, m->home);
}

/* Is the page at vaddr of pid already queued to move (not yet flushed)? */
static int queued(const struct rd_engine *e, pid_t pid, uint64_t vaddr)
{
	size_t i;

	for (i = 0; i < e->nr_pend; i++)
		if (e->pend[i].ev.pid == pid && e->pend[i].m.vaddr == vaddr)
			return 1;
	return 0;
}

void rd_decide_act(struct rd_engine *e, const struct rcb_event *ev)
{
	struct rd_decision d;

	rd_policy_decide(e, ev, &d);
	switch (d.verdict) {
	case RD_MOVE:
		rd_move_page(e, ev, &d);
		break;
	case RD_BELOW:
		e->st.below++;
		break;
	case RD_REFUSE:
		e->st.refused[d.why]++;
		break;
	case RD_FROZEN:
		e->st.frozen++;
		break;
	case RD_RATE_LIMITED:
		e->st.rate_limited++;
		break;
	}
}

void rd_move_page(struct rd_engine *e, const struct rcb_event *ev,
		  struct rd_decision *d)
{
	struct rd_move m = { .pid = ev->pid, .from_nid = d->from_nid,
			     .to_nid = d->to_nid, .remote = ev->count,
			     .home = ev->home_count };
	enum rd_refusal why;
	int lk;

	/* Only "nothing locked at all" is cached: it holds for every page. */
	lk = rd_cached(e->pol.locked, ev->pid);
	if (lk) {
		lk = rd_mlocked(ev->pid, ev->vaddr);
		if (!lk && locked_kb(ev->pid) == 0)
			rd_cache(e->pol.locked, ev->pid, 0);
	}
	if (lk < 0)
		rd_log(7, "/proc/%d/status: %s", ev->pid, strerror(-lk));
	if (lk) {
		refuse(e, ev, d, lk > 0 ? RD_REF_MLOCKED : refusal_of(-lk));
		return;
	}
	if (page_now(e, ev, &m.size, &why)) {
		refuse(e, ev, d, why);
		return;
	}
	m.vaddr = ev->vaddr & ~(m.size - 1);
	if (queued(e, ev->pid, m.vaddr)) {
		/* Two events of one read for one page: it moves once. */
		d->verdict = RD_FROZEN;
		e->st.frozen++;
		return;
	}
	if (!rd_policy_rate_take(e, m.size)) {
		d->verdict = RD_RATE_LIMITED;
		e->st.rate_limited++;
		return;
	}
	m.time_ns = rd_now_ns();
	if (e->cfg.dry_run) {
		m.dry_run = 1;
		e->st.dry_run++;
		log_move(e, &m);
		if (e->hooks.moved)
			e->hooks.moved(&m, e->hooks.arg);
		return;
	}
	if (e->nr_pend == RD_PEND_MAX)
		rd_move_flush(e);
	e->pend[e->nr_pend++] = (struct rd_pending){ .ev = *ev, .d = *d, .m = m };
}

/*
 * Fold the sets of the frame of size bytes at paddr on node nid: the
 * module raises one migration event per set between two folds, and a
 * page must not be judged on the counts of the frame's earlier page.
 */
static void fold_frame(struct rd_engine *e, int nid, uint64_t paddr,
		       uint64_t size)
{
	struct refcnt_node *node = NULL;
	struct rcb_sets_fold f = { 0 };
	int64_t first, last;
	int i;

	for (i = 0; i < e->nr_nodes && !node; i++)
		if (refcnt_node_nid(e->node[i]) == nid)
			node = e->node[i];
	if (!node)
		return;
	first = refcnt_node_locate(node, paddr);
	last = refcnt_node_locate(node, paddr + size - 1);
	if (first < 0 || last < first)
		return;
	f.first_set = first;
	f.nr_sets = last - first + 1;
	if (ioctl(refcnt_node_fd(node), RCB_SETS_FOLD, &f)) {
		rd_log(7, "RCB_SETS_FOLD on node %d, sets %" PRIu64 "+%" PRIu64 ": %s",
		       nid, (uint64_t)f.first_set, (uint64_t)f.nr_sets,
		       strerror(errno));
		return;
	}
	e->st.frames_folded++;
}

/*
 * A page moved: the frame it left keeps its counts and its raised event,
 * the frame it took those of its earlier page. Fold both, so that each
 * page is judged on its own references from now on.
 */
static void fold_frames(struct rd_engine *e, const struct rd_pending *p)
{
	uint64_t size = p->m.size;
	struct rcb_page_counters pc;
	size_t nr = 0;

	fold_frame(e, p->m.from_nid, p->ev.paddr & ~(size - 1), size);
	if (!refcnt_node_range_query(e->node[0], p->m.pid, p->m.vaddr, 1, 0,
				     &pc, 1, &nr) && nr == 1 &&
	    (pc.flags & RCB_PAGE_PRESENT) && pc.paddr)
		fold_frame(e, p->m.to_nid, pc.paddr & ~(size - 1), size);
}

/* The pending moves of the process of entry i, in one move_pages(2). */
static size_t flush_pid(struct rd_engine *e, size_t i, char *done)
{
	pid_t pid = e->pend[i].ev.pid;
	void *addr[RD_PEND_MAX];
	int to[RD_PEND_MAX] = { 0 }, status[RD_PEND_MAX];
	size_t idx[RD_PEND_MAX], n = 0, j, k;
	long ret;

	for (j = i; j < e->nr_pend; j++)
		if (!done[j] && e->pend[j].ev.pid == pid) {
			done[j] = 1;
			idx[n] = j;
			addr[n] = (void *)(uintptr_t)e->pend[j].m.vaddr;
			to[n] = e->pend[j].m.to_nid;
			status[n++] = -1;
		}
	ret = move_pages(pid, n, addr, to, status, MPOL_MF_MOVE);
	if (ret < 0)
		rd_log(7, "move_pages pid %d, %zu pages: %s", pid, n, strerror(errno));
	for (k = 0; k < n; k++) {
		struct rd_pending *p = &e->pend[idx[k]];

		if (ret < 0) {
			/*
			 * EACCES for the call, not a page's status: a target
			 * node outside the process's cpuset (its mems).
			 */
			refuse(e, &p->ev, &p->d, errno == EACCES ?
			       RD_REF_NOT_ALLOWED : refusal_of(errno));
		} else if (status[k] != to[k]) {
			/* Not migrated: pinned or busy, or status says why. */
			refuse(e, &p->ev, &p->d, status[k] >= 0 ? RD_REF_PINNED :
			       refusal_of(-status[k]));
		} else {
			e->st.moved++;
			e->st.moved_bytes += p->m.size;
			fold_frames(e, p);
			rd_policy_moved(e, pid, p->m.vaddr, p->m.size);
			log_move(e, &p->m);
			if (e->hooks.moved)
				e->hooks.moved(&p->m, e->hooks.arg);
		}
	}
	return n;
}

/*
 * The moves decided since the last flush, one move_pages(2) per process:
 * under a burst of events one call per page cost more than the moves.
 */
void rd_move_flush(struct rd_engine *e)
{
	char done[RD_PEND_MAX] = { 0 };
	size_t i;

	for (i = 0; i < e->nr_pend; i++)
		if (!done[i])
			flush_pid(e, i, done);
	e->nr_pend = 0;
}
