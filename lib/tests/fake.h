/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * A fake refcnt.ko for host unit tests of librefcnt: open(2), opendir(3)
 * and ioctl(2) are wrapped (ld --wrap) so that /dev/refcnt/nodeN are
 * memfds and the ioctls follow uapi/linux/refcnt.h from a formula.
 */
#ifndef REFCNT_FAKE_H
#define REFCNT_FAKE_H

#include <stdint.h>
#include <linux/refcnt.h>

#define FAKE_MAX_NODES	8
#define FAKE_MAX_SLOTS	4

struct fake_node {
	int nid;			/* -1: unused */
	unsigned int nr_slots;
	struct rcb_slot slots[FAKE_MAX_SLOTS];
	int open_errno;			/* open() fails with it when set */
};

struct fake_config {
	uint32_t granularity;
	uint32_t cnodes;		/* counters per set = min(cnodes, 64) */
	struct fake_node nodes[FAKE_MAX_NODES];
	/* physical addresses in the slots of the page's node (else above) */
	int paddr_in_slots;
	/* /sys/module/refcnt/parameters/{fault,pebs}_period; or missing */
	unsigned int fault_period, pebs_period;
	int params_missing;
	/*
	 * A module before struct rcb_range_query grew reserved[2]: only
	 * the first, 48-byte RCB_RANGE_QUERY; the sized one is ENOTTY.
	 */
	int range_query_ver0_only;
};

struct fake_stats {
	unsigned long range_queries;	/* RCB_RANGE_QUERY calls */
	unsigned long range_queries_ver0;	/* of them, the 48-byte one */
	unsigned long range_queries_refused;	/* ENOTTY: an old module */
	uint64_t max_buf_entries;	/* largest buf_entries seen */
	unsigned long opens, closes_expected;
	int last_pid;
	/* RCB_COUNT_START: the last argument and the session fd made */
	unsigned long count_starts;
	struct rcb_count last_count;
	int session_fd;
};

/* What RCB_COUNT_STATS reports on a fake session. */
#define FAKE_SESSION_SAMPLES	7
#define FAKE_SESSION_DELIVERED	5

/* RCB_RANGE_QUERY numbered with the first struct's size. */
#define FAKE_RANGE_QUERY_VER0	_IOC(_IOC_DIR(RCB_RANGE_QUERY),		\
				     _IOC_TYPE(RCB_RANGE_QUERY),	\
				     _IOC_NR(RCB_RANGE_QUERY),		\
				     RCB_RANGE_QUERY_SIZE_VER0)

extern struct fake_config fake_cfg;
extern struct fake_stats fake_stats;

/* Reset to a default configuration (4 KiB hardware pages, 3 cnodes). */
void fake_reset(void);

/*
 * What the fake reports for the hardware page at virtual address h.
 * RCB_SETS_READ reports lost[c] = c in every set.
 */
int fake_present(uint64_t h);
uint32_t fake_count(uint64_t h, unsigned int c, int extended);
uint64_t fake_paddr(uint64_t h);
int32_t fake_cnodeid(uint64_t h);

/* Number of fake device fds open now. */
int fake_open_fds(void);

#endif /* REFCNT_FAKE_H */
