// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-tdist: the time distribution of a timed stream, after TDAT
 * (Abandah 1996, section 6): events are put into bins of a given width
 * by their clock; the total, the number of bins, the average, minimum and
 * maximum rate, the standard deviation, and the density and distribution
 * of the per-bin rates, as text or JSON, the bins as a file and the
 * stream as a bar chart (PNG or SVG, through the heatmaps' renderer). The
 * streams: the records of traces, the node events read(2) gives on
 * /dev/refcnt/nodeN (fold, peg, migrate), or any text file whose lines
 * start with a clock (TDAT's event traces).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heatmap.h"
#include "rtools.h"
#include "trace-read.h"
#include "trace-tool.h"
#include "u64map.h"

#define MAX_BINS	(50u * 1000 * 1000)

static struct {
	const char *text, *save, *bins, *plot, *clock, *what, *types;
	int events, json, progress, classes, width, height;
	double bin, per, duration;
} opt = { .clock = "time", .what = "mem", .types = "fold,peg,migrate",
	  .progress = 1, .classes = 10, .per = 1, .width = 1000, .height = 500 };

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: refcnt-tdist --bin WIDTH [OPTIONS] TRACE...\n"
		"       refcnt-tdist --bin WIDTH [OPTIONS] --events [--duration S]\n"
		"       refcnt-tdist --bin WIDTH [OPTIONS] --text FILE\n"
		"\n"
		"TDAT's time distribution: the events of a stream put into bins of\n"
		"WIDTH by their clock; total, bins, average, minimum and maximum rate\n"
		"(events per bin), standard deviation, and the density and\n"
		"distribution of the rates. Streams: trace records (refcnt-vm --trace,\n"
		"lackey), the module's node events (fold, peg, migrate, read from\n"
		"/dev/refcnt/nodeN), or text lines that start with a clock.\n"
		"\n"
		"  -b, --bin WIDTH        bin width in the clock's unit (ns for times;\n"
		"                         suffixes us, ms, s allowed there)\n"
		"  -c, --clock C          traces: time (ns, default), insns (each\n"
		"                         thread's instructions) or records (the index\n"
		"                         of the event in the merged stream)\n"
		"  -w, --what W           traces: mem (default), loads, stores, code,\n"
		"                         markers or all\n"
		"  -e, --events           the module's node events, every node, for\n"
		"                         --duration seconds (default: until SIGINT)\n"
		"  -d, --duration S       with --events\n"
		"  -t, --types LIST       with --events: fold, peg, migrate, lost\n"
		"                         (default fold,peg,migrate)\n"
		"  -s, --save FILE        with --events: also write them as text, one a\n"
		"                         line: time_ns type node set paddr src count\n"
		"  -T, --text FILE        a text event trace: each line's first field is\n"
		"                         its clock (# starts a comment)\n"
		"  -p, --per N            rates per N processors (TDAT's last argument)\n"
		"  -k, --classes K        classes of the density (default 10)\n"
		"  -o, --bins FILE        write each bin's start and count (TDAT's\n"
		"                         event.time)\n"
		"  -g, --plot FILE        a bar chart of the bins, .png or .svg\n"
		"      --size WxH         its size (default 1000x500)\n"
		"  -j, --json             JSON instead of text\n"
		"  -P, --progress         a progress line on standard error, also when\n"
		"                         it is not a terminal\n"
		"  -h, --help             this text\n"
		"\n"
		"Exit status: 0 ok, 1 malformed or unreadable input, 2 usage,\n"
		"3 module not loaded, 4 permission denied.\n");
}

static struct u64map binmap;
static uint64_t total;
static int64_t lo_bin = INT64_MAX, hi_bin = INT64_MIN;
static const char *unit = "ns";

static int add(double clock)
{
	int64_t b = (int64_t)floor(clock / opt.bin);
	uint64_t *v = u64map_put(&binmap, (uint64_t)b, NULL);

	if (!v) {
		rt_err("out of memory");
		return -1;
	}
	(*v)++;
	total++;
	if (b < lo_bin)
		lo_bin = b;
	if (b > hi_bin)
		hi_bin = b;
	if ((uint64_t)(hi_bin - lo_bin) >= MAX_BINS) {
		rt_err("more than %u bins: use a wider --bin", MAX_BINS);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ inputs */

static int wanted(const struct tr_event *e)
{
	const char *w = opt.what;

	if (!strcmp(w, "all"))
		return 1;
	if (!strcmp(w, "mem"))
		return e->kind == TR_EV_MEM;
	if (!strcmp(w, "loads"))
		return e->kind == TR_EV_MEM && !e->store;
	if (!strcmp(w, "stores"))
		return e->kind == TR_EV_MEM && e->store;
	if (!strcmp(w, "code"))
		return e->kind == TR_EV_CODE;
	return e->kind == TR_EV_MARK;
}

static int from_traces(char **names, int n)
{
	struct tr_event e;
	struct tr_set *s;
	uint64_t idx = 0;
	int r;

	s = tr_set_open(rt_prog, names, n);
	if (!s)
		return -1;
	tr_set_progress(s, opt.progress);
	if (!strcmp(opt.clock, "time") && !tr_set_has(s, TR_HAS_TIME)) {
		rt_err("the traces have no time records: use --clock records");
		tr_set_close(s);
		return -1;
	}
	while ((r = tr_set_next(s, &e)) > 0) {
		double c = 0;

		if (!strcmp(opt.clock, "records"))
			c = (double)idx;
		idx++;
		if (!wanted(&e))
			continue;
		if (!strcmp(opt.clock, "time"))
			c = (double)e.time;
		else if (!strcmp(opt.clock, "insns"))
			c = (double)e.clock;
		if (add(c))
			return -1;
	}
	tr_set_close(s);
	return r ? -1 : 0;
}

static int from_text(const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	char line[4096];
	unsigned long no = 0;

	if (!f) {
		rt_err("%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end;
		double c = 0;

		no++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '#' || *p == '\n' || !*p)
			continue;
		if (!strchr(line, '\n') && !feof(f)) {
			rt_err("%s: line %lu: too long", path, no);
			return -1;
		}
		errno = 0;
		c = strtod(p, &end);
		if (end == p || errno || (*end && *end != ' ' && *end != '\t' &&
					  *end != '\n' && *end != ',') || c < 0 || isnan(c)) {
			rt_err("%s: line %lu: does not start with a clock (a number >= 0)",
			       path, no);
			if (f != stdin)
				fclose(f);
			return -1;
		}
		if (add(c))
			return -1;
	}
	if (f != stdin)
		fclose(f);
	return 0;
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static const char *event_name(uint32_t t)
{
	static const char *const n[] = { "?", "fold", "peg", "migrate", "lost", "layout" };

	return t < 6 ? n[t] : "?";
}

static int type_wanted(uint32_t t)
{
	char buf[128], *save, *tok;

	snprintf(buf, sizeof(buf), "%s", opt.types);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (!strcmp(tok, event_name(t)))
			return 1;
	return 0;
}

static int from_events(void)
{
	struct pollfd pfd[64];
	struct tt_out so = { 0 };
	int *nids, n, i, err;
	struct timespec t0, now;

	n = rt_node_ids(&nids);
	if (n < 0)
		return n;
	for (i = 0; i < n && i < 64; i++) {
		char dev[64];

		snprintf(dev, sizeof(dev), REFCNT_DEV_DIR "/node%d", nids[i]);
		pfd[i].fd = open(dev, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (pfd[i].fd < 0)
			return rt_dev_error(errno, dev);
		pfd[i].events = POLLIN;
	}
	if (opt.save && tt_open(&so, opt.save))
		return -1;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!stop) {
		double left = 1000;

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (opt.duration > 0) {
			left = opt.duration - (now.tv_sec - t0.tv_sec) -
			       (now.tv_nsec - t0.tv_nsec) / 1e9;
			if (left <= 0)
				break;
		}
		if (poll(pfd, n, (int)(left > 0.2 ? 200 : left * 1000 + 1)) < 0 && errno != EINTR)
			return rt_dev_error(errno, "poll");
		for (i = 0; i < n; i++) {
			struct rcb_event ev[64];
			ssize_t r = read(pfd[i].fd, ev, sizeof(ev));
			int k;

			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (r < 0) {
				err = rt_node_error(errno, "read of ", nids[i]);
				if (so.f)
					tt_discard(&so);
				return err;
			}
			for (k = 0; k < (int)(r / sizeof(ev[0])); k++) {
				if (!type_wanted(ev[k].type))
					continue;
				if (so.f)
					fprintf(so.f, "%llu %s %d %llu 0x%llx %u %u\n",
						(unsigned long long)ev[k].time_ns,
						event_name(ev[k].type), nids[i],
						(unsigned long long)ev[k].set,
						(unsigned long long)ev[k].paddr,
						ev[k].src_cnodeid, ev[k].count);
				if (add((double)ev[k].time_ns))
					return -1;
			}
		}
	}
	for (i = 0; i < n; i++)
		close(pfd[i].fd);
	free(nids);
	return so.f ? tt_commit(&so) : 0;
}

/* ------------------------------------------------------------ output */

struct result {
	uint64_t nbins, min, max;
	double avg, sd;
	double *counts;		/* per bin */
	uint64_t *cls;		/* bins per class */
	double cls_w;
	int k;
};

static int compute(struct result *r)
{
	uint64_t b, *v;
	double sum = 0, sq = 0;
	int c;

	memset(r, 0, sizeof(*r));
	if (!total)
		return 0;
	r->nbins = (uint64_t)(hi_bin - lo_bin + 1);
	r->counts = calloc(r->nbins, sizeof(double));
	r->k = opt.classes;
	r->cls = calloc(r->k, sizeof(uint64_t));
	if (!r->counts || !r->cls) {
		rt_err("out of memory");
		return -1;
	}
	r->min = UINT64_MAX;
	for (b = 0; b < r->nbins; b++) {
		v = u64map_get(&binmap, (uint64_t)(lo_bin + (int64_t)b));
		r->counts[b] = v ? (double)*v : 0;
		sum += r->counts[b];
		if ((uint64_t)r->counts[b] < r->min)
			r->min = (uint64_t)r->counts[b];
		if ((uint64_t)r->counts[b] > r->max)
			r->max = (uint64_t)r->counts[b];
	}
	r->avg = sum / r->nbins;
	for (b = 0; b < r->nbins; b++)
		sq += (r->counts[b] - r->avg) * (r->counts[b] - r->avg);
	r->sd = sqrt(sq / r->nbins);
	/* Classes of equal width over [min, max]; max falls in the last. */
	r->cls_w = r->max > r->min ? (double)(r->max - r->min) / r->k : 1;
	for (b = 0; b < r->nbins; b++) {
		c = (int)((r->counts[b] - r->min) / r->cls_w);
		if (c >= r->k)
			c = r->k - 1;
		r->cls[c]++;
	}
	return 0;
}

static void report(const struct result *r)
{
	double cum = 0;
	int c;

	if (opt.json) {
		printf("{\"events\": %" PRIu64 ", \"bin_width\": %.15g, \"unit\": \"%s\", \"bins\": %" PRIu64
		       ", \"first_bin_start\": %.15g, \"per\": %g, \"average_rate\": %.6g, \"min_rate\": %g"
		       ", \"max_rate\": %g, \"stddev\": %.6g, \"classes\": [",
		       total, opt.bin, unit, r->nbins, total ? lo_bin * opt.bin : 0, opt.per,
		       r->avg / opt.per, r->min / opt.per, r->max / opt.per, r->sd / opt.per);
		for (c = 0; total && c < r->k; c++) {
			double d = (double)r->cls[c] / r->nbins;

			cum += d;
			printf("%s{\"from\": %g, \"to\": %g, \"bins\": %" PRIu64
			       ", \"density\": %.6g, \"distribution\": %.6g}", c ? ", " : "",
			       (r->min + c * r->cls_w) / opt.per,
			       (r->min + (c + 1) * r->cls_w) / opt.per, r->cls[c], d, cum);
		}
		printf("]}\n");
		return;
	}
	printf("events %" PRIu64 ", bin width %.15g %s, bins %" PRIu64, total, opt.bin, unit,
	       r->nbins);
	if (total)
		printf(" (from %.15g to %.15g %s)", lo_bin * opt.bin, (hi_bin + 1) * opt.bin, unit);
	printf("\n");
	if (!total)
		return;
	printf("rate (events per bin%s): average %.6g, minimum %g, maximum %g, standard deviation %.6g\n",
	       opt.per != 1 ? " and processor" : "", r->avg / opt.per, r->min / opt.per,
	       r->max / opt.per, r->sd / opt.per);
	printf("density and distribution of the rate over %d classes:\n", r->k);
	printf("  %-24s %10s %10s %12s\n", "class", "bins", "density", "distribution");
	for (c = 0; c < r->k; c++) {
		double d = (double)r->cls[c] / r->nbins;
		char cls[64];

		cum += d;
		snprintf(cls, sizeof(cls), "[%g, %g%s", (r->min + c * r->cls_w) / opt.per,
			 (r->min + (c + 1) * r->cls_w) / opt.per, c == r->k - 1 ? "]" : ")");
		printf("  %-24s %10" PRIu64 " %10.4f %12.4f\n", cls, r->cls[c], d, cum);
	}
}

static int write_bins(const struct result *r)
{
	struct tt_out o;
	uint64_t b;

	if (tt_open(&o, opt.bins))
		return -1;
	fprintf(o.f, "# bin_start(%s) events; bin width %.15g\n", unit, opt.bin);
	for (b = 0; b < r->nbins; b++)
		fprintf(o.f, "%.17g %.0f\n", (lo_bin + (int64_t)b) * opt.bin, r->counts[b]);
	return tt_commit(&o);
}

static int write_plot(const struct result *r)
{
	char title[128], xl[64];
	struct rt_bars bars = {
		.n = (int)r->nbins, .v = r->counts, .x0 = lo_bin * opt.bin,
		.xstep = opt.bin, .title = title, .xlabel = xl, .ylabel = "events per bin",
	};

	if (r->nbins > 100000) {
		rt_err("--plot: %" PRIu64 " bins are too many to draw (at most 100000): use a wider --bin",
		       r->nbins);
		return -1;
	}
	snprintf(title, sizeof(title), "%" PRIu64 " events in bins of %.15g %s", total,
		 opt.bin, unit);
	snprintf(xl, sizeof(xl), "clock (%s)", unit);
	return rt_bars_write(&bars, opt.plot, opt.width, opt.height);
}

static int parse_width(const char *s)
{
	char *end;
	double m = 1;

	opt.bin = strtod(s, &end);
	if (!strcmp(end, "us"))
		m = 1e3;
	else if (!strcmp(end, "ms"))
		m = 1e6;
	else if (!strcmp(end, "s"))
		m = 1e9;
	else if (*end)
		return -1;
	opt.bin *= m;
	return end == s || !(opt.bin > 0) ? -1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "bin", required_argument, NULL, 'b' },
		{ "clock", required_argument, NULL, 'c' },
		{ "what", required_argument, NULL, 'w' },
		{ "events", no_argument, NULL, 'e' },
		{ "duration", required_argument, NULL, 'd' },
		{ "types", required_argument, NULL, 't' },
		{ "save", required_argument, NULL, 's' },
		{ "text", required_argument, NULL, 'T' },
		{ "per", required_argument, NULL, 'p' },
		{ "classes", required_argument, NULL, 'k' },
		{ "bins", required_argument, NULL, 'o' },
		{ "plot", required_argument, NULL, 'g' },
		{ "size", required_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },
		{ "progress", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct result res;
	const char *bin_s = NULL;
	int o, rc;
	char *end;

	rt_prog = "refcnt-tdist";
	while ((o = getopt_long(argc, argv, "b:c:w:ed:t:s:T:p:k:o:g:jPh", lo, NULL)) != -1) {
		switch (o) {
		case 'b': bin_s = optarg; break;
		case 'c': opt.clock = optarg; break;
		case 'w': opt.what = optarg; break;
		case 'e': opt.events = 1; break;
		case 'd':
			opt.duration = strtod(optarg, &end);
			if (*end || !(opt.duration > 0)) {
				rt_err("--duration %s: want seconds > 0", optarg);
				return RT_EXIT_USAGE;
			}
			break;
		case 't': opt.types = optarg; break;
		case 's': opt.save = optarg; break;
		case 'T': opt.text = optarg; break;
		case 'p':
			opt.per = strtod(optarg, &end);
			if (*end || !(opt.per > 0)) {
				rt_err("--per %s: want a number > 0", optarg);
				return RT_EXIT_USAGE;
			}
			break;
		case 'k':
			opt.classes = (int)strtol(optarg, &end, 10);
			if (*end || opt.classes < 1 || opt.classes > 1000) {
				rt_err("--classes %s: want 1 to 1000", optarg);
				return RT_EXIT_USAGE;
			}
			break;
		case 'o': opt.bins = optarg; break;
		case 'g': opt.plot = optarg; break;
		case 'S':
			if (sscanf(optarg, "%dx%d", &opt.width, &opt.height) != 2) {
				rt_err("--size %s: want WxH", optarg);
				return RT_EXIT_USAGE;
			}
			break;
		case 'j': opt.json = 1; break;
		case 'P': opt.progress = 2; break;
		case 'h': usage(stdout); return RT_EXIT_OK;
		default: usage(stderr); return RT_EXIT_USAGE;
		}
	}
	if (!bin_s || parse_width(bin_s)) {
		rt_err("%s%s: want --bin WIDTH > 0 (ns, or with us, ms, s)",
		       bin_s ? "--bin " : "no --bin given", bin_s ? bin_s : "");
		return RT_EXIT_USAGE;
	}
	if (strcmp(opt.clock, "time") && strcmp(opt.clock, "insns") && strcmp(opt.clock, "records")) {
		rt_err("--clock %s: want time, insns or records", opt.clock);
		return RT_EXIT_USAGE;
	}
	if (strcmp(opt.what, "all") && strcmp(opt.what, "mem") && strcmp(opt.what, "loads") &&
	    strcmp(opt.what, "stores") && strcmp(opt.what, "code") && strcmp(opt.what, "markers")) {
		rt_err("--what %s: want mem, loads, stores, code, markers or all", opt.what);
		return RT_EXIT_USAGE;
	}
	if (opt.plot && !rt_heatmap_name_ok(opt.plot)) {
		rt_err("--plot %s: the name must end in .png or .svg", opt.plot);
		return RT_EXIT_USAGE;
	}
	if (opt.events + !!opt.text + (optind < argc) != 1) {
		rt_err("give one stream: TRACE..., --events or --text FILE");
		usage(stderr);
		return RT_EXIT_USAGE;
	}
	if (u64map_init(&binmap, 1024))
		return RT_EXIT_FAIL;
	if (opt.events) {
		rc = from_events();
	} else if (opt.text) {
		unit = "clock units";
		rc = from_text(opt.text);
	} else {
		if (strcmp(opt.clock, "time"))
			unit = strcmp(opt.clock, "insns") ? "records" : "instructions";
		rc = from_traces(argv + optind, argc - optind);
	}
	if (rc)
		return rc == -1 ? RT_EXIT_FAIL : rt_exit_code(rc);
	if (compute(&res))
		return RT_EXIT_FAIL;
	if (opt.bins && write_bins(&res))
		return RT_EXIT_FAIL;
	if (opt.plot && total && write_plot(&res))
		return RT_EXIT_FAIL;
	report(&res);
	if (fflush(stdout)) {
		rt_err("cannot write the standard output: %s", strerror(errno));
		return RT_EXIT_FAIL;
	}
	return RT_EXIT_OK;
}
