// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-top: a live view of the hottest counter sets of all nodes, with
 * reference rates since the last refresh.
 *
 * Every refresh reads each node's mmap'ed table of extended counters
 * (refcnt_node_map) and adds the hardware counters (RCB_SETS_READ), which
 * hold the references not yet folded into the extended ones. The table is
 * read before and after the hardware counters: a fold in between moves
 * counts from one to the other, and max(ext before + hw, ext after) counts
 * them once.
 *
 * Plain ANSI escapes, no curses: works in any terminal and under tmux or
 * screen. Batch mode (-b, or when stdout is not a terminal) prints one
 * table per iteration for logs.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "rtools.h"

#define CHUNK	16384

enum sort_key { SORT_RATE, SORT_TOTAL, SORT_NODE };
static const char *const sort_names[] = { "rate", "total", "node" };

static struct {
	double delay;
	long iterations;	/* 0: until q */
	int batch;
	enum sort_key sort;
	int node;		/* -1: all */
	int extended;		/* the mmap'ed extended counters only */
	int rows;		/* table rows; 0: fit the terminal (or 20) */
} opt = { .delay = 2, .sort = SORT_RATE, .node = -1 };

struct node {
	int nid;
	struct refcnt_node *h;
	struct rcb_info info;
	const uint32_t *map;
	uint64_t *prev;		/* per set total at the last refresh */
	int have_prev;
	uint64_t total, rate_refs;	/* sums over the node */
	uint64_t *by_ctr;	/* references to this node's memory by counter */
	uint32_t *hw;
	uint32_t *ext0;
};

struct row {
	struct node *n;
	uint64_t set;
	uint64_t total;
	double rate;
};

static struct node *nodes;
static int nr_nodes;
static struct rt_counters ctr;
static struct row *top;
static int nr_top, cap_top;

static volatile sig_atomic_t winch = 1, quit;
static struct termios saved_tio;
static int tty_raw, on_screen;

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: refcnt-top [-b] [-d SECS] [-n ITER] [-s rate|total|node] [OPTIONS]\n"
		"\n"
		"Live view of the hottest counter sets of all nodes: references (extended +\n"
		"hardware counters) and their rate since the last refresh, with the\n"
		"accessing nodes. Keys: q quit, r/t/n sort by rate/total/node, +/- refresh\n"
		"slower/faster, space refresh now.\n"
		"\n"
		"  -b, --batch            plain text, one table per iteration (for logs;\n"
		"                         also when stdout is not a terminal)\n"
		"  -d, --delay SECS       seconds between refreshes (default 2)\n"
		"  -n, --iterations N     stop after N refreshes\n"
		"  -s, --sort KEY         rate (default), total or node\n"
		"  -N, --node N           only sets of node N's memory\n"
		"  -r, --rows N           table rows (default: fit the terminal; 20 in batch)\n"
		"  -e, --extended         only the mmap'ed extended counters (cheapest; they\n"
		"                         lag by up to the hardware counter maximum)\n"
		"  -h, --help             this text\n"
		"\n"
		"Exit status: 0 ok, 1 error, 2 usage, 3 refcnt module not loaded,\n"
		"4 permission denied.\n");
}

/* ------------------------------------------------------------ terminal */

static void term_restore(void)
{
	if (on_screen) {
		/* Show the cursor, leave the alternate screen. */
		fputs("\033[?25h\033[?1049l", stdout);
		fflush(stdout);
		on_screen = 0;
	}
	if (tty_raw) {
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
		tty_raw = 0;
	}
}

static void on_sig(int sig)
{
	if (sig == SIGWINCH)
		winch = 1;
	else
		quit = 1;
}

static void term_setup(void)
{
	struct termios t;

	if (isatty(STDIN_FILENO) && !tcgetattr(STDIN_FILENO, &saved_tio)) {
		t = saved_tio;
		t.c_lflag &= ~(ICANON | ECHO);
		t.c_cc[VMIN] = 0;
		t.c_cc[VTIME] = 0;
		if (!tcsetattr(STDIN_FILENO, TCSANOW, &t))
			tty_raw = 1;
	}
	/* Alternate screen, cursor hidden. */
	fputs("\033[?1049h\033[?25l", stdout);
	on_screen = 1;
	atexit(term_restore);
}

static void term_size(int *rows, int *cols)
{
	struct winsize ws;
	const char *e;

	*rows = 24;
	*cols = 80;
	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_row && ws.ws_col) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
		return;
	}
	e = getenv("LINES");
	if (e && atoi(e) > 0)
		*rows = atoi(e);
	e = getenv("COLUMNS");
	if (e && atoi(e) > 0)
		*cols = atoi(e);
}

/* ------------------------------------------------------------ sampling */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t set_paddr(struct node *n, uint64_t set)
{
	struct rcb_slot slots[64], *s = slots;
	uint64_t p;
	int k;

	k = refcnt_node_slots(n->h, NULL, 0);
	if (k > 64) {
		s = calloc(k, sizeof(*s));
		if (!s)
			return 0;
	}
	refcnt_node_slots(n->h, s, k);
	p = rt_set_paddr(s, k, n->info.rcb_granularity, set);
	if (s != slots)
		free(s);
	return p;
}

static int row_before(const struct row *a, const struct row *b)
{
	switch (opt.sort) {
	case SORT_TOTAL:
		if (a->total != b->total)
			return a->total > b->total;
		return a->rate > b->rate;
	case SORT_NODE:
		if (a->n->nid != b->n->nid)
			return a->n->nid < b->n->nid;
		if (a->rate != b->rate)
			return a->rate > b->rate;
		return a->total > b->total;
	default:
		if (a->rate != b->rate)
			return a->rate > b->rate;
		return a->total > b->total;
	}
}

/* Keep the cap_top best rows, sorted. */
static void offer(const struct row *r)
{
	int i;

	if (nr_top == cap_top && !row_before(r, &top[nr_top - 1]))
		return;
	i = nr_top < cap_top ? nr_top++ : nr_top - 1;
	while (i > 0 && row_before(r, &top[i - 1])) {
		top[i] = top[i - 1];
		i--;
	}
	top[i] = *r;
}

/* One refresh: totals, rates, the best rows. 0, or a negative errno. */
static int sample(double dt)
{
	int j, c;

	nr_top = 0;
	for (j = 0; j < nr_nodes; j++) {
		struct node *n = &nodes[j];
		const int cps = n->info.rcb_sw_counters_per_set;
		uint64_t set, sets = n->info.rcb_sw_sets;

		n->total = n->rate_refs = 0;
		memset(n->by_ctr, 0, ctr.nr * sizeof(uint64_t));
		for (set = 0; set < sets; set += CHUNK) {
			uint64_t cnt = sets - set < CHUNK ? sets - set : CHUNK, i;
			const uint32_t *e1 = n->map + set * cps;

			if (!opt.extended) {
				memcpy(n->ext0, e1, cnt * cps * sizeof(uint32_t));
				if (refcnt_node_read_sets(n->h, set, cnt, n->hw, NULL,
							  NULL))
					return rt_node_error(errno,
						"RCB_SETS_READ on ", n->nid);
			}
			for (i = 0; i < cnt; i++) {
				uint64_t t = 0, t_after = 0, d;
				struct row r;

				for (c = 0; c < cps; c++) {
					uint64_t v = e1[i * cps + c];

					if (!opt.extended) {
						uint64_t before = (uint64_t)n->ext0[i * cps + c] +
								  n->hw[i * cps + c];

						t_after += v;
						v = before > v ? before : v;
					}
					t += v;
					if (c < ctr.nr)
						n->by_ctr[c] += v;
				}
				(void)t_after;
				d = n->have_prev && t >= n->prev[set + i] ?
				    t - n->prev[set + i] : 0;
				n->prev[set + i] = t;
				n->total += t;
				n->rate_refs += d;
				if (!t)
					continue;
				r.n = n;
				r.set = set + i;
				r.total = t;
				r.rate = n->have_prev && dt > 0 ? d / dt : -1;
				offer(&r);
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------ display */

static void fmt_count(double v, char *buf, size_t size)
{
	if (v < 0)
		snprintf(buf, size, "-");
	else if (v < 1e5)
		snprintf(buf, size, "%.0f", v);
	else if (v < 1e8)
		snprintf(buf, size, "%.0fk", v / 1e3);
	else
		snprintf(buf, size, "%.1fM", v / 1e6);
}

/* Print a line, cut at cols, clearing the rest of it in a terminal. */
static void line(int cols, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(int cols, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (cols > 0 && cols < (int)sizeof(buf))
		buf[cols] = '\0';
	fputs(buf, stdout);
	fputs(opt.batch ? "\n" : "\033[K\n", stdout);
}

static void show(double dt, int first, int rows, int cols)
{
	uint64_t all = 0, all_rate = 0;
	char tbuf[32], b1[32], b2[32], cells[512];
	time_t t = time(NULL);
	int i, j, c, many = ctr.nr > 8;
	size_t len;

	strftime(tbuf, sizeof(tbuf), "%H:%M:%S", localtime(&t));
	for (j = 0; j < nr_nodes; j++) {
		all += nodes[j].total;
		all_rate += nodes[j].rate_refs;
	}
	if (!opt.batch)
		fputs("\033[H", stdout);
	fmt_count(first || dt <= 0 ? -1 : all_rate / dt, b1, sizeof(b1));
	line(opt.batch ? 0 : cols + 4, "%srefcnt-top %s  every %.1fs  %d node%s  references %llu  rate %s/s  sort: %s%s%s",
	     opt.batch ? "" : "\033[7m", tbuf, opt.delay, nr_nodes,
	     nr_nodes == 1 ? "" : "s", (unsigned long long)all, b1,
	     sort_names[opt.sort], opt.extended ? "  (extended counters only)" : "",
	     opt.batch ? "" : "  [q r t n + -]\033[0m");
	/* Per node: references to its memory, by accessing node. */
	for (j = 0; j < nr_nodes; j++) {
		struct node *n = &nodes[j];
		int hc = (int)n->info.rcb_cnodeid / ctr.nodes_per_counter;

		len = 0;
		cells[0] = '\0';
		for (c = 0; c < ctr.nr && len < sizeof(cells); c++)
			if (n->by_ctr[c])
				len += snprintf(cells + len, sizeof(cells) - len,
						" %s:%.0f%%", ctr.label[c],
						100.0 * n->by_ctr[c] / n->total);
		fmt_count(first || dt <= 0 ? -1 : n->rate_refs / dt, b1, sizeof(b1));
		line(cols, "node %-3d %12llu refs %8s/s  local %5.1f%%  from%s", n->nid,
		     (unsigned long long)n->total, b1,
		     n->total ? 100.0 * n->by_ctr[hc] / n->total : 0.0,
		     *cells ? cells : " -");
	}
	line(cols, "%s", "");
	len = snprintf(cells, sizeof(cells), "%s%-4s %9s %-14s %10s %9s  ",
		       opt.batch ? "" : "\033[1m", "NODE", "SET", "PADDR", "TOTAL",
		       "RATE/s");
	if (many) {
		len += snprintf(cells + len, sizeof(cells) - len, "TOP ACCESSING NODES");
	} else {
		for (c = 0; c < ctr.nr; c++)
			len += snprintf(cells + len, sizeof(cells) - len, " %8s",
					(snprintf(b2, sizeof(b2), "n%s", ctr.label[c]), b2));
		len += snprintf(cells + len, sizeof(cells) - len, "  TOP");
	}
	line(opt.batch ? 0 : cols + 4, "%s%s", cells, opt.batch ? "" : "\033[0m");
	for (i = 0; i < nr_top && i < rows; i++) {
		const struct row *r = &top[i];
		struct node *n = r->n;
		const int cps = n->info.rcb_sw_counters_per_set;
		uint32_t hw[RCB_MAX_COUNTERS] = { 0 };
		uint64_t v[RCB_MAX_COUNTERS];
		int best = 0;

		if (!opt.extended)
			refcnt_node_read_sets(n->h, r->set, 1, hw, NULL, NULL);
		for (c = 0; c < cps && c < RCB_MAX_COUNTERS; c++) {
			v[c] = (uint64_t)n->map[r->set * cps + c] + hw[c];
			if (v[c] > v[best])
				best = c;
		}
		fmt_count(r->rate, b1, sizeof(b1));
		len = snprintf(cells, sizeof(cells), "%-4d %9llu 0x%-12llx %10llu %9s  ",
			       n->nid, (unsigned long long)r->set,
			       (unsigned long long)set_paddr(n, r->set),
			       (unsigned long long)r->total, b1);
		if (many) {
			int k, used[RCB_MAX_COUNTERS] = { 0 };

			for (k = 0; k < 3; k++) {
				int b = -1;

				for (c = 0; c < cps && c < ctr.nr; c++)
					if (!used[c] && v[c] && (b < 0 || v[c] > v[b]))
						b = c;
				if (b < 0)
					break;
				used[b] = 1;
				len += snprintf(cells + len, sizeof(cells) - len,
						"%s:%llu ", ctr.label[b],
						(unsigned long long)v[b]);
			}
		} else {
			for (c = 0; c < cps && c < ctr.nr; c++) {
				fmt_count((double)v[c], b2, sizeof(b2));
				len += snprintf(cells + len, sizeof(cells) - len,
						" %8s", b2);
			}
			len += snprintf(cells + len, sizeof(cells) - len, "  n%s",
					ctr.label[best]);
		}
		line(cols, "%s", cells);
	}
	if (!nr_top)
		line(cols, "(no counter set has references yet: is a feed on? see refcnt-info)");
	if (opt.batch)
		fputs("\n", stdout);
	else
		fputs("\033[J", stdout);
	fflush(stdout);
}

/* Wait up to secs for a key; returns the key or 0. */
static int wait_key(double secs)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	int ms = (int)(secs * 1000), r;
	char ch;

	if (!tty_raw) {
		struct timespec ts = { (time_t)secs,
				       (long)((secs - (time_t)secs) * 1e9) };

		nanosleep(&ts, NULL);
		return 0;
	}
	r = poll(&p, 1, ms);
	if (r > 0 && read(STDIN_FILENO, &ch, 1) == 1)
		return ch;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "batch", no_argument, NULL, 'b' },
		{ "delay", required_argument, NULL, 'd' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "sort", required_argument, NULL, 's' },
		{ "node", required_argument, NULL, 'N' },
		{ "rows", required_argument, NULL, 'r' },
		{ "extended", no_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int *nids, j, c, rc, trows = 24, tcols = 80;
	double last = 0, t;
	struct sigaction sa;
	long iter = 0;
	char *end;

	rt_prog = "refcnt-top";
	while ((c = getopt_long(argc, argv, "bd:n:s:N:r:eh", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			opt.batch = 1;
			break;
		case 'd':
			opt.delay = strtod(optarg, &end);
			if (*end || opt.delay < 0.1 || opt.delay > 3600) {
				rt_err("--delay %s: seconds from 0.1 to 3600", optarg);
				return RT_EXIT_USAGE;
			}
			break;
		case 'n':
			opt.iterations = strtol(optarg, &end, 10);
			if (*end || opt.iterations < 1) {
				rt_err("--iterations %s: a number from 1", optarg);
				return RT_EXIT_USAGE;
			}
			break;
		case 's':
			for (j = 0; j < 3; j++)
				if (!strcmp(optarg, sort_names[j]))
					break;
			if (j == 3) {
				rt_err("--sort %s: rate, total or node", optarg);
				return RT_EXIT_USAGE;
			}
			opt.sort = j;
			break;
		case 'N':
			if (rt_parse_node(optarg, &opt.node))
				return RT_EXIT_USAGE;
			break;
		case 'r':
			opt.rows = strtol(optarg, &end, 10);
			if (*end || opt.rows < 1 || opt.rows > 10000) {
				rt_err("--rows %s: 1..10000", optarg);
				return RT_EXIT_USAGE;
			}
			break;
		case 'e':
			opt.extended = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return RT_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return rt_exit_code(rt_unexpected_arg(argv[optind], usage));
	if (!isatty(STDOUT_FILENO))
		opt.batch = 1;

	nr_nodes = rt_select_nodes(opt.node, &nids);
	if (nr_nodes < 0)
		return rt_exit_code(nr_nodes);
	nodes = calloc(nr_nodes, sizeof(*nodes));
	if (!nodes) {
		rt_err("out of memory");
		return RT_EXIT_FAIL;
	}
	for (j = 0; j < nr_nodes; j++) {
		struct node *n = &nodes[j];
		size_t cps;

		n->nid = nids[j];
		rc = rt_node_open(n->nid, &n->h, &n->info);
		if (rc)
			return rt_exit_code(rc);
		n->map = refcnt_node_map(n->h, NULL);
		if (!n->map)
			return rt_exit_code(rt_node_error(errno, "mmap of ", n->nid));
		cps = n->info.rcb_sw_counters_per_set;
		n->prev = calloc(n->info.rcb_sw_sets ? n->info.rcb_sw_sets : 1,
				 sizeof(uint64_t));
		n->by_ctr = calloc(RCB_MAX_COUNTERS, sizeof(uint64_t));
		n->hw = calloc(CHUNK * cps, sizeof(uint32_t));
		n->ext0 = calloc(CHUNK * cps, sizeof(uint32_t));
		if (!n->prev || !n->by_ctr || !n->hw || !n->ext0) {
			rt_err("out of memory");
			return RT_EXIT_FAIL;
		}
	}
	if (rt_counters_init(&ctr, &nodes[0].info))
		return RT_EXIT_FAIL;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sig;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGWINCH, &sa, NULL);
	if (!opt.batch)
		term_setup();

	cap_top = opt.rows ? opt.rows : opt.batch ? 20 : 256;
	top = calloc(cap_top, sizeof(*top));
	if (!top) {
		rt_err("out of memory");
		return RT_EXIT_FAIL;
	}
	while (!quit) {
		int rows;

		t = now();
		rc = sample(last ? t - last : 0);
		if (rc) {
			term_restore();
			return rt_exit_code(rc);
		}
		if (!opt.batch && winch) {
			winch = 0;
			term_size(&trows, &tcols);
			fputs("\033[2J", stdout);
		}
		rows = opt.rows ? opt.rows : opt.batch ? 20 : trows - nr_nodes - 4;
		if (rows < 1)
			rows = 1;
		show(last ? t - last : 0, !last, rows, opt.batch ? 0 : tcols);
		for (j = 0; j < nr_nodes; j++)
			nodes[j].have_prev = 1;
		last = t;
		if (opt.iterations && ++iter >= opt.iterations)
			break;
		/* Wait for the next refresh, reacting to keys and resizes. */
		for (;;) {
			double left = opt.delay - (now() - last);
			int key;

			if (left <= 0 || quit)
				break;
			key = wait_key(left > 0.2 && !opt.batch ? 0.2 : left);
			if (key == 'q' || key == 'Q') {
				quit = 1;
			} else if (key == 'r' || key == 't' || key == 'n') {
				opt.sort = key == 'r' ? SORT_RATE :
					   key == 't' ? SORT_TOTAL : SORT_NODE;
				break;
			} else if (key == '+') {
				opt.delay = opt.delay * 2 > 3600 ? 3600 : opt.delay * 2;
			} else if (key == '-') {
				opt.delay = opt.delay / 2 < 0.1 ? 0.1 : opt.delay / 2;
			} else if (key == ' ') {
				break;
			}
			if (winch && !opt.batch)
				break;
		}
	}
	term_restore();
	return 0;
}
