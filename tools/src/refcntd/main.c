// SPDX-License-Identifier: GPL-2.0
/*
 * refcntd(8): the migration daemon. Reads the migration events of every
 * node and moves the pages they name to the nodes that use them, under
 * the policy of refcntd.conf(5). A bad configuration, missing privilege
 * or a missing module is one line on stderr and a non-zero exit, before
 * anything is changed. SIGUSR1 logs and writes the statistics, SIGHUP
 * reloads the configuration (a bad one is refused and the old one kept),
 * SIGTERM or SIGINT stops, restoring the nodes' thresholds.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "refcntd.h"
#include "rtools.h"

#define DEFAULT_CONFIG	"/etc/refcnt/refcntd.conf"
#define CAP_SYS_ADMIN_BIT 21
#define CAP_SYS_NICE_BIT  23

static volatile sig_atomic_t got_term, got_hup, got_usr1;

struct opts {
	const char *config;
	char *sets[64];
	int nr_sets;
	int dry_run, check, json;
	double duration;
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: refcntd [OPTIONS]\n"
"Move pages to the nodes that reference them, driven by the refcnt\n"
"counters' migration events and, with count_scan_ms, a scan of the\n"
"counts themselves (refcntd(8), refcntd.conf(5)).\n\n"
"  -c, --config FILE   configuration (default " DEFAULT_CONFIG ")\n"
"  -o, --set KEY=VALUE override one configuration key (repeatable)\n"
"  -p, --pid PID       act on process PID too (opt-in; repeatable)\n"
"  -n, --dry-run       log the moves, move nothing\n"
"      --check         check the configuration and exit\n"
"      --duration SECS stop after SECS seconds\n"
"      --json          print the final statistics as JSON on stdout\n"
"  -v, --verbose       also log every refusal and why\n"
"  -h, --help          this text\n\n"
"Exit status: 0 stopped cleanly, 1 failure, 2 bad option or configuration,\n"
"3 refcnt module not loaded, 4 permission denied.\n");
}

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		got_hup = 1;
	else if (sig == SIGUSR1)
		got_usr1 = 1;
	else
		got_term = 1;
}

/* The file, then -o and -p and -n over it. */
static int load(const struct opts *o, struct rd_config *c)
{
	char why[512];
	int i, err;

	rd_config_defaults(c);
	err = rd_config_load(c, o->config);
	for (i = 0; !err && i < o->nr_sets; i++) {
		char key[64], *eq = strchr(o->sets[i], '=');

		if (!eq || eq - o->sets[i] >= (int)sizeof(key)) {
			rd_log(3, "--set %s: expected KEY=VALUE", o->sets[i]);
			return -EINVAL;
		}
		snprintf(key, sizeof(key), "%.*s", (int)(eq - o->sets[i]), o->sets[i]);
		err = rd_config_set(c, key, eq + 1, why, sizeof(why));
		if (err)
			rd_log(3, "--set %s", why);
	}
	if (!err && o->dry_run)
		c->dry_run = 1;
	if (!err && (err = rd_config_check(c, why, sizeof(why))))
		rd_log(3, "%s", why);
	return err;
}

static int has_cap(int bit)
{
	char line[256];
	unsigned long long eff;
	FILE *f = fopen("/proc/self/status", "re");
	int yes = 0;

	if (!f)
		return geteuid() == 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			yes = (eff >> bit) & 1;
	fclose(f);
	return yes;
}

static int check_privilege(const struct rd_config *c)
{
	if (c->set_thresholds && !has_cap(CAP_SYS_ADMIN_BIT)) {
		rt_err("permission denied: CAP_SYS_ADMIN is needed to set the nodes' differential threshold (run as root, or set_thresholds = no)");
		return -EACCES;
	}
	if (!c->dry_run && !has_cap(CAP_SYS_NICE_BIT)) {
		rt_err("permission denied: CAP_SYS_NICE is needed to move other processes' pages (run as root)");
		return -EACCES;
	}
	return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o, struct rd_config *pids)
{
	static const struct option lo[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "set", required_argument, NULL, 'o' },
		{ "pid", required_argument, NULL, 'p' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "check", no_argument, NULL, 'C' },
		{ "duration", required_argument, NULL, 'D' },
		{ "json", no_argument, NULL, 'J' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "c:o:p:nvh", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->config = optarg;
			break;
		case 'o':
		case 'p':
			if (o->nr_sets == 63) {
				rt_err("too many --set and --pid options");
				return -EINVAL;
			}
			if (c == 'o') {
				o->sets[o->nr_sets++] = optarg;
			} else if (asprintf(&o->sets[o->nr_sets++], "pids=%s", optarg) < 0) {
				return -ENOMEM;
			}
			break;
		case 'n':
			o->dry_run = 1;
			break;
		case 'v':
			rd_verbose = 1;
			break;
		case 'C':
			o->check = 1;
			break;
		case 'J':
			o->json = 1;
			break;
		case 'D':
			o->duration = strtod(optarg, &end);
			if (*end || end == optarg || o->duration <= 0) {
				rt_err("--duration %s: not a number of seconds", optarg);
				return -EINVAL;
			}
			break;
		case 'h':
			usage(stdout);
			exit(RT_EXIT_OK);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	(void)pids;
	if (optind < argc)
		return rt_unexpected_arg(argv[optind], usage);
	return 0;
}

static void report(const struct rd_engine *e, const char *file)
{
	char line[1024];
	FILE *m = fmemopen(line, sizeof(line), "w");

	if (m) {
		rd_stats_print(m, rd_engine_stats(e), 0);
		fclose(m);
		line[strcspn(line, "\n")] = '\0';
		rd_log(6, "stats: %s", line);
	}
	if (file[0])
		rd_stats_write(file, rd_engine_stats(e));
}

static void reload(struct rd_engine *e, const struct opts *o, struct rd_config *c)
{
	struct rd_config n;

	if (load(o, &n)) {
		rd_log(3, "reload refused: keeping the configuration in use");
		return;
	}
	if (rd_engine_reconfig(e, &n)) {
		rd_log(3, "reload: setting the thresholds failed");
		return;
	}
	*c = n;
	rd_log(6, "configuration reloaded from %s", o->config);
}

static int run(struct rd_engine *e, const struct opts *o, struct rd_config *c,
	       const sigset_t *old)
{
	uint64_t stop = o->duration ? rd_now_ns() + o->duration * 1e9 : 0;
	int err = 0;

	while (!got_term && !err) {
		if (stop && rd_now_ns() >= stop)
			break;
		err = rd_engine_run_once(e, 200, old);
		if (got_usr1) {
			got_usr1 = 0;
			report(e, c->stats_file);
		}
		if (got_hup) {
			got_hup = 0;
			reload(e, o, c);
		}
	}
	return err;
}

int main(int argc, char **argv)
{
	struct opts o = { .config = DEFAULT_CONFIG };
	struct sigaction sa = { .sa_handler = on_signal };
	struct rd_engine *e;
	struct rd_config c;
	sigset_t block, old;
	int err;

	rt_prog = "refcntd";
	err = parse_opts(argc, argv, &o, &c);
	if (!err)
		err = load(&o, &c);
	if (err)
		return rt_exit_code(err == -EACCES ? -EACCES : -EINVAL);
	if (o.check) {
		printf("%s: configuration OK\n", o.config);
		return RT_EXIT_OK;
	}
	err = check_privilege(&c);
	if (err)
		return rt_exit_code(err);

	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &old);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);

	err = rd_engine_open(&e, &c, NULL);
	if (err)
		return rt_exit_code(err);
	err = rd_feed_start(&c);
	if (err) {
		rd_engine_close(e);
		return rt_exit_code(err == -EACCES || err == -EPERM ? -EACCES : -EIO);
	}
	rd_log(6, "watching %d nodes: diff_threshold %u, rate %g pages/s %g MB/s, freeze %u ms%s",
	       rd_engine_nr_nodes(e), c.diff_threshold, c.rate_pages, c.rate_mb,
	       c.freeze_ms, c.dry_run ? ", dry run" : "");
	if (c.stats_file[0])
		rd_stats_write(c.stats_file, rd_engine_stats(e));
	err = run(e, &o, &c, &old);
	if (err)
		rd_log(3, "stopping on error: %s", strerror(-err));
	report(e, c.stats_file);
	if (o.json)
		rd_stats_print(stdout, rd_engine_stats(e), 1);
	rd_feed_stop();
	rd_engine_close(e);
	rd_log(6, "stopped");
	return err ? RT_EXIT_FAIL : RT_EXIT_OK;
}
