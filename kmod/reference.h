/* SPDX-License-Identifier: GPL-2.0 */
/*
 * refcnt: the reference entry point, all the core (core.h) offers the
 * feeds (feed.h), which give it references by physical address.
 */
#ifndef _REFCNT_REFERENCE_H
#define _REFCNT_REFERENCE_H

#include <linux/types.h>

/**
 * struct refcnt_ctx - what a feed knows of a reference beyond its address
 * @pid:	referencing task's pid (in the initial pid namespace)
 * @vaddr:	virtual address referenced
 */
struct refcnt_ctx {
	pid_t pid;
	u64 vaddr;
};

/**
 * struct refcnt_outcome - what became of references, for a counting session
 * @home_cnode:	cnodeid of the node the page is on; -1 when no node
 *		counts it (the references reached no counter)
 * @lost:	of the references, those its hardware counter had no room
 *		for (pegged), or dropped for want of a counter page; those
 *		deferred in NMI to be counted later (defer.c) are not lost
 */
struct refcnt_outcome {
	int home_cnode;
	u32 lost;
};

bool refcnt_reference(u64 paddr, unsigned int src_cnode, u32 count,
		      const struct refcnt_ctx *ctx);
bool refcnt_reference_outcome(u64 paddr, unsigned int src_cnode, u32 count,
			      const struct refcnt_ctx *ctx,
			      struct refcnt_outcome *out);

#endif /* _REFCNT_REFERENCE_H */
