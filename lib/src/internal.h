/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * librefcnt internals. Symbols here are hidden from the shared library;
 * in the static archive they carry the refcnt__ prefix.
 */
#ifndef REFCNT_INTERNAL_H
#define REFCNT_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "refcnt/refcnt.h"

/* Definitions of the public API (the rest is hidden, -fvisibility=hidden). */
#define REFCNT_API	__attribute__((visibility("default")))

/* Set errno and return -1 (or NULL through refcnt__err_ptr). */
static inline int refcnt__err(int err)
{
	errno = err;
	return -1;
}

static inline void *refcnt__err_ptr(int err)
{
	errno = err;
	return NULL;
}

struct refcnt_node {
	int fd;
	int nid;
	struct rcb_info info;		/* at open */
	unsigned int nr_slots;
	struct rcb_slot *slots;
	uint64_t *first_set;		/* set counting slots[i].base */
	size_t map_len;			/* info.rcb_len rounded to pages */
	const uint32_t *map;		/* set once, atomically */
};

/* Open /dev/refcnt/node<nid>, O_RDONLY | O_CLOEXEC. fd or -1/errno. */
int refcnt__open_dev(int nid);

/*
 * Open any node device (the lowest node id that opens). fd or -1/errno:
 * the error of the first device when none opens, ENOENT when none exists.
 */
int refcnt__open_any(void);

/* RCB_INFO_GET on fd. 0 or -1/errno. */
int refcnt__info(int fd, struct rcb_info *info);

/* Hardware pages of [round_down(vaddr, gran), vaddr + len). -1/EINVAL. */
int refcnt__entries(uint64_t vaddr, uint64_t len, uint64_t gran, size_t *nr);

/*
 * One RCB_RANGE_QUERY on fd into out, cap entries of struct
 * rcb_page_counters or, with RCB_RANGE_PACKED in flags, of
 * RCB_PAGE_SET_SIZE(rcb_sw_counters_per_set) bytes; nr_entries in *nr.
 * 0 or -1/errno.
 */
int refcnt__query(int fd, pid_t pid, uint64_t vaddr, uint64_t len,
		  unsigned int flags, void *out, size_t cap, size_t *nr);

/*
 * Walk [vaddr, vaddr + len) in chunks of at most REFCNT__CHUNK hardware
 * pages through a temporary buffer, calling fn for each chunk's entries
 * (first is the index of the chunk's first entry in the whole range).
 * When flags has REFCNT__WALK_BOTH, each chunk is queried twice, extended
 * then hardware, and fn gets both. 0 or -1/errno.
 */
#define REFCNT__CHUNK		512
#define REFCNT__WALK_BOTH	(1U << 31)
typedef int (*refcnt__walk_fn)(void *arg, size_t first,
			       const struct rcb_page_counters *e,
			       const struct rcb_page_counters *hw, size_t n);
int refcnt__walk(int fd, uint64_t gran, pid_t pid, uint64_t vaddr,
		 uint64_t len, unsigned int flags, refcnt__walk_fn fn,
		 void *arg);

/*
 * Node ids by cnodeid (malloc'ed): the module's numbering, or the online
 * nodes without the module. Count or -1/errno.
 */
int refcnt__cnode_nids(int **nids);

/* Parse a kernel list such as "0-3,5" (or "" for none). Count or -1. */
int refcnt__parse_list(const char *s, int *out, size_t cap);

/* Read a small sysfs file into buf, without the trailing newline. */
int refcnt__read_file(const char *path, char *buf, size_t size);

#endif /* REFCNT_INTERNAL_H */
