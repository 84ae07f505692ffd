// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-exporter: the refcnt module's statistics and counter tables as
 * Prometheus / OpenMetrics text, for Prometheus to scrape (--listen) or
 * for node_exporter's textfile collector (--textfile), or once on stdout.
 * The metrics are in refcnt-exporter(1) and omtext.c; the numbers come
 * from rcsnap.c, read as refcnt-info reads them.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "exporter_http.h"
#include "omtext.h"
#include "rcsnap.h"
#include "rtools.h"

#define TEXTFILE_NAME	"refcnt.prom"

static struct {
	const char *textfile;	/* directory */
	const char *listen;
	int interval;		/* seconds between textfile writes */
	int once;
	int hot;
	int openmetrics;	/* stdout and textfile format */
} opt = { .interval = 15, .hot = 10 };

static volatile sig_atomic_t stop;
static int last_state = 1;	/* 1 up, 0 down: to log changes once */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: refcnt-exporter [--listen ADDR:PORT] [--textfile DIR]\n"
		"                       [--interval SECONDS] [--once] [--hot N] [--openmetrics]\n"
		"\n"
		"The refcnt module's statistics and counter tables as Prometheus metrics:\n"
		"per node, per node and accessing node (refcnt_references_total{node,from_node}),\n"
		"per feed, and the hottest counter sets. With neither --listen nor --textfile,\n"
		"print them once on stdout.\n"
		"\n"
		"  -l, --listen ADDR:PORT  serve GET /metrics (\":PORT\": every address);\n"
		"                          OpenMetrics when the Accept header asks for it\n"
		"  -t, --textfile DIR      write DIR/" TEXTFILE_NAME " for node_exporter's textfile\n"
		"                          collector (a temporary file, then rename)\n"
		"  -i, --interval SECONDS  between textfile writes (default 15)\n"
		"  -1, --once              one write, or one scrape served, then exit\n"
		"  -H, --hot N             the N hottest sets (default 10, 0 none, max %d)\n"
		"  -o, --openmetrics       OpenMetrics text on stdout and in the textfile\n"
		"  -h, --help              this text\n"
		"\n"
		"Exit status: 0 ok, 1 error (textfile directory not writable, address in use,\n"
		"...), 2 usage, 3 refcnt module not loaded (--once and stdout), 4 permission\n"
		"denied. Serving, it keeps going when the module is unloaded (refcnt_up 0).\n",
		RS_HOT_MAX);
}

static int parse_int(const char *what, const char *s, int min, int max, int *v)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(s, &end, 10);
	if (end == s || *end || errno || x < min || x > max) {
		rt_err("%s %s: not a number from %d to %d", what, s, min, max);
		return -1;
	}
	*v = (int)x;
	return 0;
}

/* 0 to go on, -1 after --help, or an exit code. */
static int parse_options(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "textfile", required_argument, NULL, 't' },
		{ "interval", required_argument, NULL, 'i' },
		{ "once", no_argument, NULL, '1' },
		{ "hot", required_argument, NULL, 'H' },
		{ "openmetrics", no_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0;	/* one line of ours instead of getopt's and the usage */
	while ((c = getopt_long(argc, argv, ":l:t:i:1H:oh", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			opt.listen = optarg;
			break;
		case 't':
			opt.textfile = optarg;
			break;
		case 'i':
			if (parse_int("--interval", optarg, 1, 86400, &opt.interval))
				return RT_EXIT_USAGE;
			break;
		case '1':
			opt.once = 1;
			break;
		case 'H':
			if (parse_int("--hot", optarg, 0, RS_HOT_MAX, &opt.hot))
				return RT_EXIT_USAGE;
			break;
		case 'o':
			opt.openmetrics = 1;
			break;
		case 'h':
			usage(stdout);
			return -1;
		case ':':
			rt_err("%s needs an argument (see --help)", argv[optind - 1]);
			return RT_EXIT_USAGE;
		default:
			if (optopt)
				rt_err("unknown option '-%c' (see --help)", optopt);
			else
				rt_err("unknown option '%s' (see --help)", argv[optind - 1]);
			return RT_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		rt_err("unexpected argument '%s' (see --help)", argv[optind]);
		return RT_EXIT_USAGE;
	}
	return 0;
}

/*
 * A snapshot; on failure s->loaded is 0 (refcnt_up 0) and, when the
 * state changed or quiet is 0, one line says why. Returns 0 or -errno.
 */
static int snapshot(struct rs_snap *s, int quiet)
{
	char what[128];
	int rc = rs_snap_take(s, opt.hot, what, sizeof(what));

	if (rc) {
		if (!quiet || last_state) {
			if (rc == -ENODEV && !s->loaded)
				rt_err("the refcnt module is not loaded (modprobe refcnt, or insmod refcnt.ko)%s",
				       quiet ? ": refcnt_up 0 until it is" : "");
			else
				rc = rt_dev_error(-rc, what);
		}
		rs_snap_free(s);
		last_state = 0;
		return rc;
	}
	if (!last_state && quiet)
		rt_err("the refcnt module is back: refcnt_up 1");
	last_state = 1;
	return 0;
}

/* http_scrape_fn: a scrape's body. */
static int scrape(int openmetrics, char **body, size_t *len)
{
	struct rs_snap s;
	FILE *f;

	snapshot(&s, 1);
	f = open_memstream(body, len);
	if (f) {
		om_write(f, &s, openmetrics);
		fclose(f);
	}
	rs_snap_free(&s);
	return 0;
}

/*
 * Write a snapshot to DIR/refcnt.prom through a temporary file, opened
 * first so that an unusable directory is the one thing said. 0, or an
 * exit code (quiet: only RT_EXIT_FAIL, the directory).
 */
static int textfile_once(int quiet)
{
	char tmp[PATH_MAX], dst[PATH_MAX];
	int fd, err = 0, rc;
	struct rs_snap s;
	FILE *f;

	snprintf(dst, sizeof(dst), "%s/" TEXTFILE_NAME, opt.textfile);
	/* Not *.prom: the collector must never read it half-written. */
	snprintf(tmp, sizeof(tmp), "%s/." TEXTFILE_NAME ".%d.tmp", opt.textfile,
		 (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rt_err("--textfile %s: cannot write there: %s", opt.textfile,
		       strerror(errno));
		return RT_EXIT_FAIL;
	}
	rc = snapshot(&s, quiet);
	f = fdopen(fd, "w");
	if (!f) {
		err = errno;
		close(fd);
	} else {
		if (om_write(f, &s, opt.openmetrics) || fflush(f) || fsync(fd))
			err = errno ? errno : EIO;
		if (fclose(f) && !err)
			err = errno;
	}
	rs_snap_free(&s);
	if (!err && rename(tmp, dst))
		err = errno;
	if (err) {
		unlink(tmp);
		rt_err("--textfile %s: cannot write %s: %s", opt.textfile, dst,
		       strerror(err));
		return RT_EXIT_FAIL;
	}
	return quiet ? 0 : rt_exit_code(rc);
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Serve and/or write the textfile until a signal (or --once). A wait is
 * at most a second: a signal that comes just before it ends the loop then.
 */
static int serve(struct http_server *srv)
{
	int64_t next = now_ms() + opt.interval * 1000LL;

	while (!stop) {
		int timeout = 1000;

		if (opt.textfile) {
			if (now_ms() >= next) {
				textfile_once(1);
				next = now_ms() + opt.interval * 1000LL;
			}
			if (next - now_ms() < timeout)
				timeout = (int)(next - now_ms());
			if (timeout < 0)
				timeout = 0;
		}
		if (!srv) {
			poll(NULL, 0, timeout);
			continue;
		}
		if (http_run(srv, timeout) > 0 && opt.once)
			break;
	}
	return RT_EXIT_OK;
}

static int print_once(void)
{
	struct rs_snap s;
	int rc = snapshot(&s, 0);

	if (!rc)
		om_write(stdout, &s, opt.openmetrics);
	rs_snap_free(&s);
	if (fflush(stdout) && !rc)
		return RT_EXIT_FAIL;
	return rt_exit_code(rc);
}

static void signals(void)
{
	struct sigaction sa = { 0 };

	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int main(int argc, char **argv)
{
	struct http_server *srv = NULL;
	struct stat st;
	int rc, lfd;

	rt_prog = "refcnt-exporter";
	rc = parse_options(argc, argv);
	if (rc)
		return rc < 0 ? RT_EXIT_OK : rc;
	if (!opt.textfile && !opt.listen)
		return print_once();
	signals();
	if (opt.textfile && stat(opt.textfile, &st)) {
		rt_err("--textfile %s: %s", opt.textfile, strerror(errno));
		return RT_EXIT_FAIL;
	}
	if (opt.textfile && !S_ISDIR(st.st_mode)) {
		rt_err("--textfile %s: not a directory", opt.textfile);
		return RT_EXIT_FAIL;
	}
	if (opt.textfile) {
		/* The first write tells whether the directory is usable. */
		rc = textfile_once(!opt.once);
		if (rc == RT_EXIT_FAIL || (opt.once && !opt.listen))
			return rc;
	}
	if (opt.listen) {
		lfd = http_listen(opt.listen);
		if (lfd < 0)
			return RT_EXIT_FAIL;
		srv = http_start(lfd, scrape);
		if (!srv)
			return RT_EXIT_FAIL;
	}
	rc = serve(srv);
	http_stop(srv);
	return rc;
}
