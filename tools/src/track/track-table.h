/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The allocation tracker's table: the file librefcnt-track.so (preloaded
 * into a command by refcnt-run) keeps up to date while the command runs,
 * and refcnt-run reads when the process exits. It is a shared mapping of a
 * file in the directory refcnt-run made for the run (REFCNT_TRACK_DIR),
 * named track.PID, so that what the process recorded is there even when
 * it dies by a signal or calls _exit().
 *
 * Layout: this header (TRACK_HEADER_SIZE bytes), then four areas at the
 * offsets the header gives:
 *   sites     struct track_site, in the order they were first seen, found
 *             through an open-addressing index (uint32_t, site + 1) keyed
 *             by the return address of a small allocation's call or by
 *             a hash of a large one's call stack;
 *   objects   struct track_obj, one per large allocation or mapping, in
 *             order of allocation (an index that only grows);
 *   readings  struct track_reading, the counters of an object's pages
 *             read by the tracker itself when it was allocated (reused
 *             memory) and when it was freed;
 *   pages     the page map of small allocations: leaves of
 *             TRACK_LEAF_PAGES entries (the site index + 1 of the last
 *             small allocation on each base page that the tracker looked
 *             at in full: each one from another return address than the
 *             thread's last, and one every TRACK_SAMPLE_BYTES, counting
 *             one byte more a call, from the same), found through an
 *             open-addressing table of leaf keys (address >> TRACK_LEAF_SHIFT).
 * Entries are written by the process's threads without locks (atomic
 * claims of free slots, atomic counts): read them once the process is
 * stopped at its exit.
 */
#ifndef REFCNT_TRACK_TABLE_H
#define REFCNT_TRACK_TABLE_H

#include <stdint.h>

#define TRACK_MAGIC		0x3174726b6374636eULL	/* "nctckrt1" */
#define TRACK_VERSION		1
#define TRACK_HEADER_SIZE	4096
#define TRACK_FILE_PREFIX	"track."
#define TRACK_OWN_MAX		4
#define TRACK_ENV_DIR		"REFCNT_TRACK_DIR"
#define TRACK_ENV_THRESHOLD	"REFCNT_TRACK_THRESHOLD"
/* Large allocations: this many bytes or more (refcnt-run --track-threshold). */
#define TRACK_DEFAULT_THRESHOLD	(1024 * 1024)

#define TRACK_MAX_FRAMES	16
#define TRACK_LEAF_SHIFT	22	/* a leaf covers 4 MiB */
#define TRACK_PAGE_SHIFT	12	/* of 4 KiB base pages */
#define TRACK_LEAF_PAGES	(1U << (TRACK_LEAF_SHIFT - TRACK_PAGE_SHIFT))
/*
 * Small allocations of a thread from the same return address: one looked
 * at in full (its pages marked) every this many bytes, plus one a call
 * (or the threshold, if less); about four a page the site fills.
 */
#define TRACK_SAMPLE_BYTES	1024
/* Counters of a reading: by counter, home pages by counter too. */
#define TRACK_COUNTERS		64

/* What made an allocation (struct track_obj.kind, track_site.kind). */
enum track_kind {
	TRACK_MALLOC,
	TRACK_CALLOC,
	TRACK_REALLOC,
	TRACK_MEMALIGN,		/* posix_memalign, aligned_alloc, memalign, valloc */
	TRACK_MMAP,
	TRACK_MMAP_FILE,
	TRACK_NUMA_ONNODE,
	TRACK_NUMA_INTERLEAVED,
	TRACK_NUMA_LOCAL,	/* numa_alloc_local, numa_alloc */
	TRACK_NR_KINDS,
};

/* Calls counted in the header, by function (track_header.calls). */
enum track_call {
	TRACK_CALL_MALLOC,
	TRACK_CALL_CALLOC,
	TRACK_CALL_REALLOC,
	TRACK_CALL_MEMALIGN,
	TRACK_CALL_FREE,
	TRACK_CALL_MMAP,
	TRACK_CALL_MUNMAP,
	TRACK_CALL_MREMAP,
	TRACK_CALL_NUMA_ALLOC,
	TRACK_CALL_NUMA_FREE,
	TRACK_NR_CALLS,
};

/* track_header.flags */
#define TRACK_F_COUNTERS	(1U << 0)	/* readings possible: a node device opened */
#define TRACK_F_PADDR		(1U << 1)	/* readings have lost counts (paddr seen) */
#define TRACK_F_FORKED		(1U << 2)	/* a copy of the parent's table at fork */

struct track_header {
	uint64_t magic;
	uint32_t version;
	uint32_t header_size;
	int32_t pid;
	int32_t ppid;			/* the parent whose table was copied, or 0 */
	uint32_t flags;
	uint32_t nr_counters;		/* counters of a set, from the device */
	uint32_t nodes_per_counter;
	uint32_t granularity;
	uint64_t threshold;
	uint64_t start_ns;		/* CLOCK_MONOTONIC at the start */
	uint64_t file_size;

	uint64_t sites_off;
	uint32_t sites_cap;
	uint32_t sites_nr;		/* claimed; a site is whole once .ready */
	uint64_t index_off;		/* uint32_t site + 1, 0: free */
	uint32_t index_cap;		/* a power of two */
	uint32_t pad;
	uint64_t objs_off;
	uint32_t objs_cap;
	uint32_t objs_nr;		/* claimed; an entry is whole once .ready */
	uint64_t reads_off;
	uint32_t reads_cap;
	uint32_t reads_nr;
	uint64_t keys_off;		/* uint64_t leaf keys, 0: free */
	uint64_t leaves_off;		/* leaf i at leaves_off + i * 4 * TRACK_LEAF_PAGES */
	uint32_t leaves_cap;		/* a power of two */
	uint32_t leaves_nr;

	/* What could not be recorded because an area was full. */
	uint64_t dropped_sites;
	uint64_t dropped_objs;
	uint64_t dropped_reads;
	uint64_t dropped_pages;
	uint64_t calls[TRACK_NR_CALLS];
	uint64_t bytes_large;
	/*
	 * The tracker's own anonymous mappings (its table of live objects,
	 * its query buffers): memory of the process that is not the
	 * program's. len 0: none (a table from before these fields).
	 */
	struct {
		uint64_t start, len;
	} own[TRACK_OWN_MAX];
};

/* A call site: where small allocations fold, and large ones start. */
struct track_site {
	uint64_t key;			/* 0: a site that lost the race for its key */
	uint32_t ready;			/* frames written */
	uint32_t kind;			/* enum track_kind of the first call */
	uint32_t nframes;
	uint32_t large;			/* a large allocation's stack, not a folded site */
	uint64_t calls;			/* small allocations folded here */
	uint64_t bytes;
	uint64_t frames[TRACK_MAX_FRAMES];	/* return addresses, innermost first */
};

/* track_obj.flags */
#define TRACK_O_FREED		(1U << 0)
#define TRACK_O_REALLOCED	(1U << 1)	/* freed by a realloc that moved or grew it */
#define TRACK_O_INHERITED	(1U << 2)	/* allocated before a fork, in the parent */
#define TRACK_O_PARTIAL		(1U << 3)	/* munmap'ed in part */
#define TRACK_O_PLACED		(1U << 4)	/* mbind() on it: arg_node the node */

/* A large allocation or a mapping. */
struct track_obj {
	uint64_t start;
	uint64_t size;			/* bytes asked for */
	uint64_t len;			/* bytes of the range (mappings: page-rounded) */
	uint32_t site;			/* index of its struct track_site */
	uint32_t kind;			/* enum track_kind */
	int32_t tid;			/* the allocating thread */
	int32_t node;			/* its CPU's node then, -1 unknown */
	int32_t arg_node;		/* numa_alloc_onnode()'s or mbind()'s node, else -1 */
	uint32_t flags;			/* TRACK_O_* */
	uint64_t t_alloc_ns;		/* since track_header.start_ns */
	uint64_t t_free_ns;
	uint32_t base_read;		/* reading at allocation + 1, 0: none */
	uint32_t end_read;		/* reading at free + 1, 0: none */
	uint32_t ready;
	uint32_t pad;
};

/* track_reading.flags */
#define TRACK_R_END		(1U << 0)	/* at the free, else at the allocation */
#define TRACK_R_LOST		(1U << 1)	/* lost[] is valid */

/*
 * An object's pages' counters, summed: extended + hardware references
 * by counter, those from each page's home counter (local), pages by
 * their home counter, and references lost to pegging by counter.
 */
struct track_reading {
	uint32_t obj;
	uint32_t flags;
	uint64_t pages_present;
	uint64_t pages_counted;
	uint64_t local;
	uint64_t refs[TRACK_COUNTERS];
	uint64_t lost[TRACK_COUNTERS];
	uint32_t home[TRACK_COUNTERS];
};

#endif /* REFCNT_TRACK_TABLE_H */
