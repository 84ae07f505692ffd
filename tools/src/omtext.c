// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-exporter's text formats: see omtext.h and refcnt-exporter(1)
 * for the metrics. Names follow Prometheus conventions: counters end in
 * _total, sizes in _bytes, one label per dimension (node, from_node,
 * feed, rank).
 */
#include <inttypes.h>
#include <string.h>

#include "omtext.h"

/* An info family is a gauge of value 1 in the 0.0.4 format. */
enum om_type { OM_GAUGE, OM_COUNTER, OM_INFO };

struct om_out {
	FILE *f;
	int openmetrics;
};

/* Does name end in suffix? */
static int ends_in(const char *name, const char *suffix)
{
	size_t n = strlen(name), k = strlen(suffix);

	return n > k && !strcmp(name + n - k, suffix);
}

/*
 * HELP and TYPE of a family. name is the sample name; in OpenMetrics a
 * counter family drops its _total and an info family its _info.
 */
static void family(struct om_out *o, const char *name, enum om_type type,
		   const char *help)
{
	static const char *const types[] = { "gauge", "counter", "info" };
	size_t len = strlen(name);

	if (!o->openmetrics && type == OM_INFO)
		type = OM_GAUGE;
	if (o->openmetrics && type == OM_COUNTER && ends_in(name, "_total"))
		len -= 6;
	if (o->openmetrics && type == OM_INFO && ends_in(name, "_info"))
		len -= 5;
	fprintf(o->f, "# HELP %.*s %s\n# TYPE %.*s %s\n", (int)len, name, help,
		(int)len, name, types[type]);
}

/* A label value, escaped as both formats want. */
static void label_value(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

static void node_sample(struct om_out *o, const char *name, int nid,
			long long v)
{
	if (v >= 0)
		fprintf(o->f, "%s{node=\"%d\"} %lld\n", name, nid, v);
}

/* The statistics files of every node, one family each. */
static void node_stats(struct om_out *o, const struct rs_snap *s)
{
	static const char *const help[RS_NR_STATS] = {
		"References delivered to the node's hardware counters, lost ones included (stats/references).",
		"References lost because a hardware counter was at its maximum (stats/pegged).",
		"References lost because an extended counter was at 2^32-1 (stats/saturated).",
		"Sets folded by threshold interrupts (stats/folds).",
		"Migration events raised by the differential threshold (stats/migrations).",
		"Event records dropped because the node's event queue was full (stats/events_dropped).",
		"References that never reached a counter: no counter page (stats/refs_dropped).",
		"Counts removed by RCB_RESET (stats/discarded).",
		"Lost references no lost count could hold (stats/overflowed).",
		"References an NMI left for the node's irq_work to count, its counter page missing (stats/refs_deferred).",
		"References dropped because the CPU's deferral ring was full, part of refs_dropped (stats/defer_full).",
	};
	char name[96];
	int i, k;

	for (k = 0; k < RS_NR_STATS; k++) {
		snprintf(name, sizeof(name), "refcnt_node_%s_total",
			 rs_stat_names[k]);
		family(o, name, OM_COUNTER, help[k]);
		for (i = 0; i < s->nr_nodes; i++)
			node_sample(o, name, s->nodes[i].nid,
				    s->nodes[i].stats[k]);
	}
	family(o, "refcnt_node_table_bytes", OM_GAUGE,
	       "Bytes the node's counter tables use now (stats/table_bytes).");
	for (i = 0; i < s->nr_nodes; i++)
		node_sample(o, "refcnt_node_table_bytes", s->nodes[i].nid,
			    s->nodes[i].table_bytes);
}

/* What the node's tables hold (RCB_SETS_READ), per node. */
static void node_tables(struct om_out *o, const struct rs_snap *s)
{
	static const struct { const char *name, *help; } fam[] = {
		{ "refcnt_node_local_references_total",
		  "References from the node itself now in its counters (extended + hardware)." },
		{ "refcnt_node_remote_references_total",
		  "References from other nodes now in the node's counters (extended + hardware)." },
		{ "refcnt_node_lost_references_total",
		  "References lost to pegged or saturated counters, the lost counts of the node's table." },
	};
	unsigned int k;
	int i;

	family(o, "refcnt_node_info", OM_INFO,
	       "1 for every node with counters; its cnodeid as a label.");
	for (i = 0; i < s->nr_nodes; i++)
		fprintf(o->f, "refcnt_node_info{node=\"%d\",cnodeid=\"%d\"} 1\n",
			s->nodes[i].nid, s->nodes[i].cnodeid);
	family(o, "refcnt_node_sets", OM_GAUGE,
	       "Counter sets of the node, one per hardware page (rcb_sw_sets).");
	for (i = 0; i < s->nr_nodes; i++)
		node_sample(o, "refcnt_node_sets", s->nodes[i].nid,
			    (long long)s->nodes[i].info.rcb_sw_sets);
	for (k = 0; k < sizeof(fam) / sizeof(fam[0]); k++) {
		family(o, fam[k].name, OM_COUNTER, fam[k].help);
		for (i = 0; i < s->nr_nodes; i++) {
			const struct rs_node *n = &s->nodes[i];
			uint64_t v = k == 0 ? n->local : k == 1 ? n->remote : n->lost;

			fprintf(o->f, "%s{node=\"%d\"} %" PRIu64 "\n",
				fam[k].name, n->nid, v);
		}
	}
}

/* Per node and accessing node (counter). */
static void node_from(struct om_out *o, const struct rs_snap *s)
{
	int i, c, lost;

	for (lost = 0; lost < 2; lost++) {
		const char *name = lost ? "refcnt_lost_references_total" :
					  "refcnt_references_total";

		family(o, name, OM_COUNTER, lost ?
		       "References from from_node lost to pegged or saturated counters of node's pages (lost counts)." :
		       "References from from_node (a node, or a group of 8) to node's memory now in its counters (extended + hardware).");
		for (i = 0; i < s->nr_nodes; i++) {
			const struct rs_node *n = &s->nodes[i];

			for (c = 0; c < n->nr_counters; c++) {
				fprintf(o->f, "%s{node=\"%d\",from_node=\"", name,
					n->nid);
				label_value(o->f, n->ctr[c].label);
				fprintf(o->f, "\"} %" PRIu64 "\n", lost ?
					n->ctr[c].lost : n->ctr[c].refs);
			}
		}
	}
}

static void feeds(struct om_out *o, const struct rs_snap *s)
{
	static const char *const help[RS_NR_FEED_STATS] = {
		"Samples the feed took.",
		"Samples that reached a node's counters.",
		"Samples whose page was not present or in no node's slots.",
	};
	char name[96];
	int i, k;

	for (k = 0; k < RS_NR_FEED_STATS; k++) {
		snprintf(name, sizeof(name), "refcnt_feed_%s_total",
			 rs_feed_stat_names[k]);
		family(o, name, OM_COUNTER, help[k]);
		for (i = 0; i < s->nr_feeds; i++) {
			if (s->feeds[i].stats[k] < 0)
				continue;
			fprintf(o->f, "%s{feed=\"", name);
			label_value(o->f, s->feeds[i].name);
			fprintf(o->f, "\"} %lld\n", s->feeds[i].stats[k]);
		}
	}
}

/*
 * The hottest sets, rank 1 first. The rank is the only label, so the
 * series stay as many as --hot whichever sets are hot; which set holds a
 * rank is in the values of refcnt_hot_set_node, _index and _paddr.
 */
static void hot(struct om_out *o, const struct rs_snap *s)
{
	static const struct { const char *name, *help; } fam[] = {
		{ "refcnt_hot_set_references",
		  "References (extended + hardware) to the counter set of this rank; rank 1 is the hottest." },
		{ "refcnt_hot_set_remote_references",
		  "References from other nodes than its own to the counter set of this rank." },
		{ "refcnt_hot_set_node", "Node of the counter set of this rank." },
		{ "refcnt_hot_set_index", "Index of the counter set of this rank in its node's table." },
		{ "refcnt_hot_set_paddr", "Physical address of the hardware page the set of this rank counts." },
	};
	unsigned int k;
	int i;

	for (k = 0; k < sizeof(fam) / sizeof(fam[0]); k++) {
		family(o, fam[k].name, OM_GAUGE, fam[k].help);
		for (i = 0; i < s->nr_hot; i++) {
			const struct rs_hot *h = &s->hot[i];
			uint64_t v = k == 0 ? h->refs : k == 1 ? h->remote :
				     k == 2 ? (uint64_t)h->nid : k == 3 ? h->set : h->paddr;

			fprintf(o->f, "%s{rank=\"%d\"} %" PRIu64 "\n", fam[k].name,
				i + 1, v);
		}
	}
}

int om_write(FILE *f, const struct rs_snap *s, int openmetrics)
{
	struct om_out o = { f, openmetrics };

	family(&o, "refcnt_up", OM_GAUGE,
	       "1 when the refcnt module is loaded and its devices were read, 0 otherwise.");
	fprintf(f, "refcnt_up %d\n", s->loaded ? 1 : 0);
	if (s->loaded) {
		node_stats(&o, s);
		node_tables(&o, s);
		node_from(&o, s);
		feeds(&o, s);
		hot(&o, s);
	}
	if (openmetrics)
		fputs("# EOF\n", f);
	return ferror(f) ? -1 : 0;
}
