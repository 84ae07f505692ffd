// SPDX-License-Identifier: GPL-2.0
/*
 * resolve-bench: refcnt-run's own time to resolve and report N objects
 * (make bench, objects-bench), on the host, without the module: the same
 * code as refcnt-run (tools/src/run/), on a machine of four counters made
 * up here.
 *
 * It runs track-bench objects N SIZE under the allocation tracker, which
 * makes N allocations from 100 call sites and stops itself; then, timed:
 * the snapshot's objects (the maps, the modules' symbols through libdwfl,
 * the tracker's table, which object owns each page), a count given to
 * every page the objects own (standing in for the range query, which needs
 * the module), the names and advice, and the text, JSON and HTML reports.
 *
 *   resolve-bench TRACK-BENCH N [SIZE]
 *
 * With RESOLVE_BENCH_OUT=DIR it writes the reports into DIR (report.txt,
 * report.json, report.html) instead, as if a feed of weight
 * RESOLVE_BENCH_WEIGHT (default 1; 0: a weight not known, as the hub's
 * emulated PMU's) had delivered the counts, each count then that many
 * times the one made up: the sampled reports, with their intervals, on
 * the host.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run/run.h"

struct run_opts opt = { .preferred = -1, .period = -1, .top = 10,
			.min_share = 0.6, .min_refs = 16, .width = 1000,
			.height = 700, .pebs_period = 10000,
			.track_threshold = 4096, .max_objects = 30,
			.min_samples = 20, .quiet = 1 };

/* CPU time: a busy machine's wall time says little. */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Four nodes, a counter each, made up. */
static void fake_machine(void)
{
	static int nids[4] = { 0, 1, 2, 3 }, mem[4] = { 1, 1, 1, 1 }, cpu[4] = { 1, 1, 1, 1 };
	static char labels[4][24] = { "0", "1", "2", "3" };

	info.rcb_granularity = 4096;
	info.rcb_diff_threshold = 64;
	info.rcb_sw_counters_per_set = 4;
	ctr.nr = 4;
	ctr.nodes_per_counter = 1;
	ctr.nr_cnodes = 4;
	ctr.cnode_nid = nids;
	ctr.label = labels;
	node_has_mem = mem;
	node_has_cpu = cpu;
}

/* Every page the objects own gets made-up references from two nodes. */
static void fake_counts(struct snapshot *s, uint64_t weight)
{
	struct page_counts pc;
	size_t i;
	uint64_t a;

	for (i = 0; i < s->nr_runs; i++) {
		const struct owner_run *run = &s->runs[i];

		for (a = run->start; a < run->end; a += 4096) {
			memset(&pc, 0, sizeof(pc));
			pc.cnodeid = (int)((a >> 12) % 2);
			pc.refs[pc.cnodeid] = weight * (10 + (a >> 12) % 7);
			pc.refs[(pc.cnodeid + 1) % 4] = weight * (30 + (a >> 13) % 11);
			pc.total = pc.refs[0] + pc.refs[1] + pc.refs[2] + pc.refs[3];
			pc.local = pc.refs[pc.cnodeid];
			add_page(&s->o[run->obj], &pc);
		}
	}
}

/* The three reports into dir: 0, or 1 when one cannot be written. */
static int write_reports(const char *dir, char **args)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/report.txt", dir);
	f = fopen(path, "w");
	if (!f)
		return 1;
	report_text(f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/report.json", dir);
	f = fopen(path, "w");
	if (!f)
		return 1;
	report_json(f, args, 0, 0, 0);
	fclose(f);
	snprintf(path, sizeof(path), "%s/report.html", dir);
	report_html(path, args, 0);
	track_cleanup();
	return 0;
}

int main(int argc, char **argv)
{
	char *args[] = { argv[1], "objects", argc > 2 ? argv[2] : "10000",
			 argc > 3 ? argv[3] : "8192", NULL };
	double t0, t_objects, t_names, t_text, t_json, t_html;
	const char *out = getenv("RESOLVE_BENCH_OUT");
	unsigned long long weight = 0;
	struct snapshot *s;
	struct proc p;
	FILE *null;
	pid_t pid;
	int st, i, n = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: resolve-bench TRACK-BENCH [N [SIZE]]\n");
		return 2;
	}
	if (getenv("RESOLVE_BENCH_WEIGHT"))
		weight = strtoull(getenv("RESOLVE_BENCH_WEIGHT"), NULL, 10);
	nr_feeds_used = 1;
	feed_used[0] = (struct feed_desc){ .name = "hub",
					   .weight = weight ? (long)weight : 1,
					   .weight_unknown = getenv("RESOLVE_BENCH_WEIGHT") && !weight,
					   .delivered = 1 };
	if (!weight)
		weight = 1;
	snprintf(feed_used[0].what, sizeof(feed_used[0].what),
		 "made up by resolve-bench, weighted %llu", (unsigned long long)weight);
	snprintf(feed_used[0].meaning, sizeof(feed_used[0].meaning), "made-up counts");
	rt_prog = "resolve-bench";
	fake_machine();
	track_setup(args);
	if (!track_enabled()) {
		fprintf(stderr, "resolve-bench: no tracker (%s)\n", track_off_why);
		return 1;
	}
	pid = fork();
	if (!pid) {
		track_child_env();
		execv(args[0], args);
		_exit(127);
	}
	if (waitpid(pid, &st, WUNTRACED) != pid || !WIFSTOPPED(st)) {
		fprintf(stderr, "resolve-bench: %s did not stop\n", args[0]);
		return 1;
	}
	t0 = now();
	s = snapshot_objects(pid, pid, NULL, 0);
	if (!s)
		return 1;
	fake_counts(s, weight);
	objects_finish(s);
	t_objects = now() - t0;
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);

	t0 = now();
	for (i = 0; i < s->nr_o; i++)
		advise_object(&s->o[i], snapshot_refs(s));
	names_resolve(s);
	t_names = now() - t0;

	memset(&p, 0, sizeof(p));
	p.tgid = pid;
	p.is_main = 1;
	p.snap = s;
	snprintf(p.cmd, sizeof(p.cmd), "%s", args[0]);
	procs = &p;
	main_pid = pid;
	if (out)
		return write_reports(out, args);
	null = fopen("/dev/null", "w");
	t0 = now();
	report_text(null);
	t_text = now() - t0;
	t0 = now();
	report_json(null, args, 0, 0, 0);
	t_json = now() - t0;
	t0 = now();
	report_html("/dev/null", args, 0);
	t_html = now() - t0;
	fclose(null);
	for (i = 0; i < s->nr_o; i++)
		n += s->o[i].obj->kind == OBJ_ALLOC;
	printf("%d allocation objects (%d objects in all, %zu owner runs), CPU seconds: objects %.3f, names and advice %.3f, text %.3f, JSON %.3f, HTML %.3f; total %.3f\n",
	       n, s->nr_o, s->nr_runs, t_objects, t_names, t_text, t_json, t_html,
	       t_objects + t_names + t_text + t_json + t_html);
	track_cleanup();
	return 0;
}
