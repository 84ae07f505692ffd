// SPDX-License-Identifier: GPL-2.0
/*
 * pmdarefcnt: the Performance Co-Pilot agent (PMDA) of the refcnt module.
 * Every fetch takes a snapshot of the module (tools/src/rcsnap.c: each
 * node's statistics files, its table summed per accessing node through
 * RCB_SETS_READ, the hottest sets, the feeds) and answers from it, so the
 * values are the module's own. The instance domains are rebuilt from each
 * snapshot: when the module is unloaded they are empty (no values, and
 * refcnt.loaded is 0); when it comes back so do they. The devices are
 * never held open between fetches, so the module can be unloaded.
 *
 * The metrics, with their semantics and units, are the table below and
 * the help file; Documentation/admin-guide.rst lists them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcp/pmapi.h>
#include <pcp/pmda.h>

#include "domain.h"
#include "rcsnap.h"

/* Instance domains (serials). */
enum { NODE_INDOM, ACCESS_INDOM, FEED_INDOM, HOT_INDOM, NR_INDOMS };

/* Clusters: as in the pmns file. */
enum { CL_MODULE, CL_NODE, CL_TABLE, CL_ACCESS, CL_FEED, CL_HOT };

/* Table metrics of cluster CL_TABLE and CL_HOT, by item. */
enum { T_LOCAL, T_REMOTE, T_LOST };
enum { H_NODE, H_SET, H_PADDR, H_REFS, H_REMOTE };

/* An accessing-node instance: node nid, counter c. */
#define ACCESS_INST(nid, c)	((unsigned int)(nid) * RCB_MAX_COUNTERS + (c))

static pmdaIndom indomtab[NR_INDOMS] = {
	{ NODE_INDOM, 0, NULL },
	{ ACCESS_INDOM, 0, NULL },
	{ FEED_INDOM, 0, NULL },
	{ HOT_INDOM, 0, NULL },
};

#define COUNT		PMDA_PMUNITS(0, 0, 1, 0, 0, PM_COUNT_ONE)
#define BYTES		PMDA_PMUNITS(1, 0, 0, PM_SPACE_BYTE, 0, 0)
#define NONE		PMDA_PMUNITS(0, 0, 0, 0, 0, 0)
#define M(cl, it, type, indom, sem, units) \
	{ NULL, { PMDA_PMID(cl, it), type, indom, sem, units } }
#define NODE_STAT(it)	M(CL_NODE, it, PM_TYPE_U64, NODE_INDOM, PM_SEM_COUNTER, COUNT)

static pmdaMetric metrictab[] = {
	M(CL_MODULE, 0, PM_TYPE_U32, PM_INDOM_NULL, PM_SEM_INSTANT, NONE),
	M(CL_MODULE, 1, PM_TYPE_U32, PM_INDOM_NULL, PM_SEM_INSTANT, COUNT),
	/* refcnt.node.*: the statistics files, in rs_stat order */
	NODE_STAT(RS_REFERENCES), NODE_STAT(RS_PEGGED), NODE_STAT(RS_SATURATED),
	NODE_STAT(RS_FOLDS), NODE_STAT(RS_MIGRATIONS),
	NODE_STAT(RS_EVENTS_DROPPED), NODE_STAT(RS_REFS_DROPPED),
	NODE_STAT(RS_DISCARDED), NODE_STAT(RS_OVERFLOWED),
	M(CL_NODE, 9, PM_TYPE_U64, NODE_INDOM, PM_SEM_INSTANT, BYTES),
	M(CL_NODE, 10, PM_TYPE_U64, NODE_INDOM, PM_SEM_DISCRETE, COUNT),
	M(CL_NODE, 11, PM_TYPE_U32, NODE_INDOM, PM_SEM_DISCRETE, NONE),
	/* refcnt.node.{refs_deferred,defer_full}: items after the above */
	M(CL_NODE, 12, PM_TYPE_U64, NODE_INDOM, PM_SEM_COUNTER, COUNT),
	M(CL_NODE, 13, PM_TYPE_U64, NODE_INDOM, PM_SEM_COUNTER, COUNT),
	/* refcnt.node.{local,remote,lost}: the table */
	M(CL_TABLE, T_LOCAL, PM_TYPE_U64, NODE_INDOM, PM_SEM_COUNTER, COUNT),
	M(CL_TABLE, T_REMOTE, PM_TYPE_U64, NODE_INDOM, PM_SEM_COUNTER, COUNT),
	M(CL_TABLE, T_LOST, PM_TYPE_U64, NODE_INDOM, PM_SEM_COUNTER, COUNT),
	/* refcnt.access.*: per node and accessing node */
	M(CL_ACCESS, 0, PM_TYPE_U64, ACCESS_INDOM, PM_SEM_COUNTER, COUNT),
	M(CL_ACCESS, 1, PM_TYPE_U64, ACCESS_INDOM, PM_SEM_COUNTER, COUNT),
	/* refcnt.feed.* */
	M(CL_FEED, RS_SAMPLES, PM_TYPE_U64, FEED_INDOM, PM_SEM_COUNTER, COUNT),
	M(CL_FEED, RS_DELIVERED, PM_TYPE_U64, FEED_INDOM, PM_SEM_COUNTER, COUNT),
	M(CL_FEED, RS_UNRESOLVED, PM_TYPE_U64, FEED_INDOM, PM_SEM_COUNTER, COUNT),
	/* refcnt.hot.*: which set holds a rank changes, so all instant */
	M(CL_HOT, H_NODE, PM_TYPE_U32, HOT_INDOM, PM_SEM_INSTANT, NONE),
	M(CL_HOT, H_SET, PM_TYPE_U64, HOT_INDOM, PM_SEM_INSTANT, NONE),
	M(CL_HOT, H_PADDR, PM_TYPE_U64, HOT_INDOM, PM_SEM_INSTANT, NONE),
	M(CL_HOT, H_REFS, PM_TYPE_U64, HOT_INDOM, PM_SEM_INSTANT, COUNT),
	M(CL_HOT, H_REMOTE, PM_TYPE_U64, HOT_INDOM, PM_SEM_INSTANT, COUNT),
};

static struct rs_snap snap;
static int nr_hot = 10;
static int last_rc;	/* of the last snapshot: log changes once */
static char *username;

/* Empty an instance domain. */
static void indom_clear(pmdaIndom *id)
{
	int i;

	for (i = 0; i < id->it_numinst; i++)
		free(id->it_set[i].i_name);
	free(id->it_set);
	id->it_set = NULL;
	id->it_numinst = 0;
}

/* Add instance inst named name. 0, or -ENOMEM. */
static int indom_add(pmdaIndom *id, unsigned int inst, const char *name)
{
	pmdaInstid *set;

	set = realloc(id->it_set, (id->it_numinst + 1) * sizeof(*set));
	if (!set)
		return -ENOMEM;
	id->it_set = set;
	set[id->it_numinst].i_inst = (int)inst;
	set[id->it_numinst].i_name = strdup(name);
	if (!set[id->it_numinst].i_name)
		return -ENOMEM;
	id->it_numinst++;
	return 0;
}

/* The instance domains of the snapshot. */
static int indoms_build(void)
{
	char name[64];
	int i, c, rc = 0;

	for (i = 0; i < NR_INDOMS; i++)
		indom_clear(&indomtab[i]);
	for (i = 0; i < snap.nr_nodes && !rc; i++) {
		const struct rs_node *n = &snap.nodes[i];

		snprintf(name, sizeof(name), "node%d", n->nid);
		rc = indom_add(&indomtab[NODE_INDOM], n->nid, name);
		for (c = 0; c < n->nr_counters && !rc; c++) {
			snprintf(name, sizeof(name), "node%d:from%s", n->nid,
				 n->ctr[c].label);
			rc = indom_add(&indomtab[ACCESS_INDOM],
				       ACCESS_INST(n->nid, c), name);
		}
	}
	for (i = 0; i < snap.nr_feeds && !rc; i++)
		rc = indom_add(&indomtab[FEED_INDOM], i, snap.feeds[i].name);
	for (i = 0; i < snap.nr_hot && !rc; i++) {
		snprintf(name, sizeof(name), "rank%d", i + 1);
		rc = indom_add(&indomtab[HOT_INDOM], i + 1, name);
	}
	return rc;
}

/* A new snapshot and its instance domains, once per fetch or instance. */
static void refresh(void)
{
	char what[128];
	int rc;

	rs_snap_free(&snap);
	rc = rs_snap_take(&snap, nr_hot, what, sizeof(what));
	if (rc) {
		if (rc != last_rc)
			pmNotifyErr(LOG_WARNING, "%s%s%s", rc == -ENODEV ?
				    "the refcnt module is not loaded: no values until it is" :
				    what, rc == -ENODEV ? "" : ": ",
				    rc == -ENODEV ? "" : strerror(-rc));
		rs_snap_free(&snap);
	} else if (last_rc) {
		pmNotifyErr(LOG_INFO, "the refcnt module is loaded: values again");
	}
	last_rc = rc;
	if (indoms_build()) {
		pmNotifyErr(LOG_ERR, "out of memory building the instance domains");
		rs_snap_free(&snap);
		indoms_build();
	}
}

static int refcnt_fetch(int numpmid, pmID pmidlist[], pmResult **resp,
			pmdaExt *pmda)
{
	refresh();
	return pmdaFetch(numpmid, pmidlist, resp, pmda);
}

static int refcnt_instance(pmInDom indom, int inst, char *name,
			   pmInResult **result, pmdaExt *pmda)
{
	refresh();
	return pmdaInstance(indom, inst, name, result, pmda);
}

/* The snapshot's node with Linux id nid, or NULL. */
static const struct rs_node *node_of(unsigned int nid)
{
	return rs_snap_node(&snap, (int)nid);
}

static int fetch_node(unsigned int item, unsigned int inst, pmAtomValue *atom)
{
	const struct rs_node *n = node_of(inst);
	long long v;

	if (!n)
		return PM_ERR_INST;
	if (item <= RS_OVERFLOWED)
		v = n->stats[item];
	else if (item == 12)
		v = n->stats[RS_REFS_DEFERRED];
	else if (item == 13)
		v = n->stats[RS_DEFER_FULL];
	else if (item == 9)
		v = n->table_bytes;
	else if (item == 10)
		v = (long long)n->info.rcb_sw_sets;
	else if (item == 11) {
		atom->ul = (unsigned int)n->cnodeid;
		return PMDA_FETCH_STATIC;
	} else
		return PM_ERR_PMID;
	if (v < 0)
		return PMDA_FETCH_NOVALUES;
	atom->ull = (unsigned long long)v;
	return PMDA_FETCH_STATIC;
}

static int fetch_table(unsigned int item, unsigned int inst, pmAtomValue *atom)
{
	const struct rs_node *n = node_of(inst);

	if (!n)
		return PM_ERR_INST;
	switch (item) {
	case T_LOCAL:
		atom->ull = n->local;
		break;
	case T_REMOTE:
		atom->ull = n->remote;
		break;
	case T_LOST:
		atom->ull = n->lost;
		break;
	default:
		return PM_ERR_PMID;
	}
	return PMDA_FETCH_STATIC;
}

static int fetch_access(unsigned int item, unsigned int inst, pmAtomValue *atom)
{
	const struct rs_node *n = node_of(inst / RCB_MAX_COUNTERS);
	unsigned int c = inst % RCB_MAX_COUNTERS;

	if (!n || c >= (unsigned int)n->nr_counters)
		return PM_ERR_INST;
	if (item > 1)
		return PM_ERR_PMID;
	atom->ull = item ? n->ctr[c].lost : n->ctr[c].refs;
	return PMDA_FETCH_STATIC;
}

static int fetch_hot(unsigned int item, unsigned int inst, pmAtomValue *atom)
{
	const struct rs_hot *h;

	if (inst < 1 || inst > (unsigned int)snap.nr_hot)
		return PM_ERR_INST;
	h = &snap.hot[inst - 1];
	switch (item) {
	case H_NODE:
		atom->ul = (unsigned int)h->nid;
		return PMDA_FETCH_STATIC;
	case H_SET:
		atom->ull = h->set;
		break;
	case H_PADDR:
		atom->ull = h->paddr;
		break;
	case H_REFS:
		atom->ull = h->refs;
		break;
	case H_REMOTE:
		atom->ull = h->remote;
		break;
	default:
		return PM_ERR_PMID;
	}
	return PMDA_FETCH_STATIC;
}

static int fetch_callback(pmdaMetric *mdesc, unsigned int inst,
			  pmAtomValue *atom)
{
	unsigned int cluster = pmID_cluster(mdesc->m_desc.pmid);
	unsigned int item = pmID_item(mdesc->m_desc.pmid);

	switch (cluster) {
	case CL_MODULE:
		if (inst != PM_IN_NULL)
			return PM_ERR_INST;
		if (item > 1)
			return PM_ERR_PMID;
		atom->ul = (unsigned int)(item ? snap.nr_nodes : snap.loaded);
		return PMDA_FETCH_STATIC;
	case CL_NODE:
		return fetch_node(item, inst, atom);
	case CL_TABLE:
		return fetch_table(item, inst, atom);
	case CL_ACCESS:
		return fetch_access(item, inst, atom);
	case CL_FEED:
		if (inst >= (unsigned int)snap.nr_feeds)
			return PM_ERR_INST;
		if (item >= RS_NR_FEED_STATS)
			return PM_ERR_PMID;
		if (snap.feeds[inst].stats[item] < 0)
			return PMDA_FETCH_NOVALUES;
		atom->ull = (unsigned long long)snap.feeds[inst].stats[item];
		return PMDA_FETCH_STATIC;
	case CL_HOT:
		return fetch_hot(item, inst, atom);
	}
	return PM_ERR_PMID;
}

static void refcnt_init(pmdaInterface *dp)
{
	/* The devices are root's and the refcnt group's: root unless -U. */
	if (username)
		pmSetProcessIdentity(username);
	if (dp->status != 0)
		return;
	dp->version.any.fetch = refcnt_fetch;
	dp->version.any.instance = refcnt_instance;
	pmdaSetFetchCallBack(dp, fetch_callback);
	pmdaInit(dp, indomtab, NR_INDOMS, metrictab,
		 sizeof(metrictab) / sizeof(metrictab[0]));
}

static pmLongOptions longopts[] = {
	PMDA_OPTIONS_HEADER("Options"),
	PMOPT_DEBUG,
	PMDAOPT_DOMAIN,
	PMDAOPT_HELPTEXT,
	PMDAOPT_LOGFILE,
	PMDAOPT_USERNAME,
	{ "hot", 1, 'H', "N", "report the N hottest counter sets [default 10]" },
	PMOPT_HELP,
	PMDA_OPTIONS_TEXT("\nExactly one of the following options may appear:"),
	PMDAOPT_INET,
	PMDAOPT_PIPE,
	PMDAOPT_UNIX,
	PMDAOPT_IPV6,
	PMDA_OPTIONS_END
};

static pmdaOptions opts = {
	.short_options = "D:d:h:H:i:l:pu:U:6:?",
	.long_options = longopts,
};

int main(int argc, char **argv)
{
	pmdaInterface dispatch;
	char helppath[MAXPATHLEN];
	char *end;
	int c;

	pmSetProgname(argv[0]);
	pmsprintf(helppath, sizeof(helppath), "%s%c" "refcnt" "%c" "help",
		  pmGetConfig("PCP_PMDAS_DIR"), pmPathSeparator(),
		  pmPathSeparator());
	pmdaDaemon(&dispatch, PMDA_INTERFACE_7, pmGetProgname(), REFCNT,
		   "refcnt.log", helppath);
	while ((c = pmdaGetOptions(argc, argv, &opts, &dispatch)) != EOF) {
		if (c != 'H') {
			opts.errors++;
			continue;
		}
		nr_hot = (int)strtol(opts.optarg, &end, 10);
		if (*end || end == opts.optarg || nr_hot < 0 || nr_hot > RS_HOT_MAX) {
			pmprintf("%s: -H %s: not a number from 0 to %d\n",
				 pmGetProgname(), opts.optarg, RS_HOT_MAX);
			opts.errors++;
		}
	}
	if (opts.errors) {
		pmdaUsageMessage(&opts);
		exit(1);
	}
	if (opts.username)
		username = opts.username;
	pmdaOpenLog(&dispatch);
	pmdaConnect(&dispatch);
	refcnt_init(&dispatch);
	pmdaMain(&dispatch);
	exit(0);
}
