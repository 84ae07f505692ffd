/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A snapshot of what the refcnt module counts, for the fleet exporters
 * (pmdarefcnt, refcnt-exporter): each node's statistics from
 * /sys/class/misc/refcnt-nodeN/stats/, its table summed per counter
 * (accessing node) through RCB_SETS_READ, the hottest sets, and the feeds'
 * statistics from /sys/kernel/refcnt/. Read exactly as refcnt-info and
 * refcnt-dump read them, so the numbers are the module's own.
 *
 * The node devices are opened for the snapshot and closed before it
 * returns: a monitor that held them open would keep the module from being
 * unloaded.
 */
#ifndef REFCNT_RCSNAP_H
#define REFCNT_RCSNAP_H

#include <stdint.h>

#include <refcnt/refcnt.h>

/* The statistics files of a node, in this order (admin-guide.rst). */
enum rs_stat {
	RS_REFERENCES, RS_PEGGED, RS_SATURATED, RS_FOLDS, RS_MIGRATIONS,
	RS_EVENTS_DROPPED, RS_REFS_DROPPED, RS_DISCARDED, RS_OVERFLOWED,
	RS_REFS_DEFERRED, RS_DEFER_FULL,
	RS_NR_STATS
};
extern const char *const rs_stat_names[RS_NR_STATS];

/* The feeds' statistics files (/sys/kernel/refcnt/<feed>_<stat>). */
enum rs_feed_stat { RS_SAMPLES, RS_DELIVERED, RS_UNRESOLVED, RS_NR_FEED_STATS };
extern const char *const rs_feed_stat_names[RS_NR_FEED_STATS];

/* One counter of a node's sets: the references from one accessing node. */
struct rs_counter {
	char label[24];		/* accessing node id "1", or group "0-7" */
	int first_nid;		/* Linux node id of its first cnodeid */
	uint64_t refs;		/* extended + hardware, over all sets */
	uint64_t lost;		/* lost counts, over all sets */
};

struct rs_node {
	int nid;
	int cnodeid;
	struct rcb_info info;
	long long stats[RS_NR_STATS];	/* -1: the file cannot be read */
	long long table_bytes;		/* -1: the file cannot be read */
	int home;			/* counter of the node's own cnodeid */
	int nr_counters;
	struct rs_counter *ctr;
	uint64_t local, remote, lost;	/* sums of the counters' refs/lost */
};

/* One of the hottest sets: most references (extended + hardware). */
struct rs_hot {
	int nid;
	uint64_t set;
	uint64_t paddr;
	uint64_t refs;
	uint64_t remote;	/* from other nodes than nid */
};

#define RS_MAX_FEEDS	8
struct rs_feed {
	char name[32];
	long long stats[RS_NR_FEED_STATS];	/* -1: cannot be read */
};

struct rs_snap {
	int loaded;		/* /sys/module/refcnt exists */
	int nr_nodes;
	struct rs_node *nodes;	/* ascending nid */
	int nr_feeds;
	struct rs_feed feeds[RS_MAX_FEEDS];
	int nr_hot;
	struct rs_hot *hot;	/* hottest first */
};

/* The most hot sets a snapshot keeps. */
#define RS_HOT_MAX	1000

/*
 * Take a snapshot with up to nr_hot hottest sets (0..RS_HOT_MAX). Returns
 * 0; -ENODEV when the module is not loaded (s->loaded 0, no nodes, no
 * feeds); another negative errno when a device cannot be read (-EACCES for
 * permission), *what then naming it ("/dev/refcnt/node0",
 * "RCB_SETS_READ on /dev/refcnt/node0"). Never prints. s is emptied
 * first; rs_snap_free() it after any return.
 */
int rs_snap_take(struct rs_snap *s, int nr_hot, char *what, int what_size);
void rs_snap_free(struct rs_snap *s);

/* The node of s with Linux id nid, or NULL. */
const struct rs_node *rs_snap_node(const struct rs_snap *s, int nid);

#endif /* REFCNT_RCSNAP_H */
