// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: run a command, placed like numactl(8) would place it, count
 * its memory references (the best feed the machine has: the hub, its own
 * PEBS/IBS session, or its own page faults with NUMA balancing's hinting
 * faults; the machine's fault feed with --machine-wide) while it runs,
 * with its allocations tracked by librefcnt-track.so, and when it exits
 * (before its memory is gone) report per object (variable, allocation,
 * allocation site, mapping) and per memory region where the references
 * came from, the hottest pages, and placement advice.
 *
 * The exit is caught with ptrace: PTRACE_SEIZE with PTRACE_O_TRACEEXIT
 * (and TRACECLONE for threads, TRACEFORK/TRACEVFORK with
 * --follow-children). At the PTRACE_EVENT_EXIT stop of the thread that
 * ends the process, its mm still exists: /proc/TID/maps and
 * RCB_RANGE_QUERY (extended + hardware counters) are read then, and the
 * thread is let go. Threads share the mm, so one query covers them all.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <numa.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "heatmap.h"
#include "rtools.h"
#include "run/run.h"

struct run_opts opt = { .preferred = -1, .period = -1, .top = 10,
			.min_share = 0.6, .min_refs = 16, .width = 1000,
			.height = 700, .pebs_period = 10000,
			.track_threshold = TRACK_DEFAULT_THRESHOLD,
			.max_objects = 30, .min_samples = 20 };

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: refcnt-run [OPTIONS] [--] COMMAND [ARGS...]\n"
		"\n"
		"Run COMMAND, count its memory references with refcnt while it runs,\n"
		"and when it exits report per object (its variables, large allocations\n"
		"and mappings, the call sites of its small allocations, the rest of each\n"
		"memory region) and per region the references by accessing node, the\n"
		"remote share, the lost references, the hottest pages and placement\n"
		"advice. The report goes to stderr (or --output FILE); COMMAND keeps\n"
		"its stdout.\n"
		"\n"
		"Placement (as numactl; NODES like 0,2-3 or all):\n"
		"  -N, --cpunodebind=NODES   run on the CPUs of NODES\n"
		"  -m, --membind=NODES       allocate memory only on NODES\n"
		"  -p, --preferred=NODE      prefer memory on NODE\n"
		"  -i, --interleave=NODES    interleave memory over NODES\n"
		"Sampling:\n"
		"      --feed=FEED           auto (default: hub if on, else PEBS/IBS, else\n"
		"                            hinting, else faults), hub, pebs, hinting, faults\n"
		"      --pebs-period=N       PEBS/IBS: one sample every N loads and stores (10000)\n"
		"      --period=N            sample every Nth page fault of COMMAND (default\n"
		"                            1; 0: no feed of its own). Only COMMAND counts\n"
		"                            (and its children with --follow-children)\n"
		"      --machine-wide        use the module's machine-wide page-fault feed\n"
		"                            instead (root): every process counts; --period\n"
		"                            sets it for the run (default: 1 if it is off;\n"
		"                            0: leave it), the previous value restored after\n"
		"      --hinting             NUMA-balancing hinting faults while it runs\n"
		"                            (numa_balancing=1 for the run, COMMAND under\n"
		"                            MPOL_BIND|MPOL_F_NUMA_BALANCING over the\n"
		"                            --membind nodes or all; Linux 5.12+). Pages\n"
		"                            may still move between the bound nodes:\n"
		"                            bind one node for none\n"
		"      --reset               zero every counter first (root; all users')\n"
		"Migration:\n"
		"      --migrate[=FILE]      move the command's pages as refcntd(8) would,\n"
		"                            with its policy from FILE (refcntd.conf(5);\n"
		"                            default: refcntd's defaults, scan_ms = 500),\n"
		"                            acting on the command and its children only;\n"
		"                            the report lists what moved, from where to where\n"
		"Objects:\n"
		"      --no-track            do not preload the allocation tracker\n"
		"      --track-threshold=SIZE  allocations of SIZE or more are objects of\n"
		"                            their own, smaller ones fold by call site (1M)\n"
		"Report:\n"
		"  -f, --follow-children     trace forked children too, one report each\n"
		"  -l, --labels=FILE         name address ranges: lines \"NAME START-END\"\n"
		"                            or \"array NAME START-END ...\", read at exit\n"
		"  -j, --json                JSON instead of text\n"
		"  -o, --output=FILE         write the report to FILE\n"
		"  -t, --top=N               hottest pages to list (default 10)\n"
		"  -a, --all                 also regions without references\n"
		"      --min-share=PCT       advise a move when one node makes PCT%% of a\n"
		"                            region's references (default 60)\n"
		"      --min-refs=N          no advice below N references (default 16)\n"
		"      --objects=N           objects the text report lists (30; 0: all)\n"
		"      --min-samples=N       flag figures from fewer samples (20)\n"
		"      --html=FILE           the report as one self-contained HTML page\n"
		"      --json-output=FILE    also the JSON report, into FILE\n"
		"      --heatmap=FILE        objects x accessing node picture (.svg/.png)\n"
		"      --width=W --height=H  its size in pixels (default 1000x700)\n"
		"  -q, --quiet               no progress messages\n"
		"  -h, --help                this text\n"
		"\n"
		"Exit status: COMMAND's (128+N if killed by signal N); 121 refcnt module\n"
		"not loaded, 122 permission denied, 125 other refcnt-run error or usage,\n"
		"126 COMMAND cannot be executed, 127 COMMAND not found.\n");
}

/* NODES of an option into *m: 0, or -1 with the cause printed. */
static int parse_nodes(const char *s, const char *what, struct bitmask **m)
{
	*m = numa_parse_nodestring(s);
	if (!*m) {
		rt_err("%s=%s: not a list of online nodes", what, s);
		return -1;
	}
	return 0;
}

/* rt_err() for a bad option: -1. */
static int opt_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int opt_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rt_verr(fmt, ap);
	va_end(ap);
	return -1;
}

/* A number of an option in [min, max] into *v: 0, or -1. */
static int parse_long(const char *s, int base, long min, long max, long *v)
{
	char *end;

	*v = strtol(s, &end, base);
	return *end || *v < min || *v > max ? -1 : 0;
}

enum { O_PERIOD = 256, O_MACHINE_WIDE, O_HINTING, O_RESET, O_MINSHARE, O_MINREFS,
       O_HEATMAP, O_WIDTH, O_HEIGHT, O_MIGRATE, O_FEED, O_PEBS_PERIOD,
       O_NO_TRACK, O_TRACK_THRESHOLD, O_HTML, O_OBJECTS, O_MIN_SAMPLES,
       O_JSON_OUTPUT };

/* The options that take a number: 0, or -1 with the cause printed. */
static int parse_number_option(int c, const char *arg)
{
	char *end;
	long v;

	switch (c) {
	case 'p':
		if (parse_long(arg, 10, 0, numa_max_node(), &v))
			return opt_err("--preferred=%s: not a node", arg);
		opt.preferred = v;
		return 0;
	case O_PERIOD:
		if (parse_long(arg, 0, 0, INT_MAX, &opt.period))
			return opt_err("--period=%s: not a number >= 0", arg);
		return 0;
	case 't':
		if (parse_long(arg, 0, 0, 10000, &v))
			return opt_err("--top=%s: not a number 0..10000", arg);
		opt.top = v;
		return 0;
	case O_MINSHARE:
		opt.min_share = strtod(arg, &end) / 100;
		if (*end || opt.min_share <= 0.5 || opt.min_share > 1)
			return opt_err("--min-share=%s: a percentage above 50 and at most 100", arg);
		return 0;
	case O_MINREFS:
		if (parse_long(arg, 0, 0, LONG_MAX, &opt.min_refs))
			return opt_err("--min-refs=%s: not a number >= 0", arg);
		return 0;
	case O_PEBS_PERIOD:
		if (parse_long(arg, 0, 1, UINT32_MAX, &opt.pebs_period))
			return opt_err("--pebs-period=%s: not a number >= 1", arg);
		opt.pebs_period_set = 1;
		return 0;
	case O_OBJECTS:
		if (parse_long(arg, 0, 0, LONG_MAX, &opt.max_objects))
			return opt_err("--objects=%s: not a number >= 0", arg);
		return 0;
	case O_MIN_SAMPLES:
		if (parse_long(arg, 0, 0, LONG_MAX, &opt.min_samples))
			return opt_err("--min-samples=%s: not a number >= 0", arg);
		return 0;
	case O_TRACK_THRESHOLD:
		if (rt_parse_u64(arg, &opt.track_threshold) || !opt.track_threshold)
			return opt_err("--track-threshold=%s: a size above 0 (64K, 1M, ...)", arg);
		return 0;
	default:	/* O_WIDTH, O_HEIGHT */
		if (parse_long(arg, 0, 64, 16384, &v))
			return opt_err("%s=%s: 64..16384 pixels",
				      c == O_WIDTH ? "--width" : "--height", arg);
		*(c == O_WIDTH ? &opt.width : &opt.height) = v;
		return 0;
	}
}

/* One option into opt: 0, or -1 with the cause printed. */
static int parse_option(int c, const char *arg)
{
	switch (c) {
	case 'N':
		return parse_nodes(arg, "--cpunodebind", &opt.cpunodes);
	case 'm':
		return parse_nodes(arg, "--membind", &opt.membind);
	case 'i':
		return parse_nodes(arg, "--interleave", &opt.interleave);
	case O_HINTING:
		opt.hinting = 1;
		return 0;
	case O_MACHINE_WIDE:
		opt.machine_wide = 1;
		return 0;
	case O_RESET:
		opt.reset = 1;
		return 0;
	case 'f':
		opt.follow = 1;
		return 0;
	case 'l':
		opt.labels = arg;
		return 0;
	case 'j':
		opt.json = 1;
		return 0;
	case 'o':
		opt.output = arg;
		return 0;
	case 'a':
		opt.all = 1;
		return 0;
	case O_HEATMAP:
		opt.heatmap = arg;
		return 0;
	case O_HTML:
		opt.html = arg;
		return 0;
	case O_JSON_OUTPUT:
		opt.json_output = arg;
		return 0;
	case O_NO_TRACK:
		opt.no_track = 1;
		return 0;
	case O_FEED:
		if (strcmp(arg, "auto") && strcmp(arg, "hub") && strcmp(arg, "pebs") &&
		    strcmp(arg, "hinting") && strcmp(arg, "faults"))
			return opt_err("--feed=%s: one of auto, hub, pebs, hinting, faults", arg);
		opt.feed = arg;
		return 0;
	case O_MIGRATE:
		return migrate_option(arg);
	case 'q':
		opt.quiet = 1;
		return 0;
	default:
		return parse_number_option(c, arg);
	}
}

/* Options that do not go together, or a missing command: 0, or -1. */
static int check_options(int argc)
{
	if (optind >= argc) {
		rt_err("no command to run (refcnt-run [OPTIONS] -- COMMAND [ARGS...])");
		usage(stderr);
		return -1;
	}
	if (opt.hinting && (opt.preferred >= 0 || opt.interleave)) {
		rt_err("--hinting binds memory (MPOL_BIND): it does not go with --preferred or --interleave");
		return -1;
	}
	if (opt.feed && strcmp(opt.feed, "auto") &&
	    (opt.machine_wide || opt.period >= 0 ||
	     (opt.hinting && strcmp(opt.feed, "hinting")))) {
		rt_err("--feed=%s does not go with --machine-wide, --period or --hinting (which choose the fault feed)",
		       opt.feed);
		return -1;
	}
	if (opt.heatmap && !rt_heatmap_name_ok(opt.heatmap)) {
		rt_err("--heatmap=%s: the name must end in .svg or .png",
		       opt.heatmap);
		return -1;
	}
	return 0;
}

/*
 * The options into opt; optind is then the command. 0 to go on, 1 when
 * --help was shown, -1 on a bad option (cause printed).
 */
static int parse_options(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cpunodebind", required_argument, NULL, 'N' },
		{ "membind", required_argument, NULL, 'm' },
		{ "preferred", required_argument, NULL, 'p' },
		{ "interleave", required_argument, NULL, 'i' },
		{ "period", required_argument, NULL, O_PERIOD },
		{ "machine-wide", no_argument, NULL, O_MACHINE_WIDE },
		{ "hinting", no_argument, NULL, O_HINTING },
		{ "reset", no_argument, NULL, O_RESET },
		{ "follow-children", no_argument, NULL, 'f' },
		{ "labels", required_argument, NULL, 'l' },
		{ "json", no_argument, NULL, 'j' },
		{ "output", required_argument, NULL, 'o' },
		{ "top", required_argument, NULL, 't' },
		{ "all", no_argument, NULL, 'a' },
		{ "min-share", required_argument, NULL, O_MINSHARE },
		{ "min-refs", required_argument, NULL, O_MINREFS },
		{ "heatmap", required_argument, NULL, O_HEATMAP },
		{ "width", required_argument, NULL, O_WIDTH },
		{ "height", required_argument, NULL, O_HEIGHT },
		{ "quiet", no_argument, NULL, 'q' },
		{ "migrate", optional_argument, NULL, O_MIGRATE },
		{ "feed", required_argument, NULL, O_FEED },
		{ "pebs-period", required_argument, NULL, O_PEBS_PERIOD },
		{ "no-track", no_argument, NULL, O_NO_TRACK },
		{ "track-threshold", required_argument, NULL, O_TRACK_THRESHOLD },
		{ "html", required_argument, NULL, O_HTML },
		{ "json-output", required_argument, NULL, O_JSON_OUTPUT },
		{ "objects", required_argument, NULL, O_OBJECTS },
		{ "min-samples", required_argument, NULL, O_MIN_SAMPLES },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "+N:m:p:i:fl:jo:t:aqh", opts,
				NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 1;
		}
		if (c == '?' || c == ':') {
			usage(stderr);
			return -1;
		}
		if (parse_option(c, optarg))
			return -1;
	}
	return check_options(argc);
}

/* Counters, --reset and the feeds for the run: 0, or a negative errno. */
static int prepare(void)
{
	int rc;

	rc = setup_counters();
	if (!rc)
		rc = check_query_permission();
	if (!rc && opt.reset)
		rc = reset_counters();
	if (rc)
		return rc;
	if (geteuid() != 0)
		say("not root: file and shared mappings will not be counted (RCB_PAGE_DENIED)");
	rc = setup_feeds();
	if (rc)
		restore_feeds();
	return rc;
}

/* The command's exit status, or refcnt-run's when it did not start. */
static int command_status(const struct child_err *ce, const char *cmd)
{
	const struct proc *m = find_proc(main_pid);

	if (ce->stage == 2) {
		rt_err("%s: %s%s", cmd, ce->err == ENOENT ?
		       "command not found" : strerror(ce->err),
		       ce->err == ENOENT && !strchr(cmd, '/') ? " (not in PATH)" : "");
		return ce->err == ENOENT ? RT_EXIT_RUN_NOTFOUND : RT_EXIT_RUN_NOEXEC;
	}
	if (ce->stage == 3) {
		rt_err("cannot count the command's references (RCB_COUNT_START): %s%s",
		       strerror(ce->err), ce->err == ENOTTY ?
		       " (the refcnt module is too old: --machine-wide)" :
		       ce->err == EACCES ?
		       " (the kernel forbids the PEBS/IBS feed: run as root)" : "");
		return ce->err == EACCES || ce->err == EPERM ?
		       RT_EXIT_RUN_PERM : RT_EXIT_RUN_FAIL;
	}
	if (ce->stage == 1) {
		rt_err("cannot place the command as asked: %s%s", strerror(ce->err),
		       opt.hinting && ce->err == EINVAL ?
		       " (--hinting needs MPOL_F_NUMA_BALANCING: Linux 5.12 or later)" : "");
		return RT_EXIT_RUN_FAIL;
	}
	if (WIFSIGNALED(m->status))
		return 128 + WTERMSIG(m->status);
	return WEXITSTATUS(m->status);
}

/* --json-output: the JSON report beside the text one. */
static void json_to_file(const char *path, char **argv, int exit_code)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		rt_err("--json-output=%s: %s", path, strerror(errno));
		return;
	}
	report_json(f, argv, exit_code, new_period, old_period);
	if (fclose(f))
		rt_err("--json-output=%s: %s", path, strerror(errno));
}

/* Names and advice for every region and object, then the reports. */
static void report(FILE *out, char **argv, int exit_code)
{
	struct proc *p;
	int i;

	for (p = procs; p; p = p->next) {
		uint64_t total = p->snap ? snapshot_refs(p->snap) : 0;

		for (i = 0; p->snap && i < p->snap->nr; i++)
			advise(&p->snap->r[i], total);
		for (i = 0; p->snap && i < p->snap->nr_o; i++)
			advise_object(&p->snap->o[i], total);
		names_resolve(p->snap);
	}
	if (opt.json)
		report_json(out, argv, exit_code, new_period, old_period);
	else
		report_text(out);
	if (opt.heatmap)
		report_heatmap(find_proc(main_pid));
	if (opt.html)
		report_html(opt.html, argv, exit_code);
	if (opt.json_output)
		json_to_file(opt.json_output, argv, exit_code);
}


int main(int argc, char **argv)
{
	struct child_err ce;
	FILE *out = stderr;
	int rc;

	rt_prog = "refcnt-run";
	/* Names come from local files only: libdw never asks debuginfod. */
	unsetenv("DEBUGINFOD_URLS");
	rc = parse_options(argc, argv);
	if (rc)
		return rc > 0 ? RT_EXIT_OK : RT_EXIT_RUN_FAIL;
	if (opt.output) {
		out = fopen(opt.output, "w");
		if (!out) {
			rt_err("--output=%s: %s", opt.output, strerror(errno));
			return RT_EXIT_RUN_FAIL;
		}
	}
	rc = prepare();
	if (!rc)
		rc = track_setup(argv + optind);
	if (rc)
		return rt_run_exit_code(rc);
	/* Descendants of refcnt-run: the command, before it runs. */
	rc = migrate_start(getpid());
	if (!rc)
		rc = start_command(argv + optind, &ce);
	if (rc) {
		migrate_stop();
		restore_feeds();
		track_cleanup();
		return rt_run_exit_code(rc);
	}
	trace_loop();
	clock_gettime(CLOCK_MONOTONIC, &t_end);
	migrate_stop();
	stop_counting();
	feeds_end();
	restore_feeds();

	rc = command_status(&ce, argv[optind]);
	if (ce.stage) {
		track_cleanup();
		return rc;
	}
	report(out, argv + optind, rc);
	track_cleanup();
	if (out != stderr && fclose(out)) {
		rt_err("--output=%s: %s", opt.output, strerror(errno));
		return RT_EXIT_RUN_FAIL;
	}
	return rc;
}
