// SPDX-License-Identifier: GPL-2.0
/*
 * refcntd: the scan of the opted-in processes, and the reverse map it
 * builds. Clearing a process's soft-dirty bits makes its next stores
 * fault, which the page-fault feed counts; reading its pagemap maps each
 * physical page back to (pid, address), which names the page of a
 * migration event whose context the kernel's lossy cache dropped.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

static uint32_t rmap_hash(uint64_t pfn)
{
	return (pfn * 0x9E3779B97F4A7C15ULL) >> 46;	/* 18 bits */
}

int rd_rmap_find(const struct rd_engine *e, uint64_t paddr, pid_t *pid,
		 uint64_t *vaddr)
{
	uint64_t pfn = paddr >> 12;
	uint32_t h, i;

	if (!e->rmap || !e->rmap_gen)
		return -1;
	for (h = rmap_hash(pfn), i = 0; i < 32; i++) {
		const struct rd_rmap *r = &e->rmap[(h + i) % RD_RMAP_SLOTS];

		if (r->gen != e->rmap_gen)
			return -1;
		if (r->pfn == pfn) {
			*pid = r->pid;
			*vaddr = r->vaddr;
			return 0;
		}
	}
	return -1;
}

static void rmap_add(struct rd_engine *e, uint64_t pfn, pid_t pid, uint64_t vaddr)
{
	uint32_t h, i;

	if (e->rmap_nr >= RD_RMAP_SLOTS / 2)
		return;
	for (h = rmap_hash(pfn), i = 0; i < 32; i++) {
		struct rd_rmap *r = &e->rmap[(h + i) % RD_RMAP_SLOTS];

		if (r->gen != e->rmap_gen) {
			*r = (struct rd_rmap){ pfn, vaddr, pid, e->rmap_gen };
			e->rmap_nr++;
			return;
		}
	}
}

/* The private writable anonymous pages of pid into the reverse map. */
static void rmap_process(struct rd_engine *e, pid_t pid)
{
	char path[64], line[512];
	uint64_t pm[512];
	FILE *maps;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	maps = fopen(path, "re");
	while (fd >= 0 && maps && fgets(line, sizeof(line), maps)) {
		uint64_t s, end, a;

		if (!rd_maps_private_anon(line, &s, &end))
			continue;
		for (a = s; a < end && e->rmap_nr < RD_RMAP_SLOTS / 2; a += 512 * 4096ULL) {
			size_t n = (end - a) / 4096 < 512 ? (end - a) / 4096 : 512, k;
			ssize_t got = pread(fd, pm, n * 8, (a / 4096) * 8);

			for (k = 0; got > 0 && k < (size_t)got / 8; k++)
				if ((pm[k] >> 63) & 1 && (pm[k] & ((1ULL << 55) - 1)))
					rmap_add(e, pm[k] & ((1ULL << 55) - 1), pid,
						 a + k * 4096);
		}
	}
	if (maps)
		fclose(maps);
	if (fd >= 0)
		close(fd);
}

/*
 * One walk of /proc over the processes acted on: clear their soft-dirty
 * bits (clear_refs: the soft-dirty scan) and/or rebuild the reverse map
 * from their pagemap. Walking every process, not a list made at start,
 * takes in what was forked or joined a cgroup since: a tree's or a
 * cgroup's members are the processes the policy says they are now.
 */
static void walk(struct rd_engine *e, int clear, int map)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	if (!d)
		return;
	if (map) {
		/* A new generation empties the reverse map at once. */
		e->rmap_gen++;
		e->rmap_nr = 0;
		e->rmap_ns = rd_now_ns();
	}
	while ((de = readdir(d))) {
		char path[64];
		pid_t pid = atoi(de->d_name);
		int fd;

		if (pid <= 0 || !rd_policy_opted_in(&e->cfg, pid))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/clear_refs", pid);
		fd = clear ? open(path, O_WRONLY | O_CLOEXEC) : -1;
		if (fd >= 0 && write(fd, "4", 1) == 1)
			e->st.scans++;
		if (fd >= 0)
			close(fd);
		if (map)
			rmap_process(e, pid);
	}
	closedir(d);
	if (map) {
		e->rmap_cost_ns = rd_now_ns() - e->rmap_ns;
		e->st.rmap_ns += e->rmap_cost_ns;
	}
}

/*
 * The soft-dirty scan: clearing a process's soft-dirty bits write-protects
 * its pages, so its next store to each takes a minor fault, which the
 * page-fault feed counts from the storing CPU's node: refcntd's own
 * hinting faults, for machines without PEBS/IBS. The reverse map is
 * rebuilt on the same walk.
 */
void rd_scan(struct rd_engine *e)
{
	walk(e, 1, e->rmap != NULL);
}

/*
 * Does pid still have the page at vaddr? A page freed since the map was
 * built may be another process's now (a worker's new page where the
 * moved one was): such a hit is a miss, which may rebuild the map.
 */
static int rmap_current(pid_t pid, uint64_t vaddr, uint64_t pfn)
{
	char path[64];
	uint64_t pm = 0;
	int fd, ok;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ok = pread(fd, &pm, 8, (vaddr / 4096) * 8) == 8 && (pm >> 63) & 1 &&
	     (pm & ((1ULL << 55) - 1)) == pfn;
	close(fd);
	return ok;
}

/*
 * The process and address of the page of a set: any base page of the set
 * the map knows (a set of granularity above 4 KiB holds several; the
 * event's address is its first byte). On a miss the map is rebuilt, at
 * most once per rmap_ms, or less often if the builds would take more than
 * rmap_cpu_pct of a CPU, so a page allocated, or a process forked or moved into a
 * cgroup, since the last build is named within that time.
 */
int rd_rmap_name(struct rd_engine *e, uint64_t paddr, pid_t *pid,
		 uint64_t *vaddr)
{
	uint64_t gran = e->granularity > 4096 ? e->granularity : 4096;
	uint64_t every = e->cfg.rmap_ms * 1000000ULL;
	uint64_t a, base = paddr & ~(gran - 1);
	int tries;

	if (!e->rmap)
		return -1;
	/*
	 * And no sooner than keeps the builds to rmap_cpu_pct of a CPU:
	 * the walk of a large process's pagemap takes most of one when
	 * misses come faster than it, the program's CPU on a small machine.
	 */
	if (e->cfg.rmap_cpu_pct &&
	    every < e->rmap_cost_ns * 100 / e->cfg.rmap_cpu_pct)
		every = e->rmap_cost_ns * 100 / e->cfg.rmap_cpu_pct;
	for (tries = 0; tries < 2; tries++) {
		for (a = base; a < base + gran; a += 4096)
			if (!rd_rmap_find(e, a, pid, vaddr) &&
			    rmap_current(*pid, *vaddr, a >> 12))
				return 0;
		if (tries || !e->cfg.rmap_ms ||
		    (e->rmap_ns && rd_now_ns() - e->rmap_ns < every))
			break;
		e->st.rmap_rebuilds++;
		walk(e, 0, 1);
	}
	return -1;
}
