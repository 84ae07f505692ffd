// SPDX-License-Identifier: GPL-2.0
/*
 * A snapshot of the refcnt module's statistics and counter tables for the
 * fleet exporters: see rcsnap.h.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rcsnap.h"
#include "rtools.h"

const char *const rs_stat_names[RS_NR_STATS] = {
	"references", "pegged", "saturated", "folds", "migrations",
	"events_dropped", "refs_dropped", "discarded", "overflowed",
	"refs_deferred", "defer_full",
};

const char *const rs_feed_stat_names[RS_NR_FEED_STATS] = {
	"samples", "delivered", "unresolved",
};

/* Sets read per RCB_SETS_READ. */
#define RS_CHUNK	4096

#define RS_SYSFS_NODE	"/sys/class/misc/refcnt-node%d/stats/%s"
#define RS_SYSFS_FEEDS	"/sys/kernel/refcnt"

void rs_snap_free(struct rs_snap *s)
{
	int i;

	for (i = 0; i < s->nr_nodes; i++)
		free(s->nodes[i].ctr);
	free(s->nodes);
	free(s->hot);
	memset(s, 0, sizeof(*s));
}

const struct rs_node *rs_snap_node(const struct rs_snap *s, int nid)
{
	int i;

	for (i = 0; i < s->nr_nodes; i++)
		if (s->nodes[i].nid == nid)
			return &s->nodes[i];
	return NULL;
}

/* Order of the feeds: the module's own first, then by name. */
static int feed_rank(const char *name)
{
	if (!strcmp(name, "fault"))
		return 0;
	if (!strcmp(name, "pebs"))
		return 1;
	return 2;
}

static int feed_cmp(const void *a, const void *b)
{
	const struct rs_feed *x = a, *y = b;
	int rx = feed_rank(x->name), ry = feed_rank(y->name);

	return rx != ry ? rx - ry : strcmp(x->name, y->name);
}

/* Every feed with a <feed>_samples file, and its statistics. */
static void read_feeds(struct rs_snap *s)
{
	DIR *d = opendir(RS_SYSFS_FEEDS);
	struct dirent *de;
	char path[320];
	int i, k;

	if (!d)
		return;
	while ((de = readdir(d)) && s->nr_feeds < RS_MAX_FEEDS) {
		size_t len = strlen(de->d_name);
		struct rs_feed *f = &s->feeds[s->nr_feeds];

		if (len <= 8 || len - 8 >= sizeof(f->name) ||
		    strcmp(de->d_name + len - 8, "_samples"))
			continue;
		memcpy(f->name, de->d_name, len - 8);
		f->name[len - 8] = '\0';
		s->nr_feeds++;
	}
	closedir(d);
	qsort(s->feeds, s->nr_feeds, sizeof(s->feeds[0]), feed_cmp);
	for (i = 0; i < s->nr_feeds; i++)
		for (k = 0; k < RS_NR_FEED_STATS; k++) {
			snprintf(path, sizeof(path), RS_SYSFS_FEEDS "/%s_%s",
				 s->feeds[i].name, rs_feed_stat_names[k]);
			s->feeds[i].stats[k] = rt_read_ll(path, -1);
		}
}

/* Keep the cap hottest sets in s->hot, hottest first. */
static void offer_hot(struct rs_snap *s, int cap, const struct rs_hot *h)
{
	int i;

	if (!cap || !h->refs)
		return;
	/* Equal references: the earlier (node, set) stays ahead. */
	if (s->nr_hot == cap && h->refs <= s->hot[cap - 1].refs)
		return;
	i = s->nr_hot < cap ? s->nr_hot++ : cap - 1;
	while (i > 0 && h->refs > s->hot[i - 1].refs) {
		s->hot[i] = s->hot[i - 1];
		i--;
	}
	s->hot[i] = *h;
}

/* Counter labels and the home counter, as the tools name them. */
static int node_counters(struct rs_node *n)
{
	struct rt_counters c;
	int i;

	if (rt_counters_init(&c, &n->info))
		return -EIO;
	n->nr_counters = c.nr;
	n->ctr = calloc(c.nr, sizeof(*n->ctr));
	if (!n->ctr) {
		rt_counters_free(&c);
		return -ENOMEM;
	}
	for (i = 0; i < c.nr; i++) {
		int first = i * c.nodes_per_counter;

		snprintf(n->ctr[i].label, sizeof(n->ctr[i].label), "%s",
			 c.label[i]);
		n->ctr[i].first_nid = first < c.nr_cnodes ? c.cnode_nid[first] : -1;
	}
	n->home = n->info.rcb_cnodeid / c.nodes_per_counter;
	rt_counters_free(&c);
	return 0;
}

/* Sets [set, set + cnt) read into hw, ext, lost: per counter and hot sums. */
static void add_chunk(struct rs_snap *s, int nr_hot, struct rs_node *n,
		      const struct rcb_slot *slots, uint64_t set, uint64_t cnt,
		      const uint32_t *hw, const uint32_t *ext, const uint32_t *lost)
{
	const int cps = n->nr_counters;
	struct rs_hot h;
	uint64_t i;
	int c;

	for (i = 0; i < cnt; i++) {
		h.refs = h.remote = 0;
		for (c = 0; c < cps; c++) {
			uint64_t v = (uint64_t)ext[i * cps + c] + hw[i * cps + c];

			n->ctr[c].refs += v;
			n->ctr[c].lost += lost[i * cps + c];
			h.refs += v;
			if (c != n->home)
				h.remote += v;
		}
		if (!h.refs)
			continue;
		h.nid = n->nid;
		h.set = set + i;
		h.paddr = rt_set_paddr(slots, n->info.rcb_num_slots,
				       n->info.rcb_granularity, h.set);
		offer_hot(s, nr_hot, &h);
	}
}

/* The whole table of node n through RCB_SETS_READ. 0 or -errno. */
static int read_table(struct rs_snap *s, int nr_hot, struct rs_node *n,
		      struct refcnt_node *h, char *what, int what_size)
{
	const uint64_t sets = n->info.rcb_sw_sets, cps = n->nr_counters;
	uint32_t *hw, *ext, *lost;
	struct rcb_slot *slots;
	uint64_t set, cnt;
	int rc = 0, c;

	slots = calloc(n->info.rcb_num_slots + 1, sizeof(*slots));
	hw = calloc(RS_CHUNK * cps, sizeof(uint32_t));
	ext = calloc(RS_CHUNK * cps, sizeof(uint32_t));
	lost = calloc(RS_CHUNK * cps, sizeof(uint32_t));
	if (!slots || !hw || !ext || !lost) {
		rc = -ENOMEM;
		goto out;
	}
	if (refcnt_node_slots(h, slots, n->info.rcb_num_slots) < 0)
		goto err;
	for (set = 0; set < sets; set += cnt) {
		cnt = sets - set < RS_CHUNK ? sets - set : RS_CHUNK;
		if (refcnt_node_read_sets(h, set, cnt, hw, ext, lost))
			goto err;
		add_chunk(s, nr_hot, n, slots, set, cnt, hw, ext, lost);
	}
	for (c = 0; c < n->nr_counters; c++) {
		*(c == n->home ? &n->local : &n->remote) += n->ctr[c].refs;
		n->lost += n->ctr[c].lost;
	}
	goto out;
err:
	rc = -errno;
	snprintf(what, what_size, "RCB_SETS_READ on " REFCNT_DEV_DIR "/node%d",
		 n->nid);
out:
	free(slots);
	free(hw);
	free(ext);
	free(lost);
	return rc;
}

/* One node: device, rcb_info, statistics, table. 0 or -errno. */
static int read_node(struct rs_snap *s, int nr_hot, struct rs_node *n,
		     char *what, int what_size)
{
	struct refcnt_node *h;
	char path[128];
	int i, rc;

	snprintf(what, what_size, REFCNT_DEV_DIR "/node%d", n->nid);
	h = refcnt_node_open(n->nid, 0);
	if (!h)
		return -errno;
	if (refcnt_node_info(h, &n->info)) {
		rc = -errno;
		goto out;
	}
	n->cnodeid = n->info.rcb_cnodeid;
	rc = node_counters(n);
	if (rc)
		goto out;
	for (i = 0; i < RS_NR_STATS; i++) {
		snprintf(path, sizeof(path), RS_SYSFS_NODE, n->nid,
			 rs_stat_names[i]);
		n->stats[i] = rt_read_ll(path, -1);
	}
	snprintf(path, sizeof(path), RS_SYSFS_NODE, n->nid, "table_bytes");
	n->table_bytes = rt_read_ll(path, -1);
	rc = read_table(s, nr_hot, n, h, what, what_size);
out:
	refcnt_node_close(h);
	return rc;
}

int rs_snap_take(struct rs_snap *s, int nr_hot, char *what, int what_size)
{
	int *nids = NULL, n, i, rc = 0;

	memset(s, 0, sizeof(*s));
	what[0] = '\0';
	if (nr_hot < 0 || nr_hot > RS_HOT_MAX)
		nr_hot = RS_HOT_MAX;
	s->loaded = access("/sys/module/refcnt", F_OK) == 0;
	if (!s->loaded)
		return -ENODEV;
	n = refcnt_nodes(NULL, 0);
	if (n < 0)
		return errno == ENOENT ? -ENODEV : -errno;
	s->nodes = calloc(n ? n : 1, sizeof(*s->nodes));
	s->hot = calloc(nr_hot ? nr_hot : 1, sizeof(*s->hot));
	nids = calloc(n ? n : 1, sizeof(int));
	if (!s->nodes || !s->hot || !nids) {
		free(nids);
		return -ENOMEM;
	}
	n = refcnt_nodes(nids, n);
	for (i = 0; i < n && !rc; i++) {
		s->nodes[i].nid = nids[i];
		s->nr_nodes = i + 1;
		rc = read_node(s, nr_hot, &s->nodes[i], what, what_size);
	}
	free(nids);
	if (!rc)
		read_feeds(s);
	/* Unloaded under our feet: say so as if it had never been there. */
	if (rc && access("/sys/module/refcnt", F_OK)) {
		s->loaded = 0;
		rc = -ENODEV;
	}
	return rc;
}
