// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run --migrate: refcntd's policy applied to the command alone.
 * refcntd's engine (librefcntd.a, the same code as the daemon) runs in a
 * thread for as long as the command does, opted in to the command and
 * its descendants only; every page it moves is recorded for the report:
 * what moved, from which node to which.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"
#include "refcntd.h"

#define MAX_MOVES	100000

static struct rd_config mcfg;
static struct rd_engine *engine;
static pthread_t thread;
static volatile int stopping;
static struct rd_move *moves;
static size_t nr_moves, nr_dropped;
static uint64_t t0_ns;
static struct rd_stats final;
int migrate_on;

static void on_move(const struct rd_move *m, void *arg)
{
	(void)arg;
	if (nr_moves == MAX_MOVES) {
		nr_dropped++;
		return;
	}
	moves[nr_moves++] = *m;
}

int migrate_option(const char *file)
{
	migrate_on = 1;
	rd_config_defaults(&mcfg);
	/* Without hardware samples, the soft-dirty scan feeds the faults. */
	mcfg.scan_ms = 500;
	mcfg.stats_interval = 0;
	/* Before the check of the file: the command is what it acts on. */
	mcfg.root_pid = getpid();
	if (file && rd_config_load(&mcfg, file))
		return -1;
	if (mcfg.all || mcfg.nr_pids || mcfg.nr_trees || mcfg.nr_comms ||
	    mcfg.nr_cgroups) {
		rt_err("--migrate=%s: refcnt-run acts on its command only: no processes, pids, trees, comms or cgroups", file);
		return -1;
	}
	return 0;
}

static void *engine_main(void *arg)
{
	(void)arg;
	while (!stopping)
		if (rd_engine_run_once(engine, 100, NULL))
			break;
	return NULL;
}

int migrate_start(pid_t pid)
{
	struct rd_hooks hooks = { .moved = on_move };
	sigset_t all, old;
	int err;

	if (!migrate_on)
		return 0;
	moves = calloc(MAX_MOVES, sizeof(*moves));
	if (!moves)
		return -ENOMEM;
	mcfg.root_pid = pid;
	rd_quiet = 1;
	err = rd_engine_open(&engine, &mcfg, &hooks);
	if (err)
		return err;
	t0_ns = rd_now_ns();
	/* The tracer's signals (SIGCHLD) are the main thread's. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(&thread, NULL, engine_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		rd_engine_close(engine);
		engine = NULL;
	}
	return err;
}

void migrate_stop(void)
{
	if (!engine)
		return;
	stopping = 1;
	pthread_join(thread, NULL);
	final = *rd_engine_stats(engine);
	rd_engine_close(engine);
	engine = NULL;
}

/* Moves summed by (from, to) pair into pairs[] (n entries used). */
struct pair { int from, to; uint64_t pages, bytes; };

static int sum_pairs(struct pair *pairs, int cap)
{
	size_t i;
	int n = 0, k;

	for (i = 0; i < nr_moves; i++) {
		for (k = 0; k < n; k++)
			if (pairs[k].from == moves[i].from_nid &&
			    pairs[k].to == moves[i].to_nid)
				break;
		if (k == n) {
			if (n == cap)
				continue;
			pairs[n++] = (struct pair){ moves[i].from_nid, moves[i].to_nid, 0, 0 };
		}
		pairs[k].pages++;
		pairs[k].bytes += moves[i].size;
	}
	return n;
}

void migrate_report_text(FILE *f)
{
	struct pair pairs[256];
	char sz[16];
	int n, k;
	size_t m;

	if (!migrate_on)
		return;
	fprintf(f, "\nMigration (refcntd's policy, this command only%s): ",
		mcfg.dry_run ? ", dry run" : "");
	rd_stats_print(f, &final, 0);
	n = sum_pairs(pairs, 256);
	for (k = 0; k < n; k++)
		fprintf(f, "  node %d -> node %d: %" PRIu64 " pages (%s)%s\n",
			pairs[k].from, pairs[k].to, pairs[k].pages,
			rt_human(pairs[k].bytes, sz, sizeof(sz)),
			mcfg.dry_run ? " would move" : "");
	for (m = 0; m < nr_moves && m < 10; m++)
		fprintf(f, "  %8.3fs pid %d 0x%" PRIx64 " %s node %d -> node %d (remote %u, home %u)\n",
			(moves[m].time_ns - t0_ns) / 1e9, moves[m].pid,
			moves[m].vaddr, rt_human(moves[m].size, sz, sizeof(sz)),
			moves[m].from_nid, moves[m].to_nid, moves[m].remote,
			moves[m].home);
	if (nr_moves > 10)
		fprintf(f, "  ... %zu more (--json lists them all)\n", nr_moves - 10);
}

void migrate_report_json(FILE *f)
{
	struct pair pairs[256];
	int n, k;
	size_t m;

	if (!migrate_on)
		return;
	fprintf(f, ",\n  \"migrate\": {\"dry_run\": %s, \"stats\": ",
		mcfg.dry_run ? "true" : "false");
	rd_stats_print(f, &final, 1);
	fprintf(f, "   , \"by_nodes\": [");
	n = sum_pairs(pairs, 256);
	for (k = 0; k < n; k++)
		fprintf(f, "%s{\"from\": %d, \"to\": %d, \"pages\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
			k ? ", " : "", pairs[k].from, pairs[k].to, pairs[k].pages,
			pairs[k].bytes);
	fprintf(f, "],\n   \"moves_not_listed\": %zu, \"moves\": [", nr_dropped);
	for (m = 0; m < nr_moves; m++)
		fprintf(f, "%s\n    {\"seconds\": %.3f, \"pid\": %d, \"vaddr\": \"0x%" PRIx64 "\", \"size\": %" PRIu64 ", \"from\": %d, \"to\": %d, \"remote\": %u, \"home\": %u}",
			m ? "," : "", (moves[m].time_ns - t0_ns) / 1e9,
			moves[m].pid, moves[m].vaddr, moves[m].size,
			moves[m].from_nid, moves[m].to_nid, moves[m].remote,
			moves[m].home);
	fprintf(f, "]}");
}
