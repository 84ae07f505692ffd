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

/*
 * Set i of a chunk: its references, e1 the table now, n->ext0 and n->hw
 * the table and hardware counters read before it; adds to n->by_ctr.
 */
static uint64_t set_refs(struct node *n, const uint32_t *e1, uint64_t i)
{
	const int cps = n->info.rcb_sw_counters_per_set;
	uint64_t t = 0, v, before;
	int c;

	for (c = 0; c < cps; c++) {
		v = e1[i * cps + c];
		if (!opt.extended) {
			before = (uint64_t)n->ext0[i * cps + c] + n->hw[i * cps + c];
			v = before > v ? before : v;
		}
		t += v;
		if (c < ctr.nr)
			n->by_ctr[c] += v;
	}
	return t;
}

/* Sets [set, set + cnt) of node n: totals, rates, offers to the top rows. */
static int sample_chunk(struct node *n, uint64_t set, uint64_t cnt, double dt)
{
	const int cps = n->info.rcb_sw_counters_per_set;
	const uint32_t *e1 = n->map + set * cps;
	uint64_t i, t, d;
	struct row r;

	if (!opt.extended) {
		memcpy(n->ext0, e1, cnt * cps * sizeof(uint32_t));
		if (refcnt_node_read_sets(n->h, set, cnt, n->hw, NULL, NULL))
			return rt_node_error(errno, "RCB_SETS_READ on ", n->nid);
	}
	for (i = 0; i < cnt; i++) {
		t = set_refs(n, e1, i);
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
	return 0;
}

/* One refresh: totals, rates, the best rows. 0, or a negative errno. */
static int sample(double dt)
{
	uint64_t set, sets;
	int j, rc;

	nr_top = 0;
	for (j = 0; j < nr_nodes; j++) {
		struct node *n = &nodes[j];

		n->total = n->rate_refs = 0;
		memset(n->by_ctr, 0, ctr.nr * sizeof(uint64_t));
		sets = n->info.rcb_sw_sets;
		for (set = 0; set < sets; set += CHUNK) {
			rc = sample_chunk(n, set, sets - set < CHUNK ? sets - set : CHUNK,
					  dt);
			if (rc)
				return rc;
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

/* The first line: time, totals, sort key, keys. */
static void show_title(double dt, int first, int cols)
{
	uint64_t all = 0, all_rate = 0;
	char tbuf[32], b1[32];
	time_t t = time(NULL);
	int j;

	strftime(tbuf, sizeof(tbuf), "%H:%M:%S", localtime(&t));
	for (j = 0; j < nr_nodes; j++) {
		all += nodes[j].total;
		all_rate += nodes[j].rate_refs;
	}
	fmt_count(first || dt <= 0 ? -1 : all_rate / dt, b1, sizeof(b1));
	line(opt.batch ? 0 : cols + 4, "%srefcnt-top %s  every %.1fs  %d node%s  references %llu  rate %s/s  sort: %s%s%s",
	     opt.batch ? "" : "\033[7m", tbuf, opt.delay, nr_nodes,
	     nr_nodes == 1 ? "" : "s", (unsigned long long)all, b1,
	     sort_names[opt.sort], opt.extended ? "  (extended counters only)" : "",
	     opt.batch ? "" : "  [q r t n + -]\033[0m");
}

/* Per node: references to its memory, by accessing node. */
static void show_nodes(double dt, int first, int cols)
{
	char b1[32], cells[512];
	size_t len;
	int j, c;

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
}

/* The table's heading: a column per counter, or the top three. */
static void show_heading(int cols)
{
	char b2[32], cells[512];
	size_t len;
	int c;

	len = snprintf(cells, sizeof(cells), "%s%-4s %9s %-14s %10s %9s  ",
		       opt.batch ? "" : "\033[1m", "NODE", "SET", "PADDR", "TOTAL",
		       "RATE/s");
	if (ctr.nr > 8) {
		len += snprintf(cells + len, sizeof(cells) - len, "TOP ACCESSING NODES");
	} else {
		for (c = 0; c < ctr.nr; c++)
			len += snprintf(cells + len, sizeof(cells) - len, " %8s",
					(snprintf(b2, sizeof(b2), "n%s", ctr.label[c]), b2));
		len += snprintf(cells + len, sizeof(cells) - len, "  TOP");
	}
	line(opt.batch ? 0 : cols + 4, "%s%s", cells, opt.batch ? "" : "\033[0m");
}

/* The three counters with most references of v, "3:120 0:40 ". */
static size_t top_three(const uint64_t *v, int nr, char *buf, size_t size)
{
	int k, c, b, used[RCB_MAX_COUNTERS] = { 0 };
	size_t len = 0;

	for (k = 0; k < 3; k++) {
		for (c = 0, b = -1; c < nr; c++)
			if (!used[c] && v[c] && (b < 0 || v[c] > v[b]))
				b = c;
		if (b < 0)
			break;
		used[b] = 1;
		len += snprintf(buf + len, size - len, "%s:%llu ", ctr.label[b],
				(unsigned long long)v[b]);
	}
	return len;
}

/* One row: a set, its references now (table + hardware), by counter. */
static void show_row(const struct row *r, int cols)
{
	struct node *n = r->n;
	const int cps = n->info.rcb_sw_counters_per_set;
	const int nr = cps < ctr.nr ? cps : ctr.nr;
	uint32_t hw[RCB_MAX_COUNTERS] = { 0 };
	uint64_t v[RCB_MAX_COUNTERS];
	char b1[32], cells[512];
	int c, best = 0;
	size_t len;

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
	if (ctr.nr > 8) {
		top_three(v, nr, cells + len, sizeof(cells) - len);
	} else {
		for (c = 0; c < nr; c++) {
			fmt_count((double)v[c], b1, sizeof(b1));
			len += snprintf(cells + len, sizeof(cells) - len, " %8s", b1);
		}
		snprintf(cells + len, sizeof(cells) - len, "  n%s", ctr.label[best]);
	}
	line(cols, "%s", cells);
}

static void show(double dt, int first, int rows, int cols)
{
	int i;

	if (!opt.batch)
		fputs("\033[H", stdout);
	show_title(dt, first, cols);
	show_nodes(dt, first, cols);
	line(cols, "%s", "");
	show_heading(cols);
	for (i = 0; i < nr_top && i < rows; i++)
		show_row(&top[i], cols);
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

/* One option into opt: 0, or RT_EXIT_USAGE with the cause printed. */
static int parse_option(int c, const char *arg)
{
	char *end;
	int j;

	switch (c) {
	case 'b':
		opt.batch = 1;
		return 0;
	case 'd':
		opt.delay = strtod(arg, &end);
		if (!*end && opt.delay >= 0.1 && opt.delay <= 3600)
			return 0;
		rt_err("--delay %s: seconds from 0.1 to 3600", arg);
		return RT_EXIT_USAGE;
	case 'n':
		opt.iterations = strtol(arg, &end, 10);
		if (!*end && opt.iterations >= 1)
			return 0;
		rt_err("--iterations %s: a number from 1", arg);
		return RT_EXIT_USAGE;
	case 's':
		for (j = 0; j < 3; j++)
			if (!strcmp(arg, sort_names[j])) {
				opt.sort = j;
				return 0;
			}
		rt_err("--sort %s: rate, total or node", arg);
		return RT_EXIT_USAGE;
	case 'N':
		return rt_exit_code(rt_parse_node(arg, &opt.node));
	case 'r':
		opt.rows = strtol(arg, &end, 10);
		if (!*end && opt.rows >= 1 && opt.rows <= 10000)
			return 0;
		rt_err("--rows %s: 1..10000", arg);
		return RT_EXIT_USAGE;
	case 'e':
		opt.extended = 1;
		return 0;
	default:
		usage(stderr);
		return RT_EXIT_USAGE;
	}
}

/* The options into opt: 0 to go on, -1 after --help, or an exit code. */
static int parse_options(int argc, char **argv)
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
	int c, rc;

	while ((c = getopt_long(argc, argv, "bd:n:s:N:r:eh", opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return -1;
		}
		rc = parse_option(c, optarg);
		if (rc)
			return rc;
	}
	if (optind < argc)
		return rt_exit_code(rt_unexpected_arg(argv[optind], usage));
	if (!isatty(STDOUT_FILENO))
		opt.batch = 1;
	return 0;
}

/* Open the nodes to watch, map their tables: 0, or a negative errno. */
static int open_nodes(void)
{
	int *nids, j, rc;
	size_t cps;

	nr_nodes = rt_select_nodes(opt.node, &nids);
	if (nr_nodes < 0)
		return nr_nodes;
	nodes = calloc(nr_nodes, sizeof(*nodes));
	if (!nodes)
		goto nomem;
	for (j = 0; j < nr_nodes; j++) {
		struct node *n = &nodes[j];

		n->nid = nids[j];
		rc = rt_node_open(n->nid, &n->h, &n->info);
		if (rc)
			return rc;
		n->map = refcnt_node_map(n->h, NULL);
		if (!n->map)
			return rt_node_error(errno, "mmap of ", n->nid);
		cps = n->info.rcb_sw_counters_per_set;
		n->prev = calloc(n->info.rcb_sw_sets ? n->info.rcb_sw_sets : 1,
				 sizeof(uint64_t));
		n->by_ctr = calloc(RCB_MAX_COUNTERS, sizeof(uint64_t));
		n->hw = calloc(CHUNK * cps, sizeof(uint32_t));
		n->ext0 = calloc(CHUNK * cps, sizeof(uint32_t));
		if (!n->prev || !n->by_ctr || !n->hw || !n->ext0)
			goto nomem;
	}
	return rt_counters_init(&ctr, &nodes[0].info);
nomem:
	rt_err("out of memory");
	return -ENOMEM;
}

/* Until the next refresh is due: keys (sort, speed, quit) and resizes. */
static void wait_refresh(double last)
{
	double left;
	int key;

	for (;;) {
		left = opt.delay - (now() - last);
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

/* Refresh until q, a signal or --iterations: 0, or a negative errno. */
static int refresh_loop(void)
{
	int j, rc, rows, trows = 24, tcols = 80;
	double last = 0, t;
	long iter = 0;

	while (!quit) {
		t = now();
		rc = sample(last ? t - last : 0);
		if (rc)
			return rc;
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
		wait_refresh(last);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	int rc;

	rt_prog = "refcnt-top";
	rc = parse_options(argc, argv);
	if (rc)
		return rc < 0 ? RT_EXIT_OK : rc;
	rc = open_nodes();
	if (rc)
		return rt_exit_code(rc);

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
		term_restore();
		return RT_EXIT_FAIL;
	}
	rc = refresh_loop();
	term_restore();
	return rt_exit_code(rc);
}
